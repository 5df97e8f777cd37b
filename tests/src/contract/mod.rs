//! Behaviour contracts: what an HTTP client pool must do, written once against a small
//! [`Backend`] trait and run for our pool and for hyper-util's legacy client (the differential
//! oracle; its backend lives beside the test binaries because hyper-util is a dev-dependency).
//!
//! A contract asserts the same observable behaviour for every backend. Where our pool
//! deliberately differs, the contract says so with [`Backend::NAME`] and states both
//! expectations; `tests/README.md` lists every contract with its result per backend and the
//! decision behind each difference. A difference is a decision, never a rewritten oracle.
//!
//! This file holds the backend trait, failure classes and shared steps, and our pool as a
//! backend; the contracts are in `http1`, `http2` and `differs` (the intended differences).

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

use crate::gate::Gate;
use crate::h1::{ConnPlan, Reply, ScriptedH1Server};
use crate::h2::{H2ConnPlan, Reason, ScriptedH2Server, StreamPlan};

/// A boxed error.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// A response as contracts see it, whatever the backend.
pub type ContractResponse = Response<BoxBody<Bytes, BoxError>>;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How a contract configures a backend.
#[derive(Clone, Debug, Default)]
pub struct BackendConfig {
    /// Idle timeout of pooled connections (`None`: the backend's default).
    pub idle_timeout: Option<Duration>,
    /// Speak HTTP/2 with prior knowledge over cleartext (h2c).
    pub http2: bool,
    /// Fail a request whose response head has not arrived within this time.
    pub read_timeout: Option<Duration>,
    /// Trust for `https://` origins (and ALPN offering `h2, http/1.1`).
    pub tls: Option<TlsTrust>,
    /// `max_connections_per_host` and `max_pending_per_host`, for backends that have them.
    pub bound: Option<(usize, usize)>,
}

/// The private CA a TLS contract's server chains to, in the forms the backends take.
#[derive(Clone, Debug)]
pub struct TlsTrust {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    /// A rustls client config trusting the CA and offering ALPN `h2, http/1.1`.
    pub client_config: std::sync::Arc<rustls::ClientConfig>,
}

impl TlsTrust {
    /// Trust for servers of `pki`.
    pub fn new(pki: &crate::tls::TestPki) -> TlsTrust {
        TlsTrust {
            ca_pem: pki.ca_pem(),
            client_config: pki.client_config(&[b"h2", b"http/1.1"]),
        }
    }
}

/// A client pool under contract.
pub trait Backend: Send + Sync + 'static {
    /// The backend's name, for messages and for the contracts where backends differ.
    const NAME: &'static str;

    /// A fresh backend (a fresh pool: no connection carries over between contracts).
    fn new(config: BackendConfig) -> Self;

    /// Sends a request and resolves with the response head.
    fn send(&self, request: Request<Full<Bytes>>) -> BoxFuture<Result<ContractResponse, BoxError>>;

    /// How many TLS dials the backend's connector has started, when the test can observe it
    /// (hyper-util's connector is ours in these tests; our pool's dial is internal).
    fn tls_dials(&self) -> Option<usize> {
        None
    }
}

/// How a failure looks from outside, whichever backend produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// An I/O failure: the peer reset or closed the connection.
    Io,
    /// The body ended before the framing said it would (clean EOF mid-body).
    IncompleteBody,
    /// A timeout elapsed.
    Timeout,
    /// The peer reset the stream (HTTP/2).
    StreamReset,
    /// The peer's GOAWAY ended the request (HTTP/2).
    GoAway,
    /// Anything else.
    Other,
}

/// Classifies an error by walking its source chain for the types every backend shares (hyper's
/// error, h2's error, `io::Error`) and our pool's predicates.
pub fn classify(error: &(dyn StdError + 'static)) -> Failure {
    let mut next: Option<&(dyn StdError + 'static)> = Some(error);
    let mut found = Failure::Other;
    while let Some(err) = next {
        if let Some(pool) = err.downcast_ref::<pool::Error>() {
            if pool.is_timeout() {
                return Failure::Timeout;
            }
        }
        if err.is::<tokio::time::error::Elapsed>() {
            return Failure::Timeout;
        }
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            if h2.is_go_away() {
                return Failure::GoAway;
            }
            if h2.is_reset() {
                return Failure::StreamReset;
            }
        }
        if let Some(hyper) = err.downcast_ref::<hyper::Error>() {
            if hyper.is_timeout() {
                return Failure::Timeout;
            }
            if hyper.is_incomplete_message() {
                found = Failure::IncompleteBody;
            } else if found == Failure::Other && (hyper.is_closed() || hyper.is_canceled()) {
                found = Failure::Io;
            }
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                UnexpectedEof => return Failure::IncompleteBody,
                ConnectionReset | ConnectionAborted | BrokenPipe => return Failure::Io,
                _ => {}
            }
        }
        next = err.source();
    }
    found
}

fn get(url: &str) -> Request<Full<Bytes>> {
    Request::get(url)
        .body(Full::new(Bytes::new()))
        .expect("valid request")
}

/// Sends a GET and reads the body.
async fn fetch<B: Backend>(backend: &B, url: &str) -> Result<Bytes, Failure> {
    let response = backend.send(get(url)).await.map_err(|e| classify(&*e))?;
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| classify(&*e))?;
    Ok(body.to_bytes())
}

/// A real-time bound for waits that a bug could turn into hangs.
const LIMIT: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(LIMIT, future).await {
        Ok(output) => output,
        Err(_) => panic!("contract step did not finish: {what}"),
    }
}

mod differs;
mod http1;
mod http2;

pub use differs::*;
pub use http1::*;
pub use http2::*;

// ---------------------------------------------------------------- our pool as a backend

/// Our pool under contract.
#[derive(Debug)]
pub struct PoolBackend {
    client: pool::Client,
}

impl Backend for PoolBackend {
    const NAME: &'static str = "pool";

    fn new(config: BackendConfig) -> Self {
        let mut builder = pool::ConnectionPool::builder();
        if let Some(idle) = config.idle_timeout {
            builder = builder.idle_timeout(Some(idle));
        }
        if config.http2 {
            builder = builder.protocol(pool::ProtocolPolicy::Http2PriorKnowledge);
        }
        if let Some(tls) = &config.tls {
            builder = builder
                .native_roots(false)
                .add_root_certificates_pem(tls.ca_pem.clone());
        }
        if let Some((connections, pending)) = config.bound {
            builder = builder
                .max_connections_per_host(connections)
                .max_pending_per_host(pending);
        }
        let pool = builder.build().expect("valid pool");
        let client = pool
            .client()
            .expect("anonymous partition")
            .read_timeout(config.read_timeout);
        PoolBackend { client }
    }

    fn send(&self, request: Request<Full<Bytes>>) -> BoxFuture<Result<ContractResponse, BoxError>> {
        let client = self.client.clone();
        Box::pin(async move {
            let response = client.request(request).await?;
            Ok(response.map(|body| body.map_err(|e| Box::new(e) as BoxError).boxed()))
        })
    }
}
