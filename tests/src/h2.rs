//! A scripted HTTP/2 peer on loopback, built on `h2::server` (h2c by default, TLS + ALPN `h2`
//! with [`H2ServerBuilder::tls`]).
//!
//! Each connection runs an [`H2ConnPlan`]: connection-level actions (graceful GOAWAY after `n`
//! streams or when a gate opens, abrupt GOAWAY with an error code, a gate before the handshake)
//! and a [`StreamPlan`] per stream, taken in accept order on that connection. A stream plan is a
//! timeline: wait (delay, gate, signal), send the head, send data (possibly split by gates), send
//! trailers, end, or reset with a chosen [`Reason`] instead of (or in the middle of) responding.
//!
//! ```text
//! stream k of connection i:  conn plan i (or the default plan) .streams[k]
//!                            -> that plan's default stream
//!                            -> the server's handler / default stream
//!                            -> none: error "no stream plan", RST_STREAM(INTERNAL_ERROR)
//! ```
//!
//! The server reads each request body completely (releasing flow-control capacity as it goes),
//! records the request, then runs the stream plan. While a plan waits, the server watches for the
//! client resetting the stream; such resets are recorded with their reason
//! ([`ScriptedH2Server::client_resets`]), which is how a test checks that dropping a response
//! body sends `RST_STREAM(CANCEL)`: keep the stream open with a gate and drop the body.
//!
//! What this module does not do: server push, priorities, pings, or responding before the request
//! body is complete. Resets that arrive after the server has ended the stream are not observed.
//! A stream reset by h2 itself because the client broke the protocol on it may be recorded as a
//! client reset; resets caused by a GOAWAY or a dead connection are not.

use std::fmt;
use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use ::h2::server::{Connection, SendResponse};
use ::h2::{RecvStream, SendStream};
use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use ::h2::Reason;

use crate::counters::{Log, Shared, lock};
use crate::gate::{Gate, Signal, Wait};
use crate::server::{CoreConfig, ServeFn, ServerCore, ServerIo, common_server_methods};

/// One request (stream) as the scripted H2 server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Request {
    /// The connection it arrived on (0-based accept order).
    pub conn_id: u64,
    /// The HTTP/2 stream id.
    pub stream_id: u32,
    /// Its position among the streams accepted on that connection (0-based).
    pub index: usize,
    /// `:method`.
    pub method: Method,
    /// `:scheme`, `:authority` and `:path` as a URI.
    pub uri: Uri,
    /// Regular header fields.
    pub headers: HeaderMap,
    /// The complete request body.
    pub body: Bytes,
    /// Request trailers, if any.
    pub trailers: Option<HeaderMap>,
}

impl H2Request {
    /// `:path` (with query), `/` if absent.
    pub fn path(&self) -> &str {
        self.uri.path_and_query().map_or("/", |p| p.as_str())
    }

    /// `:authority`, if present.
    pub fn authority(&self) -> Option<&str> {
        self.uri.authority().map(|a| a.as_str())
    }

    /// The first value of header `name`, if present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A stream reset by the client (`RST_STREAM` received while the server was still working on
/// the stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamReset {
    /// The connection.
    pub conn_id: u64,
    /// The stream id.
    pub stream_id: u32,
    /// The error code the client sent.
    pub reason: Reason,
}

/// One step of a stream plan.
#[derive(Debug, Clone)]
enum StreamStep {
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
    steps: Vec<StreamStep>,
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
    fn with_body(mut self, body: impl Into<Bytes>) -> Self {
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
enum Trigger {
    /// Right after the `n`-th stream is accepted (`0`: right after the handshake).
    AfterStreams(usize),
    /// When the gate opens.
    Gate(Gate),
}

/// Which GOAWAY to send.
#[derive(Debug, Clone, Copy)]
enum GoAway {
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
    streams: Vec<StreamPlan>,
    default_stream: Option<StreamPlan>,
    before_handshake: Vec<Wait>,
    actions: Vec<(Trigger, GoAway)>,
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
type StreamFn = Arc<dyn Fn(&H2Request) -> StreamPlan + Send + Sync>;

/// HTTP/2 SETTINGS the server advertises.
#[derive(Debug, Clone, Copy, Default)]
struct Settings {
    max_concurrent_streams: Option<u32>,
    initial_window_size: Option<u32>,
    initial_connection_window_size: Option<u32>,
    max_frame_size: Option<u32>,
}

impl Settings {
    fn builder(&self) -> ::h2::server::Builder {
        let mut b = ::h2::server::Builder::new();
        if let Some(n) = self.max_concurrent_streams {
            b.max_concurrent_streams(n);
        }
        if let Some(n) = self.initial_window_size {
            b.initial_window_size(n);
        }
        if let Some(n) = self.initial_connection_window_size {
            b.initial_connection_window_size(n);
        }
        if let Some(n) = self.max_frame_size {
            b.max_frame_size(n);
        }
        b
    }
}

/// Builder for [`ScriptedH2Server`].
#[derive(Default)]
pub struct H2ServerBuilder {
    core: CoreConfig,
    settings: Settings,
    conn_plans: Vec<H2ConnPlan>,
    default_conn_plan: Option<H2ConnPlan>,
    fallback: Option<StreamFn>,
}

impl fmt::Debug for H2ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("H2ServerBuilder")
            .field("core", &self.core)
            .field("settings", &self.settings)
            .field("conn_plans", &self.conn_plans)
            .field("default_conn_plan", &self.default_conn_plan)
            .field("fallback", &self.fallback.as_ref().map(|_| ".."))
            .finish()
    }
}

impl H2ServerBuilder {
    /// Whether to keep every request for [`ScriptedH2Server::requests`] (default: yes). A long
    /// run turns it off so the server's memory stays flat; requests are still counted.
    pub fn record_requests(mut self, record: bool) -> Self {
        self.core.record_requests = record;
        self
    }

    /// Serves TLS with this configuration; give it ALPN `h2`
    /// (`pki.server_config(&[b"h2"])`). URLs become `https://`.
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.core.tls = Some(config);
        self
    }

    /// Binds here instead of `127.0.0.1:0`.
    pub fn bind_addr(mut self, addr: SocketAddr) -> Self {
        self.core.bind = addr;
        self
    }

    /// Every accepted connection waits for this gate before its TLS handshake.
    pub fn accept_gate(mut self, gate: Gate) -> Self {
        self.core.accept_gate = Some(gate);
        self
    }

    /// SETTINGS_MAX_CONCURRENT_STREAMS (default: unlimited).
    pub fn max_concurrent_streams(mut self, n: u32) -> Self {
        self.settings.max_concurrent_streams = Some(n);
        self
    }

    /// SETTINGS_INITIAL_WINDOW_SIZE: the server's per-stream receive window.
    pub fn initial_window_size(mut self, n: u32) -> Self {
        self.settings.initial_window_size = Some(n);
        self
    }

    /// The server's connection-level receive window (sent as a WINDOW_UPDATE).
    pub fn initial_connection_window_size(mut self, n: u32) -> Self {
        self.settings.initial_connection_window_size = Some(n);
        self
    }

    /// SETTINGS_MAX_FRAME_SIZE.
    pub fn max_frame_size(mut self, n: u32) -> Self {
        self.settings.max_frame_size = Some(n);
        self
    }

    /// Appends a connection plan: the `i`-th plan added runs on connection `i`.
    pub fn conn_plan(mut self, plan: H2ConnPlan) -> Self {
        self.conn_plans.push(plan);
        self
    }

    /// Appends connection plans, in connection order.
    pub fn conn_plans(mut self, plans: impl IntoIterator<Item = H2ConnPlan>) -> Self {
        self.conn_plans.extend(plans);
        self
    }

    /// The plan for connections beyond the listed ones (default: an empty plan, so every stream
    /// goes to the handler).
    pub fn default_conn_plan(mut self, plan: H2ConnPlan) -> Self {
        self.default_conn_plan = Some(plan);
        self
    }

    /// Answers every stream that its connection plan does not script with `plan`. Replaces any
    /// [`handler`](Self::handler).
    pub fn default_stream(self, plan: StreamPlan) -> Self {
        self.handler(move |_| plan.clone())
    }

    /// Answers every stream that its connection plan does not script with `f(&request)` (route
    /// by path, say). Replaces any [`default_stream`](Self::default_stream).
    pub fn handler(mut self, f: impl Fn(&H2Request) -> StreamPlan + Send + Sync + 'static) -> Self {
        self.fallback = Some(Arc::new(f));
        self
    }

    /// Binds and starts accepting.
    ///
    /// # Panics
    ///
    /// If binding fails; use [`try_start`](Self::try_start) to handle that.
    pub async fn start(self) -> ScriptedH2Server {
        self.try_start().await.expect("bind scripted H2 server")
    }

    /// Binds and starts accepting.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound.
    pub async fn try_start(self) -> io::Result<ScriptedH2Server> {
        let records = Arc::new(H2Records::new(self.core.record_requests));
        let ctx = Arc::new(H2Ctx {
            settings: self.settings,
            conn_plans: self.conn_plans,
            default_conn_plan: self.default_conn_plan.unwrap_or_default(),
            fallback: self.fallback,
            records: records.clone(),
        });
        let serve: ServeFn = Arc::new(move |id, io, shared| {
            let ctx = ctx.clone();
            Box::pin(async move { serve_conn(ctx, id, io, shared).await })
        });
        let core = ServerCore::start(self.core, serve).await?;
        Ok(ScriptedH2Server { core, records })
    }
}

/// Stream counts of one connection.
#[derive(Debug, Clone, Copy, Default)]
struct StreamCounts {
    /// Streams accepted.
    accepted: usize,
    /// Streams the server is still working on.
    in_flight: usize,
    /// The largest `in_flight` seen.
    max_in_flight: usize,
}

/// What the H2 server records, beyond the common counters.
#[derive(Debug)]
struct H2Records {
    /// Requests, in the order their bodies completed.
    requests: Log<H2Request>,
    /// Streams the client reset while the server worked on them.
    resets: Log<StreamReset>,
    /// Per connection id; grown by the connection task, changed by stream guards.
    streams: Mutex<Vec<StreamCounts>>,
    /// Total streams accepted, for waiting.
    total_streams: watch::Sender<usize>,
}

impl H2Records {
    fn new(record_requests: bool) -> Self {
        Self {
            requests: if record_requests {
                Log::new()
            } else {
                Log::counting()
            },
            resets: Log::new(),
            streams: Mutex::new(Vec::new()),
            total_streams: watch::Sender::new(0),
        }
    }
}

/// Counts a stream as in flight until dropped.
#[derive(Debug)]
struct InFlight {
    records: Arc<H2Records>,
    conn_id: u64,
}

impl InFlight {
    fn new(records: Arc<H2Records>, conn_id: u64) -> Self {
        {
            let mut streams = lock(&records.streams);
            let idx = conn_id as usize;
            if streams.len() <= idx {
                streams.resize(idx + 1, StreamCounts::default());
            }
            let c = &mut streams[idx];
            c.accepted += 1;
            c.in_flight += 1;
            c.max_in_flight = c.max_in_flight.max(c.in_flight);
        }
        records.total_streams.send_modify(|n| *n += 1);
        Self { records, conn_id }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(c) = lock(&self.records.streams).get_mut(self.conn_id as usize) {
            c.in_flight -= 1;
        }
    }
}

/// Everything a connection task needs, shared by all connections.
struct H2Ctx {
    settings: Settings,
    conn_plans: Vec<H2ConnPlan>,
    default_conn_plan: H2ConnPlan,
    fallback: Option<StreamFn>,
    records: Arc<H2Records>,
}

/// Flags a connection task sets for its stream tasks, so resets caused by the connection going
/// away are not mistaken for client resets.
#[derive(Debug, Default)]
struct ConnFlags {
    /// Set before the server sends an abrupt GOAWAY.
    abrupt: AtomicBool,
    /// Set when the connection ended or failed.
    dead: AtomicBool,
}

/// Whether an h2 error just means the client went away.
fn is_benign(e: &::h2::Error) -> bool {
    match e.get_io() {
        Some(io) => matches!(
            io.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::NotConnected
        ),
        None => !e.is_library(),
    }
}

async fn serve_conn(ctx: Arc<H2Ctx>, id: u64, io: ServerIo, shared: Arc<Shared>) {
    let plan = ctx
        .conn_plans
        .get(id as usize)
        .unwrap_or(&ctx.default_conn_plan)
        .clone();
    for wait in &plan.before_handshake {
        wait.run().await;
    }
    let mut conn: Connection<ServerIo, Bytes> = match ctx.settings.builder().handshake(io).await {
        Ok(conn) => conn,
        Err(e) => {
            if !is_benign(&e) {
                shared.error(format!("conn {id}: h2 handshake failed: {e}"));
            }
            return;
        }
    };
    let flags = Arc::new(ConnFlags::default());
    let mut streams = JoinSet::new();
    let mut accepted = 0usize;
    let mut gate_waits: Vec<GateWait> = Vec::new();
    for (trigger, action) in &plan.actions {
        match trigger {
            Trigger::AfterStreams(0) => fire(&mut conn, *action, &flags),
            Trigger::AfterStreams(_) => {}
            Trigger::Gate(gate) => {
                let gate = gate.clone();
                gate_waits.push((*action, Box::pin(async move { gate.wait().await })));
            }
        }
    }
    loop {
        tokio::select! {
            res = conn.accept() => match res {
                Some(Ok((request, respond))) => {
                    let index = accepted;
                    accepted += 1;
                    let in_flight = InFlight::new(ctx.records.clone(), id);
                    let scripted = plan
                        .streams
                        .get(index)
                        .or(plan.default_stream.as_ref())
                        .cloned();
                    let task = StreamTask {
                        conn_id: id,
                        index,
                        ctx: ctx.clone(),
                        shared: shared.clone(),
                        flags: flags.clone(),
                        scripted,
                        in_flight: Some(in_flight),
                    };
                    streams.spawn(task.run(request, respond));
                    for (trigger, action) in &plan.actions {
                        if matches!(trigger, Trigger::AfterStreams(n) if *n == accepted) {
                            fire(&mut conn, *action, &flags);
                        }
                    }
                }
                Some(Err(e)) => {
                    flags.dead.store(true, Ordering::SeqCst);
                    if !is_benign(&e) {
                        shared.error(format!("conn {id}: h2 connection error: {e}"));
                    }
                    break;
                }
                None => break,
            },
            action = first_open(&mut gate_waits), if !gate_waits.is_empty() => {
                fire(&mut conn, action, &flags);
            }
            Some(res) = streams.join_next() => {
                if let Err(e) = res {
                    if e.is_panic() {
                        shared.error(format!("conn {id}: stream task panicked: {e}"));
                    }
                }
            }
        }
    }
    flags.dead.store(true, Ordering::SeqCst);
    // Dropping `streams` aborts stream tasks still parked: the connection is gone.
}

fn fire(conn: &mut Connection<ServerIo, Bytes>, action: GoAway, flags: &ConnFlags) {
    match action {
        GoAway::Graceful => conn.graceful_shutdown(),
        GoAway::Abrupt(reason) => {
            flags.abrupt.store(true, Ordering::SeqCst);
            conn.abrupt_shutdown(reason);
        }
    }
}

/// A connection action waiting for its gate.
type GateWait = (GoAway, Pin<Box<dyn Future<Output = ()> + Send>>);

/// Resolves with the action of the first gate that opens, removing it from the list.
async fn first_open(waits: &mut Vec<GateWait>) -> GoAway {
    poll_fn(|cx| {
        for i in 0..waits.len() {
            if waits[i].1.as_mut().poll(cx).is_ready() {
                return Poll::Ready(waits.remove(i).0);
            }
        }
        Poll::Pending
    })
    .await
}

/// The response side of a stream as the plan advances.
enum Out {
    /// No head sent yet.
    Pending(SendResponse<Bytes>),
    /// Head sent, stream open.
    Open(SendStream<Bytes>),
    /// Ended or reset.
    Done,
}

/// One stream's task state.
struct StreamTask {
    conn_id: u64,
    index: usize,
    ctx: Arc<H2Ctx>,
    shared: Arc<Shared>,
    flags: Arc<ConnFlags>,
    scripted: Option<StreamPlan>,
    /// Dropped right before the frame that finishes the stream is queued, so `max_in_flight`
    /// never counts a stream the client may already consider closed.
    in_flight: Option<InFlight>,
}

impl StreamTask {
    async fn run(mut self, request: Request<RecvStream>, respond: SendResponse<Bytes>) {
        let stream_id = respond.stream_id().as_u32();
        let (parts, mut body) = request.into_parts();
        let mut data = BytesMut::new();
        loop {
            match body.data().await {
                Some(Ok(chunk)) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    data.extend_from_slice(&chunk);
                }
                Some(Err(e)) => return self.body_failed(stream_id, &e),
                None => break,
            }
        }
        let trailers = match body.trailers().await {
            Ok(t) => t,
            Err(e) => return self.body_failed(stream_id, &e),
        };
        let request = H2Request {
            conn_id: self.conn_id,
            stream_id,
            index: self.index,
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body: data.freeze(),
            trailers,
        };
        self.ctx.records.requests.push(request.clone());
        let plan = self
            .scripted
            .take()
            .or_else(|| self.ctx.fallback.as_ref().map(|f| f(&request)));
        let mut out = Out::Pending(respond);
        let Some(plan) = plan else {
            self.shared.error(format!(
                "conn {} stream {stream_id}: no stream plan (plan exhausted) for {} {}",
                self.conn_id,
                request.method,
                request.path()
            ));
            self.finish(&mut out, Reason::INTERNAL_ERROR);
            return;
        };
        self.execute(plan, stream_id, &mut out).await;
        match out {
            Out::Open(mut s) => {
                self.in_flight.take();
                let _ = s.send_data(Bytes::new(), true);
            }
            Out::Pending(_) => {
                self.shared.error(format!(
                    "conn {} stream {stream_id}: stream plan ended without a response",
                    self.conn_id
                ));
                self.finish(&mut out, Reason::INTERNAL_ERROR);
            }
            Out::Done => {}
        }
    }

    fn body_failed(&self, stream_id: u32, e: &::h2::Error) {
        if e.is_reset() && e.is_remote() {
            if let Some(reason) = e.reason() {
                self.record_reset(stream_id, reason);
            }
        }
    }

    fn record_reset(&self, stream_id: u32, reason: Reason) {
        if self.flags.abrupt.load(Ordering::SeqCst) || self.flags.dead.load(Ordering::SeqCst) {
            return;
        }
        self.ctx.records.resets.push(StreamReset {
            conn_id: self.conn_id,
            stream_id,
            reason,
        });
    }

    /// Resets the stream from the server side.
    fn finish(&mut self, out: &mut Out, reason: Reason) {
        self.in_flight.take();
        match std::mem::replace(out, Out::Done) {
            Out::Pending(mut r) => r.send_reset(reason),
            Out::Open(mut s) => s.send_reset(reason),
            Out::Done => {}
        }
    }

    async fn execute(&mut self, plan: StreamPlan, stream_id: u32, out: &mut Out) {
        let steps = plan.steps;
        let mut i = 0;
        while i < steps.len() {
            // A head or data step directly followed by `End` carries END_STREAM itself.
            let then_end = matches!(steps.get(i + 1), Some(StreamStep::End));
            let sent = match &steps[i] {
                StreamStep::Wait(wait) => {
                    match wait_or_reset(out, wait.run()).await {
                        None => {}
                        Some(Ok(reason)) => {
                            self.record_reset(stream_id, reason);
                            return;
                        }
                        Some(Err(_)) => return,
                    }
                    Ok(())
                }
                StreamStep::Head { status, headers } => match std::mem::replace(out, Out::Done) {
                    Out::Pending(mut respond) => {
                        let mut response = Response::new(());
                        *response.status_mut() = *status;
                        *response.headers_mut() = headers.clone();
                        if then_end {
                            self.in_flight.take();
                            i += 1;
                        }
                        match respond.send_response(response, then_end) {
                            Ok(stream) if !then_end => {
                                *out = Out::Open(stream);
                                Ok(())
                            }
                            Ok(_) => Ok(()),
                            Err(e) => {
                                *out = Out::Pending(respond);
                                Err(e)
                            }
                        }
                    }
                    other => {
                        *out = other;
                        self.misplaced(stream_id, "head() after the head or the end");
                        Ok(())
                    }
                },
                StreamStep::Data(data) => match out {
                    Out::Open(stream) => {
                        if then_end {
                            self.in_flight.take();
                            i += 1;
                        }
                        let res = stream.send_data(data.clone(), then_end);
                        if then_end && res.is_ok() {
                            *out = Out::Done;
                        }
                        res
                    }
                    _ => {
                        self.misplaced(stream_id, "data() without an open response");
                        Ok(())
                    }
                },
                StreamStep::Trailers(trailers) => match out {
                    Out::Open(stream) => {
                        self.in_flight.take();
                        let res = stream.send_trailers(trailers.clone());
                        if res.is_ok() {
                            *out = Out::Done;
                        }
                        res
                    }
                    _ => {
                        self.misplaced(stream_id, "trailers() without an open response");
                        Ok(())
                    }
                },
                StreamStep::End => match out {
                    Out::Open(stream) => {
                        self.in_flight.take();
                        let res = stream.send_data(Bytes::new(), true);
                        if res.is_ok() {
                            *out = Out::Done;
                        }
                        res
                    }
                    Out::Done => Ok(()),
                    Out::Pending(_) => {
                        self.misplaced(stream_id, "end() before head()");
                        Ok(())
                    }
                },
                StreamStep::Reset(reason) => {
                    self.finish(out, *reason);
                    Ok(())
                }
            };
            if sent.is_err() {
                // Usually the client reset the stream between two steps; find out how.
                if let Some(Ok(reason)) = poll_reset_now(out) {
                    self.record_reset(stream_id, reason);
                }
                *out = Out::Done;
                return;
            }
            i += 1;
        }
    }

    fn misplaced(&self, stream_id: u32, what: &str) {
        self.shared.error(format!(
            "conn {} stream {stream_id}: stream plan has {what}",
            self.conn_id
        ));
    }
}

/// Runs `wait` unless the client resets the stream first: `Some(Ok(reason))` for a reset,
/// `Some(Err(_))` if the connection failed, `None` if the wait completed.
async fn wait_or_reset(
    out: &mut Out,
    wait: impl Future<Output = ()>,
) -> Option<Result<Reason, ::h2::Error>> {
    match out {
        Out::Pending(respond) => tokio::select! {
            () = wait => None,
            res = poll_fn(|cx| respond.poll_reset(cx)) => Some(res),
        },
        Out::Open(stream) => tokio::select! {
            () = wait => None,
            res = poll_fn(|cx| stream.poll_reset(cx)) => Some(res),
        },
        Out::Done => {
            wait.await;
            None
        }
    }
}

/// Polls for a reset once, without waiting.
fn poll_reset_now(out: &mut Out) -> Option<Result<Reason, ::h2::Error>> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let polled = match out {
        Out::Pending(respond) => respond.poll_reset(&mut cx),
        Out::Open(stream) => stream.poll_reset(&mut cx),
        Out::Done => return None,
    };
    match polled {
        Poll::Ready(res) => Some(res),
        Poll::Pending => None,
    }
}

/// A scripted HTTP/2 server on loopback. See the [module docs](self).
///
/// # Drop behavior
///
/// Dropping it stops accepting and aborts every connection task (see [`shutdown`](Self::shutdown)).
#[derive(Debug)]
pub struct ScriptedH2Server {
    core: ServerCore,
    records: Arc<H2Records>,
}

impl ScriptedH2Server {
    /// A builder with default SETTINGS, no plans, bound to `127.0.0.1:0` (h2c).
    pub fn builder() -> H2ServerBuilder {
        H2ServerBuilder::default()
    }

    /// Starts an h2c server answering every stream with `plan`.
    pub async fn start_with(plan: StreamPlan) -> Self {
        Self::builder().default_stream(plan).start().await
    }

    /// Every request received so far, in the order their bodies completed.
    pub fn requests(&self) -> Vec<H2Request> {
        self.records.requests.snapshot()
    }

    /// Waits until at least `n` requests were received (bodies complete) and returns them all.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; never resolves if fewer requests arrive (bound it with a timeout).
    pub async fn wait_for_requests(&self, n: usize) -> Vec<H2Request> {
        self.records.requests.wait_len(n).await
    }

    /// Streams the client reset while the server was working on them, with their reasons.
    pub fn client_resets(&self) -> Vec<StreamReset> {
        self.records.resets.snapshot()
    }

    /// Waits until at least `n` client resets were recorded and returns them all.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; bound it with a timeout.
    pub async fn wait_for_client_resets(&self, n: usize) -> Vec<StreamReset> {
        self.records.resets.wait_len(n).await
    }

    /// Streams accepted so far, on all connections.
    pub fn streams_accepted(&self) -> usize {
        *self.records.total_streams.borrow()
    }

    /// Waits until at least `n` streams were accepted (counted at HEADERS, before the body).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; bound it with a timeout.
    pub async fn wait_for_streams(&self, n: usize) {
        let mut rx = self.records.total_streams.subscribe();
        let _ = rx.wait_for(|total| *total >= n).await;
    }

    /// Streams accepted per connection, indexed by connection id.
    pub fn streams_per_connection(&self) -> Vec<usize> {
        lock(&self.records.streams)
            .iter()
            .map(|c| c.accepted)
            .collect()
    }

    /// Streams the server is working on right now, per connection id.
    pub fn streams_in_flight(&self) -> Vec<usize> {
        lock(&self.records.streams)
            .iter()
            .map(|c| c.in_flight)
            .collect()
    }

    /// The most streams ever in flight at once on a single connection (from accept until the
    /// server queues the frame that ends the stream).
    pub fn max_concurrent_streams_seen(&self) -> usize {
        lock(&self.records.streams)
            .iter()
            .map(|c| c.max_in_flight)
            .max()
            .unwrap_or(0)
    }

    common_server_methods!();
}
