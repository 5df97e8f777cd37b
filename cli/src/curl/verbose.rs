//! The `-v` trace on stderr. The trace of one request is printed once its response head has
//! arrived (the pool dials inside `request`, so there is no earlier moment that knows the
//! connection):
//!
//! ```text
//! * Connected to localhost (127.0.0.1) port 8443 (partition anonymous, connection #1)
//! * ALPN: poolcurl offers h2,http/1.1
//! * SSL connection using TLSv1.3 / TLS13_AES_256_GCM_SHA384
//! * ALPN: server accepted h2
//! > GET / HTTP/2
//! > Host: localhost:8443
//! > User-Agent: poolcurl/0.1.0
//! > Accept: */*
//! >
//! < HTTP/2 200
//! < content-length: 5
//! <
//! * Connection #1 to host localhost left intact
//! ```
//!
//! A reused connection prints `* Re-using existing connection #1 with host localhost (partition
//! anonymous)` instead of the connection and TLS lines. A new connection through a `CONNECT`
//! tunnel shows the `CONNECT` request as the pool wrote it and the proxy's answer, as curl
//! does; so does a tunnel the proxy refused, before the error. Request headers print in the
//! order they are sent, `Host` first, as curl sends them; response header names as the server
//! wrote them (HTTP/1). As in curl, the `>` and `<` lines end in CRLF. `--trace-time` starts
//! each line with the local time, `HH:MM:SS.micros`, as curl does.

use std::sync::OnceLock;

use http::header::{HOST, PROXY_AUTHORIZATION};
use http::{HeaderMap, Method, Uri};
use time::{OffsetDateTime, UtcOffset};

use super::connect_to::Dial;
use super::output::stderr_line;
use super::request::title_case;

/// What `-v` needs to know about a request beyond the request itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VerboseContext<'a> {
    /// The URL's host, without IPv6 brackets.
    pub(crate) host: &'a str,
    /// Where the connection was dialed (`--connect-to`).
    pub(crate) dial: &'a Dial,
    /// The ALPN protocols offered over TLS, as curl lists them.
    pub(crate) alpn_offer: &'a str,
    /// `--http2` on a cleartext URL.
    pub(crate) http2_over_cleartext: bool,
    /// `--http1.0`: requests are HTTP/1.0.
    pub(crate) http1_0: bool,
    /// The proxy a request to this URL is routed through, if any: through a forward proxy
    /// the request line carries the whole URL, and the pool adds the proxy's credentials and
    /// headers after the request's own.
    pub(crate) proxy: Option<&'a pool::Proxy>,
    /// `--request-target`: the request line's target whatever the route.
    pub(crate) target: Option<&'a str>,
}

/// The local time zone's offset for `--trace-time`, read once while the process has one
/// thread (reading it later is unsound on Unix, and the `time` crate refuses).
static LOCAL_OFFSET: OnceLock<UtcOffset> = OnceLock::new();

/// Reads the local offset for `--trace-time` (UTC when it cannot be known). Call before any
/// other thread starts.
pub(crate) fn capture_local_offset() {
    LOCAL_OFFSET.get_or_init(|| UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC));
}

/// The `-v` trace on stderr.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verbose {
    /// Whether `-v` was given.
    enabled: bool,
    /// `--trace-time`: the offset each line's local time is shown in.
    clock: Option<UtcOffset>,
}

impl Verbose {
    /// A trace that prints only if `enabled`, each line stamped with the local time when
    /// `trace_time` is set.
    pub(crate) fn new(enabled: bool, trace_time: bool) -> Verbose {
        let clock = trace_time.then(|| LOCAL_OFFSET.get().copied().unwrap_or(UtcOffset::UTC));
        Verbose { enabled, clock }
    }

    /// `* message`.
    pub(crate) fn info(&self, message: &str) {
        if self.enabled {
            stderr_line(&format!("{}* {message}", stamp(self.clock)));
        }
    }

    /// The connection, request and response lines of one exchange.
    pub(crate) fn exchange(
        &self,
        cx: &VerboseContext<'_>,
        connection: Option<&pool::ConnectionHandle>,
        request: (&Method, &Uri, &HeaderMap),
        head: &[u8],
    ) {
        if !self.enabled {
            return;
        }
        print_trace(self.clock, |line| {
            if let Some(c) = connection {
                connection_lines(line, cx, c);
            }
            if cx.http2_over_cleartext {
                line(
                    "* --http2 over cleartext: HTTP/2 needs prior knowledge here \
                     (--http2-prior-knowledge); using HTTP/1.1",
                );
            }
            request_lines(line, cx, connection, request);
            head_lines(line, '<', head);
        });
    }

    /// A tunnel the proxy refused: the `CONNECT` as the pool wrote it (when the proxy is
    /// known), the proxy's answer head, and the status, as curl shows them before its error.
    pub(crate) fn refused_tunnel(
        &self,
        proxy: Option<&pool::Proxy>,
        authority: &str,
        answer: &str,
    ) {
        if !self.enabled {
            return;
        }
        print_trace(self.clock, |line| {
            let status = tunnel_lines(line, proxy, authority, Some(answer)).unwrap_or_default();
            line(&format!("* CONNECT tunnel failed, response {status}"));
        });
    }

    /// The end of an exchange: the connection stays for reuse, or closes.
    pub(crate) fn done(
        &self,
        connection: Option<&pool::ConnectionHandle>,
        host: &str,
        closes: bool,
    ) {
        let Some(c) = connection else { return };
        if closes {
            self.info(&format!("Closing connection {}", c.id()));
        } else {
            self.info(&format!("Connection {} to host {host} left intact", c.id()));
        }
    }
}

/// How a request's connection came to be, as `-v` shows it: reused, or the new connection
/// (with `--connect-to`, the proxy and its tunnel, and TLS).
fn connection_lines(
    line: &mut dyn FnMut(&str),
    cx: &VerboseContext<'_>,
    c: &pool::ConnectionHandle,
) {
    let info = c.info();
    if c.is_reused() {
        line(&format!(
            "* Re-using existing connection {} with host {} (partition {})",
            c.id(),
            cx.host,
            info.partition()
        ));
        return;
    }
    if cx.dial.names_host {
        line(&format!("* Connecting to hostname: {}", cx.dial.host));
    }
    if cx.dial.names_port {
        line(&format!("* Connecting to port: {}", cx.dial.port));
    }
    // curl names a Unix socket where the address would be, with the URL's port.
    let (ip, port) = match (info.unix_socket(), info.remote_addr()) {
        (Some(path), _) => (super::write_out::socket_shown(path), info.origin().port()),
        (None, Some(addr)) => (addr.ip().to_string(), addr.port()),
        (None, None) => (String::from("?"), 0),
    };
    match info.proxy() {
        None => line(&format!(
            "* Connected to {} ({ip}) port {port} (partition {}, connection {})",
            cx.host,
            info.partition(),
            c.id()
        )),
        Some(route) => {
            line(&format!(
                "* Connected to proxy {} ({ip}) port {port} (partition {}, connection {})",
                route.proxy,
                info.partition(),
                c.id()
            ));
            if route.tunnel {
                // The tunnel goes where `--connect-to` sends the connection.
                let answer = route.connect_response.as_deref();
                let authority = &cx.dial.authority;
                if let Some(status) = tunnel_lines(line, cx.proxy, authority, answer) {
                    line("* CONNECT phase completed");
                    line(&format!("* CONNECT tunnel established, response {status}"));
                }
            }
        }
    }
    if let Some(tls) = info.tls() {
        line(&format!("* ALPN: poolcurl offers {}", cx.alpn_offer));
        line(&format!(
            "* SSL connection using {} / {}",
            tls.version, tls.cipher_suite
        ));
        match tls.alpn {
            Some(accepted) => line(&format!("* ALPN: server accepted {accepted}")),
            None => line("* ALPN: server did not agree on a protocol. Uses default."),
        }
    }
}

/// The request head as it was sent, as `-v` shows it: the request line, `Host` first (the
/// pool adds it last on HTTP/1 when the request has none), the request's headers, then what a
/// forward proxy's requests carry.
fn request_lines(
    line: &mut dyn FnMut(&str),
    cx: &VerboseContext<'_>,
    connection: Option<&pool::ConnectionHandle>,
    request: (&Method, &Uri, &HeaderMap),
) {
    let protocol = connection.map(pool::ConnectionHandle::protocol);
    let (method, uri, headers) = request;
    let forward = connection
        .and_then(|c| c.info().proxy().filter(|route| !route.tunnel))
        .and(cx.proxy);
    let target = match (cx.target, forward) {
        (Some(target), _) => target.to_owned(),
        (None, Some(_)) => uri.to_string(),
        (None, None) => uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
    };
    let http2 = protocol == Some(pool::Protocol::Http2);
    let version = match (http2, cx.http1_0) {
        (true, _) => "HTTP/2",
        (false, true) => "HTTP/1.0",
        (false, false) => "HTTP/1.1",
    };
    // Header lines end in CRLF and the blank line after a head is `> ` / `< `, byte for
    // byte as curl writes them (the head as sent and received).
    line(&format!("> {method} {target} {version}\r"));
    if !http2 && !headers.contains_key(HOST) {
        let host = pool::OriginKey::from_uri(uri).map_or_else(
            |_| uri.authority().map_or(String::new(), |a| a.to_string()),
            |origin| origin.authority(),
        );
        line(&format!("> Host: {host}\r"));
    }
    // Through a forward proxy, what `pool_h1::prepare_proxied_request` adds, in its order.
    let authorization = forward
        .and_then(pool::Proxy::basic_auth)
        .filter(|_| !headers.contains_key(PROXY_AUTHORIZATION))
        .map(|value| (PROXY_AUTHORIZATION, value));
    let for_proxy = authorization
        .iter()
        .chain(forward.map_or(&[][..], pool::Proxy::headers))
        .map(|(name, value)| (name, value));
    for (name, value) in headers.iter().chain(for_proxy) {
        line(&format!(
            "> {}: {}\r",
            title_case(name.as_str()),
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    line("> \r");
}

/// Builds a trace with `build`, which writes each line through the function it is given, and
/// prints it on stderr in one write (so the lines of one trace stay together under `-Z`);
/// with a `clock`, each line starts with the time.
fn print_trace(clock: Option<UtcOffset>, build: impl FnOnce(&mut dyn FnMut(&str))) {
    let stamp = stamp(clock);
    let mut trace = String::new();
    build(&mut |text: &str| {
        trace.push_str(&stamp);
        trace.push_str(text);
        trace.push('\n');
    });
    super::errout::write(trace.as_bytes());
}

/// `--trace-time`'s prefix, the local time as curl prints it (`HH:MM:SS.micros `); empty
/// without a `clock`.
fn stamp(clock: Option<UtcOffset>) -> String {
    let Some(offset) = clock else {
        return String::new();
    };
    let now = OffsetDateTime::now_utc().to_offset(offset);
    format!(
        "{:02}:{:02}:{:02}.{:06} ",
        now.hour(),
        now.minute(),
        now.second(),
        now.microsecond()
    )
}

/// A tunnel's `CONNECT` exchange as `-v` shows it: the request to `authority` as the pool
/// wrote it (when `proxy` is known) and the proxy's `answer` head, as received; returns the
/// answer's status.
fn tunnel_lines<'a>(
    line: &mut dyn FnMut(&str),
    proxy: Option<&pool::Proxy>,
    authority: &str,
    answer: Option<&'a str>,
) -> Option<&'a str> {
    line(&format!("* Establish HTTP proxy tunnel to {authority}"));
    if let Some(proxy) = proxy {
        head_lines(line, '>', &proxy.connect_head(authority));
    }
    let answer = answer?;
    head_lines(line, '<', answer.as_bytes());
    answer.split(' ').nth(1)
}

/// The lines of a message head (up to its blank line) as `-v` shows them: each after `mark`
/// and a space, ending in CRLF, then `mark` and a space alone for the blank line.
fn head_lines(line: &mut dyn FnMut(&str), mark: char, head: &[u8]) {
    let head = String::from_utf8_lossy(head);
    for text in head.split("\r\n").take_while(|l| !l.is_empty()) {
        line(&format!("{mark} {text}\r"));
    }
    line(&format!("{mark} \r"));
}
