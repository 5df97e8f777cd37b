//! The connector contract: what the pool asks for ([`ConnectTarget`]), what it gets back
//! ([`Io`] plus [`Connected`]), and the [`Connect`] trait in between.
//!
//! The pool depends only on this contract, so tests and applications can substitute their
//! own transport (in-memory pipes, proxies, Unix sockets) for [`HttpConnector`](crate::HttpConnector).

use crate::tunnel::ProxyUse;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pool_core::{AsyncSleep, OriginKey, Progress};

use crate::{ConnectError, Io};

/// ALPN protocols to offer on a TLS connection (ignored for cleartext).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlpnOffer {
    /// Offer `http/1.1` only.
    Http1Only,
    /// Offer `h2` only.
    Http2Only,
    /// Offer `h2` and `http/1.1`, in that order of preference.
    Both,
}

impl AlpnOffer {
    /// The ALPN protocol identifiers offered, in preference order.
    pub fn protocols(self) -> &'static [&'static [u8]] {
        match self {
            AlpnOffer::Http1Only => &[HTTP1],
            AlpnOffer::Http2Only => &[H2],
            AlpnOffer::Both => &[H2, HTTP1],
        }
    }
}

const H2: &[u8] = b"h2";
const HTTP1: &[u8] = b"http/1.1";

/// The application protocol ALPN selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Negotiated {
    /// The server selected `http/1.1`.
    Http1,
    /// The server selected `h2`.
    Http2,
}

impl Negotiated {
    /// Maps an ALPN protocol identifier to the protocol it names, if it is one we offer.
    pub(crate) fn from_alpn(protocol: &[u8]) -> Option<Negotiated> {
        match protocol {
            H2 => Some(Negotiated::Http2),
            HTTP1 => Some(Negotiated::Http1),
            _ => None,
        }
    }
}

/// What to connect to, and how.
#[derive(Clone, Debug)]
pub struct ConnectTarget {
    /// The origin to reach; its scheme decides between cleartext and TLS.
    pub origin: OriginKey,
    /// The ALPN protocols to offer when the origin uses TLS.
    pub alpn: AlpnOffer,
    /// Bind the socket to this network interface (`SO_BINDTODEVICE` on Linux).
    pub interface: Option<Arc<str>>,
    /// One deadline covering resolution + TCP + TLS. `None` = no timeout.
    pub connect_timeout: Option<Duration>,
    /// The sleep that measures `connect_timeout`; `None` uses tokio's timer. A caller running
    /// on a timer of its own (an SDK operation's sleep, a simulated clock) passes it here.
    pub sleep: Option<Arc<dyn AsyncSleep>>,
    /// The progress of the request this connection is made for, if its caller follows it:
    /// the connector notes each step there as it begins it (a connector of the caller's own
    /// may leave it alone; the request then reads `Connecting(None)`).
    pub progress: Option<Progress>,
}

impl ConnectTarget {
    /// A target for `origin` offering both HTTP versions, with no interface binding and no
    /// timeout.
    pub fn new(origin: OriginKey) -> ConnectTarget {
        ConnectTarget {
            origin,
            alpn: AlpnOffer::Both,
            interface: None,
            connect_timeout: None,
            sleep: None,
            progress: None,
        }
    }
}

/// What the pool learns about an established transport.
#[derive(Clone, Debug)]
pub struct Connected {
    /// The protocol ALPN selected. `None` for cleartext, or when the server selected none.
    pub alpn: Option<Negotiated>,
    /// The local end of the connection.
    pub local_addr: SocketAddr,
    /// The address actually connected to (after resolution and happy eyeballs).
    pub remote_addr: SocketAddr,
    /// The Unix domain socket the transport is connected to, when it is one. Such a transport
    /// has no IP addresses: `local_addr` and `remote_addr` then hold the unspecified IPv4
    /// address with port 0 and mean nothing.
    pub unix_socket: Option<Arc<Path>>,
    /// TLS parameters; `Some` exactly when the transport is TLS.
    pub tls: Option<TlsInfo>,
    /// How long each establishment phase took.
    pub timings: ConnectTimings,
    /// The proxy the transport goes through, and how; `None` for a direct connection.
    pub proxy: Option<ProxyUse>,
}

impl Connected {
    /// Whether the transport is TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A cleartext connection between `local` and `remote`, with no ALPN result and zero
    /// timings; for custom connectors, which may fill in the public fields afterwards.
    pub fn new(local: SocketAddr, remote: SocketAddr) -> Connected {
        Connected {
            alpn: None,
            local_addr: local,
            remote_addr: remote,
            unix_socket: None,
            tls: None,
            timings: ConnectTimings::default(),
            proxy: None,
        }
    }

    /// A cleartext connection over the Unix domain socket at `path`, with no ALPN result and
    /// zero timings (see [`unix_socket`](Self::unix_socket)).
    pub fn unix(path: Arc<Path>) -> Connected {
        let none = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
        Connected {
            unix_socket: Some(path),
            ..Connected::new(none, none)
        }
    }
}

/// The parameters a TLS handshake settled on.
#[derive(Clone, Debug)]
pub struct TlsInfo {
    /// The protocol version: `"TLSv1.3"` or `"TLSv1.2"`.
    pub version: &'static str,
    /// The cipher suite's IANA name, for example `"TLS13_AES_256_GCM_SHA384"`.
    pub cipher_suite: &'static str,
    /// The key exchange group's name, for example `"X25519"`; `None` when the handshake did
    /// not say.
    pub key_exchange: Option<&'static str>,
    /// Whether the handshake resumed an earlier session.
    pub resumed: bool,
    /// Whether the client offered ALPN
    /// ([`TlsOptions::alpn`](crate::TlsOptions::alpn)): when it did not, no protocol was
    /// negotiated and the caller's own choice stands.
    pub alpn_offered: bool,
    /// How many certificates the server presented.
    pub peer_certificates: usize,
    /// The certificates themselves (DER, the server's own first), when the connector keeps
    /// them ([`TlsOptions::keep_peer_certificates`](crate::TlsOptions::keep_peer_certificates)).
    pub peer_chain: Option<std::sync::Arc<[Vec<u8>]>>,
    /// What checking the server's certificate found (see
    /// [`TlsDetails::certificate`](pool_core::TlsDetails::certificate)).
    pub certificate: pool_core::CertificateCheck,
}

/// How long establishment took, each phase measured from the start of the connect.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnectTimings {
    /// Start until the addresses were known (near zero for IP literals).
    pub resolve: Duration,
    /// Start until the TCP connection was established.
    pub connect: Duration,
    /// Start until the TLS handshake finished; `None` for cleartext.
    pub tls: Option<Duration>,
}

/// The future returned by [`Connect::connect`].
pub type ConnectFuture =
    Pin<Box<dyn Future<Output = Result<(Io, Connected), ConnectError>> + Send>>;

/// Turns an origin into a transport. Implementations must be cheap to call concurrently.
///
/// The pool calls `connect` once per new connection and drives the returned future on the
/// runtime that will own the connection.
pub trait Connect: Send + Sync + 'static {
    /// Establishes a transport to `target.origin`.
    ///
    /// Implementations should do no work until the returned future is first polled: the pool
    /// may create the future on one runtime and poll it on another.
    ///
    /// # Errors
    ///
    /// A [`ConnectError`] classified by phase (resolve, connect, timeout, TLS, certificate).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the attempt and must release whatever it opened.
    fn connect(&self, target: ConnectTarget) -> ConnectFuture;
}

impl<C: Connect + ?Sized> Connect for Arc<C> {
    fn connect(&self, target: ConnectTarget) -> ConnectFuture {
        (**self).connect(target)
    }
}
