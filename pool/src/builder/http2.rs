//! The builder's HTTP/2 scale-out setting.

use super::Builder;

impl Builder {
    /// How many HTTP/2 connections an unbounded origin may have in each partition (at least
    /// one; default [`DEFAULT_H2_CONNECTIONS`](pool_core::cell::DEFAULT_H2_CONNECTIONS), 16).
    ///
    /// The pool opens a further HTTP/2 connection to an origin only when every connection it
    /// has is at the server's `SETTINGS_MAX_CONCURRENT_STREAMS` (learnt from its SETTINGS once
    /// a response arrived) and requests wait, one establishment at a time. Below the limit it
    /// keeps one connection per (partition, origin). At this cap, requests wait in the pool for
    /// a stream to free up (they count as waiting requests). A bounded origin
    /// (`max_connections_per_host`) is capped by its bound instead, counting every connection.
    /// Connections opened this way report `OpenReason::StreamLimit`.
    pub fn http2_max_connections_per_origin(mut self, connections: usize) -> Self {
        self.h2.max_connections = Some(connections.max(1));
        self
    }
}
