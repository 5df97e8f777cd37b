//! Learning how long a server keeps an idle HTTP/1 connection, from the ones it closed.
//!
//! A server closes a keep-alive connection that has been idle for its own timeout (Node.js
//! after 5 s, lighttpd after 5 s, nginx at its `keepalive_timeout`, HAProxy at `timeout
//! http-keep-alive`), usually well before the client's idle timeout (90 s by default here, as
//! in hyper-util and Go). A request sent on such a connection just as the server closes it
//! meets the close: the server never reads it, but the client cannot tell that from a request
//! the server read and then dropped, so only a request safe to repeat is sent again and a POST
//! fails (hyper's "connection closed before message completed", the most reported error of
//! hyper's client). The window is the round trip: a request that leaves up to one round trip
//! before the client hears of the close crosses it. A server that announces its timeout
//! (`Keep-Alive: timeout=N`, read by pool-h1) is kept to it; many do not say (lighttpd,
//! HAProxy, nginx without the second parameter of `keepalive_timeout`).
//!
//! The cell learns the timeout from the closes themselves. A connection that had served and
//! sat in the idle set when its server closed it tells how long the server kept it idle
//! ([`ConnectionRecord::idle_for`], from when it went idle to when its driver saw the close).
//! A close that agrees with one of the last few (within an eighth of the shorter) teaches the
//! shorter of the two, and from then on the cell keeps a connection idle for less than that by
//! the same margin as a `Keep-Alive` hint ([`idle_limit_before`]): a connection retires
//! (`IdleTimeout`) before its server would close it, and the next request opens a new
//! connection instead of meeting the close. A server that closes on a coarse tick (lighttpd,
//! once a second) closes 0-1 s past its timeout; the margin, a second from 2 s up and half the
//! timeout below, still retires the connection first.
//!
//! What does not teach it:
//!
//! * One event that closes many connections at once (a restart, a server shedding idle
//!   connections): its closes are heard together, so two closes agree only if they were heard
//!   at least half the timeout apart. A server's timeout closes each connection when its own
//!   idle time runs out, so after a burst and a pause the first closes come together (and
//!   teach nothing), and the next connection's close, a timeout later, agrees with them.
//! * A close right after a response: a server that ends connections after so many requests
//!   without `Connection: close` (tinyproxy after each one) closes them as soon as they are
//!   idle. Closes heard within [`SHORTEST`] of going idle are that, not a timeout (the quota
//!   learner of `quota.rs` hears of them when a request meets them).
//! * A close under a request ("connection closed before message completed" itself): its idle
//!   time is how long the connection waited for that request, which against a server with a
//!   request quota is any time at all; teaching from it could make every connection retire
//!   between two requests. `quota.rs` learns from those.
//! * A connection that never served: a server closes those on a timeout of its own for the
//!   first request (`early`-closed connections, pool-h1's `early.rs`).
//!
//! One learner serves an origin's cells in every partition, as the request quota's does
//! ([`Cell::with_idle_timeout_learner`]): the timeout is a fact about the server, and until it
//! is learnt each request that meets the close may fail, so what the closes of one partition's
//! connections teach, the others keep to at once (when every cell of the origin has retired,
//! `retire.rs`, the lesson goes with them). A shorter timeout that two later closes agree on
//! replaces it; it is never forgotten otherwise, so a server whose timeout grows keeps a
//! connection idle for the old one, at the cost of a connection opened where one could have
//! been reused (as a pool idle timeout set too short).

use std::time::{Duration, Instant};

use super::{Cell, CellTypes};
use crate::connection::{ConnectionRecord, idle_limit_before};
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Arc, Mutex};

/// Closes heard sooner than this after the connection went idle are not an idle timeout (see
/// the module docs).
pub(super) const SHORTEST: Duration = Duration::from_millis(250);
/// Two closes agree when they are within this fraction of the shorter (an eighth).
const AGREE_WITHIN: u32 = 8;
/// How many of the last closes a new one may agree with. More than one, because a server
/// that looks at its idle connections once a second (lighttpd) closes each 0-1 s past its
/// timeout, by the phase of its tick: a request every 3.5 s against lighttpd's
/// `max-keep-alive-idle = 2` was closed after 2.3, 2.8, 2.3, 2.8 s, and two closes in a row
/// never agreed.
const KEPT: usize = 4;

/// What is known of one server's idle timeout, shared by the cells of its origin (see the
/// module docs): the closes heard, under a lock of its own (taken once per close the server
/// made, never under a cell's lock), and the timeout learnt, read without it by every
/// check-in.
#[derive(Debug)]
pub struct IdleLearner {
    closes: Mutex<Closes>,
    /// The timeout learnt, in milliseconds (`NONE`: none yet); written only under `closes`.
    learnt_ms: AtomicU64,
}

const NONE: u64 = u64::MAX;

impl Default for IdleLearner {
    fn default() -> IdleLearner {
        IdleLearner {
            closes: Mutex::new(Closes::default()),
            learnt_ms: AtomicU64::new(NONE),
        }
    }
}

impl IdleLearner {
    /// An idle connection's server closed it after `idle`, heard at `now`. Returns the
    /// timeout, if this close taught it (or a shorter one).
    fn heard(&self, idle: Duration, now: Instant) -> Option<Duration> {
        if idle < SHORTEST {
            return None;
        }
        let mut closes = self.closes.lock();
        let shorter = closes.agreed(idle, now)?;
        // Only a timeout shorter by more than the agreement replaces the lesson: closes of
        // connections idle since before it was learnt agree with it, and change nothing.
        if self
            .learnt()
            .is_some_and(|t| t - t / AGREE_WITHIN <= shorter)
        {
            return None;
        }
        let ms = u64::try_from(shorter.as_millis()).unwrap_or(NONE - 1);
        self.learnt_ms.store(ms, Ordering::Relaxed);
        Some(shorter)
    }

    /// The server's idle timeout, learnt (to the millisecond).
    pub fn learnt(&self) -> Option<Duration> {
        match self.learnt_ms.load(Ordering::Relaxed) {
            NONE => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// How long a connection may stay idle by the lesson: the timeout less its margin.
    pub(super) fn limit(&self) -> Option<Duration> {
        self.learnt().map(idle_limit_before)
    }
}

/// The last [`KEPT`] closes an [`IdleLearner`] heard (a ring, the next to replace at `next`):
/// how long each connection had been idle, and when its close was heard.
#[derive(Debug, Default)]
struct Closes {
    heard: [Option<(Duration, Instant)>; KEPT],
    next: usize,
}

impl Closes {
    /// Keeps a close after `idle`, heard at `now`; returns the shorter idle time of it and a
    /// kept close it agrees with (the shortest such), if any.
    fn agreed(&mut self, idle: Duration, now: Instant) -> Option<Duration> {
        let agreed = self
            .heard
            .iter()
            .flatten()
            .filter(|(before, heard_at)| {
                let shorter = idle.min(*before);
                let agree = idle.abs_diff(*before) <= shorter / AGREE_WITHIN;
                let apart = now.saturating_duration_since(*heard_at) >= shorter / 2;
                agree && apart
            })
            .map(|(before, _)| idle.min(*before))
            .min();
        self.heard[self.next] = Some((idle, now));
        self.next = (self.next + 1) % KEPT;
        agreed
    }
}

impl<T: CellTypes> Cell<T> {
    /// The server closed `record`'s HTTP/1 connection while it was idle in this cell, seen at
    /// `now` (its driver ended with the connection still idle, after it had served): the
    /// cell may learn the server's idle timeout from it (see the module docs).
    pub fn h1_closed_while_idle(&self, record: &ConnectionRecord, now: Instant) {
        if record.requests_served() == 0 {
            return;
        }
        let Some(idle) = record.idle_for(now) else {
            return;
        };
        let learnt = self.idle_timeout_learner.heard(idle, now);
        if let Some(timeout) = learnt {
            tracing::debug!(
                origin = %record.info().origin(),
                timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                "the server closed two idle connections after the same time: \
                 idle connections now retire before it"
            );
        }
    }

    /// The idle timeout this cell's server keeps to, as learnt (by any cell of its origin
    /// that shares this one's learner), if it has been.
    pub fn server_idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout_learner.learnt()
    }

    /// Learns the server's idle timeout with `learner` (by default each cell has its own). The
    /// owner hands every cell of one origin the same learner, so that the closes one
    /// partition's connections met teach the others too.
    pub fn with_idle_timeout_learner(mut self, learner: Arc<IdleLearner>) -> Cell<T> {
        self.idle_timeout_learner = learner;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn two_closes_after_the_same_idle_time_heard_apart_teach_it() {
        let t0 = Instant::now();
        let lesson = IdleLearner::default();
        assert_eq!(
            lesson.heard(ms(1_010), t0),
            None,
            "one close teaches nothing"
        );
        assert_eq!(lesson.heard(ms(1_002), t0 + ms(1_500)), Some(ms(1_002)));
        assert_eq!(lesson.learnt(), Some(ms(1_002)));
        assert_eq!(
            lesson.limit(),
            Some(ms(501)),
            "half of it under two seconds"
        );
        // Later closes at the same time (connections idle since before the lesson) change
        // nothing; two at a shorter time teach that.
        assert_eq!(lesson.heard(ms(1_001), t0 + 3 * S), None);
        assert_eq!(lesson.heard(ms(600), t0 + 4 * S), None);
        assert_eq!(lesson.heard(ms(610), t0 + 5 * S), Some(ms(600)));
        let five = IdleLearner::default();
        five.heard(5 * S + ms(300), t0);
        assert_eq!(five.heard(5 * S, t0 + 6 * S), Some(5 * S));
        assert_eq!(five.limit(), Some(4 * S), "a second under it");
    }

    #[test]
    fn closes_that_disagree_come_together_or_follow_a_response_teach_nothing() {
        let t0 = Instant::now();
        let lesson = IdleLearner::default();
        lesson.heard(ms(1_000), t0);
        assert_eq!(lesson.heard(ms(1_200), t0 + 2 * S), None, "disagree");
        // A restart: connections idle alike, closed at one instant.
        assert_eq!(lesson.heard(ms(3_000), t0 + 10 * S), None);
        assert_eq!(lesson.heard(ms(3_000), t0 + 10 * S + ms(40)), None);
        // A server closing each connection after its response.
        let quota = IdleLearner::default();
        quota.heard(ms(2), t0);
        assert_eq!(quota.heard(ms(2), t0 + S), None);
        assert_eq!(quota.learnt(), None);
        // A server that closes on a one-second tick: not the last close, the one before.
        let ticking = IdleLearner::default();
        assert_eq!(ticking.heard(ms(2_300), t0), None);
        assert_eq!(ticking.heard(ms(2_800), t0 + 4 * S), None);
        assert_eq!(ticking.heard(ms(2_310), t0 + 8 * S), Some(ms(2_300)));
        // Within an eighth of the shorter.
        let near = IdleLearner::default();
        near.heard(ms(400), t0);
        assert_eq!(near.heard(ms(450), t0 + S), Some(ms(400)));
        let far = IdleLearner::default();
        far.heard(ms(400), t0);
        assert_eq!(far.heard(ms(451), t0 + S), None);
    }
}
