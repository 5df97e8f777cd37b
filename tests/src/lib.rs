//! Test support for the pool (placeholder).
