//! Reaching an origin through a SOCKS proxy: the connector dials the proxy, then asks it here
//! for a connection to the origin. SOCKS5 (RFC 1928) sends the user name and password of RFC
//! 1929 when the proxy URL has them; SOCKS4 and 4a send the user name as their user id (they
//! have no password). The handshakes are `tokio-socks`'s; what this module adds is the choice
//! of what to ask for, the limits that crate leaves to its caller, and the error's class.
//!
//! `socks5://` and `socks4://` ask for an address: the connector resolves the origin's name
//! itself (with its resolver, so `--resolve`-style overrides apply) and sends the first
//! address, the first IPv4 one for SOCKS4, which has no other kind; as curl does. `socks5h://`
//! and `socks4a://` send the name and the proxy resolves it, which is the only way to reach
//! names that only the proxy's side can resolve. SOCKS4a sends even an address literal as a
//! name, as curl does; SOCKS5 sends a literal as an address.
//!
//! What this module does not do: `BIND` or `UDP ASSOCIATE`, GSSAPI authentication, or TLS to
//! the proxy (SOCKS is spoken in the clear, as curl speaks it).

use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio_socks::TargetAddr;
use tokio_socks::tcp::{Socks4Stream, Socks5Stream};

use crate::ConnectError;

/// What a SOCKS tunnel is asked to reach.
#[derive(Debug, Clone)]
pub(crate) enum SocksTarget<'a> {
    /// An address the connector resolved (`socks5://`, `socks4://`).
    Addr(SocketAddr),
    /// A name for the proxy to resolve (`socks5h://`, `socks4a://`).
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

/// The protocol version spoken to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// SOCKS4 or 4a (the target decides which).
    V4,
    /// SOCKS5.
    V5,
}

/// The longest SOCKS4 user id and name together: `tokio-socks` 0.5 builds the request in a
/// 513-byte buffer (8 bytes of header, the user id, the name, a NUL after each) and indexes
/// past its end, a panic, when both are near their 255-byte limits.
const SOCKS4_ID_AND_NAME: usize = 503;

/// Runs the SOCKS handshake of `version` on `tcp` (connected to the proxy) for `target`; the
/// socket is then a tunnel to it.
///
/// # Errors
///
/// [`ConnectError::is_socks`]: the proxy refused the target or the credentials, the exchange
/// broke, or SOCKS4 was asked for what it cannot carry (an IPv6 address, an over-long user id).
pub(crate) async fn open(
    tcp: TcpStream,
    version: Version,
    target: &SocksTarget<'_>,
    credentials: Option<(&str, &str)>,
) -> Result<TcpStream, ConnectError> {
    match version {
        Version::V5 => open_v5(tcp, target, credentials).await,
        Version::V4 => open_v4(tcp, target, credentials.map(|(user, _)| user)).await,
    }
}

/// SOCKS5, offering RFC 1929's user name and password when `credentials` has both.
/// `tokio-socks` refuses an empty password (RFC 1929 allows one), so a user name alone offers
/// no authentication: a proxy that needs none still serves the request, where sending the
/// name would fail every time. curl sends the name with an empty password; a proxy that
/// insists on that is the one difference.
async fn open_v5(
    tcp: TcpStream,
    target: &SocksTarget<'_>,
    credentials: Option<(&str, &str)>,
) -> Result<TcpStream, ConnectError> {
    let credentials =
        credentials.filter(|(user, password)| !user.is_empty() && !password.is_empty());
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

/// SOCKS4 for an IPv4 address, SOCKS4a for a name; an empty user id is sent as none.
async fn open_v4(
    tcp: TcpStream,
    target: &SocksTarget<'_>,
    user: Option<&str>,
) -> Result<TcpStream, ConnectError> {
    let user = user.filter(|user| !user.is_empty());
    if let SocksTarget::Addr(addr @ SocketAddr::V6(_)) = target {
        return Err(ConnectError::socks(format!(
            "SOCKS4 cannot carry an IPv6 address ({})",
            addr.ip()
        )));
    }
    let name_len = match target {
        SocksTarget::Name(name, _) => name.len(),
        SocksTarget::Addr(_) => 0,
    };
    if user.map_or(0, str::len) + name_len > SOCKS4_ID_AND_NAME {
        return Err(ConnectError::socks(
            "the SOCKS4 user id and host name are too long together",
        ));
    }
    // A name goes as a name even when it is an address literal (SOCKS4a, as curl sends it);
    // `tokio-socks` would turn a `(&str, u16)` literal into SOCKS4's address form.
    let target = match target {
        SocksTarget::Addr(addr) => TargetAddr::Ip(*addr),
        SocksTarget::Name(name, port) => TargetAddr::Domain((*name).into(), *port),
    };
    let stream = match user {
        None => Socks4Stream::connect_with_socket(tcp, target).await,
        Some(user) => Socks4Stream::connect_with_userid_and_socket(tcp, target, user).await,
    };
    stream
        .map(Socks4Stream::into_inner)
        .map_err(ConnectError::socks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    /// A connected pair: the client's socket and the proxy's side of it.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        (client.unwrap(), accepted.unwrap().0)
    }

    /// What SOCKS4 cannot carry fails as a SOCKS error before a byte is sent: an IPv6
    /// address, and a user id and name too long for `tokio-socks`' buffer (which would panic).
    #[tokio::test]
    async fn socks4_refuses_what_it_cannot_carry_without_sending() {
        let user = "u".repeat(255);
        let name = "n".repeat(255);
        let v6 = SocksTarget::Addr("[::1]:80".parse().unwrap());
        for (target, user) in [
            (v6, None),
            (SocksTarget::Name(&name, 80), Some((user.as_str(), "pw"))),
        ] {
            let (client, mut proxy) = pair().await;
            let error = open(client, Version::V4, &target, user)
                .await
                .expect_err("refused");
            assert!(error.is_socks() && !error.is_resolve(), "{error:#}");
            let mut sent = Vec::new();
            proxy.read_to_end(&mut sent).await.unwrap();
            assert!(sent.is_empty(), "nothing reached the proxy: {sent:?}");
        }
    }
}
