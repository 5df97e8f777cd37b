//! The pool as the AWS Rust SDK's HTTP client.
//!
//! [`PoolHttpClient`] implements the smithy runtime's
//! [`HttpClient`](aws_smithy_runtime_api::client::http::HttpClient) over one
//! [`pool::ConnectionPool`], so a generated SDK client sends every request through the pool:
//!
//! ```no_run
//! # fn demo() -> Result<(), pool_smithy::BuildError> {
//! let http_client = pool_smithy::PoolHttpClient::builder()
//!     .max_connections_per_host(64)
//!     .build()?;
//! // aws_config::defaults(BehaviorVersion::latest()).http_client(http_client).load().await
//! # let _ = http_client;
//! # Ok(())
//! # }
//! ```
//!
//! ```text
//! SDK orchestrator, per attempt:
//!   SharedHttpClient::http_connector(settings, components) ─► PoolConnector (a facade)
//!     = pool::Client (this client's partition, the settings' connect timeout on the
//!       operation's AsyncSleep)
//!     + the settings' read timeout + the operation's AsyncSleep and TimeSource
//!   PoolConnector::call(HttpRequest)
//!     try_into_http1x ─► SdkBody → RequestBody (bytes: replayable; otherwise streaming)
//!     pool::Client::request, raced against the read timeout on the operation's sleep
//!     response: pool::Body wrapped into SdkBody (no copy), connection metadata published
//!     error: pool::Error → ConnectorError (timeout / io / user / other)
//! ```
//!
//! # What this layer does
//!
//! * Builds a facade per `http_connector` call and nothing else: never a pool, a connector or an
//!   admission per settings. Every SDK client built over one [`PoolHttpClient`] (or its
//!   clones) shares the pool's connections and its per-origin bound, whatever its timeouts.
//! * Converts requests and responses (see [`PoolConnector`] for the body rules) and maps errors
//!   to the [`ConnectorError`](aws_smithy_runtime_api::client::result::ConnectorError) kinds the
//!   SDK's retry classifier reads (the table is on [`PoolConnector`]).
//! * Publishes the connection that served (or failed) a request to the SDK:
//!   `CaptureSmithyConnection` (whose poison function poisons the pool's connection, so the
//!   SDK's connection-poisoning interceptor retires it) and `CaptureHttpAttemptTelemetry`
//!   (connection selection: wait time, fresh or reused).
//! * Passes the pool's configuration through ([`Builder`]), with one SDK-specific default: the
//!   pool re-sends only what hyper handed back unsent ([`pool::RetryPolicy::unsent_only`]),
//!   because the SDK retries above the connector.
//!
//! # What it does not do
//!
//! * Retry: the SDK's retry strategy decides; the pool only re-sends requests that never left.
//! * Idle maintenance on the operation's runtime components: idle expiry and connection
//!   lifetimes are pool policy, on the pool's own time source and sleep
//!   ([`Builder::time_source`], [`Builder::sleep`]), never an operation's.
//! * Buffer streaming request bodies, decompress, sign or follow redirects (the SDK does what it
//!   does; the pool sends what it is given).
//!
//! # Timeouts
//!
//! The read timeout of the operation's `HttpConnectorSettings` covers the call from its start
//! to the response head (waiting for a connection, connecting, sending, the head), as in the
//! SDK's own clients, and runs on the operation's `AsyncSleep` (tokio's when the components
//! have none). The connect timeout bounds each establishment the request starts (resolution,
//! TCP and TLS together); it runs inside the pool's establishment on the owner partition, and is
//! measured on the operation's `AsyncSleep` too ([`pool::Client::sleep`]; the pool's own sleep
//! when the components have none). The pool's idle maintenance never uses the operation's
//! sleep.

mod body;
mod builder;
mod client;
mod connector;
mod error;
mod metadata;
mod timeout;

pub use builder::{BuildError, Builder};
pub use client::PoolHttpClient;
pub use connector::PoolConnector;
pub use timeout::ReadTimeout;

/// The pool crate this client is built on, for its types in [`Builder`]'s signatures
/// ([`pool::Partition`], [`pool::ProtocolPolicy`], [`pool::RetryPolicy`], ...).
pub use pool;
