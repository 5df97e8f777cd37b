//! A request waiting for a connection, and the exactly-once hand-over of what it waits for.
//!
//! A [`Waiter`] is shared between the request future that waits and the cell queue that will
//! serve it. Serving is split in two steps so no lock is held while waking:
//!
//! ```text
//!            claim()  (any thread, usually under the cell lock: one atomic CAS)
//!  WAITING ───────────────────────────────► CLAIMED ── fill(value) ──► value in slot, waker woken
//!     │                                        │
//!     │ cancel()  (the request future drops)   │ cancel() after the claim
//!     ▼                                        ▼
//!  CANCELLED                                slot closed: an undelivered value goes back
//! ```
//!
//! The claim decides *who* is served, atomically and without a lock, so a queue can skip
//! entries whose request has gone without taking their slot lock (the slot's mutex is then never
//! taken under another pool lock). The fill moves the value across threads.
//!
//! # Exactly once
//!
//! A claimed value ends in exactly one place: taken by [`Waiter::poll_take`], handed back to the
//! filler by [`Waiter::fill`] when the waiter already left, or handed back to the leaving waiter
//! by [`Waiter::cancel`] when the fill came first. Whoever gets it back owns returning it
//! (refunnelling): a connection to its cell, a permit to admission.

use std::fmt;
use std::task::{Context, Poll, Waker};

use crate::events::OpenReason;
use crate::progress::Progress;
use crate::sync::Mutex;
use crate::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use crate::time::ConnectTimeout;

/// Whether a waiting request can use any connection or needs HTTP/2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Requirement {
    /// Any protocol will do.
    Any,
    /// The request's version is HTTP/2: only an HTTP/2 connection may serve it.
    Http2,
}

const WAITING: u8 = 0;
const CLAIMED: u8 = 1;
const CANCELLED: u8 = 2;

/// What a claimed slot holds.
struct Slot<T> {
    /// The delivered value, until the waiter takes it.
    value: Option<T>,
    /// The waiting task, registered by `poll_take`.
    waker: Option<Waker>,
    /// The waiter left after its claim: a later fill is handed back.
    closed: bool,
}

/// One waiting request: its arrival order, its requirement, and the slot it is served through.
pub struct Waiter<T> {
    /// Arrival order within the pool; older waiters have smaller numbers.
    seq: u64,
    /// What kind of connection can serve it.
    requirement: Requirement,
    /// The connect timeout of the request, for an establishment launched on its behalf.
    connect_timeout: Option<ConnectTimeout>,
    /// Why an establishment launched for this waiter opens its connection.
    open_reason: OpenReason,
    /// The request's progress, which an establishment launched for it notes its steps in.
    progress: Option<Progress>,
    /// `WAITING`, `CLAIMED` or `CANCELLED`; only `WAITING` ever changes, and only once.
    state: AtomicU8,
    /// Set (under the cell lock) once an establishment was launched for this waiter, so it is
    /// not launched twice (for example when a flight it joined turns out to be HTTP/1).
    launched: AtomicBool,
    /// The hand-over slot; never locked while another pool lock is held.
    slot: Mutex<Slot<T>>,
}

impl<T> Waiter<T> {
    /// A new waiter, waiting.
    pub fn new(
        seq: u64,
        requirement: Requirement,
        connect_timeout: Option<ConnectTimeout>,
    ) -> Waiter<T> {
        Waiter {
            seq,
            requirement,
            connect_timeout,
            open_reason: OpenReason::Request,
            progress: None,
            state: AtomicU8::new(WAITING),
            launched: AtomicBool::new(false),
            slot: Mutex::new(Slot {
                value: None,
                waker: None,
                closed: false,
            }),
        }
    }

    /// Sets why an establishment launched for this waiter opens its connection (before the
    /// waiter is shared).
    pub fn with_open_reason(mut self, reason: OpenReason) -> Waiter<T> {
        self.open_reason = reason;
        self
    }

    /// Sets the request's progress (before the waiter is shared).
    pub fn with_progress(mut self, progress: Option<Progress>) -> Waiter<T> {
        self.progress = progress;
        self
    }

    /// The progress of the request, when its caller follows it: an establishment launched
    /// for this waiter notes its steps there.
    pub fn progress(&self) -> Option<&Progress> {
        self.progress.as_ref()
    }

    /// The waiter waits for a connection another request's establishment is making (it
    /// joined an HTTP/2 flight, or adopted an attempt whose request left): its request's
    /// progress says so.
    pub fn joined(&self) {
        if let Some(progress) = &self.progress {
            progress.joined();
        }
    }

    /// The establishment this waiter joined ended and it still waits (see
    /// [`joined`](Self::joined)): its request's progress says it waits again.
    pub fn join_ended(&self) {
        if let Some(progress) = &self.progress {
            progress.join_ended();
        }
    }

    /// Why an establishment launched for this waiter opens its connection.
    pub fn open_reason(&self) -> OpenReason {
        self.open_reason
    }

    /// Arrival order (smaller is older).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// What can serve this waiter.
    pub fn requirement(&self) -> Requirement {
        self.requirement
    }

    /// The connect timeout an establishment launched for this waiter uses.
    pub fn connect_timeout(&self) -> Option<&ConnectTimeout> {
        self.connect_timeout.as_ref()
    }

    /// Whether nobody has claimed this waiter and it has not left.
    pub fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }

    /// Whether an establishment has been launched on this waiter's behalf.
    pub fn is_launched(&self) -> bool {
        self.launched.load(Ordering::Acquire)
    }

    /// Records that an establishment was launched for this waiter; returns `false` if one
    /// already was.
    pub fn mark_launched(&self) -> bool {
        !self.launched.swap(true, Ordering::AcqRel)
    }

    /// Records that the establishment launched for this waiter no longer serves it on its own
    /// (it joined another flight or generation), so a failing flight fails it too.
    pub fn unmark_launched(&self) {
        self.launched.store(false, Ordering::Release);
    }

    /// Claims the right to serve this waiter. Exactly one claim or cancel succeeds.
    ///
    /// # Concurrency
    ///
    /// Races with [`cancel`](Self::cancel): if the request leaves first, the claim fails and the
    /// caller keeps its value for the next waiter.
    pub fn claim(&self) -> bool {
        self.state
            .compare_exchange(WAITING, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Hands `value` to a waiter this caller claimed, waking it.
    ///
    /// # Errors
    ///
    /// Returns the value when the waiter left after the claim; the caller must return it to
    /// where it came from.
    pub fn fill(&self, value: T) -> Result<(), T> {
        debug_assert_eq!(
            self.state.load(Ordering::Acquire),
            CLAIMED,
            "fill without a claim"
        );
        let waker = {
            let mut slot = self.slot.lock();
            if slot.closed {
                return Err(value);
            }
            slot.value = Some(value);
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Claims and fills in one step.
    ///
    /// # Errors
    ///
    /// Returns the value when the waiter is no longer waiting.
    pub fn offer(&self, value: T) -> Result<(), T> {
        if self.claim() {
            self.fill(value)
        } else {
            Err(value)
        }
    }

    /// Polls for the delivered value.
    pub fn poll_take(&self, cx: &mut Context<'_>) -> Poll<T> {
        let mut slot = self.slot.lock();
        if let Some(value) = slot.value.take() {
            return Poll::Ready(value);
        }
        match &slot.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => slot.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Takes a delivered value without waiting.
    pub fn try_take(&self) -> Option<T> {
        self.slot.lock().value.take()
    }

    /// The request is leaving. Returns `None` when it was still waiting (nobody will serve it
    /// now), or `Some(undelivered)` when it had been claimed: `Some(Some(value))` if the value
    /// already arrived (the caller must return it), `Some(None)` if the filler will get it back.
    pub fn cancel(&self) -> Option<Option<T>> {
        if self
            .state
            .compare_exchange(WAITING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return None;
        }
        let mut slot = self.slot.lock();
        slot.closed = true;
        slot.waker = None;
        Some(slot.value.take())
    }
}

impl<T> fmt::Debug for Waiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state.load(Ordering::Relaxed) {
            WAITING => "waiting",
            CLAIMED => "claimed",
            _ => "cancelled",
        };
        f.debug_struct("Waiter")
            .field("seq", &self.seq)
            .field("requirement", &self.requirement)
            .field("state", &state)
            .finish()
    }
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    struct CountingWaker(AtomicUsize);
    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn fill_wakes_and_take_receives() {
        let w = Waiter::new(1, Requirement::Any, None);
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(w.poll_take(&mut cx).is_pending());
        assert!(w.claim());
        assert!(!w.claim(), "only one claim succeeds");
        assert_eq!(w.fill(7), Ok(()));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(w.poll_take(&mut cx), Poll::Ready(7));
    }

    #[test]
    fn cancel_before_claim_makes_claims_fail() {
        let w = Waiter::<u32>::new(1, Requirement::Any, None);
        assert_eq!(w.cancel(), None);
        assert!(!w.is_waiting());
        assert_eq!(w.offer(3), Err(3));
    }

    #[test]
    fn cancel_after_fill_returns_the_value() {
        let w = Waiter::new(1, Requirement::Any, None);
        assert_eq!(w.offer(5), Ok(()));
        assert_eq!(w.cancel(), Some(Some(5)));
    }

    #[test]
    fn fill_after_cancel_hands_the_value_back() {
        let w = Waiter::new(1, Requirement::Any, None);
        assert!(w.claim());
        assert_eq!(w.cancel(), Some(None));
        assert_eq!(w.fill(9), Err(9));
    }

    #[test]
    fn launched_is_marked_once() {
        let w = Waiter::<()>::new(1, Requirement::Http2, None);
        assert!(!w.is_launched());
        assert!(w.mark_launched());
        assert!(!w.mark_launched());
        assert!(w.is_launched());
        assert_eq!(w.requirement(), Requirement::Http2);
    }
}
