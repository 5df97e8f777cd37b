//! The `-v` trace on stderr. The trace of one request is printed once its response head has
//! arrived (the pool dials inside `request`, so there is no earlier moment that knows the
//! connection):
//!
//! ```text
//! *   Trying 127.0.0.1:8443...
//! * Connected to localhost (127.0.0.1) port 8443 (partition anonymous, connection #1)
//! * ALPN: poolcurl offers h2,http/1.1
//! * SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384
//! * ALPN: server accepted h2
//! * Server certificate:
//! *  subject: CN=poolcurl local origin
//! ...
//! *  SSL certificate verify ok.
//! > GET / HTTP/2
//! > Host: localhost:8443
//! > User-Agent: poolcurl/0.1.0
//! > Accept: */*
//! >
//! < HTTP/2 200
//! < content-length: 5
//! <
//! { [5 bytes data]
//! * Connection #1 to host localhost left intact
//! ```
//!
//! A reused connection prints `* Re-using existing connection #1 with host localhost (partition
//! anonymous)` (`with proxy PROXYHOST` through a proxy) instead of the connection and TLS lines. A new TLS connection that resumed a
//! session says `* SSL re-using session ID` before its suite (curl says it when it offers a
//! cached session; the pool can tell only once the server took it). A new connection through a
//! `CONNECT` tunnel shows the `CONNECT` request as the pool wrote it and the proxy's answer, as
//! curl does; so does a tunnel the proxy refused, before the error. Request headers print in
//! the order they are sent, `Host` first, as curl sends them; response header names as the
//! server wrote them (HTTP/1). As in curl, the `>` and `<` lines end in CRLF. Request data and
//! the first block of a response body are noted (`} [N bytes data]`, `{ [N bytes data]`),
//! except where the body goes to a terminal. `--trace-time` starts each line with the local
//! time, `HH:MM:SS.micros`, as curl does.
//!
//! A transfer that fails ends as curl's trace does: a connect the system refused names the
//! address and the reason (`* connect to 127.0.0.1 port 1 failed: Connection refused`; the
//! last address tried, when there were several), a TLS handshake that failed the address it
//! was connected to and the ALPN offer; then curl's message and `* Closing connection`,
//! numbered when a connection was made.
//!
//! With `--trace` or `--trace-ascii` ([`super::trace`]) the same lines go to the trace file as
//! curl lays them out there (`== Info:` for `*`, a dump of the bytes for `>` and `<`), with
//! every block of the body dumped.

use std::sync::OnceLock;

use http::header::HOST;
use http::{HeaderMap, Method, Uri};
use time::{OffsetDateTime, UtcOffset};

use super::connect_to::Dial;
use super::exit::FailedStep;
use super::request::{Forwarded, title_case};
use super::trace::{self, Style, Trace};
use connection::{connection_lines, tunnel_lines};

mod connection;

/// What `-v` needs to know about a request beyond the request itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VerboseContext<'a> {
    /// The URL's host, without IPv6 brackets.
    pub(crate) host: &'a str,
    /// Where the connection was dialed (`--connect-to`).
    pub(crate) dial: &'a Dial,
    /// The ALPN protocols offered over TLS, as curl lists them; empty under `--no-alpn`.
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
    /// `-H 'Host:'`: the request went without the `Host` the pool otherwise adds.
    pub(crate) omits_host: bool,
    /// Whether `-v` leaves out its `[N bytes data]` notes: the body goes to a terminal,
    /// where it shows itself (curl's rule).
    pub(crate) quiet_data: bool,
    /// Whether the request's data went after its head (`-T`, `-F`, or any body that waited
    /// for `100 Continue`) rather than with it (`-d`'s data): curl then says it is "completely
    /// uploaded".
    pub(crate) upload: bool,
    /// The request's body went chunked and its last chunk has gone: curl says so, and shows
    /// the last chunk as a block of its own.
    pub(crate) chunked_end: bool,
    /// `-H` names as typed, shown (and sent over HTTP/1) as they are.
    pub(crate) spellings: Option<&'a pool::RequestHeaderNames>,
    /// `-k`: the server certificate's name is not checked (and its account says so).
    pub(crate) insecure: bool,
    /// `--cert-status`: a connection that was made had its stapled status found good.
    pub(crate) cert_status: bool,
    /// What the request's credentials are (`Server auth using Basic with user 'NAME'`),
    /// said after the connection's lines.
    pub(crate) auth_note: Option<&'a str>,
    /// For each `Alt-Svc` header of the response, in order, what `--alt-svc` took from it
    /// (`Added alt-svc: HOST:PORT over h2`), said before the header's line as curl says it.
    pub(crate) alt_svc_added: &'a [Vec<String>],
    /// The request waited for `100 Continue` and got it: curl shows that head before the
    /// data it let go.
    pub(crate) continued: bool,
    /// The request waited for `100 Continue` until `--expect100-timeout` ran out, then sent
    /// its body: curl says so before the data.
    pub(crate) waited_out: bool,
    /// The server answered `417` instead of `100 Continue`: curl says so before the head's
    /// end.
    pub(crate) expectation_failed: bool,
    /// The answer (300 or above) came before the upload ended, and the pool stopped it: curl
    /// says so before the head's end, unless the head said the connection closes.
    pub(crate) stopped_sending: bool,
}

/// The local time zone's offset for `--trace-time`, read once while the process has one
/// thread (reading it later is unsound on Unix, and the `time` crate refuses).
static LOCAL_OFFSET: OnceLock<UtcOffset> = OnceLock::new();

/// Reads the local offset for `--trace-time` (UTC when it cannot be known). Call before any
/// other thread starts.
pub(crate) fn capture_local_offset() {
    LOCAL_OFFSET.get_or_init(|| UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC));
}

/// The `-v` trace on stderr, or `--trace`/`--trace-ascii`'s.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verbose {
    /// What is traced, and how.
    mode: Mode,
    /// `--trace-time`: the offset each line's local time is shown in.
    clock: Option<UtcOffset>,
}

/// What a [`Verbose`] writes.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Nothing.
    Off,
    /// `-v`'s lines, where diagnostics go.
    Plain,
    /// A `--trace` or `--trace-ascii` dump.
    Dump(&'static Trace),
}

impl Verbose {
    /// A trace: the process's `--trace` if one is set, else `-v`'s lines if `enabled`; each
    /// line stamped with the local time when `trace_time` is set.
    pub(crate) fn new(enabled: bool, trace_time: bool) -> Verbose {
        let clock = trace_time.then(|| LOCAL_OFFSET.get().copied().unwrap_or(UtcOffset::UTC));
        let mode = match (trace::get(), enabled) {
            (Some(dump), _) => Mode::Dump(dump),
            (None, true) => Mode::Plain,
            (None, false) => Mode::Off,
        };
        Verbose { mode, clock }
    }

    /// Whether every block of data is dumped (`--trace`, `--trace-ascii`), not just noted.
    pub(crate) fn dumps(&self) -> bool {
        matches!(self.mode, Mode::Dump(_))
    }

    /// Whether anything is traced (`-v`, `--trace`, `--trace-ascii`).
    pub(crate) fn enabled(&self) -> bool {
        !matches!(self.mode, Mode::Off)
    }

    /// `* message`.
    pub(crate) fn info(&self, message: &str) {
        self.print(|lines| lines.info(message));
    }

    /// The connection, request and response lines of one exchange, with the request's data
    /// (`body`) between the request head and the response's.
    pub(crate) fn exchange(
        &self,
        cx: &VerboseContext<'_>,
        connection: Option<&pool::ConnectionHandle>,
        request: (&Method, &Uri, &HeaderMap),
        body: &[u8],
        head: &[u8],
    ) {
        self.print(|lines| {
            if let Some(c) = connection {
                connection_lines(lines, cx, c);
            }
            if let Some(note) = cx.auth_note {
                lines.info(note);
            }
            if cx.http2_over_cleartext {
                lines.info(
                    "--http2 over cleartext: HTTP/2 needs prior knowledge here \
                     (--http2-prior-knowledge); using HTTP/1.1",
                );
            }
            request_lines(lines, cx, connection, request);
            let mut head = head;
            if let Some(end) = head
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .filter(|_| cx.continued)
            {
                // Without its blank line, as `head_lines_noted` shows a 1xx head.
                for text in String::from_utf8_lossy(&head[..end]).split("\r\n") {
                    lines.head_line(Direction::Received, text);
                }
                head = &head[end + 4..];
            }
            if cx.waited_out {
                lines.info("Done waiting for 100-continue");
            }
            if !body.is_empty() {
                // curl hands an upload over in blocks of its upload buffer's size.
                for (i, block) in body.chunks(UPLOAD_BLOCK).enumerate() {
                    lines.data(Direction::Sent, block, i == 0, cx.quiet_data);
                }
                if cx.upload {
                    lines.info("We are completely uploaded and fine");
                }
            }
            if cx.chunked_end {
                lines.info("Signaling end of chunked upload via terminating chunk.");
                lines.data(Direction::Sent, LAST_CHUNK, true, cx.quiet_data);
            }
            // An HTTP/0.9 reply has no head: nothing to show.
            let mut added = cx.alt_svc_added.iter();
            let mut http10 = false;
            head_lines_noted(lines, Direction::Received, head, |lines, text| {
                // What curl says of an HTTP/1.0 answer as it reads its status line, and of a
                // `Connection: keep-alive` in one.
                if text.starts_with("HTTP/1.0 ") {
                    http10 = true;
                    lines.info("HTTP 1.0, assume close after body");
                } else if http10 && keeps_alive(text) {
                    lines.info("HTTP/1.0 connection set to keep alive");
                }
                let is_alt_svc = text
                    .get(..8)
                    .is_some_and(|name| name.eq_ignore_ascii_case("alt-svc:"));
                if is_alt_svc {
                    for note in added.next().into_iter().flatten() {
                        lines.info(note);
                    }
                }
                if text.is_empty() && cx.expectation_failed {
                    lines.info("Got 417 while waiting for a 100");
                }
                if text.is_empty() && cx.stopped_sending {
                    lines.info("HTTP error before end of send, stop sending");
                }
            });
        });
    }

    /// A block of the response body as read (`first` of its body or not); see
    /// [`Lines::data`].
    pub(crate) fn received_data(&self, data: &[u8], first: bool, quiet: bool) {
        if first || matches!(self.mode, Mode::Dump(_)) {
            self.print(|lines| lines.data(Direction::Received, data, first, quiet));
        }
    }

    /// A tunnel the proxy refused: the `CONNECT` as the pool wrote it (when the proxy is
    /// known), the proxy's answer head, and the status, as curl shows them before its error.
    pub(crate) fn refused_tunnel(
        &self,
        proxy: Option<&pool::Proxy>,
        authority: &str,
        challenge: Option<&str>,
        answer: &str,
    ) {
        self.print(|lines| {
            // After a challenge, the refused `CONNECT` carried an answer the error does not
            // keep: only the refusal is shown.
            let sent = match challenge {
                Some(challenge) => {
                    let first = proxy.map(|proxy| proxy.connect_head(authority));
                    tunnel_lines(lines, first.as_deref(), authority, Some(challenge));
                    None
                }
                None => proxy.map(|proxy| proxy.connect_head(authority)),
            };
            let status =
                tunnel_lines(lines, sent.as_deref(), authority, Some(answer)).unwrap_or_default();
            lines.info(&format!("CONNECT tunnel failed, response {status}"));
        });
    }

    /// A transfer that failed, as curl ends its trace: how far its new connection got (the
    /// address a failed connect dialed, with the system's reason; or the address connected to
    /// before TLS failed, with the ALPN offer), curl's message, and the connection closing
    /// (without a number when no connection was made, as curl 8 words it).
    /// `step` comes with the URL's host and the ALPN offer.
    pub(crate) fn failed(
        &self,
        step: Option<(FailedStep, &str, &str)>,
        connection: Option<&pool::ConnectionHandle>,
        message: &str,
    ) {
        self.print(|lines| {
            match step {
                Some((FailedStep::Dial(addr, reason), _, _)) => {
                    lines.info(&format!("  Trying {}...", unscoped(addr)));
                    lines.info(&format!(
                        "connect to {} port {} failed: {reason}",
                        addr.ip(),
                        addr.port()
                    ));
                }
                Some((FailedStep::Tls(addr), host, alpn_offer)) => {
                    lines.info(&format!("  Trying {}...", unscoped(addr)));
                    lines.info(&format!(
                        "Connected to {host} ({}) port {}",
                        addr.ip(),
                        addr.port()
                    ));
                    if !alpn_offer.is_empty() {
                        lines.info(&format!("ALPN: poolcurl offers {alpn_offer}"));
                    }
                }
                None => {}
            }
            lines.info(message);
            match connection {
                Some(c) => lines.info(&format!("Closing connection {}", c.id().as_u64())),
                None => lines.info("Closing connection"),
            }
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
        // Through a proxy, curl names the proxy's host.
        let proxy = c
            .info()
            .proxy()
            .map(|route| connection::proxy_host(&route.proxy));
        let host = proxy.as_deref().unwrap_or(host);
        if closes {
            // curl's wording has no `#` here.
            self.info(&format!("Closing connection {}", c.id().as_u64()));
        } else {
            self.info(&format!("Connection {} to host {host} left intact", c.id()));
        }
    }

    /// Builds a trace with `build` and writes it in one write (so the lines of one trace stay
    /// together under `-Z`).
    fn print(&self, build: impl FnOnce(&mut Lines)) {
        let style = match self.mode {
            Mode::Off => return,
            Mode::Plain => None,
            Mode::Dump(trace) => Some(trace.style),
        };
        let mut lines = Lines {
            text: String::new(),
            stamp: stamp(self.clock),
            style,
            head: Vec::new(),
        };
        build(&mut lines);
        let text = lines.finish();
        match self.mode {
            Mode::Dump(trace) => trace.write(&text),
            _ => super::errout::write(text.as_bytes()),
        }
    }
}

/// The last chunk of a chunked upload, as it goes on the wire.
const LAST_CHUNK: &[u8] = super::upload::LAST_CHUNK;

/// The size of the blocks an upload is shown in: curl's upload buffer, 64 KiB.
const UPLOAD_BLOCK: usize = 64 * 1024;

/// Which way bytes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Sent,
    Received,
}

/// A trace being built, line by line, as `-v` shows it or as a `--trace` dump.
struct Lines {
    text: String,
    /// `--trace-time`'s prefix (empty without it).
    stamp: String,
    /// The dump's style; `None` for `-v`.
    style: Option<Style>,
    /// A dump's request head so far: its lines go out as one block, as curl sends them.
    head: Vec<u8>,
}

impl Lines {
    /// `* text`, or `== Info: text`.
    fn info(&mut self, text: &str) {
        self.end_head();
        let mark = if self.style.is_some() {
            "== Info: "
        } else {
            "* "
        };
        self.line(mark, text);
    }

    /// One line of a message head, without its CRLF: `> line` or `< line` with the CRLF, or
    /// a dump's block (the request's lines gathered into one).
    fn head_line(&mut self, direction: Direction, text: &str) {
        match (self.style, direction) {
            (None, Direction::Sent) => self.line("> ", &format!("{text}\r")),
            (None, Direction::Received) => self.line("< ", &format!("{text}\r")),
            (Some(_), Direction::Sent) => {
                self.head.extend_from_slice(text.as_bytes());
                self.head.extend_from_slice(b"\r\n");
            }
            (Some(style), Direction::Received) => {
                self.end_head();
                let line = format!("{text}\r\n");
                trace::dump(
                    &mut self.text,
                    style,
                    &self.stamp,
                    "<= Recv header",
                    line.as_bytes(),
                );
            }
        }
    }

    /// A block of a body: dumped, or `-v`'s `} [N bytes data]` / `{ [N bytes data]` for the
    /// `first` block of a run (curl notes one per run), unless `quiet`.
    fn data(&mut self, direction: Direction, bytes: &[u8], first: bool, quiet: bool) {
        self.end_head();
        match (self.style, direction) {
            (None, _) if quiet || !first => {}
            (None, Direction::Sent) => self.line("} ", &format!("[{} bytes data]", bytes.len())),
            (None, Direction::Received) => {
                self.line("{ ", &format!("[{} bytes data]", bytes.len()));
            }
            (Some(style), Direction::Sent) => {
                trace::dump(&mut self.text, style, &self.stamp, "=> Send data", bytes);
            }
            (Some(style), Direction::Received) => {
                trace::dump(&mut self.text, style, &self.stamp, "<= Recv data", bytes);
            }
        }
    }

    fn line(&mut self, mark: &str, text: &str) {
        self.text.push_str(&self.stamp);
        self.text.push_str(mark);
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// Writes a dump's gathered request head as its block.
    fn end_head(&mut self) {
        if let (Some(style), false) = (self.style, self.head.is_empty()) {
            let head = std::mem::take(&mut self.head);
            trace::dump(&mut self.text, style, &self.stamp, "=> Send header", &head);
        }
    }

    fn finish(mut self) -> String {
        self.end_head();
        self.text
    }
}

/// The request head as it was sent, as `-v` shows it: the request line, `Host` first (the
/// pool adds it last on HTTP/1 when the request has none), the request's headers, then what a
/// forward proxy's requests carry.
fn request_lines(
    lines: &mut Lines,
    cx: &VerboseContext<'_>,
    connection: Option<&pool::ConnectionHandle>,
    request: (&Method, &Uri, &HeaderMap),
) {
    let protocol = connection.map(pool::ConnectionHandle::protocol);
    let (method, uri, headers) = request;
    let forward = Forwarded::of(connection, cx.proxy);
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
    lines.head_line(Direction::Sent, &format!("{method} {target} {version}"));
    if !http2 && !headers.contains_key(HOST) && !cx.omits_host {
        let host = pool::OriginKey::from_uri(uri).map_or_else(
            |_| uri.authority().map_or(String::new(), |a| a.to_string()),
            |origin| origin.authority(),
        );
        lines.head_line(Direction::Sent, &format!("Host: {host}"));
    }
    // Through a forward proxy, what the pool adds, in its order.
    let for_proxy = forward.map(|f| f.added(headers)).unwrap_or_default();
    let for_proxy = for_proxy.iter().map(|(name, value)| (name, value));
    let typed = cx
        .spellings
        .filter(|_| !http2)
        .map(|s| s.assign(headers.iter().map(|(name, _)| name.as_str())));
    for (i, (name, value)) in headers.iter().chain(for_proxy).enumerate() {
        let spelled = typed.as_ref().and_then(|t| t.get(i).copied().flatten());
        let shown = match spelled {
            Some(spelled) => spelled.to_owned(),
            // HTTP/2 names are lower case, as curl shows them; its `:authority` as `Host`.
            None if http2 && *name != HOST => name.as_str().to_owned(),
            None => title_case(name.as_str()),
        };
        lines.head_line(
            Direction::Sent,
            &format!("{}: {}", shown, String::from_utf8_lossy(value.as_bytes())),
        );
    }
    lines.head_line(Direction::Sent, "");
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

/// The lines of a message head, up to and with its blank line, sent or received; nothing for an
/// empty head.
/// Whether a header line is `Connection` with `keep-alive` in its value (any case).
fn keeps_alive(line: &str) -> bool {
    line.split_once(':').is_some_and(|(name, value)| {
        name.eq_ignore_ascii_case("connection") && value.to_ascii_lowercase().contains("keep-alive")
    })
}

fn head_lines(lines: &mut Lines, direction: Direction, head: &[u8]) {
    head_lines_noted(lines, direction, head, |_, _| {});
}

/// [`head_lines`], with `before` called ahead of each line, the closing blank one too (`""`),
/// to add notes there.
fn head_lines_noted(
    lines: &mut Lines,
    direction: Direction,
    head: &[u8],
    mut before: impl FnMut(&mut Lines, &str),
) {
    let head = String::from_utf8_lossy(head);
    // A response's 1xx heads come before it; curl's trace shows their lines but not the blank
    // line after each (which `-i` does print).
    let mut rest = &head[..];
    while !rest.is_empty() {
        let (one, after) = match rest.find("\r\n\r\n") {
            Some(end) => (&rest[..end], &rest[end + 4..]),
            None => (rest.trim_end_matches("\r\n"), ""),
        };
        for text in one.split("\r\n") {
            before(lines, text);
            lines.head_line(direction, text);
        }
        rest = after;
        if rest.is_empty() {
            before(lines, "");
            lines.head_line(direction, "");
        }
    }
}

/// `addr` without an IPv6 scope (`[fe80::1%2]`), as curl writes it.
pub(super) fn unscoped(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    std::net::SocketAddr::new(addr.ip(), addr.port())
}
