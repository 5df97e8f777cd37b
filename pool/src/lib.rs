//! The assembled connection pool (placeholder).
