//! Configuring a [`PoolHttpClient`]: the pool's builder passed through, with the SDK's retry
//! default, plus the choice of the partition the client sends through.
//!
//! Every setting the SDK's own pool exposes has a method of the same meaning here (partitions
//! with their interface binding, reuse scope, bound, idle timeout, event listener, TLS trust,
//! TCP options, proxy, resolver), and so do the pool's settings it lacks (pending cap, protocol
//! policy with h2c, lifetime, pool timeout, retry policy). Anything else of [`pool::Builder`]
//! is reachable through [`Builder::configure_pool`]. Connect and read timeouts are not here:
//! they come from the SDK's `TimeoutConfig`, per operation.

use std::error::Error as StdError;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use pool::{
    ConnectionEventListener, ConnectionPool, ConnectionReuseScope, Partition, PartitionId,
    ProtocolPolicy, ProxyConfig, Resolve, RetryPolicy,
};

use crate::client::PoolHttpClient;

/// Configures a [`PoolHttpClient`] and the pool under it. Obtain one with
/// [`PoolHttpClient::builder`].
///
/// The defaults are the pool's, except the retry policy: [`RetryPolicy::unsent_only`], since
/// the SDK's retry strategy retries above the connector and the pool should not retry the same
/// failure a second time underneath it. [`retry_policy`](Self::retry_policy) overrides it.
pub struct Builder {
    pool: pool::Builder,
    partition: Option<PartitionId>,
    first_partition: Option<PartitionId>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("pool_smithy::Builder")
            .field("pool", &self.pool)
            .field("partition", &self.partition)
            .finish()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            pool: ConnectionPool::builder().retry_policy(RetryPolicy::unsent_only()),
            partition: None,
            first_partition: None,
        }
    }
}

impl Builder {
    /// The defaults (see the type's docs).
    pub fn new() -> Builder {
        Builder::default()
    }

    fn map(mut self, f: impl FnOnce(pool::Builder) -> pool::Builder) -> Builder {
        self.pool = f(self.pool);
        self
    }

    /// Declares the pool's partitions (placement scopes: a runtime each, optionally a network
    /// interface via [`Partition::interface`]); see [`pool::Builder::partitions`]. The client
    /// sends through the first one unless [`send_through`](Self::send_through) names another;
    /// [`PoolHttpClient::for_partition`] makes clients for the others.
    pub fn partitions(mut self, partitions: impl IntoIterator<Item = Partition>) -> Builder {
        let partitions: Vec<Partition> = partitions.into_iter().collect();
        self.first_partition = partitions.first().map(Partition::id);
        self.map(|b| b.partitions(partitions))
    }

    /// The partition the built client's requests go through (default: the first declared
    /// partition, or the anonymous one when none is declared).
    pub fn send_through(mut self, partition: PartitionId) -> Builder {
        self.partition = Some(partition);
        self
    }

    /// Which partitions may use each other's connections ([`pool::Builder::connection_reuse_scope`]).
    pub fn connection_reuse_scope(self, scope: ConnectionReuseScope) -> Builder {
        self.map(|b| b.connection_reuse_scope(scope))
    }

    /// At most `limit` connections per origin across all partitions
    /// ([`pool::Builder::max_connections_per_host`]); shared by every SDK client over this
    /// pool, whatever its timeouts.
    pub fn max_connections_per_host(self, limit: usize) -> Builder {
        self.map(|b| b.max_connections_per_host(limit))
    }

    /// At most `pending` requests of a bounded origin wait; the next fails at once
    /// ([`pool::Builder::max_pending_per_host`]). The SDK sees a throttling error.
    pub fn max_pending_per_host(self, pending: usize) -> Builder {
        self.map(|b| b.max_pending_per_host(pending))
    }

    /// How long an idle connection is kept ([`pool::Builder::idle_timeout`], 90 s by default).
    pub fn idle_timeout(self, timeout: Option<Duration>) -> Builder {
        self.map(|b| b.idle_timeout(timeout))
    }

    /// Retires connections at this age, HTTP/2 ones renewed first
    /// ([`pool::Builder::max_connection_lifetime`]).
    pub fn max_connection_lifetime(self, lifetime: Option<Duration>) -> Builder {
        self.map(|b| b.max_connection_lifetime(lifetime))
    }

    /// How long a request may wait for a connection or permit ([`pool::Builder::pool_timeout`]).
    /// The SDK sees a timeout.
    pub fn pool_timeout(self, timeout: Option<Duration>) -> Builder {
        self.map(|b| b.pool_timeout(timeout))
    }

    /// Receives the pool's connection lifecycle events ([`pool::Builder::event_listener`]).
    pub fn event_listener(self, listener: impl ConnectionEventListener) -> Builder {
        self.map(|b| b.event_listener(listener))
    }

    /// Adds trust anchors from a PEM bundle ([`pool::Builder::add_root_certificates_pem`]).
    pub fn add_root_certificates_pem(self, pem: impl Into<Vec<u8>>) -> Builder {
        self.map(|b| b.add_root_certificates_pem(pem))
    }

    /// Whether the platform's root certificates are trusted (on by default).
    pub fn native_roots(self, enabled: bool) -> Builder {
        self.map(|b| b.native_roots(enabled))
    }

    /// Presents this client certificate chain and key (PEM) when a server asks.
    pub fn client_identity_pem(
        self,
        certificate_chain: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Builder {
        self.map(|b| b.client_identity_pem(certificate_chain, key))
    }

    /// Which HTTP versions to speak: ALPN over TLS by default;
    /// [`ProtocolPolicy::Http2PriorKnowledge`] adds h2c for `http://` origins.
    pub fn protocol(self, policy: ProtocolPolicy) -> Builder {
        self.map(|b| b.protocol(policy))
    }

    /// Which requests the pool re-sends itself (default here: [`RetryPolicy::unsent_only`]).
    pub fn retry_policy(self, policy: RetryPolicy) -> Builder {
        self.map(|b| b.retry_policy(policy))
    }

    /// `TCP_NODELAY` on new sockets (on by default).
    pub fn tcp_nodelay(self, enabled: bool) -> Builder {
        self.map(|b| b.tcp_nodelay(enabled))
    }

    /// TCP keepalive with this idle time (15 s by default; [`pool::Builder::tcp_keepalive`]).
    pub fn tcp_keepalive(self, idle: Option<Duration>) -> Builder {
        self.map(|b| b.tcp_keepalive(idle))
    }

    /// `TCP_USER_TIMEOUT` (30 s by default; [`pool::Builder::tcp_user_timeout`]).
    pub fn tcp_user_timeout(self, timeout: Option<Duration>) -> Builder {
        self.map(|b| b.tcp_user_timeout(timeout))
    }

    /// Binds new sockets to this local address.
    pub fn local_address(self, address: Option<IpAddr>) -> Builder {
        self.map(|b| b.local_address(address))
    }

    /// Routes origins through HTTP proxies ([`pool::Builder::proxy`]).
    pub fn proxy(self, proxy: ProxyConfig, tunnel_http: bool) -> Builder {
        self.map(|b| b.proxy(proxy, tunnel_http))
    }

    /// The resolver of the default connector (the system's unless set).
    pub fn resolver(self, resolver: impl Resolve) -> Builder {
        self.map(|b| b.resolver(resolver))
    }

    /// The clock of the pool's own policy (idle deadlines, lifetimes); tokio's by default. An
    /// operation's `TimeSource` is never used for it.
    pub fn time_source(self, time: impl pool::TimeSource) -> Builder {
        self.map(|b| b.time_source(time))
    }

    /// The sleep of the pool's own policy (idle maintenance); tokio's by default. An
    /// operation's `AsyncSleep` is never used for it.
    pub fn sleep(self, sleep: impl pool::AsyncSleep) -> Builder {
        self.map(|b| b.sleep(sleep))
    }

    /// Any other setting of the pool's builder, applied in order with the methods above.
    ///
    /// ```
    /// let client = pool_smithy::PoolHttpClient::builder()
    ///     .configure_pool(|pool| pool.http2_keep_alive_interval(Some(std::time::Duration::from_secs(20))))
    ///     .build()?;
    /// # let _ = client;
    /// # Ok::<(), pool_smithy::BuildError>(())
    /// ```
    pub fn configure_pool(self, f: impl FnOnce(pool::Builder) -> pool::Builder) -> Builder {
        self.map(f)
    }

    /// Builds the pool and a client on the chosen partition. Opens no socket and loads no trust
    /// store (the SDK's `validate_base_client_config` does that when a client selects it).
    ///
    /// # Errors
    ///
    /// A setting the pool rejected, or [`send_through`](Self::send_through) naming a partition
    /// the pool does not have.
    pub fn build(self) -> Result<PoolHttpClient, BuildError> {
        let pool = self.pool.build().map_err(BuildError::Pool)?;
        let client = match self.partition.or(self.first_partition) {
            Some(id) => PoolHttpClient::from_partition(&pool, id),
            None => PoolHttpClient::from_pool(&pool),
        };
        client.map_err(BuildError::Client)
    }
}

/// Why [`Builder::build`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The pool rejected a setting (named in the error).
    Pool(pool::BuildError),
    /// The client's partition does not exist in the pool.
    Client(pool::ClientBuildError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuildError::Pool(_) => "the pool could not be built",
            BuildError::Client(_) => "the client's partition could not be chosen",
        })
    }
}

impl StdError for BuildError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            BuildError::Pool(e) => Some(e),
            BuildError::Client(e) => Some(e),
        }
    }
}
