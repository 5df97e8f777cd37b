//! The transport half of an establishment: connect (resolve, TCP, TLS with ALPN) through the
//! pool's connector, count the I/O while it lives, decide the protocol it speaks, and describe
//! it for the connection's record.

use std::time::Instant;

use pool_core::cell::EstablishMode;
use pool_core::connection::PhysicalLink;
use pool_core::sync::Arc;
use pool_core::{
    ConnectTimeout, ConnectionInfo, ConnectionTimings, OpenReason, Progress, Protocol, ProxyRoute,
    TlsDetails,
};
use pool_tls::{ConnectTarget, Connected, Negotiated};

use crate::cell::CellEntry;
use crate::error::Error;
use crate::io::TrackedIo;
use crate::protocol::alpn_for;

/// A transport ready for its HTTP handshake.
pub(super) struct Established {
    pub(super) io: TrackedIo,
    pub(super) link: Arc<PhysicalLink>,
    pub(super) meta: EstablishedMeta,
}

/// What describes a transport, kept after its I/O moves into the handshake.
pub(super) struct EstablishedMeta {
    connected: Connected,
    start: Instant,
}

impl EstablishedMeta {
    /// Whether the transport runs TLS.
    pub(super) fn is_tls(&self) -> bool {
        self.connected.is_tls()
    }

    /// Set when the transport goes to a forward proxy (not a tunnel): HTTP/1 requests on it
    /// keep their absolute form and carry the proxy's credentials and headers.
    pub(super) fn forward_proxy(&self) -> Option<pool_h1::ForwardProxy> {
        let proxy = self.connected.proxy.as_ref().filter(|p| !p.tunnel)?;
        Some(pool_h1::ForwardProxy {
            authorization: proxy.authorization.clone(),
            headers: proxy.headers.clone(),
        })
    }
}

/// Connects a transport for `entry`'s origin on its partition (interface included).
///
/// `progress` is that of the request the connection is made for, when its caller follows it:
/// it reads `Connecting` with each step the connector begins until the connect ends, however
/// it ends (the future dropped with its runtime too).
pub(super) async fn connect(
    entry: &CellEntry,
    connect_timeout: Option<ConnectTimeout>,
    progress: Option<Progress>,
) -> Result<Established, Error> {
    let _connecting = progress.as_ref().map(Connecting::begin);
    let shared = &entry.shared;
    let start = shared.time.now();
    // The request's sleep when its client named one, else the pool's: the connect timeout is
    // measured on the same timer as the request's other timeouts.
    let (connect_timeout, sleep) = match connect_timeout {
        Some(timeout) => {
            let sleep = timeout.sleep().unwrap_or(&shared.sleep).clone();
            (Some(timeout.limit()), Some(sleep))
        }
        None => (None, None),
    };
    let target = ConnectTarget {
        origin: entry.origin.clone(),
        alpn: alpn_for(entry.mode()),
        interface: entry.runtime.interface.clone(),
        connect_timeout,
        sleep,
        progress: progress.clone(),
    };
    let (io, connected) = shared
        .connector
        .connect(target)
        .await
        .map_err(Error::connect)?;
    let link = PhysicalLink::new(entry.cell.gauges().clone());
    let io = TrackedIo::new(io, link.clone());
    Ok(Established {
        io,
        link,
        meta: EstablishedMeta { connected, start },
    })
}

/// A request's progress while a connection is made for it: `Connecting` from its creation
/// until its drop.
struct Connecting<'a>(&'a Progress);

impl Connecting<'_> {
    fn begin(progress: &Progress) -> Connecting<'_> {
        progress.connecting(None);
        Connecting(progress)
    }
}

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        self.0.connect_ended();
    }
}

/// The protocol a new transport speaks, given the cell's mode and the ALPN result.
pub(super) fn negotiated(mode: EstablishMode, meta: &EstablishedMeta) -> Result<Protocol, Error> {
    let connected = &meta.connected;
    match (mode, connected.alpn) {
        (EstablishMode::Http1, _) => Ok(Protocol::Http1),
        (EstablishMode::Http2, _) if !connected.is_tls() => Ok(Protocol::Http2),
        (EstablishMode::Http2, Some(Negotiated::Http2)) => Ok(Protocol::Http2),
        // ALPN was not offered (`TlsOptions::alpn` off): HTTP/2 with prior knowledge, as
        // over cleartext.
        (EstablishMode::Http2, None) if connected.tls.as_ref().is_some_and(|t| !t.alpn_offered) => {
            Ok(Protocol::Http2)
        }
        (EstablishMode::Http2, _) => Err(Error::unsupported_version(
            "HTTP/2 is required and the server did not negotiate h2 over ALPN",
        )),
        (EstablishMode::Auto, Some(Negotiated::Http2)) => Ok(Protocol::Http2),
        (EstablishMode::Auto, _) => Ok(Protocol::Http1),
    }
}

/// The identity, addresses, TLS details and timings of a connection whose handshake just
/// finished.
pub(super) fn connection_info(
    entry: &CellEntry,
    protocol: Protocol,
    meta: &EstablishedMeta,
    reason: OpenReason,
) -> ConnectionInfo {
    let shared = &entry.shared;
    let id = shared.next_connection_id();
    let now = shared.time.now();
    let retires_at = shared.lifetime.map(|l| l.retires_at(id, now));
    let connected = &meta.connected;
    let timings = ConnectionTimings {
        resolve: connected.timings.resolve,
        connect: connected.timings.connect,
        tls: connected.timings.tls,
        handshake: now.saturating_duration_since(meta.start),
    };
    let alpn = connected.alpn.map(|n| match n {
        Negotiated::Http1 => "http/1.1",
        Negotiated::Http2 => "h2",
    });
    // A Unix socket's transport has no socket addresses; `Connected` holds placeholders.
    let addrs = connected
        .unix_socket
        .is_none()
        .then_some((connected.local_addr, connected.remote_addr));
    let tls = connected.tls.as_ref().map(|t| TlsDetails {
        version: t.version,
        cipher_suite: t.cipher_suite,
        key_exchange: t.key_exchange,
        resumed: t.resumed,
        alpn,
        peer_certificates: t.peer_certificates,
        certificate: t.certificate,
    });
    ConnectionInfo::new(id, entry.origin.clone(), entry.runtime.id, protocol)
        .with_addrs(
            addrs.map(|(local, _)| local),
            addrs.map(|(_, remote)| remote),
        )
        .with_unix_socket(connected.unix_socket.clone())
        .with_tls(tls)
        .with_peer_chain(connected.tls.as_ref().and_then(|t| t.peer_chain.clone()))
        .with_timings(timings)
        .with_proxy(connected.proxy.as_ref().map(|p| ProxyRoute {
            proxy: p.proxy.clone(),
            tunnel: p.tunnel,
            connect_response: p.connect_response.clone(),
            socks_target: p.socks_target.clone(),
            connect_challenge: p.connect_challenge.clone(),
            connect_authorization: p.connect_authorization.clone(),
            connect_redialed: p.connect_redialed,
        }))
        .with_open_reason(reason)
        .with_retirement(retires_at)
}
