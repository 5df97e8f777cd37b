//! A scripted HTTP/1.1 peer on loopback: raw bytes in, raw bytes out.
//!
//! Every accepted connection runs a [`ConnPlan`]: an ordered list of steps (read a request, write
//! a [`Reply`], wait for a [`Gate`](crate::gate::Gate), sleep, half-close, reset, close, ...). Requests are parsed with
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
//! framing, never answers on its own (no `100 Continue` unless [`H1ServerBuilder::continue_expected`]
//! asks, no error pages), does not
//! pipeline-schedule (it reads the next request only when the plan says so), and treats client
//! closes, resets and write failures as the end of the connection, not as errors.

mod conn;
mod plan;
mod reply;

use conn::H1Conn;
pub use plan::ConnPlan;
pub use reply::Reply;

use std::io;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::HeaderMap;
use http::{Method, Version};

use crate::counters::Log;
use crate::server::{
    CoreConfig, ServeFn, ServerCore, common_builder_methods, common_server_methods,
};

/// Reads from `stream` until `buf` holds a whole message head, for raw peers that answer a
/// head before (or instead of) reading its body: the head in lower case, with what followed it
/// left in `buf`; `None` if the peer closed first.
///
/// # Panics
///
/// If reading fails or the head is not UTF-8.
pub async fn read_head(
    stream: &mut (impl tokio::io::AsyncRead + Unpin),
    buf: &mut Vec<u8>,
) -> Option<String> {
    use tokio::io::AsyncReadExt;
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(at + 4);
            let head = std::mem::replace(buf, rest);
            return Some(String::from_utf8(head).unwrap().to_ascii_lowercase());
        }
        let mut chunk = [0u8; 1024];
        match stream.read(&mut chunk).await.unwrap() {
            0 => return None,
            n => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

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
    /// The header names as the client wrote them (`x-Custom-ID`), in order.
    pub names: Vec<String>,
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

/// Builder for [`ScriptedH1Server`].
#[derive(Debug, Default)]
pub struct H1ServerBuilder {
    core: CoreConfig,
    plans: Vec<ConnPlan>,
    default_plan: Option<ConnPlan>,
    continue_expected: bool,
}

impl H1ServerBuilder {
    common_builder_methods!();

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

    /// Answers a request head with `Expect: 100-continue` with `100 Continue` before reading
    /// its body, as nginx and hyper's server do. Off by default: the server then reads the
    /// body without a word, and a client that waits for the go-ahead waits out its timeout.
    pub fn continue_expected(mut self) -> Self {
        self.continue_expected = true;
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
        let continue_expected = self.continue_expected;
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
                        continue_expected,
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
