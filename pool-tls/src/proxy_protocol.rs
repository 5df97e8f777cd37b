//! HAProxy's PROXY protocol, version 1: the line a client writes first on a new TCP connection
//! to say which addresses it connects from and to, for servers behind load balancers that
//! read it (nginx's `listen ... proxy_protocol`, HAProxy's `accept-proxy`).
//!
//! The pool writes it when [`DialOptions::proxy_protocol`](crate::DialOptions::proxy_protocol)
//! asks (curl's `--haproxy-protocol`), once per connection, where curl writes it: first on the
//! socket, or first inside a `CONNECT` or SOCKS tunnel (so the origin reads it), and before
//! TLS with the origin; a forward proxy, which reads the requests itself, gets it. Its
//! addresses are the socket's own ends (the proxy's address through a proxy, as curl's): a
//! pool shares connections between requests, so it has no single client address to
//! forward on a caller's behalf, and this layer does not pretend to. Version 2 (binary) and
//! Unix sockets are not written.

use std::net::SocketAddr;

use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The version 1 line for a connection from `local` to `remote`:
/// `PROXY TCP4 <source> <destination> <source port> <destination port>\r\n`.
pub(crate) fn v1_line(local: SocketAddr, remote: SocketAddr) -> String {
    let family = match remote {
        SocketAddr::V4(_) => "TCP4",
        SocketAddr::V6(_) => "TCP6",
    };
    format!(
        "PROXY {family} {} {} {} {}\r\n",
        local.ip(),
        remote.ip(),
        local.port(),
        remote.port()
    )
}

/// Writes the version 1 line for a connection from `local` to `remote` on `stream`, and
/// flushes it: over TLS to a proxy it must leave as a record before the origin's handshake.
pub(crate) async fn write_v1<S: AsyncWrite + Unpin>(
    stream: &mut S,
    local: SocketAddr,
    remote: SocketAddr,
) -> std::io::Result<()> {
    stream.write_all(v1_line(local, remote).as_bytes()).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_both_ends_and_the_family() {
        let v4 = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            v1_line(v4("127.0.0.1:50000"), v4("192.0.2.7:443")),
            "PROXY TCP4 127.0.0.1 192.0.2.7 50000 443\r\n"
        );
        assert_eq!(
            v1_line(v4("[::1]:50001"), v4("[2001:db8::1]:80")),
            "PROXY TCP6 ::1 2001:db8::1 50001 80\r\n"
        );
    }
}
