//! Why a connection stopped accepting work.

use std::fmt;

/// The reason recorded when a connection is logically closed.
///
/// The first close trigger wins: it removes the connection from reuse, releases its capacity
/// permit and fixes this reason. Later triggers change nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CloseReason {
    /// The connection sat idle past the idle timeout (or an HTTP/2 generation saw no dispatch
    /// for that long).
    IdleTimeout,
    /// A user poisoned it through a response's connection handle.
    Poisoned,
    /// The protocol ended it: the peer closed, sent `Connection: close` or GOAWAY, or the
    /// connection failed while idle or between exchanges.
    ProtocolClosed,
    /// An HTTP/1 exchange did not finish cleanly (a response body dropped before its end, or an
    /// error mid-exchange), so the connection's framing can no longer be trusted.
    IncompleteH1Exchange,
    /// A `101 Switching Protocols` response handed the I/O to the caller.
    Upgraded,
    /// Closed while idle so its permit could move to a partition that was waiting.
    Reclaimed,
    /// The last handle to the pool was dropped.
    PoolDropped,
    /// The runtime of the owning partition shut down and dropped the connection's driver.
    OwnerRuntimeShutdown,
    /// The caller dropped its request while an HTTP/1 exchange was in progress (after the
    /// request was handed to the connection and before the response head arrived), so the
    /// connection's framing can no longer be trusted. The peer did nothing wrong.
    RequestCanceled,
    /// The connection reached the pool's maximum connection lifetime: an HTTP/1 connection at
    /// its next return or while idle, an HTTP/2 generation once its replacement was published
    /// (or its replacement could not be started). It drains like any other close.
    MaxLifetime,
    /// A response body sent nothing for the client's body idle timeout: the exchange failed
    /// and the connection was retired (an HTTP/2 generation drains its other streams).
    BodyIdleTimeout,
    /// An HTTP/1 connection with nobody waiting for it found its partition's idle set for the
    /// origin full (the pool's maximum of idle connections per host), or was the one idle
    /// longest in a pool holding more idle connections than its pool-wide cap (the `pool`
    /// crate's `max_idle_connections`).
    IdleLimit,
    /// The caller asked the pool to close its idle connections (the `pool` crate's
    /// `ConnectionPool::close_idle_connections`, as Go's `Transport.CloseIdleConnections`): an
    /// idle HTTP/1 connection, or an HTTP/2 generation without a stream in flight.
    CallerClosedIdle,
    /// Every stream left on an HTTP/2 connection was one the pool gave up on (a refused upload
    /// whose body the protocol still held, waiting for flow-control window the server never
    /// granted), and the connection had no room for another: it could serve nothing more.
    StreamsAbandoned,
    /// The HTTP/2 peer allows no stream at all (its `SETTINGS_MAX_CONCURRENT_STREAMS` is 0), so
    /// the connection can serve nothing until the peer says otherwise: its requests that never
    /// became streams go elsewhere, as refused. On a connection that had served no response
    /// the transport ends too, since a request h2 queued for a stream would otherwise wait on
    /// it for ever; streams already open on one that had served go on to their end.
    NoStreamsAllowed,
    /// The connection carried as many requests as its server serves on one connection, a
    /// quota the pool learnt from earlier connections that the server ended at that count:
    /// over HTTP/2 with `GOAWAY` (nginx's `keepalive_requests`, HAProxy's
    /// `max-total-streams`, Envoy's `max_requests_per_connection`), over HTTP/1.1 by closing
    /// it without `Connection: close` while the next request was on its way (tinyproxy, after
    /// each response). The pool sends nothing more on it, so no request meets the cut; an
    /// HTTP/2 connection's streams in flight go on to their end, an HTTP/1.1 connection retires
    /// with the response that spent the quota, and a new connection takes the next requests.
    RequestQuota,
    /// The HTTP/2 server sent so many empty DATA frames that do not end their stream (hyper
    /// sends one for each empty chunk of a body: a relay, once per response) that h2 would
    /// soon end the connection itself, failing the responses on it: h2 allows 100 over a
    /// connection's life, and has no setting for it. The pool sends nothing more on it; its
    /// streams in flight go on to their end, and a new connection takes the next requests.
    EmptyDataFrames,
}

impl CloseReason {
    /// Every reason, in declaration order (for summaries that list all of them).
    pub const ALL: [CloseReason; 17] = [
        CloseReason::IdleTimeout,
        CloseReason::Poisoned,
        CloseReason::ProtocolClosed,
        CloseReason::IncompleteH1Exchange,
        CloseReason::Upgraded,
        CloseReason::Reclaimed,
        CloseReason::PoolDropped,
        CloseReason::OwnerRuntimeShutdown,
        CloseReason::RequestCanceled,
        CloseReason::MaxLifetime,
        CloseReason::BodyIdleTimeout,
        CloseReason::IdleLimit,
        CloseReason::CallerClosedIdle,
        CloseReason::StreamsAbandoned,
        CloseReason::NoStreamsAllowed,
        CloseReason::RequestQuota,
        CloseReason::EmptyDataFrames,
    ];

    /// A stable snake_case name, suitable for JSON keys and metrics labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::Poisoned => "poisoned",
            CloseReason::ProtocolClosed => "protocol_closed",
            CloseReason::IncompleteH1Exchange => "incomplete_h1_exchange",
            CloseReason::Upgraded => "upgraded",
            CloseReason::Reclaimed => "reclaimed",
            CloseReason::PoolDropped => "pool_dropped",
            CloseReason::OwnerRuntimeShutdown => "owner_runtime_shutdown",
            CloseReason::RequestCanceled => "request_canceled",
            CloseReason::MaxLifetime => "max_lifetime",
            CloseReason::BodyIdleTimeout => "body_idle_timeout",
            CloseReason::IdleLimit => "idle_limit",
            CloseReason::CallerClosedIdle => "caller_closed_idle",
            CloseReason::StreamsAbandoned => "streams_abandoned",
            CloseReason::NoStreamsAllowed => "no_streams_allowed",
            CloseReason::RequestQuota => "request_quota",
            CloseReason::EmptyDataFrames => "empty_data_frames",
        }
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `error` says the peer closed or reset the transport (a reset, an abort, a broken
/// pipe, an unexpected end), as opposed to a timeout, a refusal or a local failure. On a
/// connection that served before, this is the keep-alive race of either protocol: the server
/// may or may not have processed the request in flight, so only a request safe to repeat is
/// repeated.
pub fn is_closed_or_reset(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::BrokenPipe
            | std::io::ErrorKind::UnexpectedEof
    )
}

/// `error`'s text followed by its sources', joined with `: `, for a close whose cause is
/// kept as text: hyper's HTTP/1 errors say "connection error" and leave what the transport met
/// (a reset, `ETIMEDOUT`) to their source. A source whose text already ends the line is not
/// repeated.
pub fn with_sources(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        let part = source.to_string();
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        next = source.source();
    }
    text
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    /// An error with a source, as hyper's are.
    #[derive(Debug)]
    struct Outer(Error);

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("connection error")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_as_text_keeps_its_sources_once() {
        let timed_out = Outer(Error::new(ErrorKind::TimedOut, "Connection timed out"));
        assert_eq!(
            with_sources(&timed_out),
            "connection error: Connection timed out"
        );
        let plain = Error::other("closed");
        assert_eq!(with_sources(&plain), "closed");
        #[derive(Debug)]
        struct Repeats(Error);
        impl fmt::Display for Repeats {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "failed: {}", self.0)
            }
        }
        impl std::error::Error for Repeats {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let repeats = Repeats(Error::other("reset"));
        assert_eq!(with_sources(&repeats), "failed: reset");
    }

    #[test]
    fn only_the_peer_closing_or_resetting_counts_as_closed_or_reset() {
        for kind in [
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionAborted,
            ErrorKind::BrokenPipe,
            ErrorKind::UnexpectedEof,
        ] {
            assert!(is_closed_or_reset(&Error::from(kind)), "{kind:?}");
        }
        for kind in [
            ErrorKind::TimedOut,
            ErrorKind::ConnectionRefused,
            ErrorKind::PermissionDenied,
        ] {
            assert!(!is_closed_or_reset(&Error::from(kind)), "{kind:?}");
        }
    }
}
