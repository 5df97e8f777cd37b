//! The scripts: what the server does on each stream (`StreamPlan`) and on each connection
//! (`H2ConnPlan`: settings aside, GOAWAYs and when they fire).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http::header::{HeaderMap, HeaderName, HeaderValue};

pub(super) use ::h2::Reason;

use crate::gate::{Gate, Signal, Wait};

use super::H2Request;

/// One step of a stream plan.
#[derive(Debug, Clone)]
pub(super) enum StreamStep {
    Wait(Wait),
    Head {
        status: StatusCode,
        headers: HeaderMap,
    },
    Data(Bytes),
    Trailers(HeaderMap),
    End,
    Reset(Reason),
}

/// The script of one HTTP/2 stream (the server side of one request): a timeline of steps.
///
/// ```
/// use pool_tests::h2::{Reason, StreamPlan};
/// use pool_tests::gate::Gate;
/// let hold = Gate::new();
/// let ok = StreamPlan::ok("hello");                              // 200, body, END_STREAM
/// let refused = StreamPlan::reset(Reason::REFUSED_STREAM);       // RST_STREAM, no response
/// let split = StreamPlan::new().head(200).data("a").gate(hold).data("b"); // ends implicitly
/// # drop((ok, refused, split));
/// ```
///
/// When the steps run out, a stream whose head was sent is ended with an empty `DATA` frame
/// carrying `END_STREAM`; a stream with no head and no reset is an error (recorded, and the
/// stream is reset with `INTERNAL_ERROR`). After the stream ended or was reset, waits still run,
/// `end()` and `rst()` do nothing, and `head()`, `data()` or `trailers()` are recorded as script
/// errors.
#[derive(Debug, Clone, Default)]
pub struct StreamPlan {
    pub(super) steps: Vec<StreamStep>,
}

impl StreamPlan {
    /// An empty plan (add steps).
    pub fn new() -> Self {
        Self::default()
    }

    /// `200` with `body`, then `END_STREAM` (on the last DATA frame, or on HEADERS if the body is
    /// empty).
    pub fn ok(body: impl Into<Bytes>) -> Self {
        Self::status(200).with_body(body)
    }

    /// A response with `status` and no body.
    ///
    /// # Panics
    ///
    /// If `status` is not a valid status code.
    pub fn status(status: u16) -> Self {
        Self::new().head(status).end()
    }

    /// `200` whose body is split at `gate`: HEADERS and `first` are sent, then the server waits
    /// for the gate, then sends `rest` with `END_STREAM`.
    pub fn ok_split(first: impl Into<Bytes>, gate: Gate, rest: impl Into<Bytes>) -> Self {
        Self::new()
            .head(200)
            .data(first)
            .gate(gate)
            .data(rest)
            .end()
    }

    /// `RST_STREAM(reason)` instead of a response.
    pub fn reset(reason: Reason) -> Self {
        Self::new().rst(reason)
    }

    /// Replaces the body of this plan's response with `body` (for [`status`](Self::status)-built
    /// plans): the data goes between the head and the end.
    pub(super) fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        let body = body.into();
        if !body.is_empty() {
            let at = self
                .steps
                .iter()
                .position(|s| matches!(s, StreamStep::End))
                .unwrap_or(self.steps.len());
            self.steps.insert(at, StreamStep::Data(body));
        }
        self
    }

    /// Sends the response head with `status`.
    ///
    /// # Panics
    ///
    /// If `status` is not a valid status code.
    pub fn head(mut self, status: u16) -> Self {
        let status = StatusCode::from_u16(status).expect("invalid status code");
        self.steps.push(StreamStep::Head {
            status,
            headers: HeaderMap::new(),
        });
        self
    }

    /// Adds a header to the most recent head in this plan.
    ///
    /// # Panics
    ///
    /// If the plan has no head yet, or the name or value is invalid.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("header name");
        let value = HeaderValue::from_str(value).expect("header value");
        let head = self.steps.iter_mut().rev().find_map(|s| match s {
            StreamStep::Head { headers, .. } => Some(headers),
            _ => None,
        });
        head.expect("header() needs a head() first")
            .append(name, value);
        self
    }

    /// Sends a DATA frame (buffered by h2 until the client's window allows it).
    pub fn data(mut self, data: impl Into<Bytes>) -> Self {
        self.steps.push(StreamStep::Data(data.into()));
        self
    }

    /// Sends trailers (this ends the stream).
    pub fn trailers(mut self, trailers: HeaderMap) -> Self {
        self.steps.push(StreamStep::Trailers(trailers));
        self
    }

    /// Ends the stream (`END_STREAM`).
    pub fn end(mut self) -> Self {
        self.steps.push(StreamStep::End);
        self
    }

    /// Resets the stream with `reason` at this point (before the head: instead of a response;
    /// after it: mid-body).
    pub fn rst(mut self, reason: Reason) -> Self {
        self.steps.push(StreamStep::Reset(reason));
        self
    }

    /// Waits `delay` here (`tokio::time::sleep`, so paused time applies).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.steps.push(StreamStep::Wait(Wait::Delay(delay)));
        self
    }

    /// Waits for `gate` here.
    pub fn gate(mut self, gate: Gate) -> Self {
        self.steps.push(StreamStep::Wait(Wait::Gate(gate)));
        self
    }

    /// Raises `signal` here.
    pub fn signal(mut self, signal: Signal) -> Self {
        self.steps.push(StreamStep::Wait(Wait::Signal(signal)));
        self
    }

    /// Waits `delay` before everything else (e.g. `StreamPlan::ok("x").after_delay(d)`).
    pub fn after_delay(mut self, delay: Duration) -> Self {
        self.steps.insert(0, StreamStep::Wait(Wait::Delay(delay)));
        self
    }

    /// Waits for `gate` before everything else (e.g. `StreamPlan::ok("x").after_gate(g)`).
    pub fn after_gate(mut self, gate: Gate) -> Self {
        self.steps.insert(0, StreamStep::Wait(Wait::Gate(gate)));
        self
    }

    /// Raises `signal` before everything else.
    pub fn after_signal(mut self, signal: Signal) -> Self {
        self.steps.insert(0, StreamStep::Wait(Wait::Signal(signal)));
        self
    }
}

/// When a connection-level action fires.
#[derive(Debug, Clone)]
pub(super) enum Trigger {
    /// Right after the `n`-th stream is accepted (`0`: right after the handshake).
    AfterStreams(usize),
    /// When the gate opens.
    Gate(Gate),
}

/// Which GOAWAY to send.
#[derive(Debug, Clone, Copy)]
pub(super) enum GoAway {
    /// `graceful_shutdown()`: in-flight streams finish, then the connection closes.
    Graceful,
    /// `abrupt_shutdown(reason)`: GOAWAY with the error code, then the connection closes.
    Abrupt(Reason),
}

/// The script of one HTTP/2 connection: stream plans in accept order and connection actions.
///
/// ```
/// use pool_tests::h2::{H2ConnPlan, StreamPlan};
/// let plan = H2ConnPlan::new()
///     .default_stream(StreamPlan::ok("hi"))
///     .graceful_goaway_after(2); // the 2nd stream is served, then GOAWAY
/// # drop(plan);
/// ```
#[derive(Debug, Clone, Default)]
pub struct H2ConnPlan {
    pub(super) streams: Vec<StreamPlan>,
    pub(super) default_stream: Option<StreamPlan>,
    pub(super) before_handshake: Vec<Wait>,
    pub(super) actions: Vec<(Trigger, GoAway)>,
}

impl H2ConnPlan {
    /// A plan with no stream plans and no actions (streams fall back to the server's handler).
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the plan for the next stream accepted on this connection.
    pub fn stream(mut self, plan: StreamPlan) -> Self {
        self.streams.push(plan);
        self
    }

    /// Appends stream plans, in accept order.
    pub fn streams(mut self, plans: impl IntoIterator<Item = StreamPlan>) -> Self {
        self.streams.extend(plans);
        self
    }

    /// The plan for streams beyond the listed ones on this connection.
    pub fn default_stream(mut self, plan: StreamPlan) -> Self {
        self.default_stream = Some(plan);
        self
    }

    /// Waits for `gate` before the HTTP/2 handshake (after TLS): the client's SETTINGS go
    /// unanswered until the test opens it.
    pub fn handshake_gate(mut self, gate: Gate) -> Self {
        self.before_handshake.push(Wait::Gate(gate));
        self
    }

    /// Waits `delay` before the HTTP/2 handshake.
    pub fn handshake_delay(mut self, delay: Duration) -> Self {
        self.before_handshake.push(Wait::Delay(delay));
        self
    }

    /// Starts a graceful shutdown (GOAWAY; in-flight streams finish) right after the `n`-th
    /// stream is accepted (`0`: right after the handshake). Streams the client opened before it
    /// saw the GOAWAY are still served.
    pub fn graceful_goaway_after(mut self, n: usize) -> Self {
        self.actions
            .push((Trigger::AfterStreams(n), GoAway::Graceful));
        self
    }

    /// Starts a graceful shutdown when `gate` opens.
    pub fn graceful_goaway_on(mut self, gate: Gate) -> Self {
        self.actions.push((Trigger::Gate(gate), GoAway::Graceful));
        self
    }

    /// Sends GOAWAY with `reason` and closes the connection right after the `n`-th stream is
    /// accepted (`0`: right after the handshake); in-flight streams fail.
    pub fn abrupt_goaway_after(mut self, n: usize, reason: Reason) -> Self {
        self.actions
            .push((Trigger::AfterStreams(n), GoAway::Abrupt(reason)));
        self
    }

    /// Sends GOAWAY with `reason` and closes the connection when `gate` opens.
    pub fn abrupt_goaway_on(mut self, gate: Gate, reason: Reason) -> Self {
        self.actions
            .push((Trigger::Gate(gate), GoAway::Abrupt(reason)));
        self
    }
}

/// Computes a stream plan from the received request.
pub(super) type StreamFn = Arc<dyn Fn(&H2Request) -> StreamPlan + Send + Sync>;
