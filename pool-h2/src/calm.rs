//! How many streams a generation keeps open after its peer asked it to calm down.
//!
//! A peer that resets a stream with `ENHANCE_YOUR_CALM` before answering it is shedding load
//! it did not announce as a limit: Node.js's HTTP/2 server (and gRPC servers built on it)
//! refuses every new stream so while the memory its session holds is over `maxSessionMemory`
//! (10 MB by default), which the queued bodies of two or three large responses reach, while
//! it announces no stream limit at all. A client that goes on opening streams as fast as its
//! requests come sees most of them refused: 90% of 4 MB downloads at 32 streams per
//! connection, for every client tried (h2load as much as the pool).
//!
//! [`Calm`] is a cap on a connection's streams, below the peer's announced limit. Each
//! refusal lowers it to one less than the streams taken at that moment (or than the cap, if
//! that is lower), so a burst in which the peer accepted `a` streams and refused the rest
//! leaves the cap at `a`: what the peer showed it takes. Every cap's worth of responses after
//! that raises it by one, so a peer that recovers gets its concurrency back, one stream at a
//! time, and a peer that does not refuses one stream per probe. It never goes below one
//! stream. Without a refusal there is no cap, and the hot path reads one word to learn that.
//!
//! A connection opened beside one the peer calmed starts at the cap its sibling last had (the
//! cell's [`CalmHint`], `H2Home::calm`), rather than with a burst the peer refuses again: a
//! scale-out connection, opened because the capped ones were full, took every waiting request
//! at once and had most of them refused. Each connection then moves its own cap (Node.js's
//! memory cap is per connection, so each takes as many streams), probing at its own pace.
//!
//! (*Decision*: one step down per refusal rather than TCP's halving per round. Halving from
//! 32 streams needs four rounds to reach what a Node.js session takes for 4 MB responses (two
//! or three), and the requests of the first burst were refused in each of them: some spent
//! their whole re-send budget so. The refusals themselves say how many streams were too many.)
//!
//! **Whose refusal it is.** [`Calm::refused`] says whether a refusal lowered the cap. One that
//! did came while the connection had more streams open than the peer then took: the pool's
//! doing (the first burst, a probe after a rise, or streams opened just before the peer's
//! memory filled), and the pool learnt from it, so the next attempt goes under a lower cap.
//! The pool's `retry` module re-sends such a request without counting it against its budget.
//! A refusal at a cap of one stream taught nothing: the peer refuses even a lone stream, and
//! that one counts. (Counted alike, every refusal spent budget, and a request waiting for a
//! stream under the cap, which keeps its place at the head of the line, was the likeliest to
//! take the next stream and be refused again: against Node.js one GET in a few thousand spent
//! its whole budget so, with caps of five to eleven streams.)
//!
//! What it does not do: decide whether the refused request goes again. `ENHANCE_YOUR_CALM` is
//! not a proof that the peer did not process the stream (RFC 9113 §8.7 gives that to
//! `REFUSED_STREAM` and `GOAWAY` only), so the pool repeats only idempotent requests after it
//! (see the pool's `retry` module), and they wait for a stream under the cap.

use pool_core::sync::Arc;
use pool_core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// No cap: the peer never asked for calm.
const NONE: usize = usize::MAX;

/// What a cell's HTTP/2 connections learnt from servers that asked for calm
/// (`ENHANCE_YOUR_CALM`), shared by the connections of one cell, or of one origin's cells in
/// every partition as the `pool` crate shares it (see [`H2Home::calm`](crate::H2Home::calm)):
/// the stream cap a connection last had after its
/// server refused a stream so, which a new connection starts from (none until a server
/// asked); and, from a server that ended a connection so, either that request bodies overlapped
/// on it, which sends them one at a time from then on (`uploads.rs`), or, where none did, that
/// the connection's `WINDOW_UPDATE`s were too many, which opens further connections with a
/// larger stream window (`window.rs`). Beside those, one lesson that needs no calm: the
/// server sends empty DATA frames, which h2 allows only so many of per connection, so every
/// connection takes fewer streams (`frames.rs`).
#[derive(Debug)]
pub struct CalmHint {
    cap: AtomicUsize,
    one_upload: AtomicBool,
    larger_window: AtomicBool,
    empty_data: AtomicBool,
}

impl Default for CalmHint {
    fn default() -> CalmHint {
        CalmHint {
            cap: AtomicUsize::new(NONE),
            one_upload: AtomicBool::new(false),
            larger_window: AtomicBool::new(false),
            empty_data: AtomicBool::new(false),
        }
    }
}

/// What a connection's end on its server's `GOAWAY(ENHANCE_YOUR_CALM)` taught its cell
/// ([`CalmHint::ended_asking_for_calm`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lesson {
    /// Request bodies overlapped on the connection: one at a time from now on (`uploads.rs`).
    OneUpload,
    /// None did: further connections open with a larger stream window (`window.rs`).
    LargerWindow,
}

impl CalmHint {
    /// Whether the cell's connections send one request body at a time (`uploads.rs`).
    pub fn uploads_one_at_a_time(&self) -> bool {
        self.one_upload.load(Ordering::Relaxed)
    }

    /// Whether the cell's further connections open with a larger stream window, so that they
    /// send fewer stream `WINDOW_UPDATE`s (`window.rs`).
    pub fn larger_stream_window(&self) -> bool {
        self.larger_window.load(Ordering::Relaxed)
    }

    /// Whether the cell's server sent empty DATA frames that do not end their stream, so
    /// that its connections take at most `frames::EMPTY_DATA_CEILING` streams (`frames.rs`).
    pub fn sends_empty_data(&self) -> bool {
        self.empty_data.load(Ordering::Relaxed)
    }

    /// A connection of the cell received an empty DATA frame that did not end its stream.
    /// Returns whether that is news to the cell.
    pub(crate) fn saw_empty_data(&self) -> bool {
        !self.empty_data.swap(true, Ordering::Relaxed)
    }

    /// A connection of the cell ended on its server's `GOAWAY(ENHANCE_YOUR_CALM)`;
    /// `uploads_overlapped`: two request bodies were in flight on it at once. Overlapping
    /// bodies explain it (Tomcat's overhead protection); without them the suspect is the rate
    /// of the connection's `WINDOW_UPDATE`s (Jetty's rate control). Returns the lesson if it is
    /// new.
    pub(crate) fn ended_asking_for_calm(&self, uploads_overlapped: bool) -> Option<Lesson> {
        let (flag, lesson) = match uploads_overlapped {
            true => (&self.one_upload, Lesson::OneUpload),
            false => (&self.larger_window, Lesson::LargerWindow),
        };
        (!flag.swap(true, Ordering::Relaxed)).then_some(lesson)
    }
}

/// A connection of the cell ended on its server's `GOAWAY(ENHANCE_YOUR_CALM)` (`uploads`: its
/// requests with a body, `record`: its record): the cell learns what it can from that (see
/// [`CalmHint::ended_asking_for_calm`]). Called where the first request the `GOAWAY` failed
/// reads its outcome, and again where the connection's driver ends: a request refused by the
/// `GOAWAY` goes again at once, and the connection it opens must start with the lesson, which a
/// lesson taken only at the driver's end could miss. Out of line: a connection ends so once per
/// lesson.
#[cold]
#[inline(never)]
pub(crate) fn learn_from_calm_goaway(
    uploads: &crate::uploads::Uploads,
    record: &pool_core::connection::ConnectionRecord,
) {
    let connection = record.info().id().as_u64();
    match uploads.ended_asking_for_calm() {
        Some(Lesson::OneUpload) => tracing::debug!(
            connection,
            "the server ended the connection asking for calm after request bodies overlapped \
             on it: one body at a time per connection from now on"
        ),
        Some(Lesson::LargerWindow) => tracing::debug!(
            connection,
            window = crate::window::LEARNT_STREAM_WINDOW,
            "the server ended the connection asking for calm with no request bodies \
             overlapping: further connections open with a larger stream window, for fewer \
             WINDOW_UPDATEs"
        ),
        None => {}
    }
}

/// What a refusal did to a connection's cap ([`Calm::refused`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The cap from now on.
    pub(crate) cap: usize,
    /// The cap is lower than before the refusal: the pool had opened more streams than the
    /// peer took.
    pub(crate) lowered: bool,
}

/// One connection's cap (see the module docs). A refusal lowers it in one atomic step, so
/// refusals handled at once on different threads each take their stream off; a rise that races
/// a refusal is lost (the refusal wins), which errs on the calm side.
#[derive(Debug)]
pub(crate) struct Calm {
    /// The cap on taken streams ([`NONE`]: no cap).
    cap: AtomicUsize,
    /// Responses since the cap last changed.
    responses: AtomicUsize,
    /// The cell's hint: read once, at the start; written with every change.
    hint: Arc<CalmHint>,
}

impl Calm {
    /// A connection's cap, starting from the cell's `hint`.
    pub(crate) fn new(hint: Arc<CalmHint>) -> Calm {
        Calm {
            cap: AtomicUsize::new(hint.cap.load(Ordering::Relaxed)),
            responses: AtomicUsize::new(0),
            hint,
        }
    }

    /// The cell's hint.
    pub(crate) fn hint(&self) -> &CalmHint {
        &self.hint
    }

    /// The cap, if the peer ever asked for calm.
    pub(crate) fn cap(&self) -> Option<usize> {
        let cap = self.cap.load(Ordering::Relaxed);
        (cap != NONE).then_some(cap)
    }

    /// The peer refused a stream with `ENHANCE_YOUR_CALM` while `taken` streams were taken
    /// (that one included): the cap becomes one less than that, or than itself if lower.
    /// Returns the new cap, and whether the refusal lowered it (see the module docs).
    pub(crate) fn refused(&self, taken: usize) -> Refused {
        self.responses.store(0, Ordering::Relaxed);
        let lower = |cap: usize| cap.min(taken).saturating_sub(1).max(1);
        let before = self
            .cap
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |cap| Some(lower(cap)))
            .unwrap_or_else(|cap| cap);
        let cap = lower(before);
        self.hint.cap.store(cap, Ordering::Relaxed);
        Refused {
            cap,
            lowered: cap < before,
        }
    }

    /// A response arrived. Returns whether the cap rose (a waiting request may take a stream).
    pub(crate) fn responded(&self) -> bool {
        let cap = self.cap.load(Ordering::Relaxed);
        if cap == NONE {
            return false;
        }
        if self.responses.fetch_add(1, Ordering::Relaxed) + 1 < cap {
            return false;
        }
        self.responses.store(0, Ordering::Relaxed);
        let rose = self
            .cap
            .compare_exchange(cap, cap + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if rose {
            self.hint.cap.store(cap + 1, Ordering::Relaxed);
        }
        rose
    }
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;

    impl Default for Calm {
        fn default() -> Calm {
            Calm::new(Arc::new(CalmHint::default()))
        }
    }

    #[test]
    fn a_calm_goaway_teaches_one_upload_after_overlapping_bodies_and_a_larger_window_otherwise() {
        let hint = CalmHint::default();
        assert!(!hint.uploads_one_at_a_time() && !hint.larger_stream_window());
        assert_eq!(
            hint.ended_asking_for_calm(false),
            Some(Lesson::LargerWindow)
        );
        assert!(hint.larger_stream_window() && !hint.uploads_one_at_a_time());
        assert_eq!(hint.ended_asking_for_calm(false), None, "learnt once");
        assert_eq!(hint.ended_asking_for_calm(true), Some(Lesson::OneUpload));
        assert!(hint.uploads_one_at_a_time());
        assert_eq!(hint.ended_asking_for_calm(true), None, "learnt once");
    }

    #[test]
    fn a_new_connection_starts_from_the_cap_its_sibling_last_had() {
        let hint = Arc::new(CalmHint::default());
        let first = Calm::new(hint.clone());
        first.refused(8);
        assert_eq!(first.cap(), Some(7));
        assert_eq!(Calm::new(hint.clone()).cap(), Some(7));
        for _ in 0..7 {
            first.responded();
        }
        assert_eq!(first.cap(), Some(8));
        let third = Calm::new(hint.clone());
        assert_eq!(third.cap(), Some(8));
        // Each moves its own cap from there.
        third.refused(8);
        assert_eq!((first.cap(), third.cap()), (Some(8), Some(7)));
    }

    #[test]
    fn without_a_refusal_there_is_no_cap_and_responses_change_nothing() {
        let calm = Calm::default();
        assert_eq!(calm.cap(), None);
        assert!(!calm.responded());
        assert_eq!(calm.cap(), None);
    }

    #[test]
    fn a_burst_of_refusals_leaves_the_cap_at_the_streams_the_peer_accepted() {
        let calm = Calm::default();
        // 32 streams in flight; the peer takes 3 and refuses 29. Each refused stream's guard
        // goes after its refusal is handled, so `taken` falls with the cap.
        let mut taken = 32;
        for _ in 0..29 {
            calm.refused(taken);
            taken -= 1;
        }
        assert_eq!(calm.cap(), Some(3));
        // Refusals handled before any guard went (on other threads) count just the same.
        let at_once = Calm::default();
        for _ in 0..29 {
            at_once.refused(32);
        }
        assert_eq!(at_once.cap(), Some(3));
    }

    #[test]
    fn the_cap_follows_the_streams_taken_and_never_goes_below_one() {
        let calm = Calm::default();
        assert_eq!(calm.refused(100).cap, 99);
        assert_eq!(calm.refused(5).cap, 4, "five taken, under the cap: four");
        assert_eq!(calm.refused(2).cap, 1);
        assert_eq!(calm.refused(1).cap, 1);
        assert_eq!(calm.cap(), Some(1));
    }

    #[test]
    fn every_caps_worth_of_responses_raises_the_cap_by_one() {
        let calm = Calm::default();
        calm.refused(3);
        assert_eq!(calm.cap(), Some(2));
        assert!(!calm.responded());
        assert!(calm.responded(), "two responses at a cap of two");
        assert_eq!(calm.cap(), Some(3));
        assert!(!calm.responded());
        assert!(!calm.responded());
        assert!(calm.responded());
        assert_eq!(calm.cap(), Some(4));
        // A refusal after the rise lowers it again and starts the count over.
        assert!(!calm.responded());
        calm.refused(4);
        assert_eq!(calm.cap(), Some(3));
        assert!(!calm.responded() && !calm.responded());
        assert!(calm.responded());
        assert_eq!(calm.cap(), Some(4));
    }

    #[test]
    fn a_refusal_lowered_the_cap_unless_it_was_already_one_stream() {
        let calm = Calm::default();
        // The first refusal sets a cap where there was none; each of its burst lowers it.
        assert_eq!(
            calm.refused(4),
            Refused {
                cap: 3,
                lowered: true
            }
        );
        assert_eq!(
            calm.refused(3),
            Refused {
                cap: 2,
                lowered: true
            }
        );
        // Refused while fewer streams were open than the cap allowed: lowered all the same.
        assert_eq!(
            calm.refused(1),
            Refused {
                cap: 1,
                lowered: true
            }
        );
        // At one stream, a refusal teaches nothing, however many times.
        assert_eq!(
            calm.refused(1),
            Refused {
                cap: 1,
                lowered: false
            }
        );
        assert!(!calm.refused(1).lowered);
        // The probe after a rise lowers it again.
        assert!(calm.responded());
        assert_eq!(
            calm.refused(2),
            Refused {
                cap: 1,
                lowered: true
            }
        );
        // A connection starting from its sibling's cap of one lowers nothing either.
        let hint = Arc::new(CalmHint::default());
        Calm::new(hint.clone()).refused(2);
        assert!(!Calm::new(hint).refused(1).lowered);
    }
}
