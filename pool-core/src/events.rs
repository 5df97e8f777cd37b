//! Connection identities, descriptions and the lifecycle listener.
//!
//! Every connection the pool creates gets a [`ConnectionInfo`] before it becomes visible to
//! requests. The same description is attached to every response the connection serves and is
//! passed to every [`ConnectionEventListener`] callback about it, so a log line, a metric and a
//! response can be joined on [`ConnectionId`].
//!
//! Listeners run outside every pool lock, on the task that caused the event. A panicking
//! listener unwinds that task only: the pool's locks do not poison, its accounting is updated
//! before the callback runs, and every hand-over that follows an event has a drop guard. A
//! listener that panics while its thread is already unwinding (an event raised from a `Drop`
//! during another panic) is caught and logged instead, since a second panic would abort the
//! process.

use std::error::Error;
use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::close::CloseReason;
use crate::origin::OriginKey;
use crate::partition::PartitionId;

/// A connection's identity: unique and increasing within a process, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(u64);

impl ConnectionId {
    /// Wraps a raw identity. The assembled pool draws these from one process-wide counter.
    pub const fn from_u64(id: u64) -> ConnectionId {
        ConnectionId(id)
    }

    /// The raw identity.
    pub const fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The HTTP version a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// HTTP/1.1: one request at a time.
    Http1,
    /// HTTP/2: multiplexed streams.
    Http2,
}

impl Protocol {
    /// `"1.1"` or `"2"`, the way curl's `%{http_version}` prints it.
    pub const fn version_str(self) -> &'static str {
        match self {
            Protocol::Http1 => "1.1",
            Protocol::Http2 => "2",
        }
    }
}

/// What TLS negotiated for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsDetails {
    /// The protocol version, such as `"TLSv1.3"`.
    pub version: &'static str,
    /// The cipher suite, such as `"TLS13_AES_256_GCM_SHA384"`.
    pub cipher_suite: &'static str,
    /// The key exchange group, such as `"X25519"` or `"secp256r1"`; `None` when the handshake
    /// did not say (a resumed TLS 1.2 session, or a custom connector).
    pub key_exchange: Option<&'static str>,
    /// Whether the handshake resumed an earlier session rather than making a full one.
    pub resumed: bool,
    /// The protocol ALPN selected (`"h2"`, `"http/1.1"`), or `None` when the server selected
    /// none.
    pub alpn: Option<&'static str>,
    /// How many certificates the server presented: its own, then the intermediates it sent.
    pub peer_certificates: usize,
    /// What checking the server's certificate found: always [`CertificateCheck::Valid`] on a
    /// connection whose handshake verified it; with certificate verification turned off
    /// (`danger_accept_invalid_certs`, curl's `-k`), the result of checking it anyway against
    /// the roots that would have been trusted, after the handshake (the connection is used
    /// either way).
    pub certificate: CertificateCheck,
}

/// What checking a server's certificate chain found (see [`TlsDetails::certificate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CertificateCheck {
    /// It chains to a trusted root, is within its validity period and names the server.
    Valid,
    /// No trusted root issued it, and the server did not send a chain to a self-signed root
    /// (a private CA's certificate sent alone, say; curl's 20).
    UnknownIssuer,
    /// It is self-signed (its own issuer) and not trusted (curl's 18).
    SelfSigned,
    /// The chain the server sent ends in a self-signed root that is not trusted (curl's 19).
    SelfSignedInChain,
    /// Its validity period has ended.
    Expired,
    /// Its validity period has not begun.
    NotYetValid,
    /// It does not name the host (or IP address) the connection was made for.
    WrongName,
    /// Its issuer revoked it.
    Revoked,
    /// A signature in the chain does not verify.
    BadSignature,
    /// Any other problem (a malformed certificate, an unsupported critical extension, no
    /// certificate at all, ...).
    Other,
}

/// How long establishing a connection took, each measured from the start of establishment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionTimings {
    /// Until the destination addresses were known.
    pub resolve: Duration,
    /// Until the TCP connection (or custom transport) was established.
    pub connect: Duration,
    /// Until the TLS handshake finished, for TLS connections.
    pub tls: Option<Duration>,
    /// Until the HTTP handshake finished and the connection could carry requests.
    pub handshake: Duration,
}

/// Why a connection was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum OpenReason {
    /// A request found no connection it could use.
    #[default]
    Request,
    /// A warm-up (the `pool` crate's `preconnect`) opened it before requests needed it.
    Preconnect,
    /// The accepting HTTP/2 generation reached the maximum connection lifetime, and this one
    /// replaces it before it stops accepting.
    LifetimeRenewal,
    /// Every HTTP/2 connection to the origin was at the peer's concurrent-stream limit
    /// (`SETTINGS_MAX_CONCURRENT_STREAMS`) while requests waited.
    StreamLimit,
    /// The accepting HTTP/2 connection was about to carry the last of its server's
    /// per-connection request quota (as the pool learnt it), and this one was opened to take
    /// over before it retires.
    QuotaRenewal,
}

impl OpenReason {
    /// A stable snake_case name, suitable for JSON keys and metrics labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            OpenReason::Request => "request",
            OpenReason::Preconnect => "preconnect",
            OpenReason::LifetimeRenewal => "lifetime_renewal",
            OpenReason::StreamLimit => "stream_limit",
            OpenReason::QuotaRenewal => "quota_renewal",
        }
    }
}

impl fmt::Display for OpenReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A description of one connection, fixed when it is created.
#[derive(Clone, Debug)]
pub struct ConnectionInfo {
    id: ConnectionId,
    origin: OriginKey,
    partition: PartitionId,
    protocol: Protocol,
    local_addr: Option<SocketAddr>,
    remote_addr: Option<SocketAddr>,
    unix_socket: Option<std::sync::Arc<std::path::Path>>,
    tls: Option<TlsDetails>,
    peer_chain: Option<std::sync::Arc<[Vec<u8>]>>,
    timings: ConnectionTimings,
    proxy: Option<ProxyRoute>,
    opened_for: OpenReason,
    retires_at: Option<Instant>,
}

/// How a connection reaches its origin through a proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyRoute {
    /// The proxy, `scheme://host:port` (never with credentials).
    pub proxy: String,
    /// `true` for a `CONNECT` tunnel; `false` for a forward proxy (absolute-form requests).
    pub tunnel: bool,
    /// The head of the proxy's answer to the tunnel's `CONNECT` (status line, headers and
    /// the blank line, as received), for diagnostics; `None` for a forward proxy and a SOCKS
    /// tunnel. The request it answered is `pool_tls::Proxy::connect_head`.
    pub connect_response: Option<String>,
    /// Through a SOCKS proxy (a tunnel without `CONNECT`): the target it was asked for, as
    /// sent (`ADDR:PORT`, or `NAME:PORT` for the proxy to resolve); `None` otherwise.
    pub socks_target: Option<String>,
    /// The head of the proxy's `407` to the tunnel's first `CONNECT`, when its challenge was
    /// answered (Digest proxy authentication); `None` otherwise.
    pub connect_challenge: Option<String>,
    /// The `Proxy-Authorization` that answered [`connect_challenge`](Self::connect_challenge),
    /// marked sensitive (its `Debug` shows none of it).
    pub connect_authorization: Option<http::HeaderValue>,
    /// Whether the proxy closed the connection its challenge came on, so that the answered
    /// `CONNECT` went on a second connection to the proxy.
    pub connect_redialed: bool,
}

impl ConnectionInfo {
    /// Describes a new connection; addresses, TLS details and timings start empty.
    pub fn new(
        id: ConnectionId,
        origin: OriginKey,
        partition: PartitionId,
        protocol: Protocol,
    ) -> Self {
        ConnectionInfo {
            id,
            origin,
            partition,
            protocol,
            local_addr: None,
            remote_addr: None,
            unix_socket: None,
            tls: None,
            peer_chain: None,
            timings: ConnectionTimings::default(),
            proxy: None,
            opened_for: OpenReason::Request,
            retires_at: None,
        }
    }

    /// Sets why the connection was opened.
    pub fn with_open_reason(mut self, reason: OpenReason) -> Self {
        self.opened_for = reason;
        self
    }

    /// Why the connection was opened.
    pub fn open_reason(&self) -> OpenReason {
        self.opened_for
    }

    /// Sets the instant the connection reaches the pool's maximum lifetime.
    pub fn with_retirement(mut self, at: Option<Instant>) -> Self {
        self.retires_at = at;
        self
    }

    /// When the connection reaches the pool's maximum lifetime (its creation plus the lifetime,
    /// less its jitter); `None` when the pool sets no lifetime.
    pub fn retires_at(&self) -> Option<Instant> {
        self.retires_at
    }

    /// Whether the connection has reached its maximum lifetime at `now`.
    pub fn is_past_lifetime(&self, now: Instant) -> bool {
        self.retires_at.is_some_and(|at| at <= now)
    }

    /// Sets the proxy the connection goes through.
    pub fn with_proxy(mut self, proxy: Option<ProxyRoute>) -> Self {
        self.proxy = proxy;
        self
    }

    /// The proxy the connection goes through, if any: its remote address is the proxy's.
    pub fn proxy(&self) -> Option<&ProxyRoute> {
        self.proxy.as_ref()
    }

    /// Sets the socket addresses.
    pub fn with_addrs(mut self, local: Option<SocketAddr>, remote: Option<SocketAddr>) -> Self {
        self.local_addr = local;
        self.remote_addr = remote;
        self
    }

    /// Sets the Unix domain socket the connection goes through.
    pub fn with_unix_socket(mut self, path: Option<std::sync::Arc<std::path::Path>>) -> Self {
        self.unix_socket = path;
        self
    }

    /// Sets the TLS details.
    pub fn with_tls(mut self, tls: Option<TlsDetails>) -> Self {
        self.tls = tls;
        self
    }

    /// Sets the certificates the server presented (DER, its own first).
    pub fn with_peer_chain(mut self, chain: Option<std::sync::Arc<[Vec<u8>]>>) -> Self {
        self.peer_chain = chain;
        self
    }

    /// The certificates the server presented (DER, its own first), when the pool was built to
    /// keep them (`Builder::tls_keep_peer_certificates`); `None` otherwise and for cleartext.
    pub fn peer_chain(&self) -> Option<&[Vec<u8>]> {
        self.peer_chain.as_deref()
    }

    /// Sets the establishment timings.
    pub fn with_timings(mut self, timings: ConnectionTimings) -> Self {
        self.timings = timings;
        self
    }

    /// The connection's identity.
    pub fn id(&self) -> ConnectionId {
        self.id
    }

    /// The origin it serves.
    pub fn origin(&self) -> &OriginKey {
        &self.origin
    }

    /// The partition that owns its socket and driver.
    pub fn partition(&self) -> PartitionId {
        self.partition
    }

    /// The HTTP version it speaks.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The local socket address, when the transport has one.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// The peer's socket address, when the transport has one.
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.remote_addr
    }

    /// The Unix domain socket the connection goes through, when it is one (the pool's
    /// `unix_socket` setting); such a connection has no socket addresses.
    pub fn unix_socket(&self) -> Option<&std::path::Path> {
        self.unix_socket.as_deref()
    }

    /// What TLS negotiated, for TLS connections.
    pub fn tls(&self) -> Option<&TlsDetails> {
        self.tls.as_ref()
    }

    /// How long establishment took.
    pub fn timings(&self) -> &ConnectionTimings {
        &self.timings
    }
}

/// Runs one listener callback under the policy in the module documentation.
pub fn notify(event: &'static str, callback: impl FnOnce()) {
    if !std::thread::panicking() {
        callback();
        return;
    }
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback)).is_err() {
        tracing::error!(
            event,
            "connection event listener panicked while unwinding; the panic was dropped"
        );
    }
}

/// Why the pool sent a request again: each is a proof that the server did not process it, or
/// (for [`ClosedBeforeResponse`](ResendReason::ClosedBeforeResponse) and
/// [`EnhanceYourCalm`](ResendReason::EnhanceYourCalm)) that repeating it is safe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ResendReason {
    /// hyper handed the request back unsent: the reused connection closed before it could be
    /// written.
    Unsent,
    /// The server sent HTTP/2 `GOAWAY` and this request's stream was above its last stream id,
    /// or was opened after it (RFC 9113 §6.8: not processed).
    GoAway,
    /// The server refused the HTTP/2 stream with `REFUSED_STREAM` (RFC 9113 §8.7: not
    /// processed).
    RefusedStream,
    /// A reused connection closed or reset before the response began (HTTP/1: before any byte
    /// of it; HTTP/2: under the stream, with no `GOAWAY` or `RST_STREAM` about it, or ended by
    /// h2 itself on the server's protocol error), and the request is idempotent (RFC 9110
    /// §9.2.2, or it carries `Idempotency-Key`).
    ClosedBeforeResponse,
    /// The server reset the HTTP/2 stream with `ENHANCE_YOUR_CALM` before its response began:
    /// it is shedding load it never announced as a limit (Node.js does so while its session's
    /// memory is over its cap), and the request is idempotent (as for
    /// [`ClosedBeforeResponse`](ResendReason::ClosedBeforeResponse): the code is no proof).
    /// The connection opens fewer streams from then on.
    EnhanceYourCalm,
}

impl ResendReason {
    /// Every reason, in declaration order (for summaries that list all of them).
    pub const ALL: [ResendReason; 5] = [
        ResendReason::Unsent,
        ResendReason::GoAway,
        ResendReason::RefusedStream,
        ResendReason::ClosedBeforeResponse,
        ResendReason::EnhanceYourCalm,
    ];

    /// A stable snake_case name, suitable for JSON keys and metrics labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            ResendReason::Unsent => "unsent",
            ResendReason::GoAway => "go_away",
            ResendReason::RefusedStream => "refused_stream",
            ResendReason::ClosedBeforeResponse => "closed_before_response",
            ResendReason::EnhanceYourCalm => "enhance_your_calm",
        }
    }
}

impl fmt::Display for ResendReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error a listener callback receives: the failure behind a close or a failed
/// establishment. An alias, so a listener writes `Option<&EventError>` instead of spelling out
/// the trait object.
pub type EventError = dyn Error + Send + Sync + 'static;

/// Receives connection lifecycle events. Every method has a no-op default.
///
/// An `Arc<L>` is a listener too, so a caller can hand the pool a clone and keep reading the
/// listener's state afterwards.
///
/// # Ordering
///
/// `connection_created` fires before the connection can serve any request; `connection_closed`
/// fires exactly once per created connection, after its accounting (permit, gauges) is updated.
/// `connection_failed` reports an establishment that produced no connection.
pub trait ConnectionEventListener: Send + Sync + 'static {
    /// A connection was established and is about to serve its first request.
    fn connection_created(&self, info: &ConnectionInfo) {
        let _ = info;
    }

    /// An existing connection was selected for another request by its own partition.
    fn connection_reused(&self, info: &ConnectionInfo) {
        let _ = info;
    }

    /// A partition other than the owner dispatched a request through the connection.
    fn connection_borrowed(&self, info: &ConnectionInfo, borrower: PartitionId) {
        let _ = (info, borrower);
    }

    /// The connection stopped accepting work, for `reason`; `error` is the failure behind it, if
    /// any. For an HTTP/2 connection the peer ended ([`CloseReason::ProtocolClosed`]) it is
    /// what the peer said or did, as the frames it sent show it: a `GOAWAY` with an error
    /// code (and the debug text the server put in it), the connection ended in the middle of
    /// a frame or without a `GOAWAY`, or the transport's read error. A graceful `GOAWAY`
    /// (`NO_ERROR`) is no error.
    fn connection_closed(
        &self,
        info: &ConnectionInfo,
        reason: CloseReason,
        error: Option<&EventError>,
    ) {
        let _ = (info, reason, error);
    }

    /// A request that the connection of `info` did not process is being sent again on another
    /// connection (or, for `REFUSED_STREAM`, possibly the same generation), for `reason`.
    /// `attempt` counts the re-sends of this request so far, starting at 1.
    fn request_resent(&self, info: &ConnectionInfo, reason: ResendReason, attempt: u32) {
        let _ = (info, reason, attempt);
    }

    /// Establishing a connection to `origin` for `partition` failed.
    fn connection_failed(&self, origin: &OriginKey, partition: PartitionId, error: &EventError) {
        let _ = (origin, partition, error);
    }
}

/// Forwards every event to the shared listener.
impl<L: ConnectionEventListener + ?Sized> ConnectionEventListener for std::sync::Arc<L> {
    fn connection_created(&self, info: &ConnectionInfo) {
        (**self).connection_created(info);
    }

    fn connection_reused(&self, info: &ConnectionInfo) {
        (**self).connection_reused(info);
    }

    fn connection_borrowed(&self, info: &ConnectionInfo, borrower: PartitionId) {
        (**self).connection_borrowed(info, borrower);
    }

    fn connection_closed(
        &self,
        info: &ConnectionInfo,
        reason: CloseReason,
        error: Option<&EventError>,
    ) {
        (**self).connection_closed(info, reason, error);
    }

    fn request_resent(&self, info: &ConnectionInfo, reason: ResendReason, attempt: u32) {
        (**self).request_resent(info, reason, attempt);
    }

    fn connection_failed(&self, origin: &OriginKey, partition: PartitionId, error: &EventError) {
        (**self).connection_failed(origin, partition, error);
    }
}
