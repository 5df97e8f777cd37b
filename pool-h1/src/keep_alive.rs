//! The server's `Keep-Alive: timeout=N` hint: how long it keeps an idle connection open.
//!
//! Servers close idle HTTP/1 connections on their own clock (Node.js after 5 s, nginx at its
//! `keepalive_timeout`), often well before a client's idle timeout. A request sent just as
//! the server closes fails, and unless it is safe to repeat the pool cannot send it again.
//! Many servers announce their limit in a `Keep-Alive` response header (RFC 2068 §19.7.1,
//! kept by RFC 9112 as a connection option); the pool reads it from each connection's first
//! response (servers announce one timeout for all their connections, and a header lookup on
//! every response would cost every request) and retires the connection a margin before the
//! server would: a second, or half the limit when that is shorter, so a 5 s hint keeps a
//! connection idle for 4 s and a 1 s hint for 0.5 s; `timeout=0` keeps it not at all.
//!
//! What it does not do: act on `max=N` (the requests left on the connection), or read the
//! header on HTTP/2, which forbids it.

use std::time::Duration;

use http::{HeaderMap, HeaderName};

/// `Keep-Alive`, which `http` has no constant for.
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");

/// How long a connection whose response carried `headers` may stay idle: the server's
/// `Keep-Alive` timeout less the margin; `None` when no such header says.
pub(crate) fn idle_limit(headers: &HeaderMap) -> Option<Duration> {
    let seconds = headers
        .get(KEEP_ALIVE)?
        .to_str()
        .ok()?
        .split([',', ';'])
        .find_map(|param| {
            let (name, value) = param.split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("timeout")
                .then(|| value.trim().trim_matches('"').parse::<u64>().ok())?
        })?;
    Some(pool_core::connection::idle_limit_before(
        Duration::from_secs(seconds),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn limit(value: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(KEEP_ALIVE, HeaderValue::from_static(value));
        idle_limit(&headers)
    }

    #[test]
    fn the_timeout_less_a_second_or_half_of_it() {
        assert_eq!(limit("timeout=5, max=1000"), Some(Duration::from_secs(4)));
        assert_eq!(limit("max=9; Timeout = 2"), Some(Duration::from_secs(1)));
        assert_eq!(limit("timeout=\"60\""), Some(Duration::from_secs(59)));
        assert_eq!(limit("timeout=1"), Some(Duration::from_millis(500)));
        assert_eq!(limit("timeout=0"), Some(Duration::ZERO));
        assert_eq!(idle_limit(&HeaderMap::new()), None);
        for unusable in ["max=5", "timeout=soon", "timeout=-1", "timeout", ""] {
            assert_eq!(limit(unusable), None, "{unusable:?}");
        }
    }
}
