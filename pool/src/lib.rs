//! An HTTP/1.1 + HTTP/2 client connection pool on hyper 1.x.
//!
//! ```text
//! ConnectionPool ── partitions (placement scopes: a runtime, optionally an interface)
//!   └─ Partition ── OriginCell per origin: idle HTTP/1 connections, one HTTP/2 generation,
//!                   the establishment in flight, waiting requests
//! Client = pool + one partition + request policy (connect and read timeouts)
//! ```
//!
//! A request goes through one partition. A *reuse hit* (an idle HTTP/1 connection, or the
//! accepting HTTP/2 generation) takes one lock, the cell's, and writes nothing shared by the
//! origin. A miss waits in the cell's queue while a new connection is established on the
//! partition's own runtime; HTTP/1 establishments are independent attempts, an HTTP/2
//! establishment is a single flight every concurrent request joins, even when ALPN is what
//! reveals HTTP/2 (a cold burst to an HTTP/2 origin costs one TLS handshake).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use http_body_util::{BodyExt, Empty};
//!
//! let pool = pool::ConnectionPool::builder().build()?;
//! let client = pool.client()?;
//! let request = http::Request::get("http://example.com/").body(Empty::<bytes::Bytes>::new())?;
//! let response = client.request(request).await?;
//! let connection = response.body().connection().clone();
//! let body = response.into_body().collect().await?.to_bytes();
//! println!("{} bytes over connection {}", body.len(), connection.id());
//! # Ok(())
//! # }
//! ```
//!
//! # What the pool decides, and what it does not
//!
//! * It returns an HTTP/1 connection for reuse only after hyper proves the end of the response
//!   body *and* readiness for another request; a body dropped early, `Connection: close`, an
//!   exchange error or an upgrade retire it.
//! * It sends a request again on its own only when the server provably did not process it
//!   (see [`Client::request`] and [`RetryPolicy`]), and replays only bodies it can share
//!   without buffering.
//! * Idle connections expire after the idle timeout (90 s by default) and, when
//!   [`Builder::max_connection_lifetime`] is set, connections retire at their age (an HTTP/2
//!   connection is replaced before it drains); one maintenance task per partition enforces
//!   both, checkout never scans. The timeouts and how they fit together are in
//!   [`Builder`]'s lifecycle methods ([`Builder::pool_timeout`] and its neighbours).
//!   [`Builder::max_idle_per_host`] caps the idle HTTP/1 connections of each origin, and
//!   [`Builder::max_idle_connections`] those of the whole pool, closing the one idle longest.
//! * With [`Builder::max_connections_per_host`], one bound holds for each origin across all
//!   partitions. Each busy partition converges to its share of the permits and serves its own
//!   requests over its own connections; a partition whose request waits *borrows* an eligible
//!   peer's spare connection (an idle or returning HTTP/1 connection, or a free stream of its
//!   HTTP/2 generation: [`ConnectionReuseScope`] says which peers are eligible), and capacity
//!   moves by a *reclaim* (a peer's idle HTTP/1 connection, or its HTTP/2 generation with no
//!   stream open, closes as [`CloseReason::Reclaimed`] so its permit moves) when a partition
//!   holds nothing or has been below its share for [`Builder::placement_tolerance`]. Work in
//!   flight is never interrupted.
//! * [`Client::preconnect`] warms an origin before requests need it.
//! * A [`Progress`] in a request's extensions tells its caller, while the request runs and
//!   after the caller gave up on it, whether it waited for a connection, waited for one being
//!   made for it (and at which [`ConnectStep`]) or for another request, or had one
//!   ([`RequestStage`]): what a timeout
//!   of the caller's own ended, and whether anything of the request can have been sent.
//! * It talks to HTTP proxies ([`Builder::proxy`]) and can dial another host and port than an
//!   origin's own while TLS and requests keep the origin ([`Builder::connect_to`], curl's
//!   `--connect-to`), or dial every origin through a Unix domain socket
//!   ([`Builder::unix_socket`], curl's `--unix-socket`); it does not follow redirects,
//!   decompress or manage cookies.

mod body;
mod builder;
mod cell;
mod client;
mod connection;
mod dispatch;
mod error;
mod establish;
mod forward;
mod idle_cap;
mod io;
mod lesson_book;
mod lifetime;
mod listener;
mod maintenance;
mod malformed;
#[cfg(feature = "metrics")]
pub mod metrics;
mod partition;
mod pool;
mod preconnect;
mod protocol;
mod retry;
pub mod runtime;
mod service;
mod shared;
mod time;

pub use body::{Body, RequestBody};
pub use builder::{BuildError, Builder, DEFAULT_IDLE_TIMEOUT};
pub use client::Client;
pub use connection::ConnectionHandle;
pub use dispatch::expect::{BodyWithheld, ExpectContinue, on_informational};
pub use dispatch::gated::{BodyStillSending, BodyStopped};
pub use error::Error;
pub use listener::CountingListener;
pub use malformed::Malformed;
pub use partition::{Partition, TokioDriverSpawner};
pub use pool::{ClientBuildError, ConnectionPool, ToOrigin};
pub use preconnect::Preconnected;
pub use protocol::ProtocolPolicy;
pub use retry::{DEFAULT_BACKOFF, DEFAULT_MAX_RESENDS, RetryPolicy};
pub use service::{ClientService, ResponseFuture};
pub use shared::{PoolCounters, ResendCounts};
pub use time::{TokioSleep, TokioTime};

pub use pool_core::{
    AsyncSleep, BoxFuture, CertificateCheck, CloseReason, ConnectionEventListener, ConnectionId,
    ConnectionInfo, ConnectionReuseScope, ConnectionTimings, DriverSpawner, EventError, OmitHost,
    OpenReason, OriginKey, OriginStats, PartitionId, PartitionStats, Peaks, Progress, Protocol,
    ProxyRoute, RequestStage, RequestTarget, ResendReason, Scheme, Sleep, TimeSource, TlsDetails,
};
/// HTTP/1 header names as the server wrote them (see [`Builder::http1_preserve_header_case`]).
pub use pool_h1::{RawHeaderNames, RequestHeaderNames};
/// The HTTP/2 stream window an origin's new connections open with once its server ended one
/// with `GOAWAY(ENHANCE_YOUR_CALM)` while no uploads overlapped on it (see
/// [`OriginStats::larger_stream_window`]).
pub use pool_h2::LEARNT_STREAM_WINDOW;
pub use pool_tls::{
    AlpnOffer, AuthAnswer, AuthScheme, CertificateStatusError, Challenged, CipherSuite, Connect,
    ConnectError, ConnectFuture, ConnectStep, ConnectTarget, ConnectTo, Connected, DialTarget,
    IdentityPart, Io, NamedGroup, Negotiated, NoProxy, Proxy, ProxyConfig, ProxyError, ProxyScheme,
    ProxyUse, PublicKeyPin, Resolve, ResolveFuture, StaticResolver, SystemResolver, TlsOptions,
    TlsVersion, TokioIo,
};
#[cfg(feature = "hickory")]
pub use pool_tls::{HickoryResolver, hickory_resolver};
