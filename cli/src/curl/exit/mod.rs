//! Errors as curl reports them: an exit code and a one-line message, printed as
//! `poolcurl: (CODE) message`.
//!
//! [`CurlError`] is the error and its constructors; [`classify()`] (in `classify.rs`) maps a
//! [`pool::Error`] to curl's code by the pool's predicates (never by message text) and takes
//! details (the rejected certificate's problem, the TLS alert) from the error's `source()`
//! chain.
//!
//! | code | meaning |
//! |------|---------|
//! | 1  | unsupported protocol (`ftp://`); a reply that is not HTTP/1 (HTTP/0.9 without `--http0.9`) or has no valid status code |
//! | 3  | malformed URL |
//! | 6  | could not resolve the host |
//! | 7  | could not connect |
//! | 8  | a response header line, `Content-Length` or `Transfer-Encoding` that breaks HTTP/1 |
//! | 18 | the body ended before its announced length |
//! | 22 | HTTP status >= 400 with `-f` / `--fail-with-body` |
//! | 23 | writing the output failed |
//! | 26 | reading a `@file`, `-T` file, `-F` file or `-K` file failed |
//! | 28 | connect timeout, read timeout or `-m`; a connect the kernel gave up on (`ETIMEDOUT`) |
//! | 33 | `-C` / `-r`: the server ignored the range |
//! | 35 | TLS handshake failed |
//! | 45 | binding to `--interface` (a device or a local address), or to a `--local-port`, failed |
//! | 47 | too many redirects |
//! | 49 | a malformed `--resolve` entry |
//! | 52 | the server closed without any response (an HTTP/1.1 server answering `--http2-prior-knowledge` too) |
//! | 58 | the `--cert` / `--key` files could not be used |
//! | 56 | receiving failed (reset, timed out by the kernel, broken body, HTTP/2 error, a refused HTTP/2 stream, a response head over the size limit) |
//! | 60 | the server's certificate was rejected |
//! | 61 | `--compressed`: the body did not decode |
//! | 63 | `--max-filesize`: the response body is larger |
//! | 77 | the `--cacert` file could not be read or used |
//! | 82 | the `--crlfile` could not be read or used |
//! | 91 | `--cert-status`: the server stapled no current, good status for its certificate |
//! | 92 | the server reset the HTTP/2 stream (`RST_STREAM`) |

use std::fmt;
use std::time::Duration;

mod classify;

pub(crate) use classify::{Attempt, FailedStep, classify, failed_step, tls_peer};

/// A failed transfer or setup step, as curl reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CurlError {
    code: u8,
    message: String,
    /// A usage error (exit 2): printed as `poolcurl: message` and the `--help` hint even under
    /// `-s`, as curl prints a badly used option.
    usage: bool,
    /// What curl prints before the error's line (muted by `-s`).
    note: Option<Note>,
    /// curl prints no line of its own for it (its note says it all).
    unreported: bool,
}

/// A line curl prints before an error's own, unless `-s`: what went wrong in its words, where
/// the error's line is libcurl's generic text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Note {
    /// curl's `warnf`: `Warning: ...`.
    Warning(String),
    /// curl's `errorf`: `poolcurl: ...`, without a code.
    Error(String),
}

impl CurlError {
    /// An error with curl's exit `code` and `message`.
    pub(crate) fn new(code: u8, message: impl Into<String>) -> CurlError {
        CurlError {
            code,
            message: message.into(),
            usage: false,
            note: None,
            unreported: false,
        }
    }

    /// Exit 2 for an option used in a way curl refuses while it reads the command line
    /// (`option -F: is badly used here`), after curl's `warning` if it gives one.
    pub(crate) fn usage(message: impl Into<String>, warning: Option<String>) -> CurlError {
        CurlError {
            code: 2,
            message: message.into(),
            usage: true,
            note: warning.map(Note::Warning),
            unreported: false,
        }
    }

    /// This error, after curl's `note`.
    pub(crate) fn with_note(mut self, note: Note) -> CurlError {
        self.note = Some(note);
        self
    }

    /// Whether this is a usage error ([`usage`](Self::usage)).
    pub(crate) fn is_usage(&self) -> bool {
        self.usage
    }

    /// The warning curl prints before this error, if any.
    #[cfg(test)]
    pub(crate) fn warning(&self) -> Option<&str> {
        match &self.note {
            Some(Note::Warning(text)) => Some(text),
            _ => None,
        }
    }

    /// This error without its `poolcurl: (CODE) ...` line, as curl's errors that its warning
    /// explains (its `synthetic_error`).
    pub(crate) fn unreported(mut self) -> CurlError {
        self.unreported = true;
        self
    }

    /// Whether the error's own line is left out ([`unreported`](Self::unreported)).
    pub(crate) fn is_unreported(&self) -> bool {
        self.unreported
    }

    /// What curl prints before this error's line, if anything.
    pub(crate) fn note(&self) -> Option<&Note> {
        self.note.as_ref()
    }

    /// The process exit code curl uses for this error.
    pub(crate) fn code(&self) -> u8 {
        self.code
    }

    /// The message after `(CODE)`.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// Exit 1: a scheme other than `http` or `https`.
    pub(crate) fn unsupported_protocol(scheme: &str) -> CurlError {
        CurlError::new(
            1,
            format!("Protocol \"{scheme}\" not supported or disabled in libcurl"),
        )
    }

    /// Exit 3: a URL that does not parse (or has no host), in curl 7.88's words.
    pub(crate) fn malformed_url() -> CurlError {
        CurlError::new(3, "URL using bad/illegal format or missing URL")
    }

    /// Exit 22: `-f` and a status of 400 or more.
    pub(crate) fn http_error(status: u16) -> CurlError {
        CurlError::new(22, format!("The requested URL returned error: {status}"))
    }

    /// Exit 23: the output could not be written.
    pub(crate) fn write_failed(detail: impl fmt::Display) -> CurlError {
        CurlError::new(
            23,
            format!("Failure writing output to destination: {detail}"),
        )
    }

    /// Exit 26: a `@file` could not be read.
    pub(crate) fn read_failed(path: &str, error: &std::io::Error) -> CurlError {
        CurlError::new(
            26,
            format!("Failed to open/read local data from file {path:?}: {error}"),
        )
    }

    /// Exit 26 as curl says it while it reads its command line: a file given to `flag` opened
    /// but could not be read (`option --data-binary: error encountered when reading a file`),
    /// with the `--help` hint even under `-s`.
    pub(crate) fn option_read_failed(flag: &str) -> CurlError {
        CurlError {
            code: 26,
            usage: true,
            ..CurlError::new(
                26,
                format!("option {flag}: error encountered when reading a file"),
            )
        }
    }

    /// Exit 28: a name was still being resolved when its time ran out (`-m`, or
    /// `--connect-timeout`).
    pub(crate) fn resolve_timeout(elapsed: Duration) -> CurlError {
        let ms = elapsed.as_millis();
        CurlError::new(28, format!("Resolving timed out after {ms} milliseconds"))
    }

    /// Exit 28: the connection was still being made when its time ran out (`-m`, or
    /// `--connect-timeout` in a step without words of its own).
    pub(crate) fn connection_timeout(elapsed: Duration) -> CurlError {
        let ms = elapsed.as_millis();
        CurlError::new(28, format!("Connection timed out after {ms} milliseconds"))
    }

    /// Exit 28 for a transfer whose `-m` ran out after `elapsed`, in curl's words for what
    /// its request was waiting for (`stage`, the pool's [`pool::Progress`] of it): a name
    /// being resolved, a connection being made for it, else the operation, with the
    /// `received` bytes of the body out of the `announced` length.
    ///
    /// A request that waits for a connection another request's establishment is making
    /// ([`pool::RequestStage::Joined`]: a previous transfer's that `-m` ended, or a parallel
    /// one's HTTP/2 connection being negotiated) reads as curl's transfer does, which makes a
    /// connection of its own: `Connection timed out`. Except under `-Z` (`pending`, the
    /// transfer's host): curl 7.88 holds a parallel transfer to a host another transfer is
    /// connecting to until that connection stands, and when `-m` ends it there its connect
    /// starts with no time left and says so as a lookup that timed out after 0 ms.
    pub(crate) fn time_ran_out(
        stage: pool::RequestStage,
        pending: Option<&str>,
        elapsed: Duration,
        (received, announced): (u64, Option<u64>),
    ) -> CurlError {
        use pool::{ConnectStep, RequestStage};
        match (stage, pending) {
            (RequestStage::Connecting(Some(ConnectStep::Resolve)), _) => {
                CurlError::resolve_timeout(elapsed)
            }
            (RequestStage::Joined, Some(host)) => CurlError::new(
                28,
                format!("Failed to resolve host '{host}' with timeout after 0 ms"),
            ),
            (RequestStage::Connecting(_) | RequestStage::Joined, _) => {
                CurlError::connection_timeout(elapsed)
            }
            _ => CurlError::operation_timeout(elapsed, received, announced),
        }
    }

    /// Exit 28: `-m` elapsed after the connection was made.
    pub(crate) fn operation_timeout(
        elapsed: Duration,
        received: u64,
        announced: Option<u64>,
    ) -> CurlError {
        let ms = elapsed.as_millis();
        CurlError::new(
            28,
            match announced {
                Some(total) => format!(
                    "Operation timed out after {ms} milliseconds with {received} out of {total} \
                     bytes received"
                ),
                None => {
                    format!(
                        "Operation timed out after {ms} milliseconds with {received} bytes received"
                    )
                }
            },
        )
    }

    /// Exit 47: `-L` met more redirects than `--max-redirs` allows.
    pub(crate) fn too_many_redirects(max: u32) -> CurlError {
        CurlError::new(47, format!("Maximum ({max}) redirects followed"))
    }

    /// Exit 33: `-C` or `-r` asked for a range and the server sent the whole resource.
    pub(crate) fn range_ignored() -> CurlError {
        CurlError::new(
            33,
            "HTTP server doesn't seem to support byte ranges. Cannot resume.",
        )
    }

    /// Exit 49: a `--resolve` entry that does not parse.
    pub(crate) fn bad_resolve(message: impl Into<String>) -> CurlError {
        CurlError::new(49, message)
    }

    /// Exit 61: `--compressed` and a body that does not decode.
    pub(crate) fn bad_content_encoding(detail: impl fmt::Display) -> CurlError {
        CurlError::new(
            61,
            format!("Error while processing content unencoding: {detail}"),
        )
    }

    /// Exit 63: the response announced (or delivered) more body than `--max-filesize` allows.
    pub(crate) fn file_too_large() -> CurlError {
        CurlError::new(63, "Maximum file size exceeded")
    }

    /// Exit 82: the `--crlfile` could not be read or holds no usable CRL.
    pub(crate) fn crl_file(path: &str, detail: impl fmt::Display) -> CurlError {
        CurlError::new(82, format!("error loading CRL file: {path}: {detail}"))
    }

    /// Exit 77: the `--cacert` file (or a `--capath` file) could not be read or holds no
    /// usable certificate.
    pub(crate) fn ca_file(path: &str, detail: impl fmt::Display) -> CurlError {
        CurlError::new(
            77,
            format!("error setting certificate file: {path}: {detail}"),
        )
    }
}

/// `error` as C's `strerror` words it: Rust's text without its ` (os error N)`.
pub(crate) fn strerror(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if error.raw_os_error().is_some() => text[..at].to_owned(),
        _ => text,
    }
}

impl fmt::Display for CurlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}) {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_code_then_message() {
        assert_eq!(
            CurlError::http_error(404).to_string(),
            "(22) The requested URL returned error: 404"
        );
        assert_eq!(
            CurlError::too_many_redirects(2).to_string(),
            "(47) Maximum (2) redirects followed"
        );
        assert_eq!(
            CurlError::operation_timeout(Duration::from_millis(1500), 7, None).message(),
            "Operation timed out after 1500 milliseconds with 7 bytes received"
        );
        assert_eq!(
            CurlError::operation_timeout(Duration::from_millis(1500), 7, Some(100)).message(),
            "Operation timed out after 1500 milliseconds with 7 out of 100 bytes received"
        );
    }

    #[test]
    fn max_time_names_the_stage_the_request_was_in() {
        use pool::{ConnectStep, RequestStage};
        let after = Duration::from_millis(1000);
        let words = |stage, pending| CurlError::time_ran_out(stage, pending, after, (3, None));
        let resolving = RequestStage::Connecting(Some(ConnectStep::Resolve));
        for pending in [None, Some("h.test")] {
            assert_eq!(
                words(resolving, pending).message(),
                "Resolving timed out after 1000 milliseconds"
            );
            for step in [None, Some(ConnectStep::Dial), Some(ConnectStep::Tls)] {
                assert_eq!(
                    words(RequestStage::Connecting(step), pending).message(),
                    "Connection timed out after 1000 milliseconds"
                );
            }
            assert_eq!(
                words(RequestStage::Exchange, pending).message(),
                "Operation timed out after 1000 milliseconds with 3 bytes received"
            );
        }
        for pending in [None, Some("h.test")] {
            assert_eq!(
                words(RequestStage::Waiting, pending).message(),
                "Operation timed out after 1000 milliseconds with 3 bytes received"
            );
        }
        assert_eq!(
            words(RequestStage::Joined, None).message(),
            "Connection timed out after 1000 milliseconds"
        );
        let pending = words(RequestStage::Joined, Some("h.test"));
        assert_eq!(
            pending.message(),
            "Failed to resolve host 'h.test' with timeout after 0 ms"
        );
        assert_eq!(pending.code(), 28);
    }
}
