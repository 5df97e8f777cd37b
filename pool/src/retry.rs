//! Which requests the pool sends again on its own.
//!
//! The pool re-sends a request only when the server provably did not process it, and only if
//! the request can be sent again without buffering what the caller streams: an empty body, or a
//! body the pool already holds as one chunk (`Full`, `Bytes`, `String`, `Vec<u8>`, `&'static
//! str`). A streaming body is never replayed; its request fails with an error whose
//! [`is_retryable`](crate::Error::is_retryable) says the server did not process it, so the
//! caller can decide.
//!
//! The proofs, each a [`ResendReason`]:
//!
//! | reason | what happened | methods |
//! |---|---|---|
//! | `unsent` | hyper handed the request back unsent from a reused connection | any |
//! | `go_away` | HTTP/2 `GOAWAY` covered the stream (RFC 9113 §6.8) | any |
//! | `refused_stream` | HTTP/2 `REFUSED_STREAM` (RFC 9113 §8.7), or a request that never became a stream on a connection whose peer allows none (`SETTINGS_MAX_CONCURRENT_STREAMS` 0) | any |
//! | `closed_before_response` | a reused HTTP/1 connection closed or reset before any byte of the response; an HTTP/2 connection the server had begun to serve (it had sent something, its SETTINGS at least) closed or reset under the stream before its response began, with no `GOAWAY` or `RST_STREAM` about it, or ended by h2 itself (its own `GOAWAY`) on the server's protocol error, such as Traffic Server's second `GOAWAY` raising the last stream id | idempotent only (RFC 9110 §9.2.2), or with `Idempotency-Key` |
//! | `enhance_your_calm` | the server reset the HTTP/2 stream with `ENHANCE_YOUR_CALM` before its response began: it is shedding load it never announced as a limit (Node.js refuses new streams so while its session's memory is over `maxSessionMemory`); the connection opens fewer streams from then on (`pool_h2`'s calm cap) | idempotent only, as above: the code is no proof (RFC 9113 §8.7) |
//!
//! The last two are not proofs. `closed_before_response` follows Go's `Transport`: the server closing an idle keep-alive connection
//! while the request was on the wire looks exactly like the server crashing mid-request, so
//! only requests that are safe to repeat are repeated. HTTP/2 has the same race when a server
//! closes abruptly: nginx, shutting a worker down on reload, closes with the client's newest
//! frames unread, and its kernel's reset can discard the `GOAWAY` and responses it had not
//! sent yet, so streams it may or may not have processed see only the reset; Apache httpd's
//! graceful restart closes new connections so too, after its SETTINGS, under every stream the
//! pool had sent on them. A fresh connection that fails before it served anything is never
//! re-sent: that says something about the origin, not about a stale connection. Over HTTP/1
//! that is a connection that had not delivered a response; over HTTP/2, one on which the server
//! had not sent a byte, the same answer for all the streams sent on it at once.
//!
//! The budget, and the re-sends it does not count, are in [`RetryPolicy`]'s docs.
//!
//! A re-send never goes back to the connection that failed it (that HTTP/1 connection is
//! closed, that HTTP/2 generation retired), except after `REFUSED_STREAM` on a generation that
//! still accepts streams. Re-sends share the first attempt's read timeout, and the waits
//! between them (the pace, in [`RetryPolicy`]'s docs) count against it.

use std::time::Duration;

use pool_core::ResendReason;

/// Which requests the pool sends again on its own, and how many times each.
///
/// **The budget.** [`max_resends`](Self::max_resends) bounds the re-sends of one request,
/// with two exceptions. A re-send after an HTTP/1 connection that had served a response before
/// was found closed (`unsent`, or `closed_before_response`) is not counted. That race closes
/// the connection for good, so each such re-send spends one stale connection that earlier
/// delivered a whole response: the pool can never make more of them than it had responses,
/// and they end when the stale connections do. Counted, they failed requests that met four
/// stale connections in a row: about 1 request in 40,000 behind a proxy that closes every
/// connection after one response without saying so (tinyproxy does), and any request of a busy
/// origin that met four of the idle connections an upstream's restart closed at once. Go's
/// `Transport` and hyper-util's legacy client do not count them either. Nor is a re-send after
/// an HTTP/2 `ENHANCE_YOUR_CALM` refusal that lowered its connection's stream cap
/// (`pool_h2`'s calm cap): the pool had opened more streams than the server then took (its
/// first burst, a probe after the cap rose, streams opened just before the server's memory
/// filled) and backs off, so the refusal is the pool's doing, not the request's. Counted, the
/// request waiting at the head of the line, often one refused before, took the next stream
/// and met the next refusal: one GET in a few thousand against Node.js spent its budget so.
/// A refusal at a cap of one stream, which teaches nothing, is counted; the uncounted ones are
/// bounded per request by `max_resends` again. Other HTTP/2 re-sends are always counted: a
/// stream on a reused connection need not follow a response, and one lost connection re-sends
/// all its streams at once. With `max_resends(0)` nothing is re-sent.
///
/// **The pace.** A request's first counted re-send goes at once: one lost connection or one
/// `GOAWAY` is the common case, and the next connection almost always serves. Each later
/// counted re-send of the same request first waits: [`backoff`](Self::backoff) before the
/// second, twice that before the third, and so on, doubling at most six times. A request that
/// lost a second connection is meeting a server in the middle of a change, and sending again
/// at once spends the budget inside it: Apache httpd's graceful restart closes the connections
/// it takes during the first few milliseconds of the restart, under every stream sent on
/// them; with immediate re-sends, the streams of one connection could lose four connections in
/// a row and fail (18 requests in one run of the interop suite). A server refusing streams
/// (`REFUSED_STREAM`) again is overloaded, and the same wait lets it recover. The waits have no
/// jitter: what waits together is the streams of one lost HTTP/2 connection, which should go
/// together on the next one. A wait counts against the request's read timeout. Re-sends that
/// the budget does not count (HTTP/1's keep-alive race, a refusal that lowered a calm cap)
/// never wait.
///
/// **The place in line.** A re-sent request that has to wait for a connection keeps the place
/// it took when it first came: it is served before every request that came after it. Sent to
/// the back, the streams a server refuses once it has served N requests on a connection
/// (`GOAWAY`) met the same fate on the next one, whose first N went to newer requests.
///
/// ```
/// use pool::{ConnectionPool, RetryPolicy};
///
/// // An SDK that retries above the pool keeps only hyper's unsent hand-back:
/// let pool = ConnectionPool::builder()
///     .retry_policy(RetryPolicy::unsent_only())
///     .build()?;
/// # Ok::<(), pool::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    scope: Scope,
    max_resends: u32,
    backoff: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Never,
    UnsentOnly,
    Unprocessed,
}

/// How many times one request is sent again by default.
pub const DEFAULT_MAX_RESENDS: u32 = 3;

/// How long a request waits before its second counted re-send, by default (see the pace in
/// [`RetryPolicy`]'s docs).
pub const DEFAULT_BACKOFF: Duration = Duration::from_millis(50);

/// How many times the wait between a request's counted re-sends doubles at most.
const MAX_DOUBLINGS: u32 = 6;

impl RetryPolicy {
    /// The default: re-send on every proof that the server did not process the request
    /// (`unsent`, `go_away`, `refused_stream`, and `closed_before_response` and
    /// `enhance_your_calm` for idempotent requests), at most [`DEFAULT_MAX_RESENDS`] times per request, not counting re-sends after
    /// HTTP/1's keep-alive race (see [`RetryPolicy`]).
    pub const fn unprocessed() -> RetryPolicy {
        RetryPolicy {
            scope: Scope::Unprocessed,
            max_resends: DEFAULT_MAX_RESENDS,
            backoff: DEFAULT_BACKOFF,
        }
    }

    /// Only the case hyper proves by handing the request back unsent from a reused connection
    /// (the pool's behaviour before the other proofs were added), for callers that retry
    /// above the pool, such as an SDK with its own retry strategy. The other proofs still mark
    /// the error [`is_retryable`](crate::Error::is_retryable).
    pub const fn unsent_only() -> RetryPolicy {
        RetryPolicy {
            scope: Scope::UnsentOnly,
            max_resends: DEFAULT_MAX_RESENDS,
            backoff: DEFAULT_BACKOFF,
        }
    }

    /// No transparent re-send at all: every failure reaches the caller, still marked
    /// [`is_retryable`](crate::Error::is_retryable) when the server provably did not process
    /// the request.
    pub const fn never() -> RetryPolicy {
        RetryPolicy {
            scope: Scope::Never,
            max_resends: 0,
            backoff: DEFAULT_BACKOFF,
        }
    }

    /// At most `n` re-sends per request, not counting re-sends after HTTP/1's keep-alive race
    /// (see [`RetryPolicy`]); `0` is the same as [`never`](Self::never).
    pub const fn max_resends(mut self, n: u32) -> RetryPolicy {
        self.max_resends = n;
        self
    }

    /// Sets the wait before a request's second counted re-send (each later one waits twice as
    /// long as the one before; see the pace in the type's docs). [`Duration::ZERO`] sends every
    /// re-send at once. Default: [`DEFAULT_BACKOFF`].
    pub const fn backoff(mut self, first: Duration) -> RetryPolicy {
        self.backoff = first;
        self
    }

    /// The wait before a request's `nth` counted re-send (from 1): none before the first.
    pub(crate) fn wait_before(&self, nth: u32) -> Option<Duration> {
        let doublings = nth.checked_sub(2)?.min(MAX_DOUBLINGS);
        let wait = self.backoff.saturating_mul(1 << doublings);
        (!wait.is_zero()).then_some(wait)
    }

    /// Whether this policy re-sends for `reason` at all.
    pub(crate) fn allows(&self, reason: ResendReason) -> bool {
        match self.scope {
            Scope::Never => false,
            Scope::UnsentOnly => reason == ResendReason::Unsent,
            Scope::Unprocessed => true,
        }
    }

    /// Whether a request that was sent again `done` times may go again.
    pub(crate) fn has_budget(&self, done: u32) -> bool {
        done < self.max_resends
    }

    /// Whether the pool should keep a copy of a request so it can send it again after hyper
    /// consumed it (every proof but `unsent` needs one).
    pub(crate) fn keeps_copies(&self) -> bool {
        self.scope == Scope::Unprocessed && self.max_resends > 0
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::unprocessed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_policy_allows_its_proofs_within_its_budget() {
        let default = RetryPolicy::default();
        assert_eq!(default, RetryPolicy::unprocessed());
        assert!(ResendReason::ALL.iter().all(|r| default.allows(*r)));
        assert!(default.keeps_copies());
        assert!(default.has_budget(2) && !default.has_budget(3));

        let sdk = RetryPolicy::unsent_only();
        assert!(sdk.allows(ResendReason::Unsent));
        assert!(!sdk.allows(ResendReason::GoAway) && !sdk.allows(ResendReason::RefusedStream));
        assert!(!sdk.allows(ResendReason::ClosedBeforeResponse));
        assert!(
            !sdk.keeps_copies(),
            "hyper hands unsent requests back: no copy needed"
        );

        let never = RetryPolicy::never();
        assert!(ResendReason::ALL.iter().all(|r| !never.allows(*r)));
        assert!(!never.has_budget(0));

        assert_eq!(
            default.wait_before(1),
            None,
            "the first re-send goes at once"
        );
        assert_eq!(default.wait_before(2), Some(DEFAULT_BACKOFF));
        assert_eq!(default.wait_before(3), Some(DEFAULT_BACKOFF * 2));

        let once = RetryPolicy::unprocessed().max_resends(1);
        assert!(once.has_budget(0) && !once.has_budget(1));
        assert!(!RetryPolicy::unprocessed().max_resends(0).keeps_copies());
    }

    #[test]
    fn the_wait_doubles_for_each_later_re_send_up_to_its_cap() {
        let policy = RetryPolicy::unprocessed()
            .max_resends(20)
            .backoff(Duration::from_millis(10));
        let waits: Vec<_> = (1..=10).map(|n| policy.wait_before(n)).collect();
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(
            waits,
            [
                None,
                ms(10),
                ms(20),
                ms(40),
                ms(80),
                ms(160),
                ms(320),
                ms(640),
                ms(640),
                ms(640)
            ]
        );
        let at_once = policy.backoff(Duration::ZERO);
        assert!((1..=10).all(|n| at_once.wait_before(n).is_none()));
    }
}
