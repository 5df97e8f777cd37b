//! The default connector: resolve, dial (happy eyeballs), then TLS for `https` origins.
//!
//! ```text
//!  start ──resolve──▶ addresses ──dial──▶ TCP ──TLS (https only)──▶ (Io, Connected)
//!    └───────────────── one connect timeout covers all of it ───────────────┘
//! ```
//!
//! What this layer does not do: pool or reuse connections, speak HTTP, retry after a failure,
//! or go through proxies. It turns one [`ConnectTarget`] into one transport, or one
//! [`ConnectError`] saying which phase failed.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::dial::dial;
use crate::{
    AlpnOffer, Connect, ConnectError, ConnectFuture, ConnectTarget, ConnectTimings, Connected,
    DialOptions, Io, Negotiated, Resolve, TlsConnector, TlsInfo,
};

/// The default connector: resolve -> socket2 dial (happy eyeballs) -> rustls for https.
///
/// * IP-literal hosts skip the resolver.
/// * `https` origins get a TLS handshake with SNI set to the host name (no SNI for IP
///   literals, whose certificates are checked against the IP address instead) and the ALPN
///   list of [`ConnectTarget::alpn`].
/// * [`ConnectTarget::connect_timeout`] bounds the whole establishment and is reported as
///   [`ConnectError::is_timeout`].
///
/// Cheap to clone; clones share the resolver, options and TLS configuration.
#[derive(Clone)]
pub struct HttpConnector {
    inner: Arc<Inner>,
}

struct Inner {
    resolver: Arc<dyn Resolve>,
    dial: DialOptions,
    tls: TlsConnector,
}

impl HttpConnector {
    /// A connector resolving with `resolver`, dialing with `dial`, and using `tls` for `https`
    /// origins.
    pub fn new(resolver: Arc<dyn Resolve>, dial: DialOptions, tls: TlsConnector) -> HttpConnector {
        HttpConnector {
            inner: Arc::new(Inner {
                resolver,
                dial,
                tls,
            }),
        }
    }

    /// The TLS configuration used for `https` origins (for example to call
    /// [`preflight`](TlsConnector::preflight) at startup).
    pub fn tls(&self) -> &TlsConnector {
        &self.inner.tls
    }
}

impl Connect for HttpConnector {
    fn connect(&self, target: ConnectTarget) -> ConnectFuture {
        let inner = self.inner.clone();
        // Nothing happens until the future is polled: the pool may build it on one runtime
        // and drive it on another.
        Box::pin(async move {
            let Some(limit) = target.connect_timeout else {
                return inner.establish(&target).await;
            };
            match tokio::time::timeout(limit, inner.establish(&target)).await {
                Ok(result) => result,
                Err(_elapsed) => Err(ConnectError::timeout(limit).with_target(&target.origin)),
            }
        })
    }
}

impl Inner {
    async fn establish(&self, target: &ConnectTarget) -> Result<(Io, Connected), ConnectError> {
        let origin = &target.origin;
        let start = Instant::now();

        let addrs = match origin.ip() {
            Some(ip) => vec![SocketAddr::new(ip, origin.port())],
            None => self.resolve(origin.host(), origin.port()).await?,
        };
        let resolve = start.elapsed();

        let (tcp, remote_addr) = dial(addrs, &self.dial, target.interface.as_deref()).await?;
        let connect = start.elapsed();
        let local_addr = tcp
            .local_addr()
            .map_err(|e| ConnectError::connect(e).with_addr(remote_addr))?;

        let mut connected = Connected::new(local_addr, remote_addr);
        connected.timings = ConnectTimings {
            resolve,
            connect,
            tls: None,
        };
        if !origin.is_tls() {
            return Ok((Io::tcp(tcp), connected));
        }

        let config = self.tls_config(target.alpn, origin.host()).await?;
        let stream = handshake(config, tcp, target)
            .await
            .map_err(|e| e.with_addr(remote_addr))?;
        let session = stream.get_ref().1;
        connected.alpn = session.alpn_protocol().and_then(Negotiated::from_alpn);
        connected.tls = Some(tls_info(session));
        connected.timings.tls = Some(start.elapsed());
        Ok((Io::tls(stream), connected))
    }

    async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ConnectError> {
        let addrs = self
            .resolver
            .resolve(host, port)
            .await
            .map_err(|e| ConnectError::resolve(e).with_target(host))?;
        if addrs.is_empty() {
            return Err(ConnectError::resolve("no addresses found").with_target(host));
        }
        Ok(addrs)
    }

    /// The client configuration for `alpn`. The first TLS connection of a connector builds it
    /// on the blocking pool, because that may read the platform's trust store.
    async fn tls_config(
        &self,
        alpn: AlpnOffer,
        host: &str,
    ) -> Result<Arc<ClientConfig>, ConnectError> {
        if let Some(config) = self.tls.cached_config(alpn) {
            return Ok(config);
        }
        let tls = self.tls.clone();
        let built = match tokio::task::spawn_blocking(move || tls.client_config(alpn)).await {
            Ok(built) => built.map_err(ConnectError::tls),
            // The runtime is shutting down, or building panicked; either way, no config.
            Err(join) => Err(ConnectError::tls(std::io::Error::other(join))),
        };
        built.map_err(|e| e.with_target(host))
    }
}

/// Runs the TLS handshake over `tcp` for `target`'s origin.
async fn handshake(
    config: Arc<ClientConfig>,
    tcp: TcpStream,
    target: &ConnectTarget,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, ConnectError> {
    let origin = &target.origin;
    let host = origin.host();
    // An IP-literal server name makes rustls send no SNI (RFC 6066 forbids literals there)
    // and verify the certificate's IP address SAN instead of a DNS name.
    let server_name = match origin.ip() {
        Some(ip) => ServerName::from(ip),
        None => ServerName::try_from(host.to_owned())
            .map_err(|e| ConnectError::tls(e).with_target(host))?,
    };
    tokio_rustls::TlsConnector::from(config)
        .connect(server_name, tcp)
        .await
        .map_err(|e| ConnectError::tls(e).with_target(host))
}

fn tls_info(session: &rustls::ClientConnection) -> TlsInfo {
    let version = match session.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
        _ => "unknown",
    };
    let cipher_suite = session
        .negotiated_cipher_suite()
        .and_then(|suite| suite.suite().as_str())
        .unwrap_or("unknown");
    TlsInfo {
        version,
        cipher_suite,
    }
}

impl fmt::Debug for HttpConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The resolver is a trait object without a Debug bound; it is left out.
        f.debug_struct("HttpConnector")
            .field("dial", &self.inner.dial)
            .field("tls", &self.inner.tls)
            .finish_non_exhaustive()
    }
}
