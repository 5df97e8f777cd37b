//! What curl mode prints besides the body: the response head as `-i`/`-I`/`-D` write it, and
//! error and warning messages (as `-s`/`-S` allow). The body's destination is
//! [`super::sink`], the `-v` trace [`super::verbose`].

use std::sync::{Arc, Mutex, PoisonError};

use http::header::CONNECTION;
use http::response::Parts;
use http::{HeaderMap, Request, StatusCode, Version};

use super::exit::{CurlError, Note};

/// The response head as curl's `-i` writes it: status line, `name: value` lines (HTTP/1 names
/// as the server wrote them), blank line, all ending in CRLF. HTTP/2 has no reason phrase
/// (`HTTP/2 200 `). An HTTP/0.9 reply (`--http0.9`) has no head, so nothing. The 1xx heads
/// that came before it ([`Informational`]) go first, as curl prints them.
pub(crate) fn response_head(parts: &Parts) -> Vec<u8> {
    if parts.version == Version::HTTP_09 {
        return Vec::new();
    }
    let status = parts.status;
    let raw = parts.extensions.get::<pool::RawHeaderNames>();
    let mut head = Vec::new();
    if let Some(early) = parts.extensions.get::<InformationalHeads>() {
        // The names as written, when the pool read as many 1xx heads as hyper reported.
        let written = raw
            .map(pool::RawHeaderNames::informational)
            .filter(|names| names.len() == early.0.len());
        for (at, one) in early.0.iter().enumerate() {
            write_informational(&mut head, one, written.map(|names| &names[at]));
        }
    }
    let line = match (parts.version, written_status_line(raw)) {
        (Version::HTTP_2, _) => format!("HTTP/2 {} ", status.as_u16()),
        (_, Some(line)) => line.to_owned(),
        (version, None) => {
            let reason = parts
                .extensions
                .get::<hyper::ext::ReasonPhrase>()
                .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned())
                .or_else(|| status.canonical_reason().map(str::to_owned))
                .unwrap_or_default();
            format!("{} {} {reason}", http1(version), status.as_u16())
        }
    };
    // HTTP/1: the names as the server wrote them, in its order (the pool keeps them when built
    // with `http1_preserve_header_case`); HTTP/2 names are lower case on the wire.
    write_head(&mut head, &line, &parts.headers, raw);
    head
}

/// A head: `line`, the `name: value` lines of `headers` (the names as written and in the
/// server's order when `written` has them), and the blank line, all ending in CRLF.
fn write_head(
    out: &mut Vec<u8>,
    line: &str,
    headers: &HeaderMap,
    written: Option<&pool::RawHeaderNames>,
) {
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(b"\r\n");
    match written {
        Some(names) => names
            .in_wire_order(headers)
            .for_each(|(name, value)| write_field(out, name, value)),
        None => write_fields(out, headers),
    }
    out.extend_from_slice(b"\r\n");
}

/// An HTTP/1 version as a status line writes it.
fn http1(version: Version) -> &'static str {
    if version == Version::HTTP_10 {
        "HTTP/1.0"
    } else {
        "HTTP/1.1"
    }
}

/// Collects the 1xx heads (`100 Continue`, `103 Early Hints`) an HTTP/1 server sends before
/// its response, which hyper reads past unless a request asks for them
/// (`pool::on_informational`, which shares hyper's one hook with the pool's `Expect:
/// 100-continue`; HTTP/2's are not passed on). Their header names print as
/// the server wrote them (the pool's `RawHeaderNames::informational`), and so does their reason
/// phrase (`RawHeaderNames::reason`: hyper does not pass it on); without the names, the status's
/// usual phrase.
#[derive(Clone, Default)]
pub(crate) struct Informational(Arc<Mutex<Vec<EarlyHead>>>);

/// One 1xx head as hyper reported it.
#[derive(Clone)]
struct EarlyHead {
    version: Version,
    status: StatusCode,
    headers: HeaderMap,
}

/// The 1xx heads of a response, in order: a response extension for [`response_head`].
#[derive(Clone)]
struct InformationalHeads(Vec<EarlyHead>);

impl Informational {
    /// Asks hyper for the 1xx heads of `request`'s response.
    pub(crate) fn listen<B>(&self, request: &mut Request<B>) {
        let heads = self.0.clone();
        pool::on_informational(request, move |response| {
            let mut heads = heads.lock().unwrap_or_else(PoisonError::into_inner);
            heads.push(EarlyHead {
                version: response.version(),
                status: response.status(),
                headers: response.headers().clone(),
            });
        });
    }

    /// Moves the heads received into `parts`, for [`response_head`].
    pub(crate) fn attach(&self, parts: &mut Parts) {
        let heads = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        if !heads.is_empty() {
            parts.extensions.insert(InformationalHeads(heads));
        }
    }
}

/// Whether a `100 Continue` head is among the 1xx heads that `head` (from
/// [`response_head`]) starts with.
pub(crate) fn has_continue(head: &[u8]) -> bool {
    let mut rest = head;
    while rest.starts_with(b"HTTP/1.") {
        if rest.get(8..13) == Some(b" 100 ") {
            return true;
        }
        let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
            return false;
        };
        rest = &rest[end + 4..];
    }
    false
}

/// A head's status line as the server wrote it, when the pool kept one (curl prints it so:
/// `HTTP/1.1 200` without a phrase stays so).
fn written_status_line(written: Option<&pool::RawHeaderNames>) -> Option<&str> {
    written
        .map(pool::RawHeaderNames::status_line)
        .filter(|line| !line.is_empty())
}

/// One 1xx head as curl prints it, with the header names as written when `written` has them.
fn write_informational(
    out: &mut Vec<u8>,
    head: &EarlyHead,
    written: Option<&pool::RawHeaderNames>,
) {
    let status = head.status;
    let line = match written_status_line(written) {
        Some(line) => line.to_owned(),
        None => format!(
            "{} {} {}",
            http1(head.version),
            status.as_u16(),
            status.canonical_reason().unwrap_or_default()
        ),
    };
    write_head(out, &line, &head.headers, written);
}

/// `name: value` lines, as a `HeaderMap` holds them (names in lower case).
pub(crate) fn write_fields(out: &mut Vec<u8>, fields: &HeaderMap) {
    for (name, value) in fields {
        write_field(out, name.as_str(), value);
    }
}

/// One `name: value` line.
fn write_field(out: &mut Vec<u8>, name: &str, value: &http::HeaderValue) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// Whether the server said it closes the connection after this response.
pub(crate) fn server_closes(parts: &Parts) -> bool {
    let says_close = parts
        .headers
        .get_all(CONNECTION)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.eq_ignore_ascii_case("close")));
    let keeps_alive = parts.headers.get_all(CONNECTION).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.eq_ignore_ascii_case("keep-alive"))
    });
    says_close || (parts.version == Version::HTTP_10 && !keeps_alive)
}

/// Error and warning messages on stderr, as `-s`/`-S` allow.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Report {
    /// Whether error messages are printed (not `-s`, or `-s -S`).
    errors: bool,
    /// Whether warnings are printed (not `-s`).
    warnings: bool,
}

impl Report {
    /// A reporter for these `-s`/`-S` settings.
    pub(crate) fn new(silent: bool, show_error: bool) -> Report {
        Report {
            errors: !silent || show_error,
            warnings: !silent,
        }
    }

    /// Prints `poolcurl: (CODE) message`; a usage error as curl prints one, whatever `-s`
    /// says: `poolcurl: message` and the `--help` hint. Either after the error's note, unless
    /// `-s`.
    pub(crate) fn error(&self, error: &CurlError) {
        match error.note() {
            Some(Note::Warning(text)) => self.warning_raw(&curl_warning(text)),
            Some(Note::Error(text)) => self.warning_raw(&curl_error_note(text)),
            None => {}
        }
        if error.is_usage() {
            stderr_line(&format!("poolcurl: {}", error.message()));
            stderr_line(super::usage::TRY_HELP);
        } else if self.errors && !error.is_unreported() {
            stderr_line(&format!("poolcurl: {error}"));
            if error.code() == 60 {
                // curl's advice after a certificate it could not verify, in its words.
                stderr_line(UNVERIFIED_ADVICE);
            }
        }
    }

    /// Prints `message` as it is (curl's `Warning: ...` lines), unless `-s`.
    pub(crate) fn warning_raw(&self, message: &str) {
        if self.warnings {
            stderr_line(message);
        }
    }

    /// Whether `-s` is off (progress bars and warnings may print).
    pub(crate) fn chatty(&self) -> bool {
        self.warnings
    }
}

/// What curl prints after exit 60's message (its `CURL_CA_CERT_ERRORMSG`), naming poolcurl.
const UNVERIFIED_ADVICE: &str = "More details here: https://curl.se/docs/sslcerts.html\n\n\
     poolcurl failed to verify the legitimacy of the server and therefore could not\n\
     establish a secure connection to it. To learn more about this situation and\n\
     how to fix it, please visit the web page mentioned above.";

/// `message` as curl's `warnf` prints it: `Warning: ` before each piece of at most 70 bytes,
/// cut after the last blank that fits (or at 70 when none does).
pub(crate) fn curl_warning(message: &str) -> String {
    wrapped("Warning: ", 79 - "Warning: ".len(), message)
}

/// `message` as curl's `errorf` prints it (a line without a code): as [`curl_warning`], after
/// `poolcurl: ` (the pieces as long as curl's after its shorter `curl: `).
pub(crate) fn curl_error_note(message: &str) -> String {
    wrapped("poolcurl: ", 79 - "curl: ".len(), message)
}

/// `message` in pieces of at most `width` bytes, each after `prefix` (curl's `voutf`).
fn wrapped(prefix: &str, width: usize, message: &str) -> String {
    // curl's messages end with a newline, which counts in the width.
    let text = format!("{message}\n");
    let mut rest = text.as_bytes();
    let mut out = Vec::new();
    while !rest.is_empty() {
        out.extend_from_slice(prefix.as_bytes());
        if rest.len() > width {
            let cut = (1..width)
                .rev()
                .find(|&at| rest[at] == b' ' || rest[at] == b'\t')
                .unwrap_or(width - 1);
            out.extend_from_slice(&rest[..=cut]);
            out.push(b'\n');
            rest = &rest[cut + 1..];
        } else {
            out.extend_from_slice(rest);
            rest = &[];
        }
    }
    out.pop();
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes one line where diagnostics go (stderr, or `--stderr`'s file); a closed stream is
/// not worth failing a transfer for.
pub(crate) fn stderr_line(line: &str) {
    super::errout::line(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_notes_wrap_where_curls_do_after_the_longer_name() {
        let path = format!("/{}", "d".repeat(80));
        let note = curl_error_note(&format!("cannot read config from '{path}'"));
        let lines: Vec<&str> = note.lines().collect();
        assert_eq!(lines[0], "poolcurl: cannot read config from ");
        // 73 bytes after the name, as after curl's `curl: `.
        assert_eq!(lines[1].len(), "poolcurl: ".len() + 73);
        assert_eq!(
            lines[2],
            format!("poolcurl: {}'", "d".repeat(80 - (73 - 2)))
        );
    }

    #[test]
    fn warnings_wrap_where_curl_wraps_them() {
        assert_eq!(
            curl_warning(
                "You can only select one HTTP request method! You asked for both PUT \
                 (-T, --upload-file) and HEAD (-I, --head)."
            ),
            "Warning: You can only select one HTTP request method! You asked for both PUT \n\
             Warning: (-T, --upload-file) and HEAD (-I, --head)."
        );
        assert_eq!(curl_warning("short"), "Warning: short");
        let long = "x".repeat(75);
        assert_eq!(
            curl_warning(&long),
            format!("Warning: {}\nWarning: {}", "x".repeat(70), "x".repeat(5))
        );
    }

    fn parts(version: Version, status: u16, headers: &[(&str, &str)]) -> Parts {
        let mut builder = http::Response::builder().status(status).version(version);
        for (n, v) in headers {
            builder = builder.header(*n, *v);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn a_continue_is_found_among_the_1xx_heads_only() {
        let final_only = b"HTTP/1.1 200 OK\r\nx: 1\r\n\r\n";
        assert!(!has_continue(final_only));
        assert!(has_continue(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"
        ));
        let hints_first = b"HTTP/1.1 103 Early Hints\r\nlink: <a>\r\n\r\n\
                            HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\r\n";
        assert!(has_continue(hints_first));
        assert!(!has_continue(b"HTTP/1.1 417 Expectation Failed\r\n\r\n"));
        assert!(
            !has_continue(b"HTTP/2 100 \r\n\r\n"),
            "HTTP/2 heads are never 1xx here"
        );
    }

    #[test]
    fn heads_as_curl_writes_them() {
        let p = parts(
            Version::HTTP_11,
            200,
            &[("content-length", "5"), ("x-a", "b")],
        );
        assert_eq!(
            response_head(&p),
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: b\r\n\r\n"
        );
        let p = parts(Version::HTTP_2, 404, &[]);
        assert_eq!(response_head(&p), b"HTTP/2 404 \r\n\r\n");
        let p = parts(Version::HTTP_10, 299, &[]);
        assert_eq!(response_head(&p), b"HTTP/1.0 299 \r\n\r\n");
    }

    #[test]
    fn http1_names_are_written_as_the_server_wrote_them() {
        let mut p = parts(
            Version::HTTP_11,
            200,
            &[
                ("x-dup", "1"),
                ("content-type", "text/plain"),
                ("x-dup", "2"),
            ],
        );
        let raw: pool::RawHeaderNames = ["X-Dup", "Content-Type", "x-DUP"].into_iter().collect();
        p.extensions.insert(raw);
        assert_eq!(
            response_head(&p),
            b"HTTP/1.1 200 OK\r\nX-Dup: 1\r\nContent-Type: text/plain\r\nx-DUP: 2\r\n\r\n"
        );
    }

    #[test]
    fn closing_is_read_from_the_head() {
        assert!(server_closes(&parts(
            Version::HTTP_11,
            200,
            &[("connection", "close")]
        )));
        assert!(!server_closes(&parts(Version::HTTP_11, 200, &[])));
        assert!(server_closes(&parts(Version::HTTP_10, 200, &[])));
        assert!(!server_closes(&parts(
            Version::HTTP_10,
            200,
            &[("connection", "keep-alive")]
        )));
    }
}
