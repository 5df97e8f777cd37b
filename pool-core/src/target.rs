//! [`RequestTarget`]: the request target to send in place of the one the URI implies.
//!
//! A request's URI says both where it goes (its origin, which picks the cell and the
//! connection) and what it asks for (its path and query, the request target on the wire). A
//! few requests need the second to be something a URL does not say: `OPTIONS *` (RFC 9110
//! section 9.3.7), or a path other than the URL's for a server whose routing a test probes.
//! curl calls this `--request-target`. The override travels as a request extension, so
//! routing, reuse and re-sends still follow the URI, and a request without one pays a single
//! emptiness check of its extensions.
//!
//! [`OmitHost`] is the other thing a URL cannot say: that an HTTP/1 request goes without the
//! `Host` header the pool otherwise adds (curl's `-H 'Host:'`), to see how a server answers
//! one. It travels the same way: a request that carries `Host` pays nothing for it, one
//! without pays a single emptiness check of its extensions.
//!
//! What this module does not do: send a target [`PathAndQuery`] rejects (one that is neither
//! `*` nor starts with `/`: hyper writes the request line from a URI), or change the origin
//! (the URI's authority, or a `Host` header, does that).

use std::fmt;
use std::str::FromStr;

use http::uri::{InvalidUri, PathAndQuery};

/// The request target sent on the wire instead of the URI's path and query, set as a request
/// extension: `request.extensions_mut().insert(RequestTarget::asterisk())`.
///
/// HTTP/1 sends it as the request line's target, verbatim, also through a forward proxy (as
/// curl does: the proxy then receives this target, not the absolute URL); HTTP/2 sends it as
/// `:path`. `Host` / `:authority`, the connection and any re-send are still those of the URI.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestTarget(PathAndQuery);

impl RequestTarget {
    /// A target from a path and query as written.
    pub fn new(target: PathAndQuery) -> RequestTarget {
        RequestTarget(target)
    }

    /// `*`, the asterisk form of `OPTIONS *` (a request about the server, not a resource).
    pub fn asterisk() -> RequestTarget {
        RequestTarget(PathAndQuery::from_static("*"))
    }

    /// The target as it is sent.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The target as a path and query.
    pub fn path_and_query(&self) -> &PathAndQuery {
        &self.0
    }
}

impl FromStr for RequestTarget {
    type Err = InvalidUri;

    /// Parses a target as [`PathAndQuery`] does: `*`, or a path starting with `/` and an
    /// optional query, without spaces or control characters; a `#` ends it.
    fn from_str(text: &str) -> Result<RequestTarget, InvalidUri> {
        text.parse().map(RequestTarget)
    }
}

impl fmt::Display for RequestTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for RequestTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RequestTarget")
            .field(&self.as_str())
            .finish()
    }
}

/// Marks an HTTP/1 request to go without a `Host` header, set as a request extension:
/// `request.extensions_mut().insert(OmitHost)`. The pool otherwise adds the origin's `Host` to
/// every HTTP/1 request that has none; a request marked so is sent as it is. HTTP/1.1 requires
/// `Host` (RFC 9112 section 3.2), so a server is expected to answer 400: this exists for tools
/// that probe that answer, as curl's `-H 'Host:'` does. A `Host` header the request carries is
/// sent whatever this says. HTTP/2 always carries the URI's authority as `:authority`, which
/// this does not change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OmitHost;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_kept_as_written() {
        assert_eq!(RequestTarget::asterisk().as_str(), "*");
        for text in ["*", "/p?q", "/a%20b", "/..//x"] {
            let target: RequestTarget = text.parse().expect(text);
            assert_eq!(target.as_str(), text);
            assert_eq!(target.to_string(), text);
        }
        for bad in ["/a b", "foo?x", ""] {
            assert!(bad.parse::<RequestTarget>().is_err(), "{bad:?}");
        }
    }
}
