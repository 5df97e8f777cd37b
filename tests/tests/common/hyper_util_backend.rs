//! hyper-util's legacy client as a contract backend (the differential oracle). hyper-util is a
//! dev-dependency of this crate only, so this module is compiled into the test binaries that
//! include it, never into a product crate.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use pool_tests::contract::{Backend, BackendConfig, BoxError, BoxFuture, ContractResponse};

use crate::hyper_util_tls::RustlsConnector;

/// hyper-util's legacy client, configured the way a careful user would: a pool timer (without
/// it idle timeout does nothing), the idle timeout, HTTP/2-only for h2c, and the read timeout
/// as an outer `tokio::time::timeout` (hyper-util has none of its own).
pub(crate) struct HyperUtilBackend {
    client: Clients,
    read_timeout: Option<Duration>,
    tls: Option<RustlsConnector>,
}

/// The client, over plain TCP or over TLS (`Client` is typed by its connector).
enum Clients {
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<RustlsConnector, Full<Bytes>>),
}

impl Backend for HyperUtilBackend {
    const NAME: &'static str = "hyper-util";

    fn new(config: BackendConfig) -> Self {
        let mut builder = Client::builder(TokioExecutor::new());
        builder.pool_timer(TokioTimer::new());
        if let Some(idle) = config.idle_timeout {
            builder.pool_idle_timeout(idle);
        }
        builder.http2_only(config.http2);
        // `config.bound` has no hyper-util equivalent: it has no connection or pending cap.
        let connector = config
            .tls
            .as_ref()
            .map(|tls| RustlsConnector::new(tls.client_config.clone()));
        let client = match &connector {
            Some(connector) => Clients::Tls(builder.build(connector.clone())),
            None => Clients::Plain(builder.build_http()),
        };
        HyperUtilBackend {
            client,
            read_timeout: config.read_timeout,
            tls: connector,
        }
    }

    fn send(&self, request: Request<Full<Bytes>>) -> BoxFuture<Result<ContractResponse, BoxError>> {
        let sent = match &self.client {
            Clients::Plain(client) => client.request(request),
            Clients::Tls(client) => client.request(request),
        };
        let read_timeout = self.read_timeout;
        Box::pin(async move {
            let response = match read_timeout {
                Some(limit) => tokio::time::timeout(limit, sent)
                    .await
                    .map_err(|e| Box::new(e) as BoxError)??,
                None => sent.await?,
            };
            Ok(response.map(|body| body.map_err(|e| Box::new(e) as BoxError).boxed()))
        })
    }

    fn tls_dials(&self) -> Option<usize> {
        self.tls.as_ref().map(RustlsConnector::dials)
    }
}
