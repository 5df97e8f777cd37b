//! The builder's HTTP/2 settings: hyper's, under the names hyper-util's legacy client gives
//! them, and the pool's own scale-out. Values hyper would panic on, or that the protocol
//! forbids, are checked in [`build`](Builder::build) instead.

use std::time::Duration;

use super::{BuildError, Builder};

impl Builder {
    /// Sends HTTP/2 PINGs at this interval to detect dead connections.
    pub fn http2_keep_alive_interval(mut self, interval: Option<Duration>) -> Self {
        self.h2.keep_alive_interval = interval;
        self
    }

    /// Closes an HTTP/2 connection whose PING is not acknowledged within this time.
    pub fn http2_keep_alive_timeout(mut self, timeout: Duration) -> Self {
        self.h2.keep_alive_timeout = Some(timeout);
        self
    }

    /// Sends keep-alive PINGs even while no stream is open.
    pub fn http2_keep_alive_while_idle(mut self, enabled: bool) -> Self {
        self.h2.keep_alive_while_idle = enabled;
        self
    }

    /// The initial HTTP/2 stream flow-control window. `None` (the default) is hyper's 2 MiB,
    /// as hyper-util's legacy client and reqwest have (Go's transport: 4 MiB; curl: 32 MiB).
    ///
    /// It bounds two things. One response arrives no faster than this window per round trip,
    /// since the server waits for the pool's `WINDOW_UPDATE` once it has sent a window's worth:
    /// 2 MiB from a server 100 ms away is 20 MiB/s, whatever the link (interop measures it
    /// through a relay adding 100 ms: 17 MiB/s with this default, where curl's 32 MiB reached
    /// 84–93 MiB/s there). And a response the caller has not read holds up to this much in
    /// memory, once per unread stream (see
    /// [`http2_initial_connection_window_size`](Self::http2_initial_connection_window_size)).
    /// Raise it for large downloads from far away, as poolcurl's curl mode does (curl's
    /// 32 MiB); or let hyper size it from the measured bandwidth-delay product with
    /// [`http2_adaptive_window`](Self::http2_adaptive_window).
    ///
    /// Left at `None`, an origin whose server ends a connection with
    /// `GOAWAY(ENHANCE_YOUR_CALM)` while no uploads overlapped on it (Jetty's limit on the rate
    /// of `WINDOW_UPDATE`s, which h2 sends near the end of every response of half a window or
    /// more) gets [`LEARNT_STREAM_WINDOW`](crate::LEARNT_STREAM_WINDOW) on its further
    /// connections ([`OriginStats::larger_stream_window`](crate::OriginStats::larger_stream_window));
    /// a window set here stays as set.
    pub fn http2_initial_stream_window_size(mut self, size: Option<u32>) -> Self {
        self.h2.initial_stream_window_size = size;
        self
    }

    /// The initial HTTP/2 connection flow-control window. `None` (the default) is the pool's
    /// 1 GiB, as Go's transport has, not hyper's 5 MiB.
    ///
    /// Every stream of a connection draws on this one window, and a response the caller has
    /// not read yet keeps what it received of it. The pool sends every request of an origin in
    /// a partition on one connection, so with hyper's 5 MiB three unread responses of over
    /// 2 MiB (a slow consumer each, behind a gateway) held the whole window, and every other
    /// response on the connection stopped. With the connection window this large, each
    /// stream's own window ([`http2_initial_stream_window_size`](Self::http2_initial_stream_window_size),
    /// hyper's 2 MiB) is what bounds an unread response. The price is memory: unread
    /// responses on one connection can now hold a stream window each (up to the server's
    /// stream limit times 2 MiB) where hyper's window held 5 MiB in all. Lower the stream
    /// window to hold less per slow reader, or set this back to `Some(5 << 20)` for hyper's
    /// behaviour.
    pub fn http2_initial_connection_window_size(mut self, size: Option<u32>) -> Self {
        self.h2.initial_connection_window_size = size;
        self
    }

    /// Lets hyper size HTTP/2 windows from the measured bandwidth-delay product.
    pub fn http2_adaptive_window(mut self, enabled: bool) -> Self {
        self.h2.adaptive_window = enabled;
        self
    }

    /// The largest HTTP/2 frame payload the pool accepts (16 KiB to 16 MiB − 1).
    pub fn http2_max_frame_size(mut self, size: Option<u32>) -> Self {
        self.h2.max_frame_size = size;
        self
    }

    /// How many HTTP/2 streams to open on a new connection before the server's first SETTINGS
    /// frame announces its limit (hyper's default: 100). A server with a lower
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` refuses the excess of a cold burst with
    /// `REFUSED_STREAM` (the pool sends those again); once the limit is known, requests beyond
    /// it wait in the pool or go to a further connection (see
    /// [`http2_max_connections_per_origin`](Self::http2_max_connections_per_origin)).
    pub fn http2_initial_max_send_streams(mut self, streams: Option<usize>) -> Self {
        self.h2.initial_max_send_streams = streams;
        self
    }

    /// The largest header list the pool accepts in an HTTP/2 response (names, values and 32
    /// bytes per field, RFC 9113 §6.5.2). The default is 512 KiB, which takes any head hyper
    /// reads over HTTP/1.1 by default (about 408 KiB), not hyper's 16 KiB: over that limit h2
    /// ends the whole connection, failing every stream on it, so with hyper's a 40 KiB head
    /// (forty cookies) broke an origin over h2 that HTTP/1.1 served.
    pub fn http2_max_header_list_size(mut self, size: u32) -> Self {
        self.h2.max_header_list_size = Some(size);
        self
    }

    /// `SETTINGS_HEADER_TABLE_SIZE`: the HPACK table the server may use to compress the
    /// headers it sends (h2's default: 4096 bytes).
    pub fn http2_header_table_size(mut self, size: Option<u32>) -> Self {
        self.h2.header_table_size = size;
        self
    }

    /// `SETTINGS_MAX_CONCURRENT_STREAMS` as this side announces it: how many streams the
    /// server may open (server push). No limit unless set.
    pub fn http2_max_concurrent_streams(mut self, max: Option<u32>) -> Self {
        self.h2.max_concurrent_streams = max;
        self
    }

    /// How many locally reset HTTP/2 streams h2 remembers at once (it ignores late frames for
    /// them for a while); h2's default unless set.
    pub fn http2_max_concurrent_reset_streams(mut self, max: usize) -> Self {
        self.h2.max_concurrent_reset_streams = Some(max);
        self
    }

    /// How many streams the server may reset before they are accepted, pending at once, before
    /// the connection is ended with `GOAWAY` (h2's default: 20).
    pub fn http2_max_pending_accept_reset_streams(mut self, max: Option<usize>) -> Self {
        self.h2.max_pending_accept_reset_streams = max;
        self
    }

    /// How many streams this side may reset because of the server's protocol errors before it
    /// ends the connection with `GOAWAY(ENHANCE_YOUR_CALM)`, over the connection's life. The
    /// pool's default is no limit (`None`), where h2's is 1024: almost everything h2 counts
    /// there on a client is a late DATA frame on a stream the caller cancelled, so under h2's
    /// limit dropped downloads ended their own connection. `Some(n)` restores a limit.
    pub fn http2_max_local_error_reset_streams(mut self, max: Option<usize>) -> Self {
        self.h2.max_local_error_reset_streams = Some(max);
        self
    }

    /// The most request body bytes buffered for each HTTP/2 stream while the server's flow
    /// control holds them back (hyper's default: 1 MiB). At most `u32::MAX`, checked by
    /// [`build`](Self::build).
    pub fn http2_max_send_buf_size(mut self, max: usize) -> Self {
        self.h2.max_send_buf_size = Some(max);
        self
    }

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

    pub(super) fn validate_h2(&self) -> Result<(), BuildError> {
        const MAX_WINDOW: u32 = (1 << 31) - 1;
        if let Some(size) = self.h2.max_frame_size {
            if !(16_384..=16_777_215).contains(&size) {
                return Err(BuildError::new(
                    "http2_max_frame_size",
                    size,
                    "must be between 16384 and 16777215",
                ));
            }
        }
        for (setting, value) in [
            (
                "http2_initial_stream_window_size",
                self.h2.initial_stream_window_size,
            ),
            (
                "http2_initial_connection_window_size",
                self.h2.initial_connection_window_size,
            ),
        ] {
            if let Some(size) = value {
                if size > MAX_WINDOW {
                    return Err(BuildError::new(setting, size, "must be at most 2^31 - 1"));
                }
            }
        }
        if let Some(max) = self
            .h2
            .max_send_buf_size
            .filter(|&max| u32::try_from(max).is_err())
        {
            return Err(BuildError::new(
                "http2_max_send_buf_size",
                max,
                "must be at most u32::MAX",
            ));
        }
        if self.h2.keep_alive_timeout == Some(Duration::ZERO) {
            return Err(BuildError::new(
                "http2_keep_alive_timeout",
                "0s",
                "must be positive",
            ));
        }
        Ok(())
    }
}
