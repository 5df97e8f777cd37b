//! `Expect: 100-continue` (RFC 9110 §10.1.1): a request body held back until the server says
//! it wants it.
//!
//! hyper's HTTP/1 client writes a request's body right after its head whatever the request's
//! `Expect` header says. A [`ContinueGate`] is the shared state that lets the body wait:
//!
//! ```text
//!              100 Continue, or the wait ran out
//!   Waiting ──────────────────────────────────────► Open      (the body flows)
//!      │
//!      │ a final response came first
//!      ▼
//!   Refused ───── the response was read to its end, or dropped ─────► Aborted
//!   (the body stays back;                                             (the body ends with an
//!    the connection will retire)                                       error: hyper closes)
//! ```
//!
//! The pool owns both ends. Its request body wrapper polls the gate (and its own timer) before
//! it yields a byte; its `hyper::ext::on_informational` hook opens the gate on `100 Continue`;
//! the [`ExchangeGuard`](crate::ExchangeGuard) refuses it when the final response arrives while
//! the gate is still waiting, and aborts it once that response is over. A refused request's
//! body is never sent, so the connection's framing is broken: it retires as
//! [`CloseReason::IncompleteH1Exchange`](pool_core::CloseReason::IncompleteH1Exchange). The
//! abort waits for the end of the response because hyper ends a response body still being
//! read with an error when the request body fails; aborting at the end loses no byte of it.
//!
//! What this module does not do: decide which requests wait or for how long (the pool does),
//! or run a timer (the body wrapper does, with the pool's clock).

use std::task::{Context, Waker};

use pool_core::sync::{Mutex, MutexGuard};

/// Where a held-back body stands (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateState {
    /// Neither `100 Continue` nor a final response has come, and the wait has not run out.
    Waiting,
    /// The body may go.
    Open,
    /// A final response came first; the body waits for the abort.
    Refused,
    /// The response is over: the body ends with an error so that hyper closes the connection.
    Aborted,
}

/// The state one held-back request body shares with the exchange it belongs to.
#[derive(Debug)]
pub struct ContinueGate {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: GateState,
    // The body's task, parked while the state is `Waiting` or `Refused`.
    waker: Option<Waker>,
}

impl Default for ContinueGate {
    fn default() -> Self {
        ContinueGate::new()
    }
}

impl ContinueGate {
    /// A gate that is waiting.
    pub fn new() -> ContinueGate {
        ContinueGate {
            inner: Mutex::new(Inner {
                state: GateState::Waiting,
                waker: None,
            }),
        }
    }

    /// `100 Continue` arrived, or the wait ran out: the body may go, unless a final response
    /// already refused it. Returns whether the gate opened now.
    pub fn open(&self) -> bool {
        self.step(GateState::Waiting, GateState::Open)
    }

    /// The final response arrived. Returns whether the gate was still waiting, in which case
    /// the body will never be sent and the connection must retire.
    pub fn refuse(&self) -> bool {
        self.step(GateState::Waiting, GateState::Refused)
    }

    /// The refused exchange's response is over: the body ends with an error.
    pub fn abort(&self) {
        self.step(GateState::Refused, GateState::Aborted);
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
        let waker = {
            let mut inner = self.lock();
            if inner.state != from {
                return false;
            }
            inner.state = to;
            inner.waker.take()
        };
        // Woken outside the lock: the body's task may run on this thread at once.
        if let Some(waker) = waker {
            waker.wake();
        }
        true
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
        let gate = ContinueGate::new();
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
        let gate = ContinueGate::new();
        assert!(gate.open());
        assert!(!gate.refuse());
        gate.abort();
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(gate.poll_state(&mut cx), GateState::Open);
    }
}
