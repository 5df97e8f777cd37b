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

mod conn;
mod plan;
mod records;
mod stream;

pub use plan::{H2ConnPlan, StreamPlan};

use std::fmt;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Method, Uri};

pub use ::h2::Reason;

use crate::counters::lock;
use crate::server::{
    CoreConfig, ServeFn, ServerCore, common_builder_methods, common_server_methods,
};

use conn::{H2Ctx, serve_conn};
use plan::StreamFn;
use records::H2Records;

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

/// HTTP/2 SETTINGS the server advertises.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Settings {
    max_concurrent_streams: Option<u32>,
    initial_window_size: Option<u32>,
    initial_connection_window_size: Option<u32>,
    max_frame_size: Option<u32>,
    max_pending_accept_reset_streams: Option<usize>,
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
        if let Some(n) = self.max_pending_accept_reset_streams {
            b.max_pending_accept_reset_streams(n);
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
    common_builder_methods!();

    /// SETTINGS_MAX_CONCURRENT_STREAMS (default: unlimited).
    pub fn max_concurrent_streams(mut self, n: u32) -> Self {
        self.settings.max_concurrent_streams = Some(n);
        self
    }

    /// How many streams the client may reset before this server accepted them, at once,
    /// before the server answers with `GOAWAY(ENHANCE_YOUR_CALM)` and closes (h2's defence
    /// against rapid resets; its default is 20).
    pub fn max_pending_accept_reset_streams(mut self, n: usize) -> Self {
        self.settings.max_pending_accept_reset_streams = Some(n);
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
