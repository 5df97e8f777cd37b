//! The scripted servers' routes: what the HTTP/1.1 routes (plain, over TLS, through a Unix
//! socket or as a forward proxy) and the HTTP/2 server answer, by path. Routes that check a
//! request as a real server would live in their own files: `/sigv4` ([`sigv4`]), `/dns-query`
//! ([`doh`]), `/ntlm` and `/ntlm2` ([`ntlm`]).

mod doh;
mod ntlm;
mod sigv4;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use pool_tests::h1::{RecordedRequest, Reply};
use pool_tests::h2::{H2Request, Reason, StreamPlan};

use crate::{DIGITS, common};

/// The routes of the HTTP/2 server: a response, and streams the server resets before or
/// after the response began.
pub(crate) fn h2_routes(req: &H2Request) -> StreamPlan {
    match req.path() {
        "/hello" => StreamPlan::ok("hello\n"),
        "/reset" => StreamPlan::reset(Reason::INTERNAL_ERROR),
        "/reset-mid" => StreamPlan::new().head(200).data("part").rst(Reason::CANCEL),
        "/refused" => StreamPlan::reset(Reason::REFUSED_STREAM),
        "/trailers" => {
            let mut trailers = http::HeaderMap::new();
            trailers.insert("x-checksum", http::HeaderValue::from_static("42"));
            StreamPlan::new()
                .head(200)
                .data("body\n")
                .trailers(trailers)
        }
        _ => StreamPlan::status(404),
    }
}

/// A reply to `/lie/NAME` that breaks HTTP/1 (or bends it), then the close.
fn lie(name: &str) -> Reply {
    let ok = "Content-Length: 2\r\n\r\nok";
    let head = match name {
        "h09" => "a body without a head\n".to_owned(),
        "http12" => format!("HTTP/1.2 200 OK\r\n{ok}"),
        "status-letters" => format!("HTTP/1.1 abc OK\r\n{ok}"),
        "status-099" => format!("HTTP/1.1 099 Low\r\n{ok}"),
        "no-colon" => format!("HTTP/1.1 200 OK\r\nno colon here\r\n{ok}"),
        "nul" => format!("HTTP/1.1 200 OK\r\nX-A: a\0b\r\n{ok}"),
        "length" => "HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nok".to_owned(),
        "space-colon" => format!("HTTP/1.1 200 OK\r\nX-Spaced : v\r\n{ok}"),
        "folded" => format!("HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\n{ok}"),
        "many" => {
            let lines: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
            format!("HTTP/1.1 200 OK\r\n{lines}{ok}")
        }
        // Status lines as written: no reason phrase (and no space before it), odd spacing.
        "no-reason" => format!("HTTP/1.1 200\r\n{ok}"),
        "spaced-reason" => format!("HTTP/1.1 200 All  Good \r\n{ok}"),
        // 1xx heads before the response, their names and reason phrases as written.
        "continue" => format!("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n{ok}"),
        "early-hints" => format!(
            "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n\
             HTTP/1.1 100 Carry On\r\n\r\nHTTP/1.1 200 OK\r\nX-Final: 1\r\n{ok}"
        ),
        // Trailers after a chunked body (in lower case, as poolcurl prints them).
        "trailers" => "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                       2\r\nok\r\n0\r\nx-checksum: 42\r\nx-more: yes\r\n\r\n"
            .to_owned(),
        // A 101 nobody asked for: what follows is the body, until the close.
        "switch" => "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n\
                     switched data\n"
            .to_owned(),
        "switch-empty" => "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n".to_owned(),
        "huge" => {
            let line = format!("X-Pad: {}\r\n", "p".repeat(100));
            format!("HTTP/1.1 200 OK\r\n{}{ok}", line.repeat(4000))
        }
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_owned(),
    };
    Reply::raw(Bytes::from(head)).then_close()
}

/// `sha256//BASE64` of the public key in the PEM file at `path` (empty when there is none):
/// the pin of the TLS server's key, computed from the key as `--pinnedpubkey FILE` reads it.
pub(crate) fn pin_of(path: &Path) -> String {
    use base64::Engine as _;
    use rustls_pki_types::pem::PemObject as _;
    let Ok(spki) = rustls_pki_types::SubjectPublicKeyInfoDer::from_pem_file(path) else {
        return String::new();
    };
    let pin = pool::PublicKeyPin::of_spki_der(spki.as_ref());
    format!(
        "sha256//{}",
        base64::engine::general_purpose::STANDARD.encode(pin.sha256())
    )
}

/// The routes every case's server answers.
pub(crate) fn routes(flaky: &AtomicUsize, req: &RecordedRequest) -> Reply {
    // A request through a forward proxy (this server, with -x) names its origin too.
    let target = match req.target.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |at| &rest[at..]),
        None => &req.target,
    };
    let path = target.split('?').next().unwrap_or_default();
    match path {
        // Not the 404 of an unknown path: an empty request target must not pass for `/`.
        "/" => Reply::ok("root\n"),
        "/hello" => Reply::ok("hello\n").header("content-type", "text/plain"),
        "/headers" => Reply::ok("h")
            .header("x-one", "1")
            .header("x-two", "a")
            .header("x-two", "b"),
        "/redirect" => Reply::new(302).header("location", "/hello").body("moved\n"),
        "/redirect307" => Reply::new(307).header("location", "/echo").body("moved\n"),
        // An empty Location is no redirect; one with raw UTF-8 goes percent-encoded.
        "/empty-location" => Reply::new(302).header("location", "").body("nowhere\n"),
        "/locations" => Reply::new(302)
            .header("location", " ")
            .header("location", "/hello")
            .header("location", "/echo")
            .body("three\n"),
        "/utf8-location" => Reply::new(302)
            .header("location", "/echo/é")
            .body("moved\n"),
        // The method and body length a redirected request came with.
        "/found" => Reply::new(302)
            .header("location", "/method")
            .body("moved\n"),
        "/see-other" => Reply::new(303)
            .header("location", "/method")
            .body("moved\n"),
        "/method" => Reply::ok(format!("{} {}\n", req.method, req.body.len())),
        // Through a forward proxy (-x to this server): another port of the same host, and a
        // detour to another host and back, for what credentials go where.
        "/to-other-port" => Reply::new(302).header("location", "http://a.test:2222/echo"),
        "/detour" => Reply::new(302).header("location", "http://b.test:1111/back"),
        "/back" => Reply::new(302).header("location", "http://a.test:1111/echo"),
        // curl follows a Location on every 3xx, not only the five redirect codes, keeping the
        // method and data; the fragment stays in %{redirect_url}.
        "/choices" => Reply::new(300)
            .header("location", "/method#part")
            .body("choose\n"),
        "/basic" if req.header("authorization") == Some("Basic YWxpY2U6czNjcmV0") => {
            Reply::ok("ok basic\n")
        }
        "/basic" => Reply::new(401)
            .header("WWW-Authenticate", "Basic realm=\"parity\"")
            .body("denied\n"),
        "/digest" => {
            let ok = Reply::ok(format!("ok {} {}\n", req.method, req.body.len()));
            common::digest_reply(req, ok)
        }
        // As a forward proxy (-x): a Digest proxy, a Basic-only one, and a Digest proxy in
        // front of a Digest server.
        "/proxy-digest" => {
            let ok = Reply::ok(format!("ok {} {}\n", req.method, req.body.len()));
            common::proxy_digest_reply(req, ok)
        }
        "/proxy-basic" if req.header("proxy-authorization") == Some("Basic YWxpY2U6czNjcmV0") => {
            Reply::ok("ok proxy basic\n")
        }
        "/proxy-basic" => Reply::new(407)
            .header("Proxy-Authenticate", "Basic realm=\"parity\"")
            .body("denied\n"),
        "/proxy-and-server" => {
            let ok = Reply::ok(format!("ok {} {}\n", req.method, req.body.len()));
            common::proxy_digest_reply(req, common::digest_reply(req, ok))
        }
        "/etag" if req.header("if-none-match") == Some("\"v1\"") => Reply::new(304),
        "/close" => Reply::ok("closing\n")
            .header("connection", "close")
            .then_close(),
        "/etag" => Reply::ok("tagged\n").header("etag", "\"v1\""),
        "/mixed" => Reply::ok("mixed\n")
            .header("Content-Type", "text/plain")
            .header("X-Request-ID", "abc")
            .header("x-lower", "l")
            .header("X-Dup", "1")
            .header("Cache-Control", "no-store")
            .header("x-DUP", "2")
            .header("Content-Length", "6"),
        "/mixed-redirect" => Reply::new(302)
            .header("Location", "/mixed")
            .header("Content-Length", "0"),
        "/loop" => Reply::new(301).header("location", "/loop"),
        "/dated" => Reply::ok("dated\n").header("last-modified", "Wed, 21 Oct 2015 07:28:00 GMT"),
        "/named/" => {
            Reply::ok("named\n").header("content-disposition", "attachment; filename=\"named.txt\"")
        }
        "/attachment" => Reply::ok("attached\n")
            .header("content-disposition", "attachment; filename=\"report.txt\""),
        "/attachment-plain" => Reply::ok("plain\n").header(
            "content-disposition",
            "attachment; filename=plain.txt; size=6",
        ),
        "/attachment-path" => Reply::ok("contained\n").header(
            "content-disposition",
            "attachment; filename=\"../up/evil.txt\"",
        ),
        // To the same server under another host name.
        "/to-localhost" => {
            let host = req.header("host").unwrap_or_default();
            let port = host.rsplit(':').next().unwrap_or_default();
            let location = format!("http://localhost:{port}/echo");
            Reply::new(302).header("location", &location)
        }
        "/truncated" => Reply::ok("0123456789").declared_length(100).then_close(),
        "/truncated-chunked" => Reply::ok("0123456789")
            .chunked()
            .unterminated()
            .then_close(),
        "/empty" => Reply::raw(Bytes::new()).then_close(),
        p if p.starts_with("/lie/") => lie(&p["/lie/".len()..]),
        "/setcookie" => Reply::new(302)
            .header("set-cookie", "session=abc; Path=/")
            .header("location", "/echo"),
        "/sts" => Reply::ok("strict\n").header("strict-transport-security", "max-age=1000"),
        p if p.starts_with("/altsvc/") => alt_svc(req, &p["/altsvc/".len()..]),
        "/cookies" => Reply::ok("set\n")
            .header("set-cookie", "a=1; Path=/")
            .header("set-cookie", "b=2; Path=/"),
        "/cookies2" => Reply::ok("set again\n")
            .header("set-cookie", "a=3; Path=/")
            .header("set-cookie", "c=4; Path=/"),
        // A Domain naming the server's address: a host-only cookie in curl's jar.
        "/ip-domain" => Reply::ok("set\n").header("set-cookie", "ip=1; Domain=127.0.0.1"),
        "/range" => range(req),
        "/gzip" => encoded("gzip", gzip(b"gzipped body\n")),
        "/deflate" => encoded("deflate", deflate(b"deflated body\n")),
        "/br" => encoded("br", brotli_encode(b"brotli body\n")),
        "/zstd" => encoded(
            "zstd",
            zstd::stream::encode_all(&b"zstd body\n"[..], 3).unwrap(),
        ),
        // Transfer codings, which curl undoes with or without --compressed (hyper removes
        // the chunks); content codings curl does not know, or more than five of them, fail;
        // deflate without its zlib header is taken.
        "/te-gzip" => {
            let body = gzip(b"transfer-coded body\n");
            let mut wire = format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n{:x}\r\n",
                body.len()
            )
            .into_bytes();
            wire.extend_from_slice(&body);
            wire.extend_from_slice(b"\r\n0\r\n\r\n");
            Reply::raw(Bytes::from(wire)).then_close()
        }
        "/unknown-coding" => encoded("x-unknown", b"as it came\n".to_vec()),
        "/six-codings" => encoded(
            "identity, none, identity, none, identity, none",
            b"six\n".to_vec(),
        ),
        "/raw-deflate" => encoded("deflate", raw_deflate(b"raw deflate body\n")),
        "/flaky" => {
            if flaky.fetch_add(1, Ordering::SeqCst) == 0 {
                Reply::new(503).body("try again\n")
            } else {
                Reply::ok("recovered\n")
            }
        }
        p if p.starts_with("/status/") => {
            let code: u16 = p["/status/".len()..].parse().unwrap_or(500);
            Reply::new(code).body(format!("status {code}\n"))
        }
        p if p.starts_with("/files/") => Reply::ok(format!("file {}\n", &p["/files/".len()..])),
        "/echo-body" => echo_body(req),
        // Every field as it arrived (the names in the order they first came), the user agent's
        // value left out.
        "/fields" => {
            let text: String = req
                .headers
                .iter()
                .map(|(name, value)| match name.as_str() {
                    "user-agent" => format!("{name}\n"),
                    _ => format!("{name}: {}\n", value.to_str().unwrap_or("?")),
                })
                .collect();
            Reply::ok(text)
        }
        "/sigv4" => sigv4::check(req),
        "/dns-query" => doh::answer(req),
        "/ntlm" => ntlm::answer(req, false, ntlm::Asker::Server),
        "/ntlm2" => ntlm::answer(req, true, ntlm::Asker::Server),
        "/proxy-ntlm" => ntlm::answer(req, true, ntlm::Asker::Proxy),
        "/sigv4-redirect" => Reply::new(302).header("location", "/sigv4?after=redirect"),
        p if p.starts_with("/echo") => echo(req),
        // `OPTIONS *` (--request-target '*').
        "*" => echo(req),
        _ => Reply::new(404).body("no such route\n"),
    }
}

/// A reply to `/altsvc/NAME` naming alternatives for its origin (`PORT` is the server's own,
/// from `Host`): this server under another host name, a closed port, several, `clear` (bare,
/// or with a parameter), a bad port; `redirect` names one and redirects to `/echo`.
fn alt_svc(req: &RecordedRequest, name: &str) -> Reply {
    let value = match name {
        "use" | "redirect" => r#"h2="127.0.0.1:PORT"; ma=3600"#,
        "closed" => r#"h2=":1""#,
        "many" => r#"h3=":443"; ma=60, h2="127.0.0.1:PORT"; persist=1, http/1.1=":1""#,
        "clear" => "clear",
        "clear-params" => "clear; x=1",
        "bad" => r#"h2=":99999", h2="127.0.0.1:PORT""#,
        _ => return Reply::new(404),
    };
    let host = req.header("host").unwrap_or_default();
    let port = host.rsplit(':').next().unwrap_or_default();
    let value = value.replace("PORT", port);
    match name {
        "redirect" => Reply::new(302)
            .header("alt-svc", &value)
            .header("location", "/echo"),
        _ => Reply::ok("alternatives\n").header("alt-svc", &value),
    }
}

/// The request as the server saw it, minus what differs between the two clients by nature
/// (the User-Agent value, a multipart boundary).
fn echo(req: &RecordedRequest) -> Reply {
    let mut text = format!("{} {} {:?}\n", req.method, req.target, req.version);
    for name in [
        "host",
        "authorization",
        "range",
        "content-range",
        "accept",
        "accept-encoding",
        "referer",
        "alt-used",
        "cookie",
        "if-modified-since",
        "if-unmodified-since",
        "content-length",
        "transfer-encoding",
        "content-type",
        "expect",
        "x-proxy-header",
        "proxy-connection",
        "x-amz-date",
        "x-amz-content-sha256",
        "date",
    ] {
        for value in req.headers.get_all(name) {
            text.push_str(&format!("{name}: {}\n", value.to_str().unwrap_or("?")));
        }
    }
    text.push_str(&String::from_utf8_lossy(&req.body));
    Reply::ok(without_boundaries(text))
}

/// The body of a request as the server saw it, after its `Content-Type` (no other header:
/// curl sends a body it cannot count ahead chunked, where poolcurl sends its length).
fn echo_body(req: &RecordedRequest) -> Reply {
    let content_type = req.header("content-type").unwrap_or_default();
    let text = format!(
        "content-type: {content_type}\n{}",
        String::from_utf8_lossy(&req.body)
    );
    Reply::ok(without_boundaries(text))
}

/// `text` with every multipart boundary, the head's and those of parts nested in the body,
/// named in the order they first appear: BOUNDARY, BOUNDARY2, ...
fn without_boundaries(mut text: String) -> String {
    let mut boundaries: Vec<String> = Vec::new();
    for piece in text.split("boundary=").skip(1) {
        let end = piece
            .find(|c: char| c.is_ascii_whitespace() || c == ';')
            .unwrap_or(piece.len());
        let boundary = piece[..end].to_owned();
        if !boundary.is_empty() && !boundaries.contains(&boundary) {
            boundaries.push(boundary);
        }
    }
    for (i, boundary) in boundaries.iter().enumerate() {
        let name = match i {
            0 => "BOUNDARY".to_owned(),
            i => format!("BOUNDARY{}", i + 1),
        };
        text = text.replace(boundary.as_str(), &name);
    }
    text
}

fn range(req: &RecordedRequest) -> Reply {
    let Some(spec) = req.header("range").and_then(|r| r.strip_prefix("bytes=")) else {
        return Reply::ok(Bytes::from_static(DIGITS));
    };
    let (from, to) = spec.split_once('-').unwrap_or((spec, ""));
    let from: usize = from.parse().unwrap_or(0);
    if from >= DIGITS.len() {
        return Reply::new(416)
            .header("content-range", &format!("bytes */{}", DIGITS.len()))
            .body("range not satisfiable\n");
    }
    let to: usize = to.parse().unwrap_or(DIGITS.len() - 1).min(DIGITS.len() - 1);
    Reply::new(206)
        .header(
            "content-range",
            &format!("bytes {from}-{to}/{}", DIGITS.len()),
        )
        .body(Bytes::copy_from_slice(&DIGITS[from..=to]))
}

fn encoded(coding: &str, body: Vec<u8>) -> Reply {
    Reply::ok(body).header("content-encoding", coding)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn deflate(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn raw_deflate(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn brotli_encode(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        w.write_all(data).unwrap();
    }
    out
}
