//! Configuring a pool.
//!
//! The settings that say how long things may take and how long connections live (idle
//! timeout aside) are in `lifecycle`, with the table of how they interplay; those of bounded
//! origins (bound, pending cap, reuse scope, placement) are in `bounded`; how connections
//! are made (connector, resolver, socket options, proxies, `connect_to`, TLS trust) in
//! `transport`.

mod bounded;
mod http1;
mod http2;
mod lifecycle;
mod transport;

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use pool_core::sync::Arc;
use pool_core::{
    AsyncSleep, ConnectionEventListener, ConnectionReuseScope, DriverSpawner, PartitionId,
    TimeSource,
};
use pool_h2::H2Settings;
use pool_tls::{Connect, ConnectTo, DialOptions, Resolve, TlsOptions};

use crate::partition::{CapturingSpawner, Partition, PartitionRuntime};
use crate::pool::{ConnectionPool, PartitionState, PoolInner};
use crate::protocol::ProtocolPolicy;
use crate::retry::RetryPolicy;
use crate::shared::Shared;
use crate::time::{TokioSleep, TokioTime};
use pool_tls::ProxyConfig;

/// The idle timeout used when none is configured.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Configures a [`ConnectionPool`]. Obtain one with [`ConnectionPool::builder`].
///
/// Building opens no socket and loads no trust store: a bad setting is reported by
/// [`build`](Self::build) as a [`BuildError`] naming the setting and its value, while problems
/// only a connection attempt can reveal (a missing network interface, an unreachable host) are
/// reported by the request that meets them.
///
/// # Timeouts and lifetimes
///
/// Each bounds one phase of a request or one part of a connection's life, so none of them
/// overlaps another:
///
/// | setting | bounds | when it fires |
/// |---|---|---|
/// | [`pool_timeout`](Builder::pool_timeout) | waiting for a connection or permit (queueing) | the request fails with `is_pool_timeout()` and withdraws |
/// | [`connect_timeout`](Builder::connect_timeout) | one establishment: resolve, TCP, TLS | the establishment fails with `is_connect_timeout()` |
/// | [`read_timeout`](Builder::read_timeout) | from handing the request to a connection to the response head, re-sends included | the request fails with `is_read_timeout()` |
/// | [`body_idle_timeout`](Builder::body_idle_timeout) | a gap between two frames of a response body | the body fails with `is_body_idle_timeout()`; the connection retires |
/// | [`expect_continue_timeout`](Builder::expect_continue_timeout) | an HTTP/1 request body held back for `100 Continue` | the body is sent anyway |
/// | [`idle_timeout`](Builder::idle_timeout) | a connection with no request | the connection closes (`IdleTimeout`) |
/// | [`max_connection_lifetime`](Builder::max_connection_lifetime) | a connection's age | HTTP/1 retires at its next return or while idle; HTTP/2 is renewed, then drains (`MaxLifetime`) |
///
/// Until its response head, a request can take up to the sum of the first three; its body
/// then has no limit but the silence the fourth allows. None of them is a total deadline (wrap
/// the request future in `tokio::time::timeout` for that). The idle timeout and the lifetime
/// are the pool's: they close connections and never fail a request.
pub struct Builder {
    idle_timeout: Option<Option<Duration>>,
    max_idle_per_host: usize,
    max_idle_connections: Option<usize>,
    protocol: ProtocolPolicy,
    connector: Option<Arc<dyn Connect>>,
    resolver: Option<Arc<dyn Resolve>>,
    dial: DialOptions,
    tls: TlsOptions,
    listener: Option<Arc<dyn ConnectionEventListener>>,
    time: Option<Arc<dyn TimeSource>>,
    sleep: Option<Arc<dyn AsyncSleep>>,
    partitions: Option<Vec<Partition>>,
    max_connections_per_host: Option<usize>,
    max_pending_per_host: Option<usize>,
    reuse_scope: ConnectionReuseScope,
    placement_tolerance: Duration,
    h1: pool_h1::H1Settings,
    h1_buffer: http1::H1Buffer,
    h2: H2Settings,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    pool_timeout: Option<Duration>,
    body_idle_timeout: Option<Duration>,
    expect_continue: Option<Duration>,
    keep_sending_on_error: bool,
    lifetime: Option<Duration>,
    lifetime_jitter: Option<Duration>,
    connection_extension: bool,
    retry: RetryPolicy,
    proxy: Option<(ProxyConfig, bool)>,
    /// Whether origins forwarded to one proxy share its connections.
    share_forward: bool,
    connect_to: ConnectTo,
    #[cfg(unix)]
    unix_socket: Option<std::path::PathBuf>,
    proxy_tls: Option<TlsOptions>,
    #[cfg(feature = "metrics")]
    metrics: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            idle_timeout: None,
            max_idle_per_host: usize::MAX,
            max_idle_connections: None,
            protocol: ProtocolPolicy::default(),
            connector: None,
            resolver: None,
            dial: DialOptions::default(),
            tls: TlsOptions::default(),
            listener: None,
            time: None,
            sleep: None,
            partitions: None,
            max_connections_per_host: None,
            max_pending_per_host: None,
            reuse_scope: ConnectionReuseScope::default(),
            placement_tolerance: pool_core::admission::DEFAULT_TOLERANCE,
            h1: hyper::client::conn::http1::Builder::new().into(),
            h1_buffer: http1::H1Buffer::default(),
            h2: H2Settings::default(),
            connect_timeout: None,
            read_timeout: None,
            pool_timeout: None,
            body_idle_timeout: None,
            expect_continue: Some(crate::dispatch::expect::DEFAULT_WAIT),
            keep_sending_on_error: false,
            lifetime: None,
            lifetime_jitter: None,
            connection_extension: false,
            retry: RetryPolicy::default(),
            proxy: None,
            share_forward: false,
            connect_to: ConnectTo::default(),
            #[cfg(unix)]
            unix_socket: None,
            proxy_tls: None,
            #[cfg(feature = "metrics")]
            metrics: true,
        }
    }
}

/// A setting [`Builder::build`] rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    setting: &'static str,
    value: String,
    reason: String,
    identity: Option<pool_tls::IdentityPart>,
}

impl BuildError {
    pub(crate) fn new(
        setting: &'static str,
        value: impl fmt::Display,
        reason: impl Into<String>,
    ) -> BuildError {
        BuildError {
            setting,
            value: value.to_string(),
            reason: reason.into(),
            identity: None,
        }
    }

    /// A TLS setting (`tls`, `proxy_tls`) whose configuration `error` refused.
    pub(crate) fn tls(setting: &'static str, error: &pool_tls::TlsConfigError) -> BuildError {
        BuildError {
            identity: error.client_identity_part(),
            ..BuildError::new(setting, "(configured certificates)", format!("{error:#}"))
        }
    }

    /// Which part of the client identity (`client_identity_pem`) a refused TLS setting could
    /// not use, when that was the problem: the certificate, or the key (a key that does not
    /// match its certificate included); `None` for anything else, such as the roots.
    pub fn client_identity_part(&self) -> Option<pool_tls::IdentityPart> {
        self.identity
    }

    /// The name of the rejected setting (the builder method's name).
    pub fn setting(&self) -> &str {
        self.setting
    }

    /// The rejected value, as text.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid pool setting {} = {}: {}",
            self.setting, self.value, self.reason
        )
    }
}

impl std::error::Error for BuildError {}

impl Builder {
    /// Which HTTP versions to speak (see [`ProtocolPolicy`]).
    pub fn protocol(mut self, policy: ProtocolPolicy) -> Self {
        self.protocol = policy;
        self
    }

    /// Receives connection lifecycle events. Pass an `Arc<L>` (a listener too) to keep a
    /// handle for reading it afterwards, as with [`CountingListener`](crate::CountingListener).
    /// The last listener set wins; the `metrics` feature's listener runs beside it.
    pub fn event_listener(mut self, listener: impl ConnectionEventListener) -> Self {
        self.listener = Some(Arc::new(listener));
        self
    }

    /// Whether this pool publishes through the `metrics` facade (feature `metrics`; on by
    /// default when the feature is). See the [`metrics`](crate::metrics) module for the names.
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, enabled: bool) -> Self {
        self.metrics = enabled;
        self
    }

    /// The clock idle deadlines are measured on (tokio's by default).
    pub fn time_source(mut self, time: impl TimeSource) -> Self {
        self.time = Some(Arc::new(time));
        self
    }

    /// The sleep maintenance and the request timeouts (pool, connect, read, body idle) use,
    /// tokio's by default; [`Client::sleep`](crate::Client::sleep) overrides it for one
    /// client's requests.
    pub fn sleep(mut self, sleep: impl AsyncSleep) -> Self {
        self.sleep = Some(Arc::new(sleep));
        self
    }

    /// Declares the pool's partitions: a nonempty set with unique identities, none of them
    /// [`PartitionId::ANONYMOUS`]. Without this, the pool has one anonymous partition running on
    /// the tokio runtime current at its first connection.
    pub fn partitions(mut self, partitions: impl IntoIterator<Item = Partition>) -> Self {
        self.partitions = Some(partitions.into_iter().collect());
        self
    }

    /// Also attaches each response's [`ConnectionHandle`] as a response extension
    /// (`response.extensions().get::<ConnectionHandle>()`), where it survives mapping the body
    /// to another type (tower stacks, `response.map(...)`). Off by default: the handle is always
    /// available from the body ([`Body::connection`]) at no cost, while an extension costs
    /// three allocations per response (http's extension map and the boxed value).
    ///
    /// [`ConnectionHandle`]: crate::ConnectionHandle
    /// [`Body::connection`]: crate::Body::connection
    pub fn connection_handle_extension(mut self, enabled: bool) -> Self {
        self.connection_extension = enabled;
        self
    }

    /// Which requests the pool sends again when the server provably did not process them, and
    /// how often (see [`RetryPolicy`]). The default, [`RetryPolicy::unprocessed`], re-sends on
    /// HTTP/2 `GOAWAY` and `REFUSED_STREAM`, on hyper's unsent hand-back, and (for idempotent
    /// requests) when a reused connection closed or was reset before the response began
    /// (HTTP/1: before any byte of it; HTTP/2: under the stream, with no `GOAWAY` or reset of
    /// the stream to say more), at most three times per request, the second and third time
    /// after a wait (50 ms, then 100 ms: the pace in [`RetryPolicy`]'s docs).
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Validates the settings and assembles the pool. Opens no socket.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the first invalid setting and its value.
    pub fn build(mut self) -> Result<ConnectionPool, BuildError> {
        self.validate_h1()?;
        self.validate_h2()?;
        self.validate_dial()?;
        let partitions = self.validate_partitions()?;
        let bound = self.validate_bound(partitions.as_deref())?;
        let lifetime = self.validate_lifetime()?;
        let explicit = partitions.is_some();
        // Read before the connector is taken: a custom connector routes by its own rules.
        let forward = self
            .proxy
            .clone()
            .filter(|_| {
                self.share_forward && self.connector.is_none() && self.unix_socket.is_none()
            })
            .map(|(proxies, tunnel_http)| {
                crate::forward::ForwardSharing::new(proxies, tunnel_http)
            });
        let (connector, tls) = self.take_connector()?;
        let idle_timeout = self.idle_timeout.unwrap_or(Some(DEFAULT_IDLE_TIMEOUT));
        #[cfg(feature = "metrics")]
        let listener = crate::listener::with_metrics(self.listener, self.metrics);
        #[cfg(not(feature = "metrics"))]
        let listener = self.listener;
        let shared = Shared::new(
            connector,
            self.protocol,
            self.h1,
            self.h2,
            listener,
            self.time.unwrap_or_else(|| Arc::new(TokioTime)),
            self.sleep.unwrap_or_else(|| Arc::new(TokioSleep)),
            idle_timeout,
            lifetime,
            self.connect_timeout,
            bound,
        );
        let shared = shared
            .with_max_idle(self.max_idle_per_host)
            .with_idle_cap(self.max_idle_connections)
            .with_forward_sharing(forward);
        #[cfg(feature = "metrics")]
        let shared = shared.with_metrics(self.metrics);
        let shared = Arc::new(shared);
        let runtimes: Vec<Arc<PartitionRuntime>> = match partitions {
            None => {
                let spawner: Arc<dyn DriverSpawner> = Arc::new(CapturingSpawner::default());
                vec![Arc::new(PartitionRuntime::new(
                    PartitionId::ANONYMOUS,
                    None,
                    spawner,
                ))]
            }
            Some(declared) => declared
                .into_iter()
                .map(|p| Arc::new(PartitionRuntime::new(p.id, p.interface, p.spawner)))
                .collect(),
        };
        Ok(ConnectionPool::from_inner(PoolInner {
            shared,
            partitions: runtimes
                .into_iter()
                .enumerate()
                .map(|(i, rt)| PartitionState::new(rt, i))
                .collect(),
            explicit,
            read_timeout: self.read_timeout,
            pool_timeout: self.pool_timeout,
            body_idle_timeout: self.body_idle_timeout,
            expect_continue: self.expect_continue,
            keep_sending_on_error: self.keep_sending_on_error,
            connection_extension: self.connection_extension,
            retry: self.retry,
            tls,
        }))
    }

    fn validate_partitions(&self) -> Result<Option<Vec<Partition>>, BuildError> {
        let Some(partitions) = &self.partitions else {
            return Ok(None);
        };
        if partitions.is_empty() {
            return Err(BuildError::new(
                "partitions",
                "[]",
                "declare at least one partition",
            ));
        }
        let mut seen = HashSet::new();
        for partition in partitions {
            if partition.id.is_anonymous() {
                return Err(BuildError::new(
                    "partitions",
                    partition.id,
                    "the anonymous identity is reserved; use PartitionId::from_index",
                ));
            }
            if !seen.insert(partition.id) {
                return Err(BuildError::new(
                    "partitions",
                    partition.id,
                    "partition identities must be unique",
                ));
            }
        }
        Ok(Some(partitions.clone()))
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("idle_timeout", &self.idle_timeout)
            .field("max_idle_per_host", &self.max_idle_per_host)
            .field("max_idle_connections", &self.max_idle_connections)
            .field("protocol", &self.protocol)
            .field("dial", &self.dial)
            .field("tls", &self.tls)
            .field("partitions", &self.partitions)
            .field("max_connections_per_host", &self.max_connections_per_host)
            .field("max_pending_per_host", &self.max_pending_per_host)
            .field("placement_tolerance", &self.placement_tolerance)
            .field("reuse_scope", &self.reuse_scope)
            .field("h2", &self.h2)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("pool_timeout", &self.pool_timeout)
            .field("body_idle_timeout", &self.body_idle_timeout)
            .field("expect_continue", &self.expect_continue)
            .field("keep_sending_on_error", &self.keep_sending_on_error)
            .field("max_connection_lifetime", &self.lifetime)
            .field("connection_extension", &self.connection_extension)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TokioDriverSpawner;

    #[test]
    fn idle_timeout_keeps_all_three_states() {
        let mut b = ConnectionPool::builder();
        assert_eq!(b.idle_timeout, None, "unset means the default");
        b.set_idle_timeout(Some(None));
        assert_eq!(b.idle_timeout, Some(None), "explicitly disabled");
        b.set_idle_timeout(Some(Some(Duration::from_secs(5))));
        assert_eq!(b.idle_timeout, Some(Some(Duration::from_secs(5))));
        b.set_idle_timeout(None);
        assert_eq!(b.idle_timeout, None);
        let b = ConnectionPool::builder().idle_timeout(None);
        assert_eq!(b.idle_timeout, Some(None));
    }

    #[test]
    fn building_opens_nothing_and_defaults_apply() {
        let pool = ConnectionPool::builder()
            .build()
            .expect("defaults are valid");
        assert_eq!(pool.partitions(), vec![PartitionId::ANONYMOUS]);
        assert!(pool.client().is_ok());
        assert!(pool.origins().is_empty());
    }

    #[tokio::test]
    async fn partition_set_is_validated() {
        let p = |i| Partition::new(PartitionId::from_index(i), TokioDriverSpawner::current());
        let err = ConnectionPool::builder()
            .partitions([])
            .build()
            .unwrap_err();
        assert_eq!((err.setting(), err.value()), ("partitions", "[]"));
        let err = ConnectionPool::builder()
            .partitions([p(0), p(0)])
            .build()
            .unwrap_err();
        assert_eq!((err.setting(), err.value()), ("partitions", "0"));
        let anonymous = Partition::new(PartitionId::ANONYMOUS, TokioDriverSpawner::current());
        let err = ConnectionPool::builder()
            .partitions([anonymous])
            .build()
            .unwrap_err();
        assert_eq!(err.value(), "anonymous");
        assert!(err.to_string().contains("reserved"));
        let pool = ConnectionPool::builder()
            .partitions([p(0), p(1)])
            .build()
            .unwrap();
        assert!(
            pool.client().is_err(),
            "explicit partitions need client_for"
        );
        assert_eq!(
            pool.client_for(PartitionId::from_index(1))
                .unwrap()
                .partition(),
            PartitionId::from_index(1)
        );
        assert!(pool.client_for(PartitionId::from_index(2)).is_err());
    }

    #[test]
    fn bound_settings_are_validated() {
        let err = ConnectionPool::builder()
            .max_connections_per_host(0)
            .build()
            .unwrap_err();
        assert_eq!(
            (err.setting(), err.value()),
            ("max_connections_per_host", "0")
        );
        let err = ConnectionPool::builder()
            .max_pending_per_host(4)
            .build()
            .unwrap_err();
        assert_eq!((err.setting(), err.value()), ("max_pending_per_host", "4"));
        let pool = ConnectionPool::builder()
            .max_connections_per_host(8)
            .max_pending_per_host(0)
            .build()
            .unwrap();
        let origin = pool_core::OriginKey::from_uri(&"http://a.test".parse().unwrap()).unwrap();
        assert_eq!(pool.stats(&origin).limit(), Some(8));
        let unbounded = ConnectionPool::builder().build().unwrap();
        assert_eq!(unbounded.stats(&origin).limit(), None);
    }

    #[test]
    fn bad_h2_and_tls_settings_name_themselves() {
        let err = ConnectionPool::builder()
            .http2_max_frame_size(Some(100))
            .build()
            .unwrap_err();
        assert_eq!(
            (err.setting(), err.value()),
            ("http2_max_frame_size", "100")
        );
        let err = ConnectionPool::builder()
            .http2_initial_stream_window_size(Some(u32::MAX))
            .build()
            .unwrap_err();
        assert_eq!(err.setting(), "http2_initial_stream_window_size");
        // hyper asserts this one; the pool refuses it before hyper sees it.
        if let Some(over) = usize::try_from(u32::MAX)
            .ok()
            .and_then(|max| max.checked_add(1))
        {
            let err = ConnectionPool::builder()
                .http2_max_send_buf_size(over)
                .build()
                .unwrap_err();
            assert_eq!(err.setting(), "http2_max_send_buf_size");
        }
        let err = ConnectionPool::builder()
            .add_root_certificates_pem("not pem")
            .build()
            .unwrap_err();
        assert_eq!(err.setting(), "tls");
    }

    /// Values Linux refuses on every socket are refused at build, not by every dial.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn socket_options_the_kernel_refuses_name_themselves() {
        let refused = |builder: Builder| {
            let err = builder.build().unwrap_err();
            (err.setting().to_owned(), err.value().to_owned())
        };
        let secs = Duration::from_secs;
        let b = ConnectionPool::builder;
        assert_eq!(
            refused(b().tcp_keepalive(Some(secs(32_768)))),
            ("tcp_keepalive".to_owned(), "32768s".to_owned())
        );
        assert_eq!(
            refused(b().tcp_keepalive(Some(Duration::from_millis(500)))),
            ("tcp_keepalive".to_owned(), "500ms".to_owned())
        );
        assert_eq!(
            refused(b().tcp_keepalive_interval(Some(Duration::ZERO))),
            ("tcp_keepalive_interval".to_owned(), "0ns".to_owned())
        );
        assert_eq!(
            refused(b().tcp_keepalive_retries(Some(128))),
            ("tcp_keepalive_retries".to_owned(), "128".to_owned())
        );
        assert_eq!(
            refused(b().tcp_keepalive_retries(Some(0))),
            ("tcp_keepalive_retries".to_owned(), "0".to_owned())
        );
        assert_eq!(
            refused(b().tcp_user_timeout(Some(Duration::from_millis(1 << 31)))).0,
            "tcp_user_timeout"
        );
        // The limits themselves, and the defaults, build.
        b().tcp_keepalive(Some(secs(32_767)))
            .tcp_keepalive_interval(Some(secs(1)))
            .tcp_keepalive_retries(Some(127))
            .tcp_user_timeout(Some(Duration::from_millis((1 << 31) - 1)))
            .build()
            .unwrap();
        b().build().unwrap();
    }
}
