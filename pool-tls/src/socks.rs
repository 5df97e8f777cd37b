//! Reaching an origin through a SOCKS5 proxy (RFC 1928): the connector dials the proxy, then
//! asks it here for a connection to the origin, with the user name and password of RFC 1929
//! when the proxy URL has them. The handshake is `tokio-socks`'s; what this module adds is the
//! choice of what to ask for and the error's class.
//!
//! `socks5://` asks for an address: the connector resolves the origin's name itself (with its
//! resolver, so `--resolve`-style overrides apply) and sends the first address, as curl does.
//! `socks5h://` sends the name and the proxy resolves it, which is the only way to reach names
//! that only the proxy's side can resolve.
//!
//! What this module does not do: SOCKS4, `BIND` or `UDP ASSOCIATE`, or TLS to the proxy (SOCKS
//! is spoken in the clear, as curl speaks it).

use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio_socks::tcp::Socks5Stream;

use crate::ConnectError;

/// What a SOCKS5 tunnel is asked to reach.
#[derive(Debug, Clone)]
pub(crate) enum SocksTarget<'a> {
    /// An address the connector resolved (`socks5://`).
    Addr(SocketAddr),
    /// A name for the proxy to resolve (`socks5h://`).
    Name(&'a str, u16),
}

impl SocksTarget<'_> {
    /// The target as sent, for diagnostics: `ADDR:PORT` or `NAME:PORT`.
    pub(crate) fn shown(&self) -> String {
        match self {
            SocksTarget::Addr(addr) => addr.to_string(),
            SocksTarget::Name(name, port) => format!("{name}:{port}"),
        }
    }
}

/// Runs the SOCKS5 handshake on `tcp` (connected to the proxy) for `target`; the socket is
/// then a tunnel to it.
///
/// # Errors
///
/// [`ConnectError::is_socks`]: the proxy refused the target or the credentials, or the
/// exchange broke.
pub(crate) async fn open(
    tcp: TcpStream,
    target: &SocksTarget<'_>,
    credentials: Option<(&str, &str)>,
) -> Result<TcpStream, ConnectError> {
    let stream = match (target, credentials) {
        (SocksTarget::Addr(addr), None) => Socks5Stream::connect_with_socket(tcp, *addr).await,
        (SocksTarget::Name(name, port), None) => {
            Socks5Stream::connect_with_socket(tcp, (*name, *port)).await
        }
        (SocksTarget::Addr(addr), Some((user, password))) => {
            Socks5Stream::connect_with_password_and_socket(tcp, *addr, user, password).await
        }
        (SocksTarget::Name(name, port), Some((user, password))) => {
            Socks5Stream::connect_with_password_and_socket(tcp, (*name, *port), user, password)
                .await
        }
    };
    stream
        .map(Socks5Stream::into_inner)
        .map_err(ConnectError::socks)
}
