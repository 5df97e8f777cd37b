//! Transport establishment below the HTTP protocol.
//!
//! This crate turns an origin into a connected transport that HTTP can be spoken over, and
//! reports what was negotiated:
//!
//! * [`Connect`] is the seam the pool depends on: a [`ConnectTarget`] in, an [`Io`] and a
//!   [`Connected`] (ALPN result, addresses, TLS parameters, phase timings) out, or a
//!   [`ConnectError`] saying which phase failed.
//! * [`HttpConnector`] is the default implementation: name resolution through a [`Resolve`]
//!   ([`SystemResolver`] runs `getaddrinfo` on the blocking pool, [`StaticResolver`] adds
//!   curl-style `--resolve` overrides), TCP dialing on socket2 ([`DialOptions`]: `TCP_NODELAY`,
//!   keepalive and `TCP_USER_TIMEOUT` on by default so that a vanished peer is found, local
//!   address, interface binding) with RFC 8305 happy-eyeballs racing, then
//!   rustls for `https` ([`TlsConnector`]: native roots loaded once per process, extra roots,
//!   client certificates, ALPN offers). One connect timeout covers resolution, TCP and TLS.
//!   [`ConnectTo`] rules dial another host and port for chosen origins (curl's `--connect-to`)
//!   while TLS and requests keep the origin; [`HttpConnector::with_unix_socket`] dials every
//!   origin through a Unix domain socket instead (curl's `--unix-socket`).
//! * [`TokioIo`] adapts tokio's IO traits to hyper's and back, replacing hyper-util's adapter.
//! * [`HttpConnector`] is also a `tower_service::Service<Uri>`, the connector contract code
//!   written against hyper plugs into; it yields a [`Connection`] (hyper's IO traits plus the
//!   [`Connected`] facts).
//!
//! * Proxies: [`ProxyConfig`] says which origins go through which proxy (per scheme, a
//!   catch-all, a no-proxy list, or the environment's variables as curl reads them); the
//!   connector dials the proxy (over TLS for an `https://` proxy) and opens a `CONNECT` tunnel
//!   for `https` origins (and for `http` ones when asked or for h2c), or hands the proxy
//!   connection back for absolute-form requests; a SOCKS proxy (`socks5://`, `socks5h://`,
//!   `socks4://`, `socks4a://`) tunnels every origin. It says which in [`Connected::proxy`].
//!   A proxy's credentials go up front as Basic, or ([`AuthScheme`]) wait for its challenge
//!   and answer it with Digest: the connector answers a tunnel's, a caller a forward proxy's
//!   ([`Proxy::answer_challenge`]).
//!
//! # Standalone use
//!
//! The connector works without the pool, under hyper's own connection API:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::sync::Arc;
//! use pool_tls::{DialOptions, HttpConnector, SystemResolver, TlsConnector, TlsOptions};
//! use tower_service::Service;
//!
//! let tls = TlsConnector::new(TlsOptions::default())?;
//! let mut connector = HttpConnector::new(Arc::new(SystemResolver), DialOptions::default(), tls);
//! let uri: http::Uri = "https://example.com/".parse()?;
//! let connection = connector.call(uri.clone()).await?;
//! println!("ALPN chose h2: {}", connection.is_h2());
//! // HTTP/1.1 here; with `is_h2()`, `hyper::client::conn::http2::handshake` instead.
//! let (mut sender, driver) = hyper::client::conn::http1::handshake(connection).await?;
//! tokio::spawn(driver);
//! let request = http::Request::get(uri).header("host", "example.com").body(String::new())?;
//! let response = sender.send_request(request).await?;
//! println!("{}", response.status());
//! # Ok(())
//! # }
//! ```
//!
//! What this crate does not do: pool or reuse connections, speak HTTP to the origin (no
//! request, response or protocol state lives here), or retry. Those belong to the `pool`,
//! `pool-h1` and `pool-h2` crates above it.
//!
//! # Unsafe code
//!
//! The workspace forbids `unsafe`; this crate only denies it, because [`TokioIo`] must fill
//! hyper's possibly-uninitialized read buffer without copying, which hyper's API allows only
//! through an `unsafe` method. The one function allowed to do so is in `tokio_io.rs`, with its
//! safety argument, the same adaptation hyper-util performs.

mod auth;
mod connect;
mod connect_to;
mod connector;
mod dial;
mod error;
mod happy_eyeballs;
#[cfg(feature = "hickory")]
mod hickory;
mod io;
mod no_proxy;
mod ntlm;
mod pin;
mod proxy_config;
mod proxy_protocol;
mod resolve;
mod roots;
mod service;
mod socks;
mod tls;
mod tokio_io;
mod tunnel;
#[cfg(unix)]
mod unix;
mod verifier;

pub use auth::{AuthAnswer, AuthScheme, Challenged};
pub use connect::{
    AlpnOffer, Connect, ConnectFuture, ConnectTarget, ConnectTimings, Connected, Negotiated,
    TlsInfo,
};
pub use connect_to::{ConnectTo, DialTarget};
pub use connector::{ConnectStep, HttpConnector};
pub use dial::DialOptions;
pub use error::ConnectError;
#[cfg(feature = "hickory")]
pub use hickory::HickoryResolver;
/// The hickory-resolver crate, for configuring a [`HickoryResolver`] (feature `hickory`).
#[cfg(feature = "hickory")]
pub use hickory_resolver;
pub use io::Io;
pub use no_proxy::NoProxy;
pub use pin::PublicKeyPin;
pub use proxy_config::{Proxy, ProxyConfig, ProxyError, ProxyScheme};
pub use resolve::{Resolve, ResolveFuture, StaticResolver, SystemResolver};
/// The names of cipher suites and key exchange groups [`TlsOptions`] lists, as rustls spells
/// them (`CipherSuite::TLS13_AES_128_GCM_SHA256`, `NamedGroup::X25519`).
pub use rustls::{CipherSuite, NamedGroup};
pub use service::{Connecting, Connection};
pub use tls::{
    CertificateStatusError, IdentityPart, TlsConfigError, TlsConnector, TlsOptions, TlsVersion,
};
pub use tokio_io::TokioIo;
pub use tunnel::ProxyUse;
