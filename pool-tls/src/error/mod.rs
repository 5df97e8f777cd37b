//! Why a transport could not be established.
//!
//! [`ConnectError`] follows hyper's error shape: an opaque struct around a boxed private kind,
//! predicates for the questions callers actually ask ("was it DNS? a timeout? the
//! certificate?"), a preserved [`source()`](std::error::Error::source) chain, and a `Display`
//! written for people. The pool and the CLI map the predicates to their own errors and exit
//! codes; nothing should match on message text.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::ConnectStep;

mod display;

pub(crate) use display::write_causes;

/// The boxed error type accepted by the public constructors.
type BoxError = Box<dyn StdError + Send + Sync>;

/// Why a transport could not be established.
///
/// Opaque on purpose: classify it with the `is_*` predicates, read the dialed address with
/// [`addr`](Self::addr), and walk [`source()`](std::error::Error::source) for the underlying
/// I/O, resolver or rustls error. The `Display` text is meant for people and says only what
/// failed at this level, for example `failed to connect to 127.0.0.1:8080`; the cause
/// (`Connection refused (os error 111)`) is [`source()`](std::error::Error::source)'s, and the
/// alternate form `{:#}` prints the whole chain on one line.
///
/// Custom [`Connect`](crate::Connect) implementations build one with [`resolve`](Self::resolve),
/// [`connect`](Self::connect), [`timeout`](Self::timeout) or [`tls`](Self::tls), so the pool can
/// classify their failures the same way as the built-in connector's.
pub struct ConnectError {
    inner: Box<Inner>,
}

struct Inner {
    /// What went wrong.
    kind: Kind,
    /// The name the message talks about: the host for resolution and TLS failures, the origin
    /// for a timeout. `None` when a custom connector built the error without context.
    target: Option<Box<str>>,
    /// The address the failing attempt dialed, when there was one.
    addr: Option<SocketAddr>,
    /// The underlying error, exposed through `source()`.
    source: Option<BoxError>,
    /// The proxy (`scheme://host:port`) whose dial, TLS or tunnel failed, when the transport
    /// went through one.
    proxy: Option<Box<str>>,
}

#[derive(Debug)]
enum Kind {
    /// Name resolution failed or produced no address.
    Resolve,
    /// The TCP connection could not be established.
    Connect,
    /// Binding the socket to a named interface failed; also a connect failure.
    Interface {
        /// The interface name as the caller gave it.
        name: Box<str>,
        /// The platform has no way to bind a socket to an interface by name.
        unsupported: bool,
    },
    /// No local port of the requested range could be bound; also a connect failure.
    LocalPort {
        /// The range's first port.
        first: u16,
        /// The range's last port.
        last: u16,
    },
    /// The socket could not be bound to the requested local address (one that is not this
    /// host's, say); also a connect failure.
    LocalAddress(IpAddr),
    /// The connect timeout elapsed before the transport was ready, in the step the connect
    /// had reached, when the connector noted it.
    Timeout(Duration, Option<ConnectStep>),
    /// The TLS handshake failed for a reason other than the server certificate.
    Tls,
    /// The server's certificate was rejected.
    Certificate,
    /// The server's certificate does not carry a pinned public key.
    PinnedKey,
    /// The server stapled no good status for its certificate (OCSP).
    CertificateStatus,
    /// The SOCKS handshake with the proxy failed: the proxy refused the target or the
    /// credentials, or the exchange broke; or, `resolving`, the origin's name did not resolve
    /// here for a proxy that is sent addresses (`socks5://`, `socks4://`).
    Socks {
        /// The failure was the origin's name resolution, a step of the handshake.
        resolving: bool,
    },
    /// The proxy's `CONNECT` tunnel failed: refused with `status`, or the exchange broke
    /// (`None`: closed early, not HTTP).
    Tunnel {
        /// The proxy's answer, when it gave one.
        status: Option<u16>,
        /// The head of that answer as received (bytes that are not UTF-8 replaced).
        answer: Option<Box<str>>,
        /// The head of the `407` whose challenge the refused `CONNECT` answered, if it did.
        challenge: Option<Box<str>>,
    },
}

impl ConnectError {
    fn new(kind: Kind, source: Option<BoxError>) -> ConnectError {
        ConnectError {
            inner: Box::new(Inner {
                kind,
                target: None,
                addr: None,
                source,
                proxy: None,
            }),
        }
    }

    /// A name-resolution failure, caused by `error`.
    pub fn resolve<E: Into<BoxError>>(error: E) -> ConnectError {
        ConnectError::new(Kind::Resolve, Some(error.into()))
    }

    /// A TCP connection failure (refused, unreachable, reset during connect, ...), caused by
    /// `error`.
    pub fn connect<E: Into<BoxError>>(error: E) -> ConnectError {
        ConnectError::new(Kind::Connect, Some(error.into()))
    }

    /// The connect timeout of `after` elapsed before the transport was ready.
    pub fn timeout(after: Duration) -> ConnectError {
        ConnectError::new(Kind::Timeout(after, None), None)
    }

    /// A TLS handshake failure, caused by `error`.
    ///
    /// When `error` is a [`rustls::Error`] about the peer's certificate (or an [`io::Error`]
    /// wrapping one, which is how tokio-rustls reports handshake failures), the result is
    /// classified as a certificate rejection ([`is_certificate`](Self::is_certificate)) instead
    /// of a generic TLS failure.
    pub fn tls<E: Into<BoxError>>(error: E) -> ConnectError {
        let source = unwrap_io_wrapper(error.into());
        let rustls_error = source.downcast_ref::<rustls::Error>();
        if let Some(status) = rustls_error.and_then(crate::tls::status_error) {
            // The status is the cause to show, not rustls's rendering of the error carrying it.
            let status: BoxError = Box::new(status.clone());
            return ConnectError::new(Kind::CertificateStatus, Some(status));
        }
        let kind = match rustls_error {
            Some(err) if is_certificate_error(err) => Kind::Certificate,
            _ => Kind::Tls,
        };
        // "self-signed certificate" reads better as the cause than rustls's debug rendering
        // of the error that carries it.
        let source = crate::verifier::unwrap_untrusted(source);
        ConnectError::new(kind, Some(source))
    }

    /// The server's certificate carries none of the pinned public keys.
    pub(crate) fn pinned_key_mismatch() -> ConnectError {
        ConnectError::new(Kind::PinnedKey, None)
    }

    /// Binding a socket to interface `name` failed with `error`.
    pub(crate) fn interface(name: &str, error: io::Error) -> ConnectError {
        let kind = Kind::Interface {
            name: name.into(),
            unsupported: false,
        };
        ConnectError::new(kind, Some(error.into()))
    }

    /// No port of `ports` could be bound; `error` is the last attempt's.
    pub(crate) fn local_port(
        ports: &std::ops::RangeInclusive<u16>,
        error: io::Error,
    ) -> ConnectError {
        let kind = Kind::LocalPort {
            first: *ports.start(),
            last: *ports.end(),
        };
        ConnectError::new(kind, Some(error.into()))
    }

    /// Binding a socket to the local address `address` failed with `error`.
    pub(crate) fn local_address(address: IpAddr, error: io::Error) -> ConnectError {
        ConnectError::new(Kind::LocalAddress(address), Some(error.into()))
    }

    /// This platform cannot bind a socket to an interface by name.
    #[cfg_attr(
        any(target_os = "android", target_os = "fuchsia", target_os = "linux"),
        allow(dead_code)
    )]
    pub(crate) fn interface_unsupported(name: &str) -> ConnectError {
        ConnectError::new(
            Kind::Interface {
                name: name.into(),
                unsupported: true,
            },
            None,
        )
    }

    /// The proxy's `CONNECT` exchange broke: closed before answering, or answered with
    /// something that is not HTTP.
    pub(crate) fn tunnel_io(error: io::Error) -> ConnectError {
        let kind = Kind::Tunnel {
            status: None,
            answer: None,
            challenge: None,
        };
        ConnectError::new(kind, Some(error.into()))
    }

    /// The SOCKS handshake with the proxy failed, caused by `error`.
    pub(crate) fn socks<E: Into<BoxError>>(error: E) -> ConnectError {
        ConnectError::new(Kind::Socks { resolving: false }, Some(error.into()))
    }

    /// The origin's name, `host`, did not resolve for a SOCKS proxy that is sent addresses;
    /// `error` is the resolution's failure. Both [`is_socks`](Self::is_socks) and
    /// [`is_resolve`](Self::is_resolve) hold: the resolution is a step of the handshake (curl
    /// reports it as a proxy failure), and what failed was resolving a name.
    pub(crate) fn socks_resolve(error: ConnectError, host: &str) -> ConnectError {
        ConnectError::new(Kind::Socks { resolving: true }, Some(Box::new(error))).with_target(host)
    }

    /// The proxy answered `CONNECT` with `status` (not 2xx); `answer` is the head it sent.
    pub(crate) fn tunnel_refused(status: u16, answer: &[u8]) -> ConnectError {
        let kind = Kind::Tunnel {
            status: Some(status),
            answer: Some(String::from_utf8_lossy(answer).into()),
            challenge: None,
        };
        ConnectError::new(kind, None)
    }

    /// Records that the refused `CONNECT` answered the challenge of the `407` whose head is
    /// `head`; a failure that is not a refusal is returned as it is.
    pub(crate) fn after_challenge(mut self, head: &[u8]) -> ConnectError {
        if let Kind::Tunnel {
            status: Some(_),
            challenge,
            ..
        } = &mut self.inner.kind
        {
            *challenge = Some(String::from_utf8_lossy(head).into());
        }
        self
    }

    /// Records that the failure happened on the way to (or through) `proxy`.
    pub(crate) fn via_proxy(mut self, proxy: impl fmt::Display) -> ConnectError {
        self.inner.proxy = Some(proxy.to_string().into_boxed_str());
        self
    }

    /// Records the step a connect timeout ended (see [`timed_out_during`](Self::timed_out_during)).
    pub(crate) fn during(mut self, step: Option<ConnectStep>) -> ConnectError {
        if let Kind::Timeout(_, during) = &mut self.inner.kind {
            *during = step;
        }
        self
    }

    /// Records the address the failing attempt dialed.
    pub(crate) fn with_addr(mut self, addr: SocketAddr) -> ConnectError {
        self.inner.addr = Some(addr);
        self
    }

    /// Records the host or origin the message should name.
    pub(crate) fn with_target(mut self, target: impl fmt::Display) -> ConnectError {
        self.inner.target = Some(target.to_string().into_boxed_str());
        self
    }

    /// Whether name resolution failed or returned no address: the origin's, or the proxy's
    /// when [`is_proxy`](Self::is_proxy) holds too (see also [`is_socks`](Self::is_socks)).
    pub fn is_resolve(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Resolve | Kind::Socks { resolving: true }
        )
    }

    /// Whether the TCP connection could not be established: refused, unreachable, or any other
    /// dial failure, including failing to bind the socket to the requested interface, local
    /// address or local port of the requested range.
    pub fn is_connect(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Connect | Kind::Interface { .. } | Kind::LocalAddress(_) | Kind::LocalPort { .. }
        )
    }

    /// Whether the socket could not be bound to the requested local address
    /// (`DialOptions::local_address`). Such an error is also [`is_connect`](Self::is_connect).
    pub fn is_local_address(&self) -> bool {
        matches!(self.inner.kind, Kind::LocalAddress(_))
    }

    /// Whether no local port of the requested range (`DialOptions::local_ports`) could be
    /// bound. Such an error is also [`is_connect`](Self::is_connect).
    pub fn is_local_port(&self) -> bool {
        matches!(self.inner.kind, Kind::LocalPort { .. })
    }

    /// Whether binding the socket to the requested network interface failed, or is not
    /// supported on this platform. Such an error is also [`is_connect`](Self::is_connect).
    pub fn is_interface(&self) -> bool {
        matches!(self.inner.kind, Kind::Interface { .. })
    }

    /// Whether the connect timeout (covering resolution, TCP and TLS together) elapsed.
    pub fn is_timeout(&self) -> bool {
        matches!(self.inner.kind, Kind::Timeout(..))
    }

    /// The step the connect was in when its timeout elapsed: resolving, the TCP connect, a TLS
    /// handshake or a proxy's tunnel. `None` for any other error, and for a timeout whose
    /// connector noted no step (a custom [`Connect`](crate::Connect), or one that had not
    /// begun).
    pub fn timed_out_during(&self) -> Option<ConnectStep> {
        match self.inner.kind {
            Kind::Timeout(_, step) => step,
            _ => None,
        }
    }

    /// Whether the TLS handshake failed for a reason other than the server certificate (for
    /// example a protocol version mismatch, or the server rejecting our client certificate).
    pub fn is_tls(&self) -> bool {
        matches!(self.inner.kind, Kind::Tls)
    }

    /// Whether the server's certificate was rejected: untrusted issuer, wrong name, expired,
    /// or no certificate presented at all.
    pub fn is_certificate(&self) -> bool {
        matches!(self.inner.kind, Kind::Certificate)
    }

    /// Whether the handshake finished but the server's certificate carries none of the pinned
    /// public keys ([`TlsOptions::pinned_public_keys`](crate::TlsOptions::pinned_public_keys);
    /// curl's exit 90).
    pub fn is_pinned_key_mismatch(&self) -> bool {
        matches!(self.inner.kind, Kind::PinnedKey)
    }

    /// Whether the server's certificate was valid but the server stapled no current, good
    /// status for it ([`TlsOptions::require_certificate_status`](crate::TlsOptions::require_certificate_status);
    /// curl's exit 91). The source is the [`CertificateStatusError`](crate::CertificateStatusError)
    /// saying why.
    pub fn is_certificate_status(&self) -> bool {
        matches!(self.inner.kind, Kind::CertificateStatus)
    }

    /// Whether the failure concerns the proxy the transport goes through: resolving, dialing or
    /// the TLS handshake with the proxy (those are also [`is_resolve`](Self::is_resolve),
    /// [`is_connect`](Self::is_connect) or [`is_tls`](Self::is_tls)), or its `CONNECT` tunnel.
    pub fn is_proxy(&self) -> bool {
        self.inner.proxy.is_some() || matches!(self.inner.kind, Kind::Tunnel { .. })
    }

    /// Whether the proxy refused the tunnel because it needs (other) credentials: `407 Proxy
    /// Authentication Required`.
    pub fn is_proxy_auth(&self) -> bool {
        self.proxy_status() == Some(407)
    }

    /// Whether the SOCKS handshake with the proxy failed (it refused the target or the
    /// credentials, or the exchange broke), as opposed to reaching the proxy. With a proxy that
    /// is sent addresses (`socks5://`, `socks4://`), the origin's name failing to resolve here
    /// is such a failure too, and [`is_resolve`](Self::is_resolve) as well.
    pub fn is_socks(&self) -> bool {
        matches!(self.inner.kind, Kind::Socks { .. })
    }

    /// Whether the proxy's `CONNECT` tunnel failed (refused, or the exchange broke), as
    /// opposed to reaching the proxy.
    pub fn is_tunnel(&self) -> bool {
        matches!(self.inner.kind, Kind::Tunnel { .. })
    }

    /// For a certificate rejection ([`is_certificate`](Self::is_certificate)), what was wrong
    /// with the certificate.
    pub fn certificate_check(&self) -> Option<pool_core::CertificateCheck> {
        if !self.is_certificate() {
            return None;
        }
        let check = match self.inner.source.as_deref() {
            Some(source) => crate::verifier::classify_source(source),
            None => pool_core::CertificateCheck::Other,
        };
        Some(check)
    }

    /// The status the proxy refused the tunnel with.
    pub fn proxy_status(&self) -> Option<u16> {
        match self.inner.kind {
            Kind::Tunnel { status, .. } => status,
            _ => None,
        }
    }

    /// The head of the answer the proxy refused the tunnel with (status line, headers and the
    /// blank line, as received; bytes that are not UTF-8 replaced), for diagnostics such as
    /// `curl -v`. `None` unless [`proxy_status`](Self::proxy_status) is. The body, if any, is
    /// not read.
    pub fn proxy_response(&self) -> Option<&str> {
        match &self.inner.kind {
            Kind::Tunnel { answer, .. } => answer.as_deref(),
            _ => None,
        }
    }

    /// When the refused `CONNECT` answered a challenge (Digest proxy authentication), the head
    /// of the proxy's `407` that made it, before [`proxy_response`](Self::proxy_response).
    pub fn proxy_challenge(&self) -> Option<&str> {
        match &self.inner.kind {
            Kind::Tunnel { challenge, .. } => challenge.as_deref(),
            _ => None,
        }
    }

    /// The proxy the failure happened with or through, as `scheme://host:port` (never with
    /// credentials), when the transport went through one: says, for example, which SOCKS
    /// version a failed handshake spoke.
    pub fn proxy(&self) -> Option<&str> {
        self.inner.proxy.as_deref()
    }

    /// The address the failing attempt dialed, when known.
    ///
    /// When happy eyeballs raced several addresses and all failed, this is the address of the
    /// attempt that failed last.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.inner.addr
    }
}

/// tokio-rustls reports a handshake failure as an `io::Error` of kind `InvalidData` wrapping the
/// `rustls::Error`. The wrapper adds nothing a person needs, so the rustls error becomes the
/// source directly (and can be classified by a plain downcast).
fn unwrap_io_wrapper(error: BoxError) -> BoxError {
    match error.downcast::<io::Error>() {
        Ok(io_error) => match io_error.downcast::<rustls::Error>() {
            Ok(rustls_error) => Box::new(rustls_error),
            Err(io_error) => Box::new(io_error),
        },
        Err(other) => other,
    }
}

/// Whether a rustls error is about the certificate the server presented, as opposed to the
/// rest of the handshake. A server rejecting *our* certificate arrives as an alert and is not
/// a certificate rejection in this sense.
fn is_certificate_error(error: &rustls::Error) -> bool {
    matches!(
        error,
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
    )
}

impl StdError for ConnectError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|e| &**e as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> SocketAddr {
        "127.0.0.1:8080".parse().unwrap()
    }

    #[test]
    fn connect_error_names_the_address_and_the_os_error() {
        let err = ConnectError::connect(io::Error::from(io::ErrorKind::ConnectionRefused))
            .with_addr(addr());
        assert!(err.is_connect());
        assert!(!err.is_interface() && !err.is_resolve() && !err.is_timeout());
        assert_eq!(err.addr(), Some(addr()));
        assert_eq!(err.to_string(), "failed to connect to 127.0.0.1:8080");
        assert!(
            format!("{err:#}").starts_with("failed to connect to 127.0.0.1:8080: "),
            "the alternate form appends the cause"
        );
        let source = err.source().unwrap().downcast_ref::<io::Error>().unwrap();
        assert_eq!(source.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn timeout_message_names_origin_and_duration() {
        let err = ConnectError::timeout(Duration::from_millis(1500)).with_target("https://a.test");
        assert!(err.is_timeout());
        assert_eq!(
            err.to_string(),
            "connection to https://a.test timed out after 1.5s"
        );
        assert!(err.source().is_none());
        assert_eq!(err.timed_out_during(), None);
        // With the step the connector reached, and the proxy it went through.
        let err = err
            .during(Some(ConnectStep::Tls))
            .via_proxy("http://proxy.test:3128");
        assert_eq!(err.timed_out_during(), Some(ConnectStep::Tls));
        assert_eq!(
            err.to_string(),
            "connection to https://a.test timed out after 1.5s during the TLS handshake \
             (through http://proxy.test:3128)"
        );
        // Only a timeout has a step.
        let refused = ConnectError::connect(io::Error::from(io::ErrorKind::ConnectionRefused));
        assert_eq!(
            refused.during(Some(ConnectStep::Dial)).timed_out_during(),
            None
        );
    }

    #[test]
    fn interface_error_is_also_a_connect_error() {
        let err = ConnectError::interface("eth9", io::Error::from_raw_os_error(19));
        assert!(err.is_interface() && err.is_connect());
        assert_eq!(err.to_string(), "binding to interface eth9 failed");
        assert!(format!("{err:#}").starts_with("binding to interface eth9 failed: "));

        let err = ConnectError::interface_unsupported("eth9");
        assert!(err.is_interface() && err.is_connect());
        assert_eq!(
            err.to_string(),
            "binding to interface eth9 is not supported on this platform"
        );
    }

    #[test]
    fn tls_classifies_certificate_errors_wrapped_in_io_errors() {
        let rejected = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = io::Error::new(io::ErrorKind::InvalidData, rejected);
        let err = ConnectError::tls(wrapped).with_target("localhost");
        assert!(err.is_certificate());
        assert!(!err.is_tls());
        assert_eq!(err.to_string(), "server certificate for localhost rejected");
        assert_eq!(
            format!("{err:#}"),
            "server certificate for localhost rejected: invalid peer certificate: UnknownIssuer"
        );
        // The io wrapper is peeled off: the source is the rustls error itself.
        assert!(
            err.source()
                .unwrap()
                .downcast_ref::<rustls::Error>()
                .is_some()
        );

        let err = ConnectError::tls(rustls::Error::NoCertificatesPresented);
        assert!(err.is_certificate());
    }

    #[test]
    fn tls_keeps_other_handshake_errors_generic() {
        let alert = rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure);
        let err = ConnectError::tls(io::Error::new(io::ErrorKind::InvalidData, alert))
            .with_target("example.com");
        assert!(err.is_tls());
        assert!(!err.is_certificate());
        assert!(format!("{err:#}").starts_with("TLS handshake with example.com failed: "));

        let err = ConnectError::tls(io::Error::from(io::ErrorKind::UnexpectedEof));
        assert!(err.is_tls());
        assert!(err.source().unwrap().downcast_ref::<io::Error>().is_some());
    }

    #[test]
    fn resolve_error_names_the_host() {
        let err = ConnectError::resolve("no addresses found").with_target("a.test");
        assert!(err.is_resolve());
        assert_eq!(err.to_string(), "failed to resolve a.test");
        assert_eq!(
            format!("{err:#}"),
            "failed to resolve a.test: no addresses found"
        );
    }
}
