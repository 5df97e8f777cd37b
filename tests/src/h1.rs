//! A scripted HTTP/1.1 peer on loopback: raw bytes in, raw bytes out.
//!
//! Every accepted connection runs a [`ConnPlan`]: an ordered list of steps (read a request, write
//! a [`Reply`], wait for a [`Gate`], sleep, half-close, reset, close, ...). Requests are parsed with
//! `httparse` (bodies framed by `Content-Length` or `chunked`) and recorded as
//! [`RecordedRequest`]s with the raw request-target, so a test can tell origin-form from
//! absolute-form. Replies are written byte by byte as scripted, including broken ones (a
//! `Content-Length` larger than the body followed by EOF or a reset, an unterminated chunked body,
//! a split body held at a gate).
//!
//! ```text
//! accept #i --(TLS)--> plans[i] | default plan | none: error "no plan", close
//!   step 1 .. step n                      (Respond = read one request, record it, write reply)
//!   after the last step: client EOF       -> done, quietly
//!                        another request  -> error "plan exhausted", close
//! ```
//!
//! Timing is controlled by gates and `tokio::time::sleep` (so `Delay` follows paused time); the
//! server never sleeps on its own.
//!
//! What this module does not do: it is not an HTTP server. It does not validate requests beyond
//! framing, never answers on its own (no automatic `100 Continue`, no error pages), does not
//! pipeline-schedule (it reads the next request only when the plan says so), and treats client
//! closes, resets and write failures as the end of the connection, not as errors.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Version};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::counters::{Log, Shared};
use crate::gate::{Gate, Signal, Wait};
use crate::server::{CoreConfig, ServeFn, ServerCore, ServerIo, common_server_methods};

/// Largest request head (request line + headers) the server buffers before calling it malformed.
const MAX_HEAD: usize = 64 * 1024;
/// Largest chunk-size or trailer line.
const MAX_LINE: usize = 16 * 1024;
/// Most headers in one request.
const MAX_HEADERS: usize = 128;

/// One request as the scripted H1 server read it off the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The connection it arrived on (0-based accept order).
    pub conn_id: u64,
    /// Its position among the requests read on that connection (0-based).
    pub index: usize,
    /// The request method.
    pub method: Method,
    /// The request-target exactly as sent: `/path?q` (origin-form), `http://host/path`
    /// (absolute-form), `host:port` (authority-form) or `*`.
    pub target: String,
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub version: Version,
    /// The header fields, in arrival order per name.
    pub headers: HeaderMap,
    /// The decoded body (de-chunked if it was chunked).
    pub body: Bytes,
    /// Whether the body was sent with `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// Trailer fields of a chunked body (empty otherwise).
    pub trailers: HeaderMap,
}

impl RecordedRequest {
    /// The `Host` header, if present and valid UTF-8.
    pub fn host(&self) -> Option<&str> {
        self.header("host")
    }

    /// The first value of header `name`, if present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the target is in origin-form (`/path`).
    pub fn is_origin_form(&self) -> bool {
        self.target.starts_with('/')
    }

    /// Whether the target is in absolute-form (`scheme://authority/path`).
    pub fn is_absolute_form(&self) -> bool {
        self.target.contains("://")
    }
}

/// A per-request reply function for [`ConnPlan::serve_with`].
type ReplyFn = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

/// One piece of a reply body.
#[derive(Debug, Clone)]
enum Part {
    Data(Bytes),
    Wait(Wait),
}

/// How the reply body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// `Content-Length`: the real length, or the declared one if set.
    Length { declared: Option<u64> },
    /// `Transfer-Encoding: chunked`; `terminate` = write the final `0\r\n\r\n`.
    Chunked { terminate: bool },
    /// No length header: the body ends when the connection closes.
    CloseDelimited,
    /// No body-framing header at all (1xx, 204, 304, or as the script says).
    None,
}

/// What happens to the connection after the reply is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    KeepOpen,
    Close,
    Reset,
}

/// A scripted HTTP/1.x response: status, headers, a body that may be split by gates or delays,
/// body framing (possibly wrong on purpose) and what to do to the connection afterwards.
///
/// Automatic headers: `content-length` (the body length, or [`declared_length`](Self::declared_length))
/// unless a `content-length` header was set by hand, or the reply is chunked, close-delimited, or
/// has a 1xx/204/304 status; `transfer-encoding: chunked` for [`chunked`](Self::chunked) replies.
/// Nothing else is added (no `Date`, no `Connection`).
///
/// A reply to a `HEAD` request writes the head only (the `content-length` still announces the
/// body).
#[derive(Debug, Clone)]
pub struct Reply {
    /// Verbatim bytes to write instead of a generated message.
    raw: Option<Bytes>,
    status: StatusCode,
    reason: Option<String>,
    version: &'static str,
    headers: Vec<(String, String)>,
    before: Vec<Wait>,
    body: Vec<Part>,
    framing: Framing,
    after: After,
}

impl Reply {
    /// A reply with `status` and an empty body.
    ///
    /// # Panics
    ///
    /// If `status` is not in 100..=999.
    pub fn new(status: u16) -> Self {
        let status = StatusCode::from_u16(status).expect("invalid status code");
        let framing = if status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            Framing::None
        } else {
            Framing::Length { declared: None }
        };
        Self {
            raw: None,
            status,
            reason: None,
            version: "HTTP/1.1",
            headers: Vec::new(),
            before: Vec::new(),
            body: Vec::new(),
            framing,
            after: After::KeepOpen,
        }
    }

    /// `200 OK` with `body` and a `content-length`.
    pub fn ok(body: impl Into<Bytes>) -> Self {
        Self::new(200).body(body)
    }

    /// `200 OK` whose body is split at `gate`: the head and `first` are written, then the server
    /// waits for the gate, then writes `rest`. `content-length` covers both parts.
    pub fn ok_split(first: impl Into<Bytes>, gate: Gate, rest: impl Into<Bytes>) -> Self {
        Self::new(200)
            .body_data(first)
            .body_gate(gate)
            .body_data(rest)
    }

    /// `101 Switching Protocols` with `connection: upgrade` and `upgrade: {protocol}`. Follow it
    /// with [`ConnPlan::echo`] or raw writes: after it the connection is no longer HTTP.
    pub fn switching_protocols(protocol: &str) -> Self {
        Self::new(101)
            .header("connection", "upgrade")
            .header("upgrade", protocol)
    }

    /// Writes `bytes` verbatim as the whole reply (for malformed or hand-made responses). The
    /// waits ([`delay`](Self::delay), [`gate`](Self::gate)), [`then_close`](Self::then_close) and
    /// [`then_reset`](Self::then_reset) still apply; everything else is ignored.
    pub fn raw(bytes: impl Into<Bytes>) -> Self {
        let mut reply = Self::new(200);
        reply.raw = Some(bytes.into());
        reply
    }

    /// Replaces the body with one piece.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = vec![Part::Data(body.into())];
        self
    }

    /// Appends bytes to the body (one chunk of its own if the reply is chunked; empty data is
    /// skipped in chunked replies since a zero-size chunk would end the body).
    pub fn body_data(mut self, data: impl Into<Bytes>) -> Self {
        self.body.push(Part::Data(data.into()));
        self
    }

    /// Appends a gate to the body: everything before it is written and flushed, then the server
    /// waits for the test to open it.
    pub fn body_gate(mut self, gate: Gate) -> Self {
        self.body.push(Part::Wait(Wait::Gate(gate)));
        self
    }

    /// Appends a delay to the body (`tokio::time::sleep`, so it follows paused time).
    pub fn body_delay(mut self, delay: Duration) -> Self {
        self.body.push(Part::Wait(Wait::Delay(delay)));
        self
    }

    /// Appends a signal raise to the body (the test learns what has been written so far).
    pub fn body_signal(mut self, signal: Signal) -> Self {
        self.body.push(Part::Wait(Wait::Signal(signal)));
        self
    }

    /// Adds a header (written in the order added; duplicates allowed; not validated).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Overrides the reason phrase (default: the canonical one for the status).
    pub fn reason(mut self, reason: &str) -> Self {
        self.reason = Some(reason.to_owned());
        self
    }

    /// Writes `HTTP/1.0` in the status line instead of `HTTP/1.1`.
    pub fn http_1_0(mut self) -> Self {
        self.version = "HTTP/1.0";
        self
    }

    /// Waits `delay` (after the request was read) before writing the head.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.before.push(Wait::Delay(delay));
        self
    }

    /// Waits for `gate` (after the request was read) before writing the head.
    pub fn gate(mut self, gate: Gate) -> Self {
        self.before.push(Wait::Gate(gate));
        self
    }

    /// Raises `signal` (after the request was read) before writing the head.
    pub fn signal(mut self, signal: Signal) -> Self {
        self.before.push(Wait::Signal(signal));
        self
    }

    /// Uses `transfer-encoding: chunked`; every data piece becomes one chunk.
    pub fn chunked(mut self) -> Self {
        self.framing = Framing::Chunked { terminate: true };
        self
    }

    /// For a chunked reply: do not write the final zero-size chunk (combine with
    /// [`then_close`](Self::then_close) or [`then_reset`](Self::then_reset) for a body cut short).
    pub fn unterminated(mut self) -> Self {
        if let Framing::Chunked { terminate } = &mut self.framing {
            *terminate = false;
        }
        self
    }

    /// Announces `content-length: {len}` whatever the body really is. With a larger value and
    /// [`then_close`](Self::then_close) the client sees an unexpected EOF mid-body; with
    /// [`then_reset`](Self::then_reset), a reset mid-body.
    pub fn declared_length(mut self, len: u64) -> Self {
        self.framing = Framing::Length {
            declared: Some(len),
        };
        self
    }

    /// No length header: the body is delimited by closing the connection (implies
    /// [`then_close`](Self::then_close)).
    pub fn close_delimited(mut self) -> Self {
        self.framing = Framing::CloseDelimited;
        self.after = After::Close;
        self
    }

    /// Writes no body-framing header at all and does not close (the client decides what the
    /// body is).
    pub fn no_framing(mut self) -> Self {
        self.framing = Framing::None;
        self
    }

    /// After writing the reply, close the connection cleanly (FIN). Later plan steps do not run.
    pub fn then_close(mut self) -> Self {
        self.after = After::Close;
        self
    }

    /// After writing the reply, abort the connection with a TCP RST. Later plan steps do not
    /// run.
    pub fn then_reset(mut self) -> Self {
        self.after = After::Reset;
        self
    }

    /// Adds `connection: close` and closes the connection after the reply, like a real server.
    pub fn connection_close(self) -> Self {
        self.header("connection", "close").then_close()
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The status line and headers, ending with the blank line.
    fn head(&self) -> String {
        let reason = self
            .reason
            .as_deref()
            .or(self.status.canonical_reason())
            .unwrap_or("");
        let mut head = format!("{} {} {}\r\n", self.version, self.status.as_u16(), reason);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        match self.framing {
            Framing::Length { declared } if !self.has_header("content-length") => {
                let real: usize = self
                    .body
                    .iter()
                    .map(|p| match p {
                        Part::Data(d) => d.len(),
                        Part::Wait(_) => 0,
                    })
                    .sum();
                let len = declared.unwrap_or(real as u64);
                head.push_str(&format!("content-length: {len}\r\n"));
            }
            Framing::Chunked { .. } if !self.has_header("transfer-encoding") => {
                head.push_str("transfer-encoding: chunked\r\n");
            }
            _ => {}
        }
        head.push_str("\r\n");
        head
    }
}

/// One step of a connection plan.
#[derive(Clone)]
enum Step {
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
/// another request is recorded in [`ScriptedH1Server::errors`] as plan exhaustion and the
/// connection is closed. Steps after one that ends the connection (`close`, `reset`, `echo`,
/// `serve_*`, a reply with `then_close`/`then_reset`) never run.
#[derive(Debug, Clone, Default)]
pub struct ConnPlan {
    steps: Vec<Step>,
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

/// Builder for [`ScriptedH1Server`].
#[derive(Debug, Default)]
pub struct H1ServerBuilder {
    core: CoreConfig,
    plans: Vec<ConnPlan>,
    default_plan: Option<ConnPlan>,
}

impl H1ServerBuilder {
    /// Whether to keep every request for [`ScriptedH1Server::requests`] and every connection
    /// for `connections()` (default: yes). A long run turns it off so the server's memory
    /// stays flat; requests and connections are still counted.
    pub fn record_requests(mut self, record: bool) -> Self {
        self.core.record_requests = record;
        self
    }

    /// Serves TLS with this configuration (see [`TestPki`](crate::tls::TestPki)); URLs become
    /// `https://`.
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.core.tls = Some(config);
        self
    }

    /// Binds here instead of `127.0.0.1:0` (for example `[::1]:0` or `127.0.0.2:0`).
    pub fn bind_addr(mut self, addr: SocketAddr) -> Self {
        self.core.bind = addr;
        self
    }

    /// Every accepted connection waits for this gate before its TLS handshake and first step.
    pub fn accept_gate(mut self, gate: Gate) -> Self {
        self.core.accept_gate = Some(gate);
        self
    }

    /// Appends a plan: the `i`-th plan added runs on connection `i`.
    pub fn plan(mut self, plan: ConnPlan) -> Self {
        self.plans.push(plan);
        self
    }

    /// Appends plans, in connection order.
    pub fn plans(mut self, plans: impl IntoIterator<Item = ConnPlan>) -> Self {
        self.plans.extend(plans);
        self
    }

    /// The plan (cloned) for connections beyond the listed ones. Without it, such a connection
    /// is recorded as an error and closed.
    pub fn default_plan(mut self, plan: ConnPlan) -> Self {
        self.default_plan = Some(plan);
        self
    }

    /// Binds and starts accepting.
    ///
    /// # Panics
    ///
    /// If binding fails; use [`try_start`](Self::try_start) to handle that.
    pub async fn start(self) -> ScriptedH1Server {
        self.try_start().await.expect("bind scripted H1 server")
    }

    /// Binds and starts accepting.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound (for example IPv6 is unavailable).
    pub async fn try_start(self) -> io::Result<ScriptedH1Server> {
        let requests = Arc::new(if self.core.record_requests {
            Log::new()
        } else {
            Log::counting()
        });
        let plans = Arc::new(self.plans);
        let default_plan = self.default_plan;
        let serve: ServeFn = {
            let requests = requests.clone();
            Arc::new(move |id, io, shared| {
                let plan = plans
                    .get(id as usize)
                    .cloned()
                    .or_else(|| default_plan.clone());
                let total = plans.len();
                let requests = requests.clone();
                Box::pin(async move {
                    let mut conn = H1Conn {
                        id,
                        io: Some(io),
                        buf: BytesMut::new(),
                        shared,
                        requests,
                        served: 0,
                        last_was_head: false,
                    };
                    match plan {
                        Some(plan) => conn.run(plan).await,
                        None => {
                            conn.shared.error(format!(
                                "conn {id}: no plan for this connection \
                                 ({total} plans, no default plan)"
                            ));
                            conn.close().await;
                        }
                    }
                })
            })
        };
        let core = ServerCore::start(self.core, serve).await?;
        Ok(ScriptedH1Server { core, requests })
    }
}

/// A scripted HTTP/1.1 server on loopback. See the [module docs](self).
///
/// # Drop behavior
///
/// Dropping it stops accepting and aborts every connection task (see [`shutdown`](Self::shutdown)).
#[derive(Debug)]
pub struct ScriptedH1Server {
    core: ServerCore,
    requests: Arc<Log<RecordedRequest>>,
}

impl ScriptedH1Server {
    /// A builder with no plans, bound to `127.0.0.1:0`.
    pub fn builder() -> H1ServerBuilder {
        H1ServerBuilder::default()
    }

    /// Starts a plain server whose every connection runs `plan`.
    pub async fn start_with(plan: ConnPlan) -> Self {
        Self::builder().default_plan(plan).start().await
    }

    /// Every request read so far, in the order they were read (across connections).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.snapshot()
    }

    /// The requests read on connection `conn_id`.
    pub fn requests_on(&self, conn_id: u64) -> Vec<RecordedRequest> {
        let mut all = self.requests();
        all.retain(|r| r.conn_id == conn_id);
        all
    }

    /// Waits until at least `n` requests were read and returns them all. A request is recorded
    /// as soon as its body is read, before the reply's waits run.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe; never resolves if fewer requests arrive (bound it with a timeout).
    pub async fn wait_for_requests(&self, n: usize) -> Vec<RecordedRequest> {
        self.requests.wait_len(n).await
    }

    common_server_methods!();
}

/// Why reading a request stopped without one.
enum ReadErr {
    /// Clean EOF before any byte of a new request.
    Eof,
    /// The client went away mid-request or the socket failed: the connection just ends.
    Gone,
    /// Unparseable input: recorded as an error, then the connection closes.
    Malformed(String),
}

/// What to do after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    End,
}

/// The state of one scripted connection.
struct H1Conn {
    id: u64,
    /// The socket; `None` once the script closed or reset it.
    io: Option<ServerIo>,
    /// Bytes read but not consumed yet (the start of a pipelined request, say).
    buf: BytesMut,
    shared: Arc<Shared>,
    requests: Arc<Log<RecordedRequest>>,
    /// Requests read on this connection.
    served: usize,
    /// Whether the last request read was `HEAD` (its reply carries no body).
    last_was_head: bool,
}

impl H1Conn {
    async fn run(&mut self, plan: ConnPlan) {
        for step in plan.steps {
            if self.step(step).await == Flow::End {
                return;
            }
        }
        self.after_plan().await;
    }

    async fn step(&mut self, step: Step) -> Flow {
        match step {
            Step::ReadRequest => match self.read_request().await {
                Some(_) => Flow::Continue,
                None => Flow::End,
            },
            Step::Reply(reply) => self.write_reply(&reply).await,
            Step::Respond(reply) => match self.read_request().await {
                Some(_) => self.write_reply(&reply).await,
                None => Flow::End,
            },
            Step::Wait(wait) => {
                wait.run().await;
                Flow::Continue
            }
            Step::WriteRaw(bytes) => self.write(&bytes).await,
            Step::HalfClose => {
                if let Some(io) = self.io.as_mut() {
                    let _ = io.shutdown().await;
                }
                Flow::Continue
            }
            Step::Close => {
                self.close().await;
                Flow::End
            }
            Step::Reset => {
                self.reset();
                Flow::End
            }
            Step::Echo => {
                self.echo().await;
                Flow::End
            }
            Step::ServeForever(reply) => {
                while self.read_request().await.is_some() {
                    if self.write_reply(&reply).await == Flow::End {
                        break;
                    }
                }
                Flow::End
            }
            Step::ServeWith(f) => {
                while let Some(req) = self.read_request().await {
                    if self.write_reply(&f(&req)).await == Flow::End {
                        break;
                    }
                }
                Flow::End
            }
        }
    }

    /// After the last step: EOF is fine, anything else is plan exhaustion.
    async fn after_plan(&mut self) {
        while self.buf.is_empty() {
            match self.fill().await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let first_line = self.buf[..]
            .split(|b| *b == b'\n')
            .next()
            .unwrap_or_default();
        let first_line = String::from_utf8_lossy(first_line);
        self.shared.error(format!(
            "conn {}: plan exhausted after {} request(s); unexpected input: {:?}",
            self.id,
            self.served,
            first_line.trim_end()
        ));
        self.close().await;
    }

    async fn fill(&mut self) -> io::Result<usize> {
        let io = self
            .io
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        self.buf.reserve(8 * 1024);
        io.read_buf(&mut self.buf).await
    }

    async fn write(&mut self, bytes: &[u8]) -> Flow {
        let Some(io) = self.io.as_mut() else {
            return Flow::End;
        };
        let res = async {
            io.write_all(bytes).await?;
            io.flush().await
        }
        .await;
        match res {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::End,
        }
    }

    async fn close(&mut self) {
        if let Some(mut io) = self.io.take() {
            let _ = io.shutdown().await;
        }
    }

    fn reset(&mut self) {
        if let Some(io) = self.io.take() {
            io.reset();
        }
    }

    async fn echo(&mut self) {
        loop {
            if !self.buf.is_empty() {
                let data = self.buf.split().freeze();
                if self.write(&data).await == Flow::End {
                    return;
                }
            }
            match self.fill().await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }

    /// Reads and records one request. `None` ends the connection (EOF, failure, or a malformed
    /// request, which is recorded as an error and closes the connection).
    async fn read_request(&mut self) -> Option<RecordedRequest> {
        match self.parse_request().await {
            Ok(req) => {
                self.served += 1;
                self.last_was_head = req.method == Method::HEAD;
                self.requests.push(req.clone());
                Some(req)
            }
            Err(ReadErr::Eof | ReadErr::Gone) => None,
            Err(ReadErr::Malformed(why)) => {
                self.shared.error(format!(
                    "conn {}: malformed request #{}: {why}",
                    self.id, self.served
                ));
                self.close().await;
                None
            }
        }
    }

    async fn more(&mut self) -> Result<(), ReadErr> {
        match self.fill().await {
            Ok(0) | Err(_) => Err(ReadErr::Gone),
            Ok(_) => Ok(()),
        }
    }

    async fn parse_request(&mut self) -> Result<RecordedRequest, ReadErr> {
        // Head.
        let (head_len, method, target, version, headers) = loop {
            if !self.buf.is_empty() {
                let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut req = httparse::Request::new(&mut slots);
                match req.parse(&self.buf) {
                    Ok(httparse::Status::Complete(len)) => {
                        break (
                            len,
                            req.method.unwrap_or_default().to_owned(),
                            req.path.unwrap_or_default().to_owned(),
                            req.version.unwrap_or(1),
                            header_map(req.headers)?,
                        );
                    }
                    Ok(httparse::Status::Partial) if self.buf.len() > MAX_HEAD => {
                        return Err(ReadErr::Malformed("request head too large".into()));
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(e) => return Err(ReadErr::Malformed(format!("{e}"))),
                }
            }
            match self.fill().await {
                Ok(0) if self.buf.is_empty() => return Err(ReadErr::Eof),
                Ok(0) | Err(_) => return Err(ReadErr::Gone),
                Ok(_) => {}
            }
        };
        let _ = self.buf.split_to(head_len);
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| ReadErr::Malformed(format!("method: {e}")))?;
        let version = if version == 0 {
            Version::HTTP_10
        } else {
            Version::HTTP_11
        };

        // Body.
        let chunked = match headers.get_all("transfer-encoding").iter().next_back() {
            Some(te) => {
                let te = te.to_str().unwrap_or_default().to_ascii_lowercase();
                if te.rsplit(',').next().map(str::trim) == Some("chunked") {
                    true
                } else {
                    return Err(ReadErr::Malformed(format!(
                        "unsupported transfer-encoding {te:?}"
                    )));
                }
            }
            None => false,
        };
        let mut trailers = HeaderMap::new();
        let body = if chunked {
            self.read_chunked(&mut trailers).await?
        } else {
            let mut lengths = headers.get_all("content-length").iter().map(|v| {
                v.to_str()
                    .ok()
                    .and_then(|s| s.trim().parse::<usize>().ok())
                    .ok_or_else(|| ReadErr::Malformed(format!("bad content-length {v:?}")))
            });
            let len = match lengths.next() {
                None => 0,
                Some(first) => {
                    let first = first?;
                    for other in lengths {
                        if other? != first {
                            return Err(ReadErr::Malformed("conflicting content-length".into()));
                        }
                    }
                    first
                }
            };
            self.read_exact(len).await?
        };

        Ok(RecordedRequest {
            conn_id: self.id,
            index: self.served,
            method,
            target,
            version,
            headers,
            body,
            chunked,
            trailers,
        })
    }

    async fn read_exact(&mut self, len: usize) -> Result<Bytes, ReadErr> {
        while self.buf.len() < len {
            self.more().await?;
        }
        Ok(self.buf.split_to(len).freeze())
    }

    /// One line without its line ending (`\r\n` or a bare `\n`).
    async fn read_line(&mut self) -> Result<Bytes, ReadErr> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let mut line = self.buf.split_to(pos + 1);
                line.truncate(pos);
                if line.last() == Some(&b'\r') {
                    line.truncate(pos - 1);
                }
                return Ok(line.freeze());
            }
            if self.buf.len() > MAX_LINE {
                return Err(ReadErr::Malformed("line too long in chunked body".into()));
            }
            self.more().await?;
        }
    }

    async fn read_chunked(&mut self, trailers: &mut HeaderMap) -> Result<Bytes, ReadErr> {
        let mut body = BytesMut::new();
        loop {
            let line = self.read_line().await?;
            let line = String::from_utf8_lossy(&line);
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| ReadErr::Malformed(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                loop {
                    let line = self.read_line().await?;
                    if line.is_empty() {
                        return Ok(body.freeze());
                    }
                    let text = String::from_utf8_lossy(&line);
                    let (name, value) = text
                        .split_once(':')
                        .ok_or_else(|| ReadErr::Malformed(format!("bad trailer {text:?}")))?;
                    let name = HeaderName::from_bytes(name.trim().as_bytes())
                        .map_err(|e| ReadErr::Malformed(format!("trailer name: {e}")))?;
                    let value = HeaderValue::from_str(value.trim())
                        .map_err(|e| ReadErr::Malformed(format!("trailer value: {e}")))?;
                    trailers.append(name, value);
                }
            }
            body.extend_from_slice(&self.read_exact(size).await?);
            if !self.read_line().await?.is_empty() {
                return Err(ReadErr::Malformed("missing CRLF after chunk data".into()));
            }
        }
    }

    /// Writes a reply as scripted. Write failures (the client left) end the connection.
    async fn write_reply(&mut self, reply: &Reply) -> Flow {
        for wait in &reply.before {
            wait.run().await;
        }
        if let Some(raw) = &reply.raw {
            if self.write(raw).await == Flow::End {
                return Flow::End;
            }
        } else if self.write_message(reply).await == Flow::End {
            return Flow::End;
        }
        match reply.after {
            After::KeepOpen => Flow::Continue,
            After::Close => {
                self.close().await;
                Flow::End
            }
            After::Reset => {
                self.reset();
                Flow::End
            }
        }
    }

    async fn write_message(&mut self, reply: &Reply) -> Flow {
        if self.write(reply.head().as_bytes()).await == Flow::End {
            return Flow::End;
        }
        let head_only = self.last_was_head;
        if head_only {
            return Flow::Continue;
        }
        let chunked = matches!(reply.framing, Framing::Chunked { .. });
        for part in &reply.body {
            let flow = match part {
                Part::Data(data) if chunked => {
                    if data.is_empty() {
                        continue;
                    }
                    let mut chunk = BytesMut::with_capacity(data.len() + 16);
                    chunk.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
                    chunk.extend_from_slice(data);
                    chunk.extend_from_slice(b"\r\n");
                    self.write(&chunk).await
                }
                Part::Data(data) => self.write(data).await,
                Part::Wait(wait) => {
                    wait.run().await;
                    Flow::Continue
                }
            };
            if flow == Flow::End {
                return Flow::End;
            }
        }
        if reply.framing == (Framing::Chunked { terminate: true }) {
            return self.write(b"0\r\n\r\n").await;
        }
        Flow::Continue
    }
}

fn header_map(headers: &[httparse::Header<'_>]) -> Result<HeaderMap, ReadErr> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for h in headers {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|e| ReadErr::Malformed(format!("header name {:?}: {e}", h.name)))?;
        let value = HeaderValue::from_bytes(h.value)
            .map_err(|e| ReadErr::Malformed(format!("header value for {:?}: {e}", h.name)))?;
        map.append(name, value);
    }
    Ok(map)
}
