//! The builder's lifecycle settings: timeouts, connection lifetime and the idle cap.
//!
//! How they fit together is documented on [`Builder`] itself ("Timeouts and lifetimes"), where
//! users read it.

use std::time::Duration;

use super::{BuildError, Builder};
use crate::lifetime::Lifetime;

impl Builder {
    /// How long an idle connection is kept; `None` keeps idle connections until the peer or
    /// the pool closes them. The default is [`DEFAULT_IDLE_TIMEOUT`](crate::DEFAULT_IDLE_TIMEOUT) (90 s).
    ///
    /// An HTTP/2 connection's idle time restarts with every request dispatched on it, and one
    /// with a stream still in use at its deadline (a long download, an event stream) is not
    /// idle, as in Go's transport: it closes one to two timeouts after that stream ends (the
    /// pool checks at deadlines, not at every stream's end). An
    /// HTTP/1 connection whose server announced a shorter keep-alive timeout (`Keep-Alive:
    /// timeout=N` on its first response) is kept idle for N less a second (or half of N, when
    /// shorter) instead, so that the pool retires it before the server closes it.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Keeps at most `max` idle HTTP/1 connections per origin in each partition, as
    /// hyper-util's and reqwest's `pool_max_idle_per_host` do in their one pool. A connection
    /// that finishes an exchange with nobody waiting for it closes
    /// ([`CloseReason::IdleLimit`](crate::CloseReason::IdleLimit)) when `max` are idle already;
    /// a waiting request still takes it. `0` keeps none: a connection serves requests already
    /// waiting when it comes back, and closes otherwise. The default keeps every one, until
    /// the [`idle_timeout`](Self::idle_timeout).
    ///
    /// HTTP/2 connections are not counted: a partition keeps one per origin (or as many as
    /// its stream limit needs) until the idle timeout. [`Client::preconnect`] warms no more
    /// than this many per partition for long: its connections go to the idle set like any.
    ///
    /// [`Client::preconnect`]: crate::Client::preconnect
    pub fn max_idle_per_host(mut self, max: usize) -> Self {
        self.max_idle_per_host = max;
        self
    }

    /// Keeps at most `max` idle HTTP/1 connections in the whole pool, across every origin and
    /// every partition, as Go's `Transport.MaxIdleConns` does. When a connection going idle
    /// makes one more than `max`, the connection idle longest (since its last exchange ended),
    /// wherever it is, closes ([`CloseReason::IdleLimit`](crate::CloseReason::IdleLimit)).
    /// A crawler or a gateway that meets many origins keeps its idle sockets (and their file
    /// descriptors) bounded this way while its busy origins keep theirs, which a per-origin
    /// cap ([`max_idle_per_host`](Self::max_idle_per_host)) cannot do.
    ///
    /// The default is no cap: idle connections end with the
    /// [`idle_timeout`](Self::idle_timeout). HTTP/2 connections are not counted. The cap costs
    /// every connection going idle one lock shared by all partitions (a pool without it pays
    /// nothing); a request waiting for a connection still takes a returning one first, as
    /// with `max_idle_per_host`. `0` keeps no idle HTTP/1 connection at all.
    /// [`Client::preconnect`] warms connections into the idle set like any, so a warm-up past
    /// the cap closes the longest idle ones, its own included.
    ///
    /// [`Client::preconnect`]: crate::Client::preconnect
    pub fn max_idle_connections(mut self, max: usize) -> Self {
        self.max_idle_connections = Some(max);
        self
    }

    /// The mutable form of [`idle_timeout`](Self::idle_timeout), keeping all three states:
    /// `None` restores the default, `Some(None)` disables the timeout, `Some(Some(d))` sets it.
    pub fn set_idle_timeout(&mut self, timeout: Option<Option<Duration>>) -> &mut Self {
        self.idle_timeout = timeout;
        self
    }

    /// The default connect timeout of the pool's clients (see [`Client::connect_timeout`]).
    ///
    /// [`Client::connect_timeout`]: crate::Client::connect_timeout
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The default read timeout of the pool's clients (see [`Client::read_timeout`]).
    ///
    /// [`Client::read_timeout`]: crate::Client::read_timeout
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// The default pool timeout of this pool's clients (see [`Client::pool_timeout`]): how long
    /// a request may wait for a connection or permit. `None` (the default) waits as long as it
    /// takes.
    ///
    /// [`Client::pool_timeout`]: crate::Client::pool_timeout
    pub fn pool_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.pool_timeout = timeout;
        self
    }

    /// The default body idle timeout of the pool's clients (see
    /// [`Client::body_idle_timeout`]): how long a response body may go without a frame.
    /// `None` (the default) waits as long as the server takes.
    ///
    /// [`Client::body_idle_timeout`]: crate::Client::body_idle_timeout
    pub fn body_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.body_idle_timeout = timeout;
        self
    }

    /// How long an HTTP/1 request that carries `Expect: 100-continue` (or asks for it with
    /// [`ExpectContinue`](crate::ExpectContinue)) holds its body back for the server's
    /// `100 Continue`; 1 second by default, as curl and Go's `DefaultTransport` wait.
    ///
    /// The body goes when `100 Continue` arrives or the wait runs out, whichever is first. A
    /// final response that comes first (`413`, `401`, `417`...) is the request's response: the
    /// body is never sent, and the connection retires once that response is read (its framing
    /// is broken). `None` sends the body at once, as hyper does, whatever the header says.
    /// HTTP/2 requests never wait. A request that sets its own
    /// `hyper::ext::on_informational` hook is not held back (the pool's hook would replace
    /// it): use [`on_informational`](crate::on_informational) to see its 1xx responses.
    pub fn expect_continue_timeout(mut self, wait: Option<Duration>) -> Self {
        self.expect_continue = wait;
        self
    }

    /// Whether a request body still goes once a response of 300 or above came before all of it
    /// was sent; `false` by default (libcurl's `CURLOPT_KEEP_SENDING_ON_ERROR`).
    ///
    /// By default the pool stops such a body, as curl does (and Go's HTTP/2 transport): no
    /// further byte is sent and the response is read whole. After it an HTTP/1 connection
    /// closes, since the request's framing is broken, and an HTTP/2 stream is reset with
    /// `CANCEL` (its connection serves on). The response carries
    /// [`BodyStopped`](crate::BodyStopped) with the bytes that went. A body known to be at most
    /// 256 KiB goes with its head and is never stopped. `true` sends every body to its end, as
    /// hyper does (over HTTP/2 until the server resets the stream), and keeps an HTTP/1
    /// connection when the server read it all: for a server that answers 300 or above and
    /// then reads the rest of the body before it ends its response, which would otherwise wait
    /// for a body that never comes (the heuristic is curl's and Go's, and shares this limit).
    pub fn keep_sending_on_error(mut self, keep_sending: bool) -> Self {
        self.keep_sending_on_error = keep_sending;
        self
    }

    /// The maximum age of a connection; `None` (the default) keeps a connection as long as it
    /// is used and healthy.
    ///
    /// An HTTP/1 connection past its age retires at its next return instead of serving
    /// another request, or while idle (maintenance closes it, no scan on checkout). An HTTP/2
    /// connection past its age keeps accepting while a replacement is established, then
    /// drains: no request waits for the replacement when the origin is reachable. A bounded
    /// origin renews HTTP/2 only when a permit is free; otherwise the old connection retires
    /// first. Each connection's age limit is this lifetime less a random jitter (see
    /// [`max_connection_lifetime_jitter`](Self::max_connection_lifetime_jitter)), so
    /// connections opened together do not all reconnect together. New connections resolve
    /// the host again, which is how a pool follows DNS changes. Closes report
    /// `CloseReason::MaxLifetime`; the replacement's `ConnectionInfo::open_reason` is
    /// `LifetimeRenewal`.
    pub fn max_connection_lifetime(mut self, lifetime: Option<Duration>) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The jitter of the maximum lifetime: each connection retires up to this much earlier
    /// than [`max_connection_lifetime`](Self::max_connection_lifetime), drawn uniformly per
    /// connection. The default is a tenth of the lifetime; `Duration::ZERO` disables it.
    pub fn max_connection_lifetime_jitter(mut self, jitter: Duration) -> Self {
        self.lifetime_jitter = Some(jitter);
        self
    }

    /// The lifetime policy, validated.
    pub(super) fn validate_lifetime(&self) -> Result<Option<Lifetime>, BuildError> {
        let Some(max) = self.lifetime else {
            return Ok(None);
        };
        if max.is_zero() {
            return Err(BuildError::new(
                "max_connection_lifetime",
                format_args!("{max:?}"),
                "a connection needs a lifetime above zero (use None for no limit)",
            ));
        }
        let mut lifetime = Lifetime::with_default_jitter(max);
        if let Some(jitter) = self.lifetime_jitter {
            if jitter > max {
                return Err(BuildError::new(
                    "max_connection_lifetime_jitter",
                    format_args!("{jitter:?}"),
                    format!("the jitter cannot exceed the lifetime ({max:?})"),
                ));
            }
            lifetime.jitter = jitter;
        }
        Ok(Some(lifetime))
    }
}
