//! HTTP/1 connection records for the pool (placeholder).
