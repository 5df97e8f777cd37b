//! One request body at a time on the connections of a cell whose server ended a connection for
//! request bodies that overlapped on it.
//!
//! Tomcat's HTTP/2 overhead protection ends a connection with `GOAWAY(ENHANCE_YOUR_CALM)` when
//! two non-final DATA frames in a row are small (it weighs each against 1,024 bytes), and
//! hyper's body pipe makes exactly those when several uploads start on one connection whose
//! flow-control window the server hands out a little at a time: each upload first claims one
//! byte of window and, granted it, sends a one-byte DATA frame (hyper 1.12,
//! `PipeToSendStream`). So every concurrent upload on an HTTP/2 connection to Tomcat failed
//! (0 of 9,890 at 64 in flight, 200 KB each), for every client tried, while one upload per
//! connection was clean. Nothing in the pool decides the size of a DATA frame: hyper claims
//! the window and h2 cuts the frames.
//!
//! What the pool can decide is how many request bodies share a connection. Each connection
//! counts the requests with a body it dispatched whose response head has not arrived, and
//! notes when two were in flight at once. A connection that then ends on its server's
//! `GOAWAY(ENHANCE_YOUR_CALM)` teaches its cell (through the cell's [`CalmHint`], shared by
//! the cell's connections) to send one body at a time: from then on a request with a body
//! takes its connection's single upload permit before its request goes to hyper, and holds it
//! until its response head arrives. Requests without a body (GETs) never wait for it, and go
//! on sharing the connection as before.
//!
//! Uploads spread over connections. An upload that finds its connection's permit taken waits
//! for it (it already holds a stream the cell reserved there: the cell does not know a
//! request's kind when it reserves), and while one waits the connection takes no new stream:
//! it counts as full, as at the peer's stream limit, so the next request goes to another of
//! the cell's connections with a stream free, or waits in the cell while a further connection
//! opens (within the cell's HTTP/2 connection cap or its bound, as for any scale-out). Each
//! connection so carries one upload and at most one waiting behind it (counted in the
//! `H2UploadsWaiting` gauge). When the waiting upload takes the permit (or leaves), the
//! connection takes streams again and tells its cell, as a freed stream does, so a request
//! waiting there takes it. The cost falls on requests without a body only while uploads wait:
//! they go to the other connections, or wait with everyone else when each connection has an
//! upload waiting.
//!
//! The costs, stated: learning costs the uploads that overlapped on one connection of each
//! cell (they fail; a POST is not sent again). An upload's wait for its permit counts against
//! its read timeout (it is part of the exchange that timeout bounds), not the pool timeout.
//! Another server's `GOAWAY(ENHANCE_YOUR_CALM)` after overlapping uploads sets the lesson too,
//! for a reason that is not the uploads (Jetty's limit on the rate of `WINDOW_UPDATE` frames),
//! which errs on the calm side; with no uploads overlapping, such a `GOAWAY` teaches the
//! larger stream window instead (`window.rs`). The lesson is kept in the cell's hint (the
//! `pool` crate shares one among the origin's cells in every partition: `H2Home::calm`).
//!
//! What it does not do: count bodies a server answered early and that are still sending (the
//! permit goes with the response head), or change how a body is framed.

use pool_core::stats::Gauge;
use pool_core::sync::Arc;
use pool_core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::calm::{CalmHint, Lesson};
use crate::generation::GenerationHandle;

/// One connection's requests with a body, and its upload permit.
#[derive(Debug)]
pub(crate) struct Uploads {
    /// Requests with a body dispatched here whose response head has not arrived.
    in_flight: AtomicUsize,
    /// Two were in flight at once.
    overlapped: AtomicBool,
    /// Uploads that hold a stream here and wait for the permit: while any does, the connection
    /// takes no new stream (see the module docs).
    waiting: AtomicUsize,
    /// The single permit an upload takes once the cell sends one body at a time (a `std` Arc:
    /// tokio's owned permits need one).
    permit: std::sync::Arc<Semaphore>,
    /// The cell's lesson (shared with the stream cap).
    hint: Arc<CalmHint>,
}

impl Uploads {
    /// The uploads of a new connection of the cell whose lessons are `hint`.
    pub(crate) fn new(hint: Arc<CalmHint>) -> Uploads {
        Uploads {
            in_flight: AtomicUsize::new(0),
            overlapped: AtomicBool::new(false),
            waiting: AtomicUsize::new(0),
            permit: std::sync::Arc::new(Semaphore::new(1)),
            hint,
        }
    }

    /// The connection's upload permit, if its cell sends one body at a time.
    pub(crate) fn permit(&self) -> Option<std::sync::Arc<Semaphore>> {
        self.hint
            .uploads_one_at_a_time()
            .then(|| self.permit.clone())
    }

    /// Whether an upload waits here for the permit: the connection then takes no new stream.
    #[inline]
    pub(crate) fn any_waiting(&self) -> bool {
        self.waiting.load(Ordering::Acquire) != 0
    }

    /// An upload holding a stream here found the permit taken and waits for it.
    fn wait(&self) {
        self.waiting.fetch_add(1, Ordering::AcqRel);
    }

    /// An upload stopped waiting (it holds the permit, or left). Returns whether it was the
    /// last: the connection may take streams again.
    fn stop_waiting(&self) -> bool {
        self.waiting.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// A request with a body was dispatched here: count it until [`ended`](Self::ended).
    pub(crate) fn began(&self) {
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= 1 {
            self.overlapped.store(true, Ordering::Relaxed);
        }
    }

    /// A request counted by [`began`](Self::began) got its response head (or failed).
    pub(crate) fn ended(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// The connection ended on its server's `GOAWAY(ENHANCE_YOUR_CALM)`: what that taught the
    /// cell, if it is new (one body at a time if bodies overlapped here, see
    /// [`CalmHint::ended_asking_for_calm`]).
    pub(crate) fn ended_asking_for_calm(&self) -> Option<Lesson> {
        self.hint
            .ended_asking_for_calm(self.overlapped.load(Ordering::Relaxed))
    }
}

/// Keeps one request with a body counted on its connection (and, once the cell sends one body
/// at a time, holds the connection's upload permit) until its response head arrives.
#[derive(Debug)]
pub(crate) struct UploadInFlight {
    streams: Arc<crate::streams::Streams>,
    _permit: Option<OwnedSemaphorePermit>,
}

impl UploadInFlight {
    /// Counts an upload dispatched on the connection of `streams`, holding `permit` if taken.
    pub(crate) fn new(
        streams: Arc<crate::streams::Streams>,
        permit: Option<OwnedSemaphorePermit>,
    ) -> UploadInFlight {
        streams.uploads.began();
        UploadInFlight {
            streams,
            _permit: permit,
        }
    }
}

impl Drop for UploadInFlight {
    fn drop(&mut self) {
        self.streams.uploads.ended();
    }
}

/// Counts an upload waiting for its connection's permit, from when it found the permit taken
/// until it holds it or leaves. The connection counts as full meanwhile; the last waiter to go
/// tells the cell, as a freed stream does, so that a request waiting there can take a stream.
pub(crate) struct UploadWaiting {
    generation: Arc<GenerationHandle>,
}

impl UploadWaiting {
    /// An upload on the connection of `generation` waits for the permit.
    pub(crate) fn new(generation: Arc<GenerationHandle>) -> UploadWaiting {
        generation.streams.uploads.wait();
        generation.record.gauges().inc(Gauge::H2UploadsWaiting);
        UploadWaiting { generation }
    }
}

impl Drop for UploadWaiting {
    fn drop(&mut self) {
        let generation = &self.generation;
        let last = generation.streams.uploads.stop_waiting();
        generation.record.gauges().dec(Gauge::H2UploadsWaiting);
        // The count's store comes before the cell's lock in `stream_freed`, and a request that
        // found the connection full read the count under that lock and queued there: either it
        // saw the connection free, or the cell sees it waiting now. Never called under a cell
        // lock (a request future's own step, or its drop).
        if last && !generation.streams.is_full() {
            generation.home.stream_freed(&generation.record);
        }
    }
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_calm_goaway_after_overlapping_bodies_teaches_one_at_a_time() {
        let hint = Arc::new(CalmHint::default());
        let uploads = Uploads::new(hint.clone());
        assert!(uploads.permit().is_none());
        uploads.began();
        uploads.ended();
        uploads.began();
        // One at a time so far: a calm GOAWAY now would not blame the uploads (shown on a
        // connection of another cell, as it would teach this one's the other lesson).
        let alone = Uploads::new(Arc::new(CalmHint::default()));
        alone.began();
        assert_eq!(alone.ended_asking_for_calm(), Some(Lesson::LargerWindow));
        uploads.began();
        assert_eq!(uploads.ended_asking_for_calm(), Some(Lesson::OneUpload));
        assert_eq!(uploads.ended_asking_for_calm(), None, "learnt once");
        assert!(!hint.larger_stream_window());
        // The cell's next connection starts with the lesson.
        let next = Uploads::new(hint);
        assert!(next.permit().is_some());
        assert_eq!(next.permit().unwrap().available_permits(), 1);
    }

    #[test]
    fn a_connection_where_an_upload_waits_for_the_permit_takes_no_new_stream() {
        let streams = crate::streams::tests::accounting(100).0;
        assert!(streams.try_reserve() && streams.try_reserve());
        streams.uploads.wait();
        streams.uploads.wait();
        assert!(streams.is_full(), "full while an upload waits");
        assert!(!streams.try_reserve());
        assert!(!streams.uploads.stop_waiting(), "one still waits");
        assert!(streams.is_full() && !streams.try_reserve());
        assert!(streams.uploads.stop_waiting(), "the last one");
        assert!(!streams.is_full());
        assert!(streams.try_reserve());
        assert_eq!(streams.taken(), 3);
    }
}
