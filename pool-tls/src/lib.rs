//! Transport establishment below the HTTP protocol (placeholder until the transport lands).
