//! The pool's error type: opaque, classified by predicates, with the source chain preserved.
//!
//! # The chain convention
//!
//! Every error of this workspace (this [`Error`], `pool_tls::ConnectError`, the builder's
//! errors) follows one rule, the Rust API guidelines' (C-GOOD-ERR): a level's `Display` says
//! what went wrong *at that level* and never repeats its cause; the cause is returned from
//! [`source()`](std::error::Error::source). A chain printer (anyhow's `{:#}`, a tracing error
//! layer, [`Error`]'s own alternate form) then shows each message exactly once:
//!
//! ```text
//! {}    request failed
//! {:#}  request failed: connection closed before message completed
//! ```
//!
//! The alternate form (`format!("{error:#}")`) of [`Error`] and `ConnectError` prints the
//! whole chain on one line, joined by `": "`, for programs that print an error without anyhow.
//! The classification never depends on the text: use the predicates.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use pool_core::InvalidOrigin;
use pool_tls::ConnectError;

use crate::connection::ConnectionHandle;

mod format;

type Source = Arc<dyn StdError + Send + Sync + 'static>;

/// Why a request through the pool failed.
///
/// Classify with the predicates (`is_connect`, `is_timeout`, `is_saturated`, ...); the message
/// is for people, and [`source`](StdError::source) leads to the underlying transport, TLS or
/// hyper error (see the module docs for the chain convention: `{error:#}` prints it all).
/// Cloning is cheap: the source is shared, which is how one failed establishment reaches every
/// request that waited on it.
///
/// When a connection was involved (the request was sent on one, or its response body failed),
/// [`connection`](Self::connection) says which one and whether it was reused: the same
/// [`ConnectionHandle`] a response carries, so the error can be matched to the listener's
/// events.
#[derive(Clone)]
pub struct Error {
    inner: Box<ErrorImpl>,
}

#[derive(Clone)]
struct ErrorImpl {
    kind: Kind,
    source: Option<Source>,
    /// Whether the request is safe to send again, and why (see [`Error::is_retryable`]).
    retryable: Retryable,
    /// The connection the failure happened on, if one was involved.
    connection: Option<ConnectionHandle>,
}

/// Why a failed request is safe to send again, if it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Retryable {
    No,
    /// The server provably did not process it.
    NotProcessed,
    /// It is idempotent and failed before any response, with no proof either way.
    Idempotent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The URI does not name an origin the pool can serve.
    InvalidUri,
    /// Establishing a transport failed; see the source's classification.
    Connect,
    /// The HTTP handshake on a new transport failed.
    Handshake,
    /// No response head arrived within the client's read timeout.
    ReadTimeout,
    /// No connection or permit became available within the client's pool timeout.
    PoolTimeout,
    /// The origin's pending-request cap was reached.
    Saturated,
    /// The request requires HTTP/2 and the origin speaks HTTP/1.1.
    UnsupportedVersion,
    /// The establishment this request waited on was dropped before finishing (its owner
    /// runtime shut down, or there was no runtime to run it on).
    Canceled,
    /// Sending the request or receiving the response head failed.
    Request,
    /// Reading the response body failed.
    Body,
    /// The response body sent nothing for the client's body idle timeout.
    BodyIdleTimeout,
}

impl Error {
    fn new(kind: Kind, source: Option<Source>) -> Error {
        Error {
            inner: Box::new(ErrorImpl {
                kind,
                source,
                retryable: Retryable::No,
                connection: None,
            }),
        }
    }

    pub(crate) fn invalid_uri(err: InvalidOrigin) -> Error {
        Error::new(Kind::InvalidUri, Some(Arc::new(err)))
    }

    pub(crate) fn connect(err: ConnectError) -> Error {
        Error::new(Kind::Connect, Some(Arc::new(err)))
    }

    pub(crate) fn handshake(err: hyper::Error) -> Error {
        Error::new(Kind::Handshake, Some(Arc::new(err)))
    }

    pub(crate) fn read_timeout(after: Duration) -> Error {
        Error::new(
            Kind::ReadTimeout,
            Some(Arc::new(Message(format!(
                "no response head within {after:?}"
            )))),
        )
    }

    pub(crate) fn pool_timeout(after: Duration) -> Error {
        Error::new(
            Kind::PoolTimeout,
            Some(Arc::new(Message(format!(
                "no connection became available within {after:?}"
            )))),
        )
    }

    pub(crate) fn saturated(cap: usize) -> Error {
        Error::new(
            Kind::Saturated,
            Some(Arc::new(Message(format!(
                "{cap} requests already wait for a connection to this origin"
            )))),
        )
    }

    pub(crate) fn unsupported_version(detail: &'static str) -> Error {
        Error::new(
            Kind::UnsupportedVersion,
            Some(Arc::new(Message(detail.to_owned()))),
        )
    }

    pub(crate) fn canceled(detail: &'static str) -> Error {
        Error::new(Kind::Canceled, Some(Arc::new(Message(detail.to_owned()))))
    }

    pub(crate) fn request(err: hyper::Error) -> Error {
        Error::new(Kind::Request, Some(Arc::new(err)))
    }

    /// Marks the error as one the server provably did not process.
    pub(crate) fn not_processed(mut self) -> Error {
        self.inner.retryable = Retryable::NotProcessed;
        self
    }

    /// Marks the error of an idempotent request that failed before any response, with no
    /// proof whether the server processed it: safe to send again all the same.
    pub(crate) fn idempotent_unanswered(mut self) -> Error {
        self.inner.retryable = Retryable::Idempotent;
        self
    }

    /// Records the connection the failure happened on.
    pub(crate) fn on(mut self, connection: ConnectionHandle) -> Error {
        self.inner.connection = Some(connection);
        self
    }

    /// The connection this failure happened on: its identity ([`ConnectionHandle::id`], the
    /// one the listener's events carry), whether it had served a request before
    /// ([`ConnectionHandle::is_reused`]), its protocol and owner partition. `None` when no
    /// connection was involved: the request failed before one was assigned (an invalid URI, a
    /// saturated origin, the pool timeout) or establishing one failed (a connect error
    /// concerns a connection that never existed).
    ///
    /// Set for failures while sending the request or awaiting its head (including the read
    /// timeout and a request the pool would not send again) and for failures of the response
    /// body. A caller's own retry rule can use it: a failure on a reused connection that
    /// [`is_retryable`](Self::is_retryable) is the stale-connection case; poisoning the
    /// connection ([`ConnectionHandle::poison`]) keeps the pool from reusing it.
    pub fn connection(&self) -> Option<&ConnectionHandle> {
        self.inner.connection.as_ref()
    }

    pub(crate) fn body(err: hyper::Error) -> Error {
        Error::new(Kind::Body, Some(Arc::new(err)))
    }

    pub(crate) fn body_idle_timeout(after: Duration) -> Error {
        Error::new(
            Kind::BodyIdleTimeout,
            Some(Arc::new(Message(format!(
                "the response body sent nothing for {after:?}"
            )))),
        )
    }

    fn connect_error(&self) -> Option<&ConnectError> {
        match self.inner.kind {
            Kind::Connect => self
                .inner
                .source
                .as_deref()
                .and_then(|e| e.downcast_ref::<ConnectError>()),
            _ => None,
        }
    }

    fn hyper_error(&self) -> Option<&hyper::Error> {
        self.inner
            .source
            .as_deref()
            .and_then(|e| e.downcast_ref::<hyper::Error>())
    }

    /// Iterates the source chain (excluding `self`).
    fn chain(&self) -> impl Iterator<Item = &(dyn StdError + 'static)> {
        let mut next: Option<&(dyn StdError + 'static)> = self.source();
        std::iter::from_fn(move || {
            let current = next?;
            next = current.source();
            Some(current)
        })
    }

    /// The URI did not name an `http` or `https` origin.
    pub fn is_invalid_uri(&self) -> bool {
        self.inner.kind == Kind::InvalidUri
    }

    /// Establishing the connection failed: resolution, TCP, interface binding, TLS, the connect
    /// timeout, or the HTTP handshake.
    pub fn is_connect(&self) -> bool {
        matches!(self.inner.kind, Kind::Connect | Kind::Handshake)
    }

    /// The host name could not be resolved.
    pub fn is_resolve(&self) -> bool {
        self.connect_error().is_some_and(ConnectError::is_resolve)
    }

    /// Binding to the partition's network interface failed or is unsupported.
    pub fn is_interface(&self) -> bool {
        self.connect_error().is_some_and(ConnectError::is_interface)
    }

    /// The TLS handshake failed for a reason other than the certificate.
    pub fn is_tls(&self) -> bool {
        self.connect_error().is_some_and(ConnectError::is_tls)
    }

    /// The failure concerns the HTTP proxy the connection goes through: resolving, dialing or
    /// the TLS handshake with the proxy, or its `CONNECT` tunnel (see
    /// [`ConnectError::is_proxy`]).
    pub fn is_proxy(&self) -> bool {
        self.connect_error().is_some_and(ConnectError::is_proxy)
    }

    /// The proxy refused the tunnel with `407 Proxy Authentication Required`.
    pub fn is_proxy_auth(&self) -> bool {
        self.connect_error()
            .is_some_and(ConnectError::is_proxy_auth)
    }

    /// The proxy's `CONNECT` tunnel failed: refused (see [`proxy_status`](Self::proxy_status))
    /// or broken off.
    pub fn is_proxy_tunnel(&self) -> bool {
        self.connect_error().is_some_and(ConnectError::is_tunnel)
    }

    /// The SOCKS handshake with the proxy failed: it refused the target or the credentials,
    /// or the exchange broke. With a proxy that is sent addresses (`socks5://`,
    /// `socks4://`), the origin's name failing to resolve here is such a failure too, and
    /// [`is_resolve`](Self::is_resolve) as well.
    pub fn is_proxy_socks(&self) -> bool {
        self.connect_error().is_some_and(ConnectError::is_socks)
    }

    /// The proxy the connection failed with or through, as `scheme://host:port` (never with
    /// credentials; see [`ConnectError::proxy`]).
    pub fn proxy(&self) -> Option<&str> {
        self.connect_error().and_then(ConnectError::proxy)
    }

    /// The status the proxy refused the tunnel with.
    pub fn proxy_status(&self) -> Option<u16> {
        self.connect_error().and_then(ConnectError::proxy_status)
    }

    /// The head of the answer the proxy refused the tunnel with, as received (see
    /// [`ConnectError::proxy_response`]).
    pub fn proxy_response(&self) -> Option<&str> {
        self.connect_error().and_then(ConnectError::proxy_response)
    }

    /// When the refused tunnel's `CONNECT` answered a challenge (Digest proxy authentication),
    /// the head of the proxy's `407` that made it; see [`ConnectError::proxy_challenge`].
    pub fn proxy_challenge(&self) -> Option<&str> {
        self.connect_error().and_then(ConnectError::proxy_challenge)
    }

    /// For a rejected certificate ([`is_certificate`](Self::is_certificate)), what was wrong
    /// with it.
    pub fn certificate_check(&self) -> Option<crate::CertificateCheck> {
        self.connect_error()
            .and_then(ConnectError::certificate_check)
    }

    /// The server's certificate was rejected.
    pub fn is_certificate(&self) -> bool {
        self.connect_error()
            .is_some_and(ConnectError::is_certificate)
    }

    /// The server's certificate carries none of the pinned public keys
    /// ([`Builder::pin_public_key`](crate::Builder::pin_public_key)); the handshake itself
    /// finished.
    pub fn is_pinned_key_mismatch(&self) -> bool {
        self.connect_error()
            .is_some_and(ConnectError::is_pinned_key_mismatch)
    }

    /// The server's certificate was valid, but it stapled no current status saying the
    /// certificate is good ([`Builder::tls_require_certificate_status`](crate::Builder::tls_require_certificate_status));
    /// the source chain holds the [`CertificateStatusError`](crate::CertificateStatusError).
    pub fn is_certificate_status(&self) -> bool {
        self.connect_error()
            .is_some_and(ConnectError::is_certificate_status)
    }

    /// A timeout elapsed: the connect timeout, the read timeout, the pool timeout, the body
    /// idle timeout, one of hyper's, or the operating system's.
    ///
    /// The operating system's is a transport that failed with `ETIMEDOUT`
    /// ([`std::io::ErrorKind::TimedOut`] in the source chain): the kernel gave up on a connect
    /// that nothing answered (its SYN retries, or the TCP user timeout, which Linux applies to
    /// a connect too), or found the peer gone by TCP keepalive or the TCP user timeout
    /// ([`Builder::tcp_user_timeout`](crate::Builder::tcp_user_timeout)). Such a connect
    /// failure is [`is_connect`](Self::is_connect) and `is_timeout` but not
    /// [`is_connect_timeout`](Self::is_connect_timeout), which is the pool's own timer. This is
    /// how reqwest's `is_timeout` answers, and curl's exit code (28) for a connect the kernel
    /// gave up on.
    pub fn is_timeout(&self) -> bool {
        self.is_connect_timeout()
            || self.inner.kind == Kind::ReadTimeout
            || self.inner.kind == Kind::PoolTimeout
            || self.inner.kind == Kind::BodyIdleTimeout
            || self.hyper_error().is_some_and(hyper::Error::is_timeout)
            || self.is_system_timeout()
    }

    /// The operating system's timeout, none of the pool's timers: the transport failed with
    /// `ETIMEDOUT` (see [`is_timeout`](Self::is_timeout)). With [`is_connect`](Self::is_connect)
    /// a connect that nothing answered; otherwise a connection that was up and whose peer went
    /// away without a word (keepalive probes or the TCP user timeout found it gone), the case
    /// a gateway tells from a slow upstream its own deadline ended.
    pub fn is_system_timeout(&self) -> bool {
        self.chain().any(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        })
    }

    /// The pool's connect timeout (resolution + TCP + TLS,
    /// [`Client::connect_timeout`](crate::Client::connect_timeout)) elapsed. A connect the
    /// kernel gave up on is [`is_timeout`](Self::is_timeout) but not this.
    pub fn is_connect_timeout(&self) -> bool {
        self.connect_error().is_some_and(ConnectError::is_timeout)
    }

    /// The step a new connection was in when the pool's connect timeout elapsed: resolving,
    /// the TCP connect, a TLS handshake, a proxy's tunnel or SOCKS handshake (see
    /// [`ConnectStep`](crate::ConnectStep)). `None` unless
    /// [`is_connect_timeout`](Self::is_connect_timeout) (and for a custom connector that
    /// noted no step).
    pub fn connect_timed_out_during(&self) -> Option<pool_tls::ConnectStep> {
        self.connect_error()
            .and_then(ConnectError::timed_out_during)
    }

    /// No response head arrived within the read timeout.
    pub fn is_read_timeout(&self) -> bool {
        self.inner.kind == Kind::ReadTimeout
    }

    /// The request waited for a connection or permit longer than its pool timeout
    /// ([`Client::pool_timeout`](crate::Client::pool_timeout)) and was withdrawn.
    pub fn is_pool_timeout(&self) -> bool {
        self.inner.kind == Kind::PoolTimeout
    }

    /// The request was refused without waiting because the origin's pending-request cap
    /// (`max_pending_per_host`) was reached.
    pub fn is_saturated(&self) -> bool {
        self.inner.kind == Kind::Saturated
    }

    /// The request requires HTTP/2 (its version is `HTTP/2.0`) and the origin negotiated or is
    /// configured for HTTP/1.1.
    pub fn is_unsupported_version(&self) -> bool {
        self.inner.kind == Kind::UnsupportedVersion
    }

    /// The work this request depended on was dropped before it finished, for example because
    /// the owner partition's runtime shut down.
    pub fn is_canceled(&self) -> bool {
        self.inner.kind == Kind::Canceled
            || self.hyper_error().is_some_and(hyper::Error::is_canceled)
    }

    /// Sending the request or receiving the response head failed.
    pub fn is_request(&self) -> bool {
        self.inner.kind == Kind::Request
    }

    /// Reading the response body failed (an error from the connection, or the body idle
    /// timeout).
    pub fn is_body(&self) -> bool {
        matches!(self.inner.kind, Kind::Body | Kind::BodyIdleTimeout)
    }

    /// The response body sent nothing for the body idle timeout
    /// ([`Client::body_idle_timeout`](crate::Client::body_idle_timeout)); its connection was
    /// retired.
    pub fn is_body_idle_timeout(&self) -> bool {
        self.inner.kind == Kind::BodyIdleTimeout
    }

    /// The server's HTTP/1 response head could not be read as HTTP (hyper's `is_parse`): see
    /// [`malformed`](Self::malformed) for the part at fault. The request was sent, so the pool
    /// does not send it again; the connection was closed.
    pub fn is_malformed_response(&self) -> bool {
        // Without `malformed`'s reading of hyper's description: a class, not the part.
        self.hyper_error().is_some_and(hyper::Error::is_parse)
    }

    /// Which part of a malformed HTTP/1 response head was at fault (a status line that is not
    /// HTTP/1, a header line without a colon, ...); `None` when the failure was something
    /// else.
    pub fn malformed(&self) -> Option<crate::Malformed> {
        self.hyper_error().and_then(crate::malformed::of)
    }

    /// The connection ended before a complete message was received (hyper's
    /// `is_incomplete_message`).
    pub fn is_incomplete_message(&self) -> bool {
        self.hyper_error()
            .is_some_and(hyper::Error::is_incomplete_message)
    }

    /// The peer reset the stream or the connection (`RST_STREAM`, or a TCP reset).
    pub fn is_reset(&self) -> bool {
        self.chain().any(|e| {
            if let Some(h2) = e.downcast_ref::<h2_reason::H2Error>() {
                return h2.is_reset() && !h2.is_go_away();
            }
            e.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::BrokenPipe
                )
            })
        })
    }

    /// The HTTP/2 connection ended with `GOAWAY` (the peer's, or one this side sent after a
    /// protocol error). A refused stream is [`is_refused_stream`](Self::is_refused_stream).
    pub fn is_go_away(&self) -> bool {
        self.h2_error().is_some_and(h2_reason::H2Error::is_go_away)
    }

    /// The peer refused the HTTP/2 stream: it reset it with `REFUSED_STREAM`, or it allows no
    /// stream at all (its `SETTINGS_MAX_CONCURRENT_STREAMS` is 0, and the connection closed as
    /// [`NoStreamsAllowed`](crate::CloseReason::NoStreamsAllowed)) and the request is one it
    /// did not process. [`http2_error_code`](Self::http2_error_code) tells the two apart.
    pub fn is_refused_stream(&self) -> bool {
        self.h2_error().is_some_and(|h2| {
            !h2.is_go_away() && h2.reason() == Some(h2_reason::Reason::REFUSED_STREAM)
        }) || (self.inner.retryable == Retryable::NotProcessed
            && self.on_a_connection_allowing_no_streams())
    }

    /// The failure happened on a connection that closed because its peer allows no HTTP/2
    /// stream.
    fn on_a_connection_allowing_no_streams(&self) -> bool {
        self.inner.kind == Kind::Request
            && self
                .inner
                .connection
                .as_ref()
                .and_then(ConnectionHandle::close_reason)
                == Some(crate::CloseReason::NoStreamsAllowed)
    }

    /// The HTTP/2 error code (RFC 9113 §7) of the `RST_STREAM` or `GOAWAY` this failure came
    /// from, the peer's or this side's: `0x2` `INTERNAL_ERROR`, `0x7` `REFUSED_STREAM`, `0x8`
    /// `CANCEL`, ... `None` when no HTTP/2 frame was involved (an HTTP/1 failure, a TCP reset,
    /// a timeout).
    pub fn http2_error_code(&self) -> Option<u32> {
        self.h2_error()
            .and_then(h2_reason::H2Error::reason)
            .map(u32::from)
    }

    /// The server provably did not process the request, so sending it again cannot repeat
    /// its effects: hyper handed it back unsent, an HTTP/2 `GOAWAY` covered its stream, the
    /// stream was refused, or (for an idempotent request, which is safe to repeat) a reused
    /// connection closed or was reset before the response began, or the server reset its
    /// HTTP/2 stream with `ENHANCE_YOUR_CALM` before answering. The pool re-sends such
    /// requests itself when its [`RetryPolicy`](crate::RetryPolicy) and the body allow; this
    /// error reached the caller because they did not (a streaming body, the policy, or the
    /// re-send budget). A non-idempotent request on a connection lost that way is not marked:
    /// the server may have processed it. The message says which of the two holds: "the server
    /// did not process the request" for a proof, "the request is idempotent" otherwise.
    pub fn is_retryable(&self) -> bool {
        self.inner.retryable != Retryable::No
    }

    /// The first h2 error in the source chain.
    fn h2_error(&self) -> Option<&h2_reason::H2Error> {
        self.chain()
            .find_map(|e| e.downcast_ref::<h2_reason::H2Error>())
    }

    /// A GOAWAY with `NO_ERROR` from the peer: a graceful shutdown, not a failure of its own.
    fn is_graceful_go_away(&self) -> bool {
        self.h2_error().is_some_and(|h2| {
            h2.is_go_away() && h2.is_remote() && h2.reason() == Some(h2_reason::Reason::NO_ERROR)
        })
    }

    fn description(&self) -> &'static str {
        match self.inner.kind {
            Kind::InvalidUri => "invalid request URI",
            Kind::Connect => "failed to establish a connection",
            Kind::Handshake => "HTTP handshake failed on a new connection",
            Kind::ReadTimeout => "read timeout",
            Kind::PoolTimeout => "timed out waiting for a connection",
            Kind::Saturated => "origin saturated",
            Kind::UnsupportedVersion => "unsupported HTTP version",
            Kind::Canceled => "connection establishment canceled",
            Kind::Request => "request failed",
            Kind::Body => "error reading the response body",
            Kind::BodyIdleTimeout => "response body idle timeout",
        }
    }
}

/// The h2 types the classification looks for, reached through hyper's re-export chain.
mod h2_reason {
    pub(super) use h2::{Error as H2Error, Reason};
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

/// A plain message used as the source of errors the pool itself detects.
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Message {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_follow_the_kind() {
        let e = Error::saturated(16);
        assert!(e.is_saturated() && !e.is_connect() && !e.is_timeout());
        assert!(format!("{e:#}").contains("16 requests"));
        let e = Error::read_timeout(Duration::from_secs(2));
        assert!(e.is_timeout() && e.is_read_timeout() && !e.is_connect_timeout());
        assert!(!e.is_system_timeout());
        let e = Error::connect(ConnectError::timeout(Duration::from_secs(1)));
        assert!(e.is_connect() && e.is_timeout() && e.is_connect_timeout());
        assert!(!e.is_system_timeout());
        // The kernel's ETIMEDOUT under a connect: a timeout, the system's, not the pool's
        // connect timeout.
        let e = Error::connect(ConnectError::connect(std::io::Error::from(
            std::io::ErrorKind::TimedOut,
        )));
        assert!(e.is_connect() && e.is_timeout() && !e.is_connect_timeout());
        assert!(e.is_system_timeout());
        let e = Error::connect(ConnectError::connect(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(e.is_connect() && !e.is_timeout());
        let e = Error::connect(ConnectError::resolve("no such host"));
        assert!(e.is_connect() && e.is_resolve() && !e.is_tls());
        let e = Error::unsupported_version("h2 required");
        assert!(e.is_unsupported_version());
        let e = Error::invalid_uri(InvalidOrigin::MissingHost);
        assert!(e.is_invalid_uri());
        assert!(e.source().is_some());
    }

    #[test]
    fn display_is_one_level_and_the_alternate_is_the_chain() {
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = Error::connect(ConnectError::connect(io));
        assert_eq!(e.to_string(), "failed to establish a connection");
        let chain = format!("{e:#}");
        assert!(
            chain.starts_with("failed to establish a connection: failed to connect: "),
            "{chain}"
        );
        // Every level appears once.
        let mut level: Option<&(dyn StdError + 'static)> = Some(&e);
        while let Some(current) = level {
            let own = current.to_string();
            assert_eq!(
                chain.matches(own.as_str()).count(),
                1,
                "{own:?} in {chain:?}"
            );
            level = current.source();
        }
        assert!(e.connection().is_none(), "no connection was established");
    }

    #[test]
    fn io_resets_are_resets() {
        let e = Error::new(
            Kind::Body,
            Some(Arc::new(std::io::Error::from(
                std::io::ErrorKind::ConnectionReset,
            ))),
        );
        assert!(e.is_reset() && e.is_body() && !e.is_go_away());
    }
}
