//! A larger stream window for the connections of a cell whose server ended a connection for
//! the rate of its `WINDOW_UPDATE` frames.
//!
//! Jetty limits the rate of frames it deems invalid, 128 a second per connection by default
//! (`WindowRateControl`), and ends the connection with `GOAWAY(ENHANCE_YOUR_CALM,
//! "invalid_window_update_frame_rate")` past it; a stream `WINDOW_UPDATE` that arrives after
//! Jetty closed the stream is one of them (Jetty 9.4), and later Jetty releases weigh more
//! kinds of control frame against the same rate. h2 sends a stream's `WINDOW_UPDATE` once the
//! data the caller has read reaches what is left of the stream's window, so with hyper's
//! 2 MiB window a response of a mebibyte or more sends one as its last bytes are read, which
//! is often after the server sent `END_STREAM` (RFC 9113 lets the update cross it; Jetty
//! counts it all the same). Hundreds of such downloads a second on one connection pass the
//! rate: `poolcurl load -c 32` of a 1 MiB file from Jetty 9.4 over h2c failed 42 and 65
//! requests in 4 s, the server ending 31 and 40 connections under them.
//!
//! Nothing in the pool decides when h2 sends an update, but the stream window decides how
//! often. A connection that ends on its server's `GOAWAY(ENHANCE_YOUR_CALM)` without request
//! bodies overlapping on it (those are `uploads.rs`'s lesson) teaches its cell to open further
//! connections with a stream window of [`LEARNT_STREAM_WINDOW`] (curl's 32 MiB): a response
//! under 16 MiB then sends no stream `WINDOW_UPDATE` at all, a longer one one per 16 MiB. The
//! connection's own window (1 GiB by default) already sends next to none. The lesson is kept
//! in the cell's hint, which the `pool` crate shares among the origin's cells in every
//! partition (`H2Home::calm`), and reported in its stats (`OriginStats::larger_stream_window`).
//!
//! A server that ends a connection so does not always say why. Jetty 9.4 queues its `GOAWAY`
//! and closes at once: when its writes are pending (a client reading slowly), the close drops
//! the `GOAWAY` and the client reads the end of the stream in the middle of a DATA frame.
//! Nothing is learnt from such an end (a server vanishing mid-frame gave no reason); the next
//! connection ends the same way or, more often, with the `GOAWAY` that teaches.
//!
//! The costs, stated: the stream window is also what one response may hold unread, so each
//! stream to that origin may hold up to 32 MiB where it held 2 MiB (a credit, nothing is
//! allocated for it). Learning costs the responses the ending connection was still carrying
//! (the requests its server's `GOAWAY` shows unprocessed go again). A `GOAWAY(ENHANCE_YOUR_CALM)`
//! for another reason (Jetty's rate of `RST_STREAM`s, sent when callers give up on requests)
//! teaches it too, and then changes nothing but what unread responses may hold. Connections
//! already open keep their window. The lesson is taken where the first request the `GOAWAY`
//! refused reads its outcome (before it goes again on a new connection) and where the
//! connection's driver ends, whichever comes first (`calm::learn_from_calm_goaway`).
//!
//! What it does not do: override the caller. A stream window set on the builder
//! (`http2_initial_stream_window_size`) stays as set, and with `http2_adaptive_window` hyper
//! sizes the windows itself; the lesson only replaces hyper's default.

use crate::calm::CalmHint;
use crate::settings::H2Settings;

/// The stream window a cell's connections open with once their server ended one of them for
/// the rate of its `WINDOW_UPDATE`s: 32 MiB, the window curl opens HTTP/2 streams with.
pub const LEARNT_STREAM_WINDOW: u32 = 32 << 20;

/// The stream window a new connection of the cell whose lessons are `hint` opens with instead
/// of what `settings` give, if any (see the module docs).
pub(crate) fn learnt_stream_window(settings: &H2Settings, hint: &CalmHint) -> Option<u32> {
    let by_default = settings.initial_stream_window_size.is_none() && !settings.adaptive_window;
    (by_default && hint.larger_stream_window()).then_some(LEARNT_STREAM_WINDOW)
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_lesson_replaces_only_the_default_window() {
        let hint = CalmHint::default();
        let defaults = H2Settings::default();
        assert_eq!(
            learnt_stream_window(&defaults, &hint),
            None,
            "nothing learnt"
        );
        assert_eq!(
            hint.ended_asking_for_calm(false),
            Some(crate::calm::Lesson::LargerWindow)
        );
        assert_eq!(
            learnt_stream_window(&defaults, &hint),
            Some(LEARNT_STREAM_WINDOW)
        );
        let chosen = H2Settings {
            initial_stream_window_size: Some(64 * 1024),
            ..H2Settings::default()
        };
        assert_eq!(
            learnt_stream_window(&chosen, &hint),
            None,
            "the caller's window"
        );
        let adaptive = H2Settings {
            adaptive_window: true,
            ..H2Settings::default()
        };
        assert_eq!(
            learnt_stream_window(&adaptive, &hint),
            None,
            "hyper sizes it"
        );
    }
}
