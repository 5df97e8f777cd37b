//! HTTP/2 connection settings the pool exposes on its builder.

use std::time::Duration;

use hyper::client::conn::http2::Builder;

/// Settings applied to every HTTP/2 connection the pool establishes. `None` keeps hyper's
/// (and h2's) default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct H2Settings {
    /// Send a PING this often to detect a dead connection.
    pub keep_alive_interval: Option<Duration>,
    /// Close the connection if a PING is not acknowledged within this time.
    pub keep_alive_timeout: Option<Duration>,
    /// Also send keep-alive PINGs while no stream is open.
    pub keep_alive_while_idle: bool,
    /// `SETTINGS_INITIAL_WINDOW_SIZE` for streams.
    pub initial_stream_window_size: Option<u32>,
    /// The connection-level flow-control window (`None`: the pool's 1 GiB, not hyper's 5 MiB;
    /// see `DEFAULT_CONNECTION_WINDOW`).
    pub initial_connection_window_size: Option<u32>,
    /// Let hyper grow windows from measured bandwidth-delay (overrides the two windows).
    pub adaptive_window: bool,
    /// `SETTINGS_MAX_FRAME_SIZE`.
    pub max_frame_size: Option<u32>,
    /// `SETTINGS_MAX_HEADER_LIST_SIZE` (`None`: the pool's 512 KiB, not hyper's 16 KiB; see
    /// `DEFAULT_MAX_HEADER_LIST_SIZE`).
    pub max_header_list_size: Option<u32>,
    /// How many streams to open before the peer's first SETTINGS frame says how many it allows
    /// (hyper's default is 100).
    pub initial_max_send_streams: Option<usize>,
    /// `SETTINGS_HEADER_TABLE_SIZE`.
    pub header_table_size: Option<u32>,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` as this side announces it (server push).
    pub max_concurrent_streams: Option<u32>,
    /// Locally reset streams h2 remembers at once.
    pub max_concurrent_reset_streams: Option<usize>,
    /// Streams the peer may reset before they are accepted, pending at once.
    pub max_pending_accept_reset_streams: Option<usize>,
    /// Local resets caused by the peer's protocol errors before `GOAWAY` (`None`: the pool's
    /// default, no limit, see `DEFAULT_MAX_LOCAL_ERROR_RESETS`; `Some(None)`: no limit either).
    pub max_local_error_reset_streams: Option<Option<usize>>,
    /// Request body bytes buffered per stream (at most `u32::MAX`: hyper asserts it).
    pub max_send_buf_size: Option<usize>,
    /// How many HTTP/2 connections an unbounded origin may have in one partition when every
    /// one is at the peer's stream limit (the pool's setting, not hyper's; `None`: the pool's
    /// default).
    pub max_connections: Option<usize>,
}

/// The connection flow-control window when none is set: 1 GiB, Go's transport's, where
/// hyper's is 5 MiB. Every stream shares the connection's window, and an unread response keeps
/// what it received of it, so with hyper's a few slow readers stopped every other stream of
/// the connection; this large, only each stream's own window bounds what an unread response
/// holds. A window is a credit, not a buffer: nothing is allocated for it, but unread
/// responses can now hold a stream window each (the server's stream limit times 2 MiB on one
/// connection) where hyper's held 5 MiB in all; Go's transport makes the same trade.
pub(crate) const DEFAULT_CONNECTION_WINDOW: u32 = 1 << 30;

/// The largest response head read when none is set: 512 KiB, where hyper's is 16 KiB. Over
/// HTTP/1.1 hyper reads a head of up to about 408 KiB (its default read buffer), and the
/// header list size counts 32 bytes more per field than the wire does, so this takes any head
/// HTTP/1.1 would. With hyper's, a 40 KiB head (forty cookies) failed over h2 alone, and not
/// just its stream: h2 gives up on the connection's header compression state and ends the
/// connection, failing every stream on it. curl reads heads of up to 300 KiB, Go's transport up
/// to 10 MiB.
pub(crate) const DEFAULT_MAX_HEADER_LIST_SIZE: u32 = 512 * 1024;

/// How many streams h2 may reset for the peer's protocol errors before it ends the connection
/// itself with `GOAWAY(ENHANCE_YOUR_CALM, "too_many_internal_resets")`, when none is set: no
/// limit, where h2's is 1024 over the connection's whole life.
///
/// On a client what h2 counts there is almost always the caller's own cancellations. A dropped
/// response resets its stream; h2 remembers 50 reset streams, for a second each, and ignores
/// late frames for them; a DATA frame the server had already sent on a reset stream h2 does
/// not remember is answered with a reset of its own, and counted. A download dropped mid-body
/// has up to its stream window in flight (2 MiB: a hundred frames and more), and every one
/// counts while h2's memory is full, so a burst of cancellations ended the connection and
/// failed every response still arriving on it; and since the count never decreases, a
/// long-lived connection got there at any rate of cancellation. Against nginx (1 MiB
/// downloads, `poolcurl load -z 4s -c 32 -m 0.005`, two connections) h2's limit ended 23
/// connections in four seconds, and every one was opened again. The limit is a server's
/// defence against clients that make it write resets; a server that makes this side write
/// them gets one small frame for each frame it sent, and its stream errors still fail their own
/// requests. Go's transport ignores such frames and counts nothing.
pub(crate) const DEFAULT_MAX_LOCAL_ERROR_RESETS: Option<usize> = None;

/// hyper's `initial_max_send_streams` when none is set.
const HYPER_INITIAL_MAX_SEND_STREAMS: usize = 100;

impl H2Settings {
    /// The streams h2 opens before the peer's first SETTINGS frame.
    pub fn initial_max_send_streams(&self) -> usize {
        self.initial_max_send_streams
            .unwrap_or(HYPER_INITIAL_MAX_SEND_STREAMS)
    }

    /// Applies the settings to a hyper HTTP/2 client builder.
    pub fn apply<E: Clone>(&self, builder: &mut Builder<E>) {
        builder
            .keep_alive_interval(self.keep_alive_interval)
            .keep_alive_while_idle(self.keep_alive_while_idle)
            .initial_stream_window_size(self.initial_stream_window_size)
            .initial_connection_window_size(Some(
                self.initial_connection_window_size
                    .unwrap_or(DEFAULT_CONNECTION_WINDOW),
            ))
            .adaptive_window(self.adaptive_window)
            .max_frame_size(self.max_frame_size)
            .initial_max_send_streams(self.initial_max_send_streams)
            // hyper's own defaults for these three are `None` too.
            .header_table_size(self.header_table_size)
            .max_concurrent_streams(self.max_concurrent_streams)
            .max_pending_accept_reset_streams(self.max_pending_accept_reset_streams);
        if let Some(timeout) = self.keep_alive_timeout {
            builder.keep_alive_timeout(timeout);
        }
        builder.max_header_list_size(
            self.max_header_list_size
                .unwrap_or(DEFAULT_MAX_HEADER_LIST_SIZE),
        );
        if let Some(max) = self.max_concurrent_reset_streams {
            builder.max_concurrent_reset_streams(max);
        }
        builder.max_local_error_reset_streams(
            self.max_local_error_reset_streams
                .unwrap_or(DEFAULT_MAX_LOCAL_ERROR_RESETS),
        );
        if let Some(max) = self.max_send_buf_size {
            builder.max_send_buf_size(max);
        }
    }
}
