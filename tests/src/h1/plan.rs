//! A connection's script: the ordered steps one accepted connection runs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::gate::{Gate, Signal, Wait};

use super::{RecordedRequest, Reply};

/// A per-request reply function for [`ConnPlan::serve_with`].
pub(super) type ReplyFn = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

/// One step of a connection plan.
#[derive(Clone)]
pub(super) enum Step {
    /// Read one full request and record it.
    ReadRequest,
    /// Write a reply without reading.
    Reply(Reply),
    /// Read one request, record it, write the reply.
    Respond(Reply),
    /// Delay, gate or signal.
    Wait(Wait),
    /// Write bytes verbatim.
    WriteRaw(Bytes),
    /// Shut down the write side (FIN); reading continues.
    HalfClose,
    /// Close cleanly; ends the plan.
    Close,
    /// Abort with RST; ends the plan.
    Reset,
    /// Echo bytes back until EOF; ends the plan.
    Echo,
    /// Answer every request the same way until EOF; ends the plan.
    ServeForever(Reply),
    /// Answer every request with a computed reply until EOF; ends the plan.
    ServeWith(ReplyFn),
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::ReadRequest => f.write_str("ReadRequest"),
            Step::Reply(r) => f.debug_tuple("Reply").field(r).finish(),
            Step::Respond(r) => f.debug_tuple("Respond").field(r).finish(),
            Step::Wait(w) => f.debug_tuple("Wait").field(w).finish(),
            Step::WriteRaw(b) => f.debug_tuple("WriteRaw").field(b).finish(),
            Step::HalfClose => f.write_str("HalfClose"),
            Step::Close => f.write_str("Close"),
            Step::Reset => f.write_str("Reset"),
            Step::Echo => f.write_str("Echo"),
            Step::ServeForever(r) => f.debug_tuple("ServeForever").field(r).finish(),
            Step::ServeWith(_) => f.write_str("ServeWith(..)"),
        }
    }
}

/// The script of one HTTP/1 connection: ordered steps, built fluently.
///
/// ```
/// use pool_tests::h1::{ConnPlan, Reply};
/// use pool_tests::gate::Gate;
/// let release = Gate::new();
/// let plan = ConnPlan::new()
///     .respond(Reply::ok("first"))
///     .respond(Reply::ok("second").gate(release.clone())) // read, park, then answer
///     .close();
/// # drop(plan);
/// ```
///
/// After the last step the server keeps reading: a client EOF ends the connection quietly,
/// another request is recorded in [`ScriptedH1Server::errors`](super::ScriptedH1Server::errors) as plan exhaustion and the
/// connection is closed. Steps after one that ends the connection (`close`, `reset`, `echo`,
/// `serve_*`, a reply with `then_close`/`then_reset`) never run.
#[derive(Debug, Clone, Default)]
pub struct ConnPlan {
    pub(super) steps: Vec<Step>,
}

impl ConnPlan {
    /// An empty plan: the connection is kept open until the client closes it, and any request
    /// is plan exhaustion.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers every request with `reply` (keep-alive) until the client closes.
    pub fn serve_forever(reply: Reply) -> Self {
        Self::new().then_serve_forever(reply)
    }

    /// Answers every request with `f(&request)` until the client closes.
    pub fn serve_with(f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> Self {
        Self::new().then_serve_with(f)
    }

    /// Answers `n` requests with `reply`, then closes the connection (FIN).
    pub fn close_after(n: usize, reply: Reply) -> Self {
        Self::new().respond_n(n, reply).close()
    }

    /// Reads one request (with its body), records it, writes `reply`. If the client closes
    /// instead, the connection ends quietly.
    pub fn respond(mut self, reply: Reply) -> Self {
        self.steps.push(Step::Respond(reply));
        self
    }

    /// [`respond`](Self::respond) `n` times with the same reply.
    pub fn respond_n(mut self, n: usize, reply: Reply) -> Self {
        for _ in 0..n {
            self.steps.push(Step::Respond(reply.clone()));
        }
        self
    }

    /// Reads one request and records it, without replying.
    pub fn read_request(mut self) -> Self {
        self.steps.push(Step::ReadRequest);
        self
    }

    /// Writes `reply` without reading a request first (after [`read_request`](Self::read_request),
    /// or for an unsolicited response).
    pub fn reply(mut self, reply: Reply) -> Self {
        self.steps.push(Step::Reply(reply));
        self
    }

    /// Sleeps (`tokio::time::sleep`, so paused time applies).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.steps.push(Step::Wait(Wait::Delay(delay)));
        self
    }

    /// Parks until the test opens `gate`.
    pub fn gate(mut self, gate: Gate) -> Self {
        self.steps.push(Step::Wait(Wait::Gate(gate)));
        self
    }

    /// Raises `signal` (tells the test this point was reached).
    pub fn signal(mut self, signal: Signal) -> Self {
        self.steps.push(Step::Wait(Wait::Signal(signal)));
        self
    }

    /// Writes `bytes` verbatim.
    pub fn write_raw(mut self, bytes: impl Into<Bytes>) -> Self {
        self.steps.push(Step::WriteRaw(bytes.into()));
        self
    }

    /// Shuts down the write side (the client reads EOF); the server can still read.
    pub fn half_close(mut self) -> Self {
        self.steps.push(Step::HalfClose);
        self
    }

    /// Closes the connection cleanly (FIN, then close). If the client sent bytes the server has
    /// not read, the kernel turns the close into a reset.
    pub fn close(mut self) -> Self {
        self.steps.push(Step::Close);
        self
    }

    /// Aborts the connection with a TCP RST (zero linger, then close).
    pub fn reset(mut self) -> Self {
        self.steps.push(Step::Reset);
        self
    }

    /// Echoes every byte back until the client closes (for upgraded connections).
    pub fn echo(mut self) -> Self {
        self.steps.push(Step::Echo);
        self
    }

    /// Continues with [`serve_forever`](Self::serve_forever).
    pub fn then_serve_forever(mut self, reply: Reply) -> Self {
        self.steps.push(Step::ServeForever(reply));
        self
    }

    /// Continues with [`serve_with`](Self::serve_with).
    pub fn then_serve_with(
        mut self,
        f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.steps.push(Step::ServeWith(Arc::new(f)));
        self
    }
}
