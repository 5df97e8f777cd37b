//! A request body that the response can hold back or stop: `Expect: 100-continue` (RFC 9110
//! §10.1.1), and an upload the server refused before it was all sent (RFC 9112 §9.5).
//!
//! hyper's HTTP/1 client writes a request's body right after its head, whatever the request's
//! `Expect` header says, and goes on writing it after the server has answered. A [`BodyGate`]
//! is the state the pool's body wrapper shares with the exchange, so that the body can wait for
//! the go-ahead and stop when the answer is a refusal:
//!
//! ```text
//!              100 Continue, or the wait ran out              the last byte went
//!   Waiting ─────────────────────────────────────► Open ─────────────────────────► Sent
//!      │                                             │
//!      │ a final response came first                 │ a final response of 300 or above
//!      ▼                                             ▼ came first
//!   Refused ◄────────────────────────────────────────┘
//!   (the body stays back; the connection will retire)
//!      │
//!      │ the response was read to its end, or dropped
//!      ▼
//!   Aborted   (the body ends with an error: hyper closes the connection)
//! ```
//!
//! A gate for `Expect` starts `Waiting`; one for a body that goes at once starts `Open`. The
//! pool owns both ends. Its body wrapper polls the gate (and its own timer) before it yields a
//! byte, and hands every piece over through [`BodyGate::hand_over`], which counts it; its
//! `hyper::ext::on_informational` hook opens the gate on `100 Continue`; the
//! [`ExchangeGuard`](crate::ExchangeGuard) refuses or stops the body when the final response
//! arrives first, and aborts it once that response is over. Either way the body the head
//! announced is not all sent, so the connection's framing is broken: it retires as
//! [`CloseReason::IncompleteH1Exchange`](pool_core::CloseReason::IncompleteH1Exchange). The
//! abort waits for the end of the response because hyper ends a response body still being read
//! with an error when the request body fails; aborting at the end loses no byte of it. (Over
//! HTTP/2 the pool's response body aborts the gate itself, and the stream's reset leaves the
//! connection serving.)
//!
//! A response that came while the body was still going and did not stop it can be waited on
//! to know when the body went ([`BodyGate::poll_settled`]): the exchange is over (the
//! connection went home, which hyper allows only once the body's end was written, or
//! retired), or the body was dropped before its end.
//!
//! What this module does not do: decide which requests get a gate, which statuses stop a body,
//! or how long a body waits (the pool does), or run a timer (the body wrapper does, with the
//! pool's clock).

use std::task::{Context, Poll, Waker};

use pool_core::sync::{Mutex, MutexGuard};

/// Where a gated body stands (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateState {
    /// Neither `100 Continue` nor a final response has come, and the wait has not run out.
    Waiting,
    /// The body may go.
    Open,
    /// The body's last piece went: there is nothing left to stop.
    Sent,
    /// A final response came first; the body waits for the abort.
    Refused,
    /// The response is over: the body ends with an error so that hyper closes the connection
    /// (HTTP/1) or resets the stream (HTTP/2).
    Aborted,
}

/// The state one gated request body shares with the exchange it belongs to.
#[derive(Debug)]
pub struct BodyGate {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: GateState,
    /// The body bytes handed to hyper while the gate was open.
    sent: u64,
    // The body's task, parked while the state is `Waiting` or `Refused`.
    waker: Option<Waker>,
    /// The body was dropped (hyper let go of it: its end went, or the connection ended).
    dropped: bool,
    /// The exchange is over: its response ended and its connection went home or retired.
    over: bool,
    // Tasks waiting for the body to settle (`poll_settled`).
    watchers: Vec<Waker>,
    /// Kept until the body is dropped ([`BodyGate::keep_until_body_dropped`]).
    kept: Option<Kept>,
}

/// Something the gate keeps for as long as the body lives, held for what its drop does.
struct Kept {
    _value: Box<dyn Send + Sync>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kept")
    }
}

impl Inner {
    /// Whether the body has gone as far as it will: the exchange is over, or no more of the
    /// body will go (refused, stopped, or dropped before its end).
    fn settled(&self) -> bool {
        self.over
            || matches!(self.state, GateState::Refused | GateState::Aborted)
            || (self.dropped && self.state != GateState::Sent)
    }

    /// The watchers to wake once the body settled.
    fn settled_watchers(&mut self) -> Vec<Waker> {
        match self.settled() {
            true => std::mem::take(&mut self.watchers),
            false => Vec::new(),
        }
    }
}

impl BodyGate {
    /// A gate that waits for `100 Continue`.
    pub fn waiting() -> BodyGate {
        BodyGate::starting(GateState::Waiting)
    }

    /// A gate that is open from the start: it only stops the body.
    pub fn flowing() -> BodyGate {
        BodyGate::starting(GateState::Open)
    }

    fn starting(state: GateState) -> BodyGate {
        BodyGate {
            inner: Mutex::new(Inner {
                state,
                sent: 0,
                waker: None,
                dropped: false,
                over: false,
                watchers: Vec::new(),
                kept: None,
            }),
        }
    }

    /// `100 Continue` arrived, or the wait ran out: the body may go, unless a final response
    /// already refused it. Returns whether the gate opened now.
    pub fn open(&self) -> bool {
        self.step(GateState::Waiting, GateState::Open)
    }

    /// The final response arrived while the body waited. Returns whether the gate was still
    /// waiting, in which case the body will never be sent and the connection must retire.
    pub fn refuse(&self) -> bool {
        self.step(GateState::Waiting, GateState::Refused)
    }

    /// A final response that refuses the body arrived while it was going: no further byte goes,
    /// and the connection must retire. Returns the bytes handed over until then, or `None` if
    /// the body was not going (still waiting, or already all sent).
    pub fn stop(&self) -> Option<u64> {
        self.change(|inner| {
            if inner.state != GateState::Open {
                return None;
            }
            inner.state = GateState::Refused;
            // The body's task is not woken: it has nothing to do until the abort.
            Some(inner.sent)
        })
    }

    /// The refused or stopped exchange's response is over: the body ends with an error.
    pub fn abort(&self) {
        self.step(GateState::Refused, GateState::Aborted);
    }

    /// The body is about to yield `len` more bytes: true, and they are counted, if the gate is
    /// open. Otherwise (a response stopped the body since the state was read) the bytes must
    /// not go, and `cx`'s task is woken when the state moves on.
    pub fn hand_over(&self, len: usize, cx: &mut Context<'_>) -> bool {
        let mut inner = self.lock();
        if inner.state == GateState::Open {
            inner.sent += len as u64;
            return true;
        }
        inner.waker = Some(cx.waker().clone());
        false
    }

    /// The body yielded its last piece: a response can no longer stop it.
    pub fn sent_all(&self) {
        self.change(|inner| {
            if inner.state == GateState::Open {
                inner.state = GateState::Sent;
            }
        });
    }

    /// The body was dropped, whether or not it had all gone: nothing more of it will. What the
    /// gate kept for the body's life is dropped now.
    pub fn body_dropped(&self) {
        let kept = self.change(|inner| {
            inner.dropped = true;
            inner.kept.take()
        });
        // Dropped outside the gate's lock: it may take other locks (a stream guard tells its
        // cell that a stream ended).
        drop(kept);
    }

    /// Keeps `value` until the body is dropped (hyper let go of it), or drops it now if the
    /// body is gone already. For what must last as long as the body's part of the exchange:
    /// over HTTP/2, h2 keeps a stream open while hyper still holds its request body, however
    /// long ago the response ended (a body waiting for flow-control window that the server
    /// never gives), and the pool counts the stream until then too.
    pub fn keep_until_body_dropped(&self, value: Box<dyn Send + Sync>) {
        let value = self.change(|inner| {
            if inner.dropped {
                return Some(value);
            }
            inner.kept = Some(Kept { _value: value });
            None
        });
        drop(value);
    }

    /// Whether the body was dropped: hyper let go of it (see [`body_dropped`](Self::body_dropped)).
    pub fn is_body_dropped(&self) -> bool {
        self.lock().dropped
    }

    /// The body bytes handed over so far.
    pub fn handed_over(&self) -> u64 {
        self.lock().sent
    }

    /// The exchange is over: the response ended and the connection went home (so hyper wrote
    /// the body's end) or retired.
    pub fn exchange_over(&self) {
        self.change(|inner| inner.over = true);
    }

    /// Ready, with the bytes handed over, once the body has gone as far as it will: the
    /// exchange is over, or the body was refused, stopped, or dropped before its end. Until
    /// then `cx`'s task is woken when that changes (any number of tasks may wait).
    pub fn poll_settled(&self, cx: &mut Context<'_>) -> Poll<u64> {
        let mut inner = self.lock();
        if inner.settled() {
            return Poll::Ready(inner.sent);
        }
        if !inner.watchers.iter().any(|w| w.will_wake(cx.waker())) {
            inner.watchers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The state now; while it is `Waiting` or `Refused`, `cx`'s task is woken when it moves.
    pub fn poll_state(&self, cx: &mut Context<'_>) -> GateState {
        let mut inner = self.lock();
        if matches!(inner.state, GateState::Waiting | GateState::Refused) {
            inner.waker = Some(cx.waker().clone());
        }
        inner.state
    }

    /// The state now, without waiting.
    pub fn state(&self) -> GateState {
        self.lock().state
    }

    /// Moves from `from` to `to` and wakes the body; false if the state was not `from`.
    fn step(&self, from: GateState, to: GateState) -> bool {
        let moved = self.change(|inner| {
            if inner.state != from {
                return None;
            }
            inner.state = to;
            Some(inner.waker.take())
        });
        // Woken outside the lock: the body's task may run on this thread at once.
        match moved {
            Some(waker) => {
                if let Some(waker) = waker {
                    waker.wake();
                }
                true
            }
            None => false,
        }
    }

    /// Applies `change` under the lock, then wakes, outside it, the watchers it settled the
    /// body for.
    fn change<R>(&self, change: impl FnOnce(&mut Inner) -> R) -> R {
        let (result, watchers) = {
            let mut inner = self.lock();
            let result = change(&mut inner);
            (result, inner.settled_watchers())
        };
        watchers.into_iter().for_each(Waker::wake);
        result
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_response_first_keeps_the_body_back_until_the_abort() {
        let gate = BodyGate::waiting();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(gate.poll_state(&mut cx), GateState::Waiting);
        assert!(gate.refuse());
        assert!(!gate.open(), "a refused body never opens");
        assert_eq!(gate.poll_state(&mut cx), GateState::Refused);
        gate.abort();
        assert_eq!(gate.poll_state(&mut cx), GateState::Aborted);
    }

    #[test]
    fn an_open_gate_is_not_refused_by_the_response() {
        let gate = BodyGate::waiting();
        assert!(gate.open());
        assert!(!gate.refuse());
        gate.abort();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(gate.poll_state(&mut cx), GateState::Open);
    }

    #[test]
    fn a_refusal_while_the_body_goes_stops_it_and_counts_what_went() {
        let gate = BodyGate::flowing();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(gate.hand_over(10, &mut cx));
        assert!(gate.hand_over(5, &mut cx));
        assert!(
            !gate.refuse(),
            "a body already going is stopped, not refused"
        );
        assert_eq!(gate.stop(), Some(15));
        assert_eq!(gate.stop(), None, "stopped once");
        assert!(!gate.hand_over(7, &mut cx), "nothing goes after the stop");
        assert_eq!(gate.poll_state(&mut cx), GateState::Refused);
        gate.abort();
        assert_eq!(gate.state(), GateState::Aborted);
    }

    #[test]
    fn a_watcher_learns_when_the_exchange_is_over_or_the_body_was_cut() {
        let gate = BodyGate::flowing();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(gate.hand_over(4, &mut cx));
        assert_eq!(gate.poll_settled(&mut cx), Poll::Pending);
        assert!(gate.hand_over(2, &mut cx));
        gate.sent_all();
        gate.body_dropped();
        assert_eq!(
            gate.poll_settled(&mut cx),
            Poll::Pending,
            "all handed over, maybe not yet written"
        );
        gate.exchange_over();
        assert_eq!(gate.poll_settled(&mut cx), Poll::Ready(6));

        let cut = BodyGate::flowing();
        assert!(cut.hand_over(1, &mut cx));
        cut.body_dropped();
        assert_eq!(cut.poll_settled(&mut cx), Poll::Ready(1));
    }

    #[test]
    fn a_body_sent_whole_cannot_be_stopped() {
        let gate = BodyGate::flowing();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(gate.hand_over(3, &mut cx));
        gate.sent_all();
        assert_eq!(gate.stop(), None);
        gate.abort();
        assert_eq!(gate.state(), GateState::Sent);
        // Nor is a body that still waits for `100 Continue` (that is a refusal).
        assert_eq!(BodyGate::waiting().stop(), None);
    }
}
