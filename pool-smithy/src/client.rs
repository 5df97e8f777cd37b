//! [`PoolHttpClient`]: the smithy runtime's `HttpClient` over one pool partition.

use std::borrow::Cow;
use std::fmt;

use aws_smithy_async::rt::sleep::{SharedAsyncSleep, TokioSleep};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::{
    RuntimeComponents, RuntimeComponentsBuilder,
};
use aws_smithy_types::config_bag::ConfigBag;
use pool::{ClientBuildError, ConnectionPool, PartitionId};

use crate::builder::{BuildError, Builder};
use crate::connector::PoolConnector;
use crate::timeout::OperationSleep;

/// The AWS SDK's HTTP client, served by one [`ConnectionPool`] partition.
///
/// Pass it to an SDK config (`aws_config::defaults(..).http_client(client)` or a service
/// config's `http_client`). Cloning it, or handing it to several SDK clients, shares the pool:
/// its connections and its per-origin bound, whatever timeouts each SDK client configures.
///
/// What the SDK calls, and what each does here:
///
/// | `HttpClient` method | here |
/// |---|---|
/// | `http_connector(settings, components)` | a [`PoolConnector`] facade: a clone of this client's `pool::Client` with the settings' connect timeout measured on the operation's sleep, the read timeout, the operation's sleep and time source; no pool, connector or admission is built |
/// | `validate_base_client_config` | the pool's TLS preflight ([`ConnectionPool::preflight`]): the native roots load when an SDK client selects this client, not on its first request; idempotent |
/// | `validate_final_config` | nothing |
/// | `connector_metadata` | `hyper` `1.x`, the identity the SDK's own hyper 1.x clients report in its user agent |
#[derive(Clone)]
pub struct PoolHttpClient {
    pool: ConnectionPool,
    /// The partition's client as the pool built it (the pool's default timeouts); each facade
    /// is a clone of it, so all share its memory of the origin's cell.
    client: pool::Client,
}

impl PoolHttpClient {
    /// Starts configuring a client and its pool.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A client over a pool with the defaults ([`Builder`]'s).
    ///
    /// # Errors
    ///
    /// As for [`Builder::build`] (the defaults build).
    pub fn new() -> Result<PoolHttpClient, BuildError> {
        Builder::new().build()
    }

    /// A client over an existing pool built without explicit partitions. The pool's retry
    /// policy applies as configured: build it with [`pool::RetryPolicy::unsent_only`] to leave
    /// retries to the SDK.
    ///
    /// # Errors
    ///
    /// When the pool has explicit partitions: use [`from_partition`](Self::from_partition).
    pub fn from_pool(pool: &ConnectionPool) -> Result<PoolHttpClient, ClientBuildError> {
        Ok(PoolHttpClient {
            client: pool.client()?,
            pool: pool.clone(),
        })
    }

    /// A client over partition `id` of an existing pool.
    ///
    /// # Errors
    ///
    /// When the pool has no partition `id`.
    pub fn from_partition(
        pool: &ConnectionPool,
        id: PartitionId,
    ) -> Result<PoolHttpClient, ClientBuildError> {
        Ok(PoolHttpClient {
            client: pool.client_for(id)?,
            pool: pool.clone(),
        })
    }

    /// Another client over the same pool that sends through partition `id` (an SDK client per
    /// runtime, each on its own partition, all under one bound).
    ///
    /// # Errors
    ///
    /// When the pool has no partition `id`.
    pub fn for_partition(&self, id: PartitionId) -> Result<PoolHttpClient, ClientBuildError> {
        PoolHttpClient::from_partition(&self.pool, id)
    }

    /// The pool under this client: stats, counters, warm-up, partitions.
    pub fn pool(&self) -> &ConnectionPool {
        &self.pool
    }

    /// The partition this client's requests go through.
    pub fn partition(&self) -> PartitionId {
        self.client.partition()
    }

    /// The facade `http_connector` returns, as a concrete type (tests and custom orchestration
    /// use it directly; the SDK receives it as a `SharedHttpConnector`).
    pub fn connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> PoolConnector {
        // The settings' connect timeout only when the SDK sets one: the pool-wide default
        // stays otherwise. The operation's sleep measures it (and the read timeout below).
        let mut client = self.client.clone();
        if let Some(timeout) = settings.connect_timeout() {
            client = client.connect_timeout(Some(timeout));
        }
        let sleep = match components.sleep_impl() {
            Some(sleep) => {
                client = client.sleep(OperationSleep(sleep.clone()));
                sleep
            }
            None => SharedAsyncSleep::new(TokioSleep::new()),
        };
        PoolConnector::new(
            client,
            settings.read_timeout(),
            sleep,
            components.time_source().unwrap_or_default(),
        )
    }
}

impl HttpClient for PoolHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(self.connector(settings, components))
    }

    fn validate_base_client_config(
        &self,
        _components: &RuntimeComponentsBuilder,
        _config: &ConfigBag,
    ) -> Result<(), BoxError> {
        self.pool.preflight().map_err(Into::into)
    }

    fn validate_final_config(
        &self,
        _components: &RuntimeComponents,
        _config: &ConfigBag,
    ) -> Result<(), BoxError> {
        Ok(())
    }

    fn connector_metadata(&self) -> Option<ConnectorMetadata> {
        Some(ConnectorMetadata::new("hyper", Some(Cow::Borrowed("1.x"))))
    }
}

impl fmt::Debug for PoolHttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolHttpClient")
            .field("partition", &self.partition())
            .field("pool", &self.pool)
            .finish()
    }
}
