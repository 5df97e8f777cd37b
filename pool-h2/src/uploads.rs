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
//! The costs, stated: learning costs the uploads that overlapped on one connection of each
//! cell (they fail; a POST is not sent again). Uploads waiting for the permit hold a stream
//! the cell reserved on that connection, so they queue behind each other there rather than
//! spread over more connections (against Tomcat, 200 KB each: about 1,000 a second per
//! connection, against none before; HTTP/1.1 over 64 connections ran 4,500), and their wait
//! counts against their read timeout (it is part of the exchange that timeout bounds), not
//! the pool timeout. Another server's `GOAWAY(ENHANCE_YOUR_CALM)` after overlapping uploads
//! sets it too, for a reason that is not the uploads (Jetty's limit on the rate of
//! `WINDOW_UPDATE` frames), which errs on the calm side. The lesson is kept for the cell's
//! life.
//!
//! What it does not do: count bodies a server answered early and that are still sending (the
//! permit goes with the response head), or change how a body is framed.

use pool_core::sync::Arc;
use pool_core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::calm::CalmHint;

/// One connection's requests with a body, and its upload permit.
#[derive(Debug)]
pub(crate) struct Uploads {
    /// Requests with a body dispatched here whose response head has not arrived.
    in_flight: AtomicUsize,
    /// Two were in flight at once.
    overlapped: AtomicBool,
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

    /// The connection ended; `asked_for_calm` when on its server's
    /// `GOAWAY(ENHANCE_YOUR_CALM)`. Returns whether that taught the cell to send one body at
    /// a time (it had not learnt it yet, and bodies had overlapped here).
    pub(crate) fn connection_ended(&self, asked_for_calm: bool) -> bool {
        asked_for_calm && self.overlapped.load(Ordering::Relaxed) && self.hint.learn_one_upload()
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
        // One at a time so far: a calm GOAWAY now teaches nothing.
        assert!(!uploads.connection_ended(true));
        uploads.began();
        // Two in flight, but the connection ended for another reason.
        assert!(!uploads.connection_ended(false));
        assert!(uploads.connection_ended(true));
        assert!(!uploads.connection_ended(true), "learnt once");
        // The cell's next connection starts with the lesson.
        let next = Uploads::new(hint);
        assert!(next.permit().is_some());
        assert_eq!(next.permit().unwrap().available_permits(), 1);
    }
}
