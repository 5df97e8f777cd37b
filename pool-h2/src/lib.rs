//! HTTP/2 flights and generations for the pool.
//!
//! This crate is reserved for the HTTP/2 issue: until it lands, the pool speaks HTTP/1.1 only.
