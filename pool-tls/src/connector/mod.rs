//! The default connector: resolve, dial (happy eyeballs), then TLS for `https` origins;
//! through a proxy when the [`ProxyConfig`] routes the origin to one, and to another host and
//! port than the origin's when a [`ConnectTo`] rule says so. With a Unix socket set, every
//! origin is dialed there instead, and only TLS remains of the steps.
//!
//! ```text
//!  start ──resolve──▶ addresses ──dial──▶ TCP ──TLS (https only)──▶ (Io, Connected)
//!    │                                                                  ▲
//!    └─ proxied: resolve + dial the proxy ─(TLS to an https:// proxy)─ CONNECT ─ TLS ┘
//!                                          └── forward proxy (http origins): as is ──┘
//!    └───────────────── one connect timeout covers all of it ───────────────┘
//! ```
//!
//! What this layer does not do: pool or reuse connections, speak HTTP to the origin, or retry
//! after a failure. It turns one [`ConnectTarget`] into one transport, or one [`ConnectError`]
//! saying which phase failed; a connect timeout's names the step it ended ([`ConnectStep`],
//! see `step`).

use std::fmt;
use std::future::{Future, poll_fn};
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use pool_core::{CertificateCheck, Sleep};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::dial::dial;
use crate::{
    AlpnOffer, Connect, ConnectError, ConnectFuture, ConnectTarget, ConnectTimings, ConnectTo,
    Connected, DialOptions, Io, Negotiated, ProxyConfig, Resolve, TlsConnector, TlsInfo,
};

pub(crate) mod step;
mod via;

pub use step::ConnectStep;
use step::{Steps, begin};

/// The default connector: resolve -> socket2 dial (happy eyeballs) -> rustls for https.
///
/// * IP-literal hosts skip the resolver.
/// * `https` origins get a TLS handshake with SNI set to the host name (no SNI for IP
///   literals, whose certificates are checked against the IP address instead) and the ALPN
///   list of [`ConnectTarget::alpn`].
/// * [`ConnectTarget::connect_timeout`] bounds the whole establishment, measured by
///   [`ConnectTarget::sleep`] when set (tokio's timer otherwise), and is reported as
///   [`ConnectError::is_timeout`].
///
/// Cheap to clone; clones share the resolver, options and TLS configuration.
#[derive(Clone)]
pub struct HttpConnector {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    resolver: Arc<dyn Resolve>,
    dial: DialOptions,
    tls: TlsConnector,
    proxy: ProxyConfig,
    /// Tunnel `http` origins through the proxy too (curl's `--proxytunnel`), instead of
    /// sending them absolute-form requests.
    tunnel_http: bool,
    /// Where origins are dialed instead of their own host and port.
    connect_to: ConnectTo,
    /// The Unix domain socket every origin is dialed through instead of the network.
    #[cfg(unix)]
    unix_socket: Option<Arc<std::path::Path>>,
    /// TLS for the connection to an `https://` proxy; `None`: `tls`, as for origins.
    proxy_tls: Option<TlsConnector>,
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
                proxy: ProxyConfig::default(),
                tunnel_http: false,
                connect_to: ConnectTo::default(),
                #[cfg(unix)]
                unix_socket: None,
                proxy_tls: None,
            }),
        }
    }

    /// Routes origins through `proxy`. An `https` origin always goes through a `CONNECT`
    /// tunnel, with TLS to the origin inside it (so ALPN and HTTP/2 work as directly); an
    /// `http` origin gets a forward proxy (the pool sends absolute-form HTTP/1 requests with
    /// the proxy's credentials) unless `tunnel_http` is set or HTTP/2 is spoken with prior
    /// knowledge, which need a tunnel too.
    pub fn with_proxy(self, proxy: ProxyConfig, tunnel_http: bool) -> HttpConnector {
        let mut inner = Inner::clone(&self.inner);
        inner.proxy = proxy;
        inner.tunnel_http = tunnel_http;
        HttpConnector {
            inner: Arc::new(inner),
        }
    }

    /// Dials another host and port than an origin's own where `rules` say so (curl's
    /// `--connect-to`; see [`ConnectTo`]). TLS, requests and the pool's reuse keep the
    /// origin. Through a proxy, a `CONNECT` tunnel asks for the dial target; a forward proxy
    /// gets the origin.
    pub fn with_connect_to(self, rules: ConnectTo) -> HttpConnector {
        let mut inner = Inner::clone(&self.inner);
        inner.connect_to = rules;
        HttpConnector {
            inner: Arc::new(inner),
        }
    }

    /// Dials every origin through the Unix domain socket at `path` (curl's `--unix-socket`)
    /// instead of resolving and dialing its host. TLS, requests and the pool's reuse keep the
    /// origin; the proxy configuration and `connect_to` rules no longer apply. The connection
    /// reports the path in [`Connected::unix_socket`]; a missing or refusing socket is a
    /// [`ConnectError::is_connect`] failure.
    #[cfg(unix)]
    pub fn with_unix_socket(self, path: impl Into<std::path::PathBuf>) -> HttpConnector {
        let mut inner = Inner::clone(&self.inner);
        inner.unix_socket = Some(Arc::from(path.into()));
        HttpConnector {
            inner: Arc::new(inner),
        }
    }

    /// Uses `tls` for the connection to an `https://` proxy instead of the origins' TLS
    /// configuration (curl's `--proxy-cacert`, `--proxy-insecure` and the like, which leave
    /// the origin's trust alone, as the origin's leave the proxy's). TLS to the origin inside
    /// the tunnel keeps [`tls`](Self::tls).
    pub fn with_proxy_tls(self, tls: TlsConnector) -> HttpConnector {
        let mut inner = Inner::clone(&self.inner);
        inner.proxy_tls = Some(tls);
        HttpConnector {
            inner: Arc::new(inner),
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
            let steps = Steps::new(target.progress.clone());
            let establish = steps.scope(inner.establish(&target));
            let Some(limit) = target.connect_timeout else {
                return establish.await;
            };
            let within = match &target.sleep {
                Some(sleep) => race(establish, sleep.sleep(limit)).await,
                None => tokio::time::timeout(limit, establish).await.ok(),
            };
            within.unwrap_or_else(|| {
                let timeout = ConnectError::timeout(limit)
                    .during(steps.reached())
                    .with_target(&target.origin);
                Err(match inner.proxy_for(&target) {
                    Some(proxy) => timeout.via_proxy(via::proxy_label(proxy)),
                    None => timeout,
                })
            })
        })
    }
}

/// `work`'s output, or `None` when `timer` completes first.
async fn race<T>(work: impl Future<Output = T>, mut timer: Sleep) -> Option<T> {
    let mut work = pin!(work);
    poll_fn(|cx| {
        if let Poll::Ready(output) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await
}

impl Inner {
    /// The proxy a connection to the target goes through, if any (none with a Unix socket).
    fn proxy_for(&self, target: &ConnectTarget) -> Option<&crate::Proxy> {
        #[cfg(unix)]
        if self.unix_socket.is_some() {
            return None;
        }
        let origin = &target.origin;
        self.proxy
            .route(origin.is_tls(), origin.host(), origin.port())
    }

    async fn establish(&self, target: &ConnectTarget) -> Result<(Io, Connected), ConnectError> {
        #[cfg(unix)]
        if let Some(path) = &self.unix_socket {
            return self.establish_unix(path, target).await;
        }
        match self.proxy_for(target) {
            Some(proxy) => self.establish_via(proxy, target).await,
            None => self.establish_direct(target).await,
        }
    }

    async fn establish_direct(
        &self,
        target: &ConnectTarget,
    ) -> Result<(Io, Connected), ConnectError> {
        let origin = &target.origin;
        let start = Instant::now();
        let to = self.connect_to.dial_target(origin.host(), origin.port());
        let (mut tcp, mut connected) = self
            .dial_host(to.host(), to.ip(), to.port(), target, start)
            .await?;
        self.proxy_protocol_line(&mut tcp, &connected).await?;
        if !origin.is_tls() {
            return Ok((Io::tcp(tcp), connected));
        }
        let remote_addr = connected.remote_addr;
        let stream = self
            .origin_tls(tcp, target, &mut connected, start)
            .await
            .map_err(|e| e.with_addr(remote_addr))?;
        Ok((Io::tls(stream), connected))
    }

    /// Through the Unix domain socket at `path`, with TLS to the origin inside it for `https`.
    #[cfg(unix)]
    async fn establish_unix(
        &self,
        path: &Arc<std::path::Path>,
        target: &ConnectTarget,
    ) -> Result<(Io, Connected), ConnectError> {
        let start = Instant::now();
        begin(ConnectStep::Dial);
        let (stream, mut connected) = crate::unix::dial_unix(path, start).await?;
        // A Unix socket, with TLS or without, takes `Io`'s boxed variant (see its docs).
        if !target.origin.is_tls() {
            return Ok((Io::custom(stream), connected));
        }
        let stream = self
            .origin_tls(stream, target, &mut connected, start)
            .await?;
        Ok((Io::custom(stream), connected))
    }

    /// Resolves `host` (unless `ip` is its literal) and dials `port`, bound to the target's
    /// interface; the `Connected` describes the TCP connection.
    async fn dial_host(
        &self,
        host: &str,
        ip: Option<IpAddr>,
        port: u16,
        target: &ConnectTarget,
        start: Instant,
    ) -> Result<(TcpStream, Connected), ConnectError> {
        let addrs = match ip {
            Some(ip) => vec![SocketAddr::new(ip, port)],
            None => {
                begin(ConnectStep::Resolve);
                self.resolve(host, port).await?
            }
        };
        let resolve = start.elapsed();
        begin(ConnectStep::Dial);
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
        Ok((tcp, connected))
    }

    /// The PROXY protocol line, when [`DialOptions::proxy_protocol`] asks for it, on `stream`:
    /// where the origin's bytes start (the socket, or inside a tunnel, before TLS), as curl
    /// places it, naming `connected`'s ends (the first hop's, as curl's).
    async fn proxy_protocol_line<S>(
        &self,
        stream: &mut S,
        connected: &Connected,
    ) -> Result<(), ConnectError>
    where
        S: AsyncWrite + Unpin,
    {
        if !self.dial.proxy_protocol {
            return Ok(());
        }
        let (local, remote) = (connected.local_addr, connected.remote_addr);
        crate::proxy_protocol::write_v1(stream, local, remote)
            .await
            .map_err(|e| ConnectError::connect(e).with_addr(remote))
    }

    /// What checking the origin's certificate on `session` found (`Valid` unless
    /// certificate verification is off; see [`CertificateCheck`]).
    fn certificate_check(
        &self,
        session: &rustls::ClientConnection,
        target: &ConnectTarget,
    ) -> CertificateCheck {
        // A verified handshake has nothing to check again, and no name to build for it.
        if self.tls.verifies_certificates() {
            return CertificateCheck::Valid;
        }
        let origin = &target.origin;
        match server_name(origin.host(), origin.ip()) {
            Ok(name) => self.tls.certificate_check(session, &name),
            // The handshake could not have started with such a name.
            Err(_) => CertificateCheck::Other,
        }
    }

    /// The TLS handshake with the target's origin over `stream` (a socket or a tunnel), its
    /// key checked against the pins and the session recorded in `connected`.
    async fn origin_tls<S>(
        &self,
        stream: S,
        target: &ConnectTarget,
        connected: &mut Connected,
        start: Instant,
    ) -> Result<tokio_rustls::client::TlsStream<S>, ConnectError>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let origin = &target.origin;
        // The first TLS connection's configuration reads the trust store: part of the step.
        begin(ConnectStep::Tls);
        let config = tls_config(&self.tls, target.alpn, origin.host()).await?;
        let alpn_offered = !config.alpn_protocols.is_empty();
        let stream = handshake(config, stream, origin.host(), origin.ip()).await?;
        let session = stream.get_ref().1;
        self.tls
            .check_pins(session)
            .map_err(|e| e.with_target(origin.host()))?;
        let check = self.certificate_check(session, target);
        finish_tls(connected, session, check, alpn_offered, start.elapsed());
        if let (Some(tls), true) = (&mut connected.tls, self.tls.keeps_peer_certificates()) {
            let chain = session.peer_certificates().unwrap_or_default();
            tls.peer_chain = Some(chain.iter().map(|c| c.as_ref().to_vec()).collect());
        }
        Ok(stream)
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
}

/// `tls`'s client configuration for `alpn`. The first TLS connection of a connector builds it
/// on the blocking pool, because that may read the platform's trust store.
async fn tls_config(
    tls: &TlsConnector,
    alpn: AlpnOffer,
    host: &str,
) -> Result<Arc<ClientConfig>, ConnectError> {
    if let Some(config) = tls.cached_config(alpn) {
        return Ok(config);
    }
    let tls = tls.clone();
    let built = match tokio::task::spawn_blocking(move || tls.client_config(alpn)).await {
        Ok(built) => built.map_err(ConnectError::tls),
        // The runtime is shutting down, or building panicked; either way, no config.
        Err(join) => Err(ConnectError::tls(std::io::Error::other(join))),
    };
    built.map_err(|e| e.with_target(host))
}

/// Runs a TLS handshake over `stream` with `host` (`ip` when it is an IP literal).
async fn handshake<S>(
    config: Arc<ClientConfig>,
    stream: S,
    host: &str,
    ip: Option<IpAddr>,
) -> Result<tokio_rustls::client::TlsStream<S>, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let server_name = server_name(host, ip).map_err(|e| ConnectError::tls(e).with_target(host))?;
    tokio_rustls::TlsConnector::from(config)
        .connect(server_name, stream)
        .await
        .map_err(|e| ConnectError::tls(e).with_target(host))
}

/// The name a TLS handshake with `host` verifies (`ip` when it is an IP literal).
fn server_name(
    host: &str,
    ip: Option<IpAddr>,
) -> Result<ServerName<'static>, rustls::pki_types::InvalidDnsNameError> {
    // An IP-literal server name makes rustls send no SNI (RFC 6066 forbids literals there)
    // and verify the certificate's IP address SAN instead of a DNS name.
    match ip {
        Some(ip) => Ok(ServerName::from(ip)),
        None => ServerName::try_from(host.to_owned()),
    }
}

/// Records a finished TLS session with the origin, whose certificate check found `check`.
fn finish_tls(
    connected: &mut Connected,
    session: &rustls::ClientConnection,
    check: CertificateCheck,
    alpn_offered: bool,
    at: Duration,
) {
    connected.alpn = session.alpn_protocol().and_then(Negotiated::from_alpn);
    connected.tls = Some(tls_info(session, check, alpn_offered));
    connected.timings.tls = Some(at);
}

/// `host:port`, with an IPv6 literal in brackets.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn tls_info(
    session: &rustls::ClientConnection,
    certificate: CertificateCheck,
    alpn_offered: bool,
) -> TlsInfo {
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
        key_exchange: session
            .negotiated_key_exchange_group()
            .and_then(|group| group.name().as_str()),
        resumed: session.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
        alpn_offered,
        peer_certificates: session.peer_certificates().map_or(0, <[_]>::len),
        peer_chain: None,
        certificate,
    }
}

impl fmt::Debug for HttpConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The resolver is a trait object without a Debug bound; it is left out.
        f.debug_struct("HttpConnector")
            .field("dial", &self.inner.dial)
            .field("tls", &self.inner.tls)
            .field("proxy", &self.inner.proxy)
            .finish_non_exhaustive()
    }
}
