//! Connection-pool coordination without I/O.
//!
//! Everything that decides *who gets which connection* lives here, written so that it can be
//! model-checked: synchronous methods under small locks, wakers stored in slots, and actions
//! returned to the caller to perform after the lock is released. This crate opens no socket,
//! spawns no task and reads no clock: time comes in as an argument.
//!
//! What it does not do: speak HTTP (that is `pool-h1` and `pool-h2`), establish transports
//! (`pool-tls`), or assemble the pool users depend on (`pool`).

pub mod origin;

pub use origin::{HostKind, InvalidOrigin, OriginKey, OriginLookup, Scheme};
