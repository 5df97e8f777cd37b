//! Which part of an HTTP/1 response the client could not read.
//!
//! hyper refuses a response that is not HTTP/1 as it is written (RFC 9112) and says so with one
//! error kind, `is_parse`, plus one finer predicate a client build has (`is_parse_status`;
//! `is_parse_too_large` exists only with hyper's `server` feature, which this crate does not
//! ask for).
//! A caller that reports the failure (curl's exit codes tell a status line it cannot read from a
//! header without a colon) needs the part at fault, so [`Malformed`] names it. hyper exposes the
//! rest of its classification only through each kind's fixed description, so that is what
//! [`of`] reads, in this one place; `tests/tests/h1.rs` sends each malformed response through
//! the pool and checks the part, so a hyper release that rewords a description fails there
//! instead of silently becoming [`Malformed::Other`].
//!
//! What hyper can be told to accept instead of refusing (an HTTP/0.9 reply, spaces before a
//! header's colon, folded header lines, more headers) is set on the
//! [`Builder`](crate::Builder)'s `http1_*` methods; this module only names what was refused.
//! HTTP/2 responses are never malformed in this sense: h2 resets a stream that breaks the
//! protocol ([`Error::is_reset`](crate::Error::is_reset)).

/// The part of an HTTP/1 response the pool could not read
/// ([`Error::malformed`](crate::Error::malformed)). The connection it came on was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Malformed {
    /// The response did not begin with an `HTTP/1.0` or `HTTP/1.1` status line: an HTTP/0.9
    /// reply (a body without a head; see
    /// [`Builder::http09_responses`](crate::Builder::http09_responses)), another version, or
    /// not HTTP at all.
    Version,
    /// The status line's code was not three digits from 100 to 999.
    StatusCode,
    /// A header line was not `name: value` (no colon, a forbidden byte such as NUL, a bad line
    /// ending).
    Header,
    /// `Content-Length` was not a number, or was sent twice with different values.
    ContentLength,
    /// `Transfer-Encoding` was present where the response may not carry one.
    TransferEncoding,
    /// The head was larger than the read buffer
    /// ([`Builder::http1_max_buf_size`](crate::Builder::http1_max_buf_size)) or had more
    /// headers than allowed ([`Builder::http1_max_headers`](crate::Builder::http1_max_headers),
    /// 100 unless set).
    TooLarge,
    /// A parse failure hyper did not describe as one of the above.
    Other,
}

/// The part at fault when `error` is hyper's refusal of a response head; `None` for any other
/// error.
pub(crate) fn of(error: &hyper::Error) -> Option<Malformed> {
    if !error.is_parse() {
        return None;
    }
    if error.is_parse_status() {
        return Some(Malformed::StatusCode);
    }
    // hyper's descriptions of its other parse kinds (`hyper::error::Parse`); its `Display`
    // writes the description alone.
    let part = match error.to_string().as_str() {
        "invalid HTTP version parsed" => Malformed::Version,
        "message head is too large" => Malformed::TooLarge,
        "invalid HTTP header parsed" => Malformed::Header,
        "invalid content-length parsed" => Malformed::ContentLength,
        "invalid transfer-encoding parsed" | "unexpected transfer-encoding parsed" => {
            Malformed::TransferEncoding
        }
        _ => Malformed::Other,
    };
    Some(part)
}
