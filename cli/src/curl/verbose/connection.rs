//! `-v`'s account of a request's connection: reused, or how the new one came to be (where
//! `--connect-to` or an `--alt-svc` alternative sent it, the proxy, its SOCKS handshake or
//! `CONNECT` tunnel with a challenge answered, and TLS).

use super::super::connect_to::Dial;
use super::{Direction, Lines, VerboseContext, head_lines};

/// How a request's connection came to be, as `-v` shows it: reused, or the new connection
/// (with `--connect-to`, the proxy and its tunnel, and TLS).
pub(super) fn connection_lines(
    lines: &mut Lines,
    cx: &VerboseContext<'_>,
    c: &pool::ConnectionHandle,
) {
    let info = c.info();
    // Said before the connection is looked for, as curl says it.
    if let Some(note) = &cx.dial.alt_svc {
        lines.info(note);
    }
    if c.is_reused() {
        // Through a proxy, curl names the proxy (a forward proxy's connection may have served
        // another origin).
        let (kind, host) = match info.proxy() {
            Some(route) => ("proxy", proxy_host(&route.proxy)),
            None => ("host", cx.host.to_owned()),
        };
        lines.info(&format!(
            "Re-using existing connection {} with {kind} {host} (partition {})",
            c.id(),
            info.partition()
        ));
        return;
    }
    if cx.dial.names_host {
        lines.info(&format!("Connecting to hostname: {}", cx.dial.host));
    }
    if cx.dial.names_port {
        lines.info(&format!("Connecting to port: {}", cx.dial.port));
    }
    // curl names a Unix socket where the address would be, with the URL's port.
    let (ip, port) = match (info.unix_socket(), info.remote_addr()) {
        (Some(path), _) => (
            super::super::write_out::socket_shown(path),
            info.origin().port(),
        ),
        (None, Some(addr)) => (addr.ip().to_string(), addr.port()),
        (None, None) => (String::from("?"), 0),
    };
    // What curl says as it dials the address (said here, once the pool has dialed it).
    if let (None, Some(addr)) = (info.unix_socket(), info.remote_addr()) {
        lines.info(&format!("  Trying {}...", super::unscoped(addr)));
    }
    match info.proxy() {
        None => lines.info(&format!(
            "Connected to {} ({ip}) port {port} (partition {}, connection {})",
            cx.host,
            info.partition(),
            c.id()
        )),
        Some(route) => {
            // curl names the proxy's host where the origin's would be.
            lines.info(&format!(
                "Connected to {} ({ip}) port {port} (partition {}, connection {})",
                proxy_host(&route.proxy),
                info.partition(),
                c.id()
            ));
            if let Some(target) = &route.socks_target {
                socks_lines(lines, &route.proxy, target, cx.dial);
            } else if route.tunnel {
                // The tunnel goes where `--connect-to` sends the connection.
                let answer = route.connect_response.as_deref();
                let authority = &cx.dial.authority;
                let answered = route.connect_authorization.as_ref();
                if let (Some(challenge), Some(answered)) = (&route.connect_challenge, answered) {
                    challenge_lines(lines, cx.proxy, authority, (challenge, answered));
                }
                let sent = cx.proxy.map(|proxy| {
                    let authorization = answered.cloned().or_else(|| proxy.upfront_authorization());
                    proxy.connect_head_with(authority, authorization)
                });
                if let Some(status) = tunnel_lines(lines, sent.as_deref(), authority, answer) {
                    lines.info("CONNECT phase completed");
                    lines.info(&format!("CONNECT tunnel established, response {status}"));
                }
            }
        }
    }
    if let Some(tls) = info.tls() {
        let offered = !cx.alpn_offer.is_empty();
        if offered {
            lines.info(&format!("ALPN: poolcurl offers {}", cx.alpn_offer));
        }
        // curl notes a session taken from its cache before the handshake; the pool knows
        // after it whether the server took the session back, and says so only then.
        if tls.resumed {
            lines.info("SSL re-using session ID");
        }
        lines.info(&format!(
            "SSL connection using {} / {}",
            tls.version,
            super::super::ciphers::openssl_name(tls.cipher_suite)
        ));
        match tls.alpn {
            Some(accepted) => lines.info(&format!("ALPN: server accepted {accepted}")),
            None if offered => {
                lines.info("ALPN: server did not agree on a protocol. Uses default.");
            }
            None => {}
        }
        if let Some(leaf) = info.peer_chain().and_then(<[_]>::first) {
            for line in
                super::super::server_cert::lines(leaf, cx.host, tls.certificate, cx.insecure)
            {
                lines.info(&line);
            }
        }
        // The pool refuses a connection whose status is not good, so a made one had "good".
        if cx.cert_status {
            lines.info("SSL certificate status: good (0)");
        }
    }
}

/// A granted SOCKS handshake as curl 7.88's `-v` shows it, from what the proxy (`proxy`,
/// `scheme://host:port`) was asked for (`target`, an address or a name with the port) on the
/// way to `dial`.
fn socks_lines(lines: &mut Lines, proxy: &str, target: &str, dial: &Dial) {
    use pool::ProxyScheme::{Socks4, Socks4a};
    let addr = target.parse::<std::net::SocketAddr>().ok();
    let scheme = pool::Proxy::parse(proxy).ok().map(|proxy| proxy.scheme());
    if let Some(scheme @ (Socks4 | Socks4a)) = scheme {
        lines.info(&format!(
            "SOCKS4 communication to {}:{}",
            dial.host, dial.port
        ));
        match addr {
            // SOCKS4a sends even an address literal as a name.
            Some(addr) if scheme == Socks4 => {
                let ip = addr.ip();
                lines.info(&format!("SOCKS4 connect to IPv4 {ip} (locally resolved)"));
                lines.info("SOCKS4 request granted.");
            }
            _ => lines.info("SOCKS4a request granted."),
        }
        return;
    }
    lines.info(&match addr {
        Some(std::net::SocketAddr::V4(addr)) => {
            format!("SOCKS5 connect to IPv4 {addr} (locally resolved)")
        }
        Some(std::net::SocketAddr::V6(addr)) => format!(
            "SOCKS5 connect to IPv6 {}:{} (locally resolved)",
            addr.ip(),
            addr.port()
        ),
        None => format!("SOCKS5 connect to {target} (remotely resolved)"),
    });
    lines.info("SOCKS5 request granted.");
}

/// A tunnel's `CONNECT` exchange as `-v` shows it: the request to `authority` as the pool
/// wrote it (when `proxy` is known) and the proxy's `answer` head, as received; returns the
/// answer's status.
pub(super) fn tunnel_lines<'a>(
    lines: &mut Lines,
    sent: Option<&[u8]>,
    authority: &str,
    answer: Option<&'a str>,
) -> Option<&'a str> {
    lines.info(&format!("Establish HTTP proxy tunnel to {authority}"));
    if let Some(sent) = sent {
        head_lines(lines, Direction::Sent, sent);
    }
    let answer = answer?;
    head_lines(lines, Direction::Received, answer.as_bytes());
    answer.split(' ').nth(1)
}

/// A tunnel's first `CONNECT` and the proxy's challenge (its `407` head), as `-v` shows them
/// before the `CONNECT` that carried `answered`.
fn challenge_lines(
    lines: &mut Lines,
    proxy: Option<&pool::Proxy>,
    authority: &str,
    (challenge, answered): (&str, &http::HeaderValue),
) {
    let sent = proxy.map(|proxy| proxy.connect_head(authority));
    tunnel_lines(lines, sent.as_deref(), authority, Some(challenge));
    if let Some((user, _)) = proxy.and_then(pool::Proxy::credentials) {
        let scheme = answered
            .as_bytes()
            .split(|&b| b == b' ')
            .next()
            .unwrap_or_default();
        let scheme = String::from_utf8_lossy(scheme);
        lines.info(&format!("Proxy auth using {scheme} with user '{user}'"));
    }
}

/// The host of a proxy named `scheme://host:port`, as curl's messages name it (the label as it
/// is if it does not read as one).
pub(super) fn proxy_host(label: &str) -> String {
    pool::Proxy::parse(label).map_or_else(|_| label.to_owned(), |p| p.host().to_owned())
}
