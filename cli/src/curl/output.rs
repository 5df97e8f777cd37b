//! What curl mode prints: the output (`-o` file or stdout; body bytes unmodified, the head with
//! `-i`/`-I`), the `-v` trace on stderr, and error messages.
//!
//! The `-v` trace of one request is printed once its response head has arrived (the pool dials
//! inside `request`, so there is no earlier moment that knows the connection):
//!
//! ```text
//! * Connected to localhost (127.0.0.1) port 8443 (partition anonymous, connection #1)
//! * ALPN: poolcurl offers h2,http/1.1
//! * SSL connection using TLSv1.3 / TLS13_AES_256_GCM_SHA384
//! * ALPN: server accepted h2
//! > GET / HTTP/2
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
//! anonymous)` instead of the connection and TLS lines.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use http::header::{CONNECTION, HOST};
use http::response::Parts;
use http::{HeaderMap, Method, Uri, Version};

use super::exit::CurlError;
use super::request::title_case;

/// Where one transfer's output goes.
#[derive(Debug)]
pub(crate) struct Sink {
    /// The `-o` file, or `None` for stdout.
    path: Option<PathBuf>,
    /// The file, once something was written (a failed `-f` transfer creates no file).
    file: Option<BufWriter<File>>,
}

impl Sink {
    /// Output to stdout.
    pub(crate) fn stdout() -> Sink {
        Sink {
            path: None,
            file: None,
        }
    }

    /// Output to `path` (`-` is stdout, as in curl).
    pub(crate) fn file(path: PathBuf) -> Sink {
        if path.as_os_str() == "-" {
            return Sink::stdout();
        }
        Sink {
            path: Some(path),
            file: None,
        }
    }

    /// The `-o` file, if any.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Writes `bytes` unmodified.
    ///
    /// # Errors
    ///
    /// Exit 23 when the file cannot be created or written, or stdout is closed.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), CurlError> {
        let result = match &self.path {
            None => io::stdout().lock().write_all(bytes),
            Some(_) => self.open()?.write_all(bytes),
        };
        result.map_err(|e| self.failed(e))
    }

    /// Ends a successful transfer: creates an empty file if nothing was written, and flushes.
    ///
    /// # Errors
    ///
    /// Exit 23 as for [`write`](Self::write).
    pub(crate) fn finish(&mut self) -> Result<(), CurlError> {
        let result = match &self.path {
            None => io::stdout().lock().flush(),
            Some(_) => self.open()?.flush(),
        };
        result.map_err(|e| self.failed(e))
    }

    fn open(&mut self) -> Result<&mut BufWriter<File>, CurlError> {
        if self.file.is_none() {
            let path = self.path.as_deref().unwrap_or(Path::new("-"));
            let file = File::create(path).map_err(|e| self.failed(e))?;
            self.file = Some(BufWriter::new(file));
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    fn failed(&self, error: io::Error) -> CurlError {
        match &self.path {
            Some(path) => CurlError::write_failed(format!("{}: {error}", path.display())),
            None => CurlError::write_failed(format!("stdout: {error}")),
        }
    }
}

/// The response head as curl's `-i` writes it: status line, `name: value` lines, blank line,
/// all ending in CRLF. HTTP/2 has no reason phrase (`HTTP/2 200 `).
pub(crate) fn response_head(parts: &Parts) -> Vec<u8> {
    let status = parts.status;
    let mut head = match parts.version {
        Version::HTTP_2 => format!("HTTP/2 {} \r\n", status.as_u16()).into_bytes(),
        version => {
            let reason = parts
                .extensions
                .get::<hyper::ext::ReasonPhrase>()
                .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned())
                .or_else(|| status.canonical_reason().map(str::to_owned))
                .unwrap_or_default();
            let version = if version == Version::HTTP_10 {
                "HTTP/1.0"
            } else {
                "HTTP/1.1"
            };
            format!("{version} {} {reason}\r\n", status.as_u16()).into_bytes()
        }
    };
    for (name, value) in &parts.headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    head
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

    /// Prints `poolcurl: (CODE) message`.
    pub(crate) fn error(&self, error: &CurlError) {
        if self.errors {
            stderr_line(&format!("poolcurl: {error}"));
        }
    }

    /// Prints `poolcurl: message`.
    pub(crate) fn warning(&self, message: &str) {
        if self.warnings {
            stderr_line(&format!("poolcurl: {message}"));
        }
    }
}

/// Writes one line to stderr; a closed stderr is not worth failing a transfer for.
fn stderr_line(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// What `-v` needs to know about a request beyond the request itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VerboseContext<'a> {
    /// The URL's host, without IPv6 brackets.
    pub(crate) host: &'a str,
    /// The ALPN protocols offered over TLS, as curl lists them.
    pub(crate) alpn_offer: &'a str,
    /// `--http2` on a cleartext URL.
    pub(crate) http2_over_cleartext: bool,
}

/// The `-v` trace on stderr.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verbose {
    /// Whether `-v` was given.
    enabled: bool,
}

impl Verbose {
    /// A trace that prints only if `enabled`.
    pub(crate) fn new(enabled: bool) -> Verbose {
        Verbose { enabled }
    }

    /// `* message`.
    pub(crate) fn info(&self, message: &str) {
        if self.enabled {
            stderr_line(&format!("* {message}"));
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
        let mut trace = String::new();
        let mut line = |text: &str| {
            trace.push_str(text);
            trace.push('\n');
        };
        let protocol = connection.map(pool::ConnectionHandle::protocol);
        if let Some(c) = connection {
            let info = c.info();
            if c.is_reused() {
                line(&format!(
                    "* Re-using existing connection {} with host {} (partition {})",
                    c.id(),
                    cx.host,
                    info.partition()
                ));
            } else {
                let (ip, port) = info
                    .remote_addr()
                    .map_or((String::from("?"), 0), |a| (a.ip().to_string(), a.port()));
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
                            line(&format!(
                                "* Establish HTTP proxy tunnel to {}",
                                info.origin().authority()
                            ));
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
        }
        if cx.http2_over_cleartext {
            line(
                "* --http2 over cleartext: HTTP/2 needs prior knowledge here \
                 (--http2-prior-knowledge); using HTTP/1.1",
            );
        }
        let (method, uri, headers) = request;
        let target = uri.path_and_query().map_or("/", |p| p.as_str());
        let http2 = protocol == Some(pool::Protocol::Http2);
        let version = if http2 { "HTTP/2" } else { "HTTP/1.1" };
        line(&format!("> {method} {target} {version}"));
        if !http2 && !headers.contains_key(HOST) {
            let host = pool::OriginKey::from_uri(uri).map_or_else(
                |_| uri.authority().map_or(String::new(), |a| a.to_string()),
                |origin| origin.authority(),
            );
            line(&format!("> Host: {host}"));
        }
        for (name, value) in headers {
            line(&format!(
                "> {}: {}",
                title_case(name.as_str()),
                String::from_utf8_lossy(value.as_bytes())
            ));
        }
        line(">");
        let head = String::from_utf8_lossy(head);
        for text in head.split("\r\n").take_while(|l| !l.is_empty()) {
            line(&format!("< {text}"));
        }
        line("<");
        let _ = io::stderr().lock().write_all(trace.as_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(version: Version, status: u16, headers: &[(&str, &str)]) -> Parts {
        let mut builder = http::Response::builder().status(status).version(version);
        for (n, v) in headers {
            builder = builder.header(*n, *v);
        }
        builder.body(()).unwrap().into_parts().0
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
