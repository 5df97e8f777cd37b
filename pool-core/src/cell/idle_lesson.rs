//! Learning how long a server keeps an idle HTTP/1 connection, from the ones it closed.
//!
//! A server closes a keep-alive connection that has been idle for its own timeout (Node.js
//! after 5 s, lighttpd after 5 s, nginx at its `keepalive_timeout`, HAProxy at `timeout
//! http-keep-alive`), usually well before the client's idle timeout (90 s by default here, as
//! in hyper-util and Go). A request sent on such a connection just as
//! the server closes it meets the close: the server never reads it, but the client cannot tell
//! that from a request the server read and then dropped, so only a request safe to repeat is
//! sent again and a POST fails (hyper's "connection closed before message completed", the
//! most reported error of hyper's client). The window is the round trip: a request that
//! leaves up to one round trip before the client hears of the close crosses it. A server that
//! announces its timeout (`Keep-Alive: timeout=N`, read by pool-h1) is kept to it; many do
//! not say (lighttpd, HAProxy, nginx without the second parameter of `keepalive_timeout`).
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
//! The lesson is the cell's, not the origin's: each partition learns from its own connections
//! (two closes each), where the request quota is shared because learning it costs requests;
//! learning this one costs nothing, the closes it learns from lose no request (and a cell
//! retired for holding nothing, `retire.rs`, takes its lesson with it). A shorter
//! timeout that two later closes agree on replaces it; it is never forgotten otherwise, so a
//! server whose timeout grows keeps a connection idle for the old one, at the cost of a
//! connection opened where one could have been reused (as a pool idle timeout set too short).

use std::time::{Duration, Instant};

use super::{Cell, CellTypes};
use crate::connection::{ConnectionRecord, idle_limit_before};

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

/// What the cell knows of its server's idle timeout (under the cell's lock).
#[derive(Debug, Default)]
pub(super) struct IdleLesson {
    /// The server's idle timeout, learnt.
    learnt: Option<Duration>,
    /// The last [`KEPT`] closes heard (a ring, the next to replace at `next`): how long each
    /// connection had been idle, and when its close was heard.
    heard: [Option<(Duration, Instant)>; KEPT],
    next: usize,
}

impl IdleLesson {
    /// An idle connection's server closed it after `idle`, heard at `now`. Returns the
    /// timeout, if this close taught it (or a shorter one).
    pub(super) fn heard(&mut self, idle: Duration, now: Instant) -> Option<Duration> {
        if idle < SHORTEST {
            return None;
        }
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
        let shorter = agreed?;
        // Only a timeout shorter by more than the agreement replaces the lesson: closes of
        // connections idle since before it was learnt agree with it, and change nothing.
        if self.learnt.is_some_and(|t| t - t / AGREE_WITHIN <= shorter) {
            return None;
        }
        self.learnt = Some(shorter);
        Some(shorter)
    }

    /// The server's idle timeout, learnt.
    pub(super) fn learnt(&self) -> Option<Duration> {
        self.learnt
    }

    /// How long a connection may stay idle by the lesson: the timeout less its margin.
    pub(super) fn limit(&self) -> Option<Duration> {
        self.learnt.map(idle_limit_before)
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
        let learnt = self.state.lock().idle_lesson.heard(idle, now);
        if let Some(timeout) = learnt {
            tracing::debug!(
                origin = %record.info().origin(),
                timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                "the server closed two idle connections after the same time: \
                 idle connections now retire before it"
            );
        }
    }

    /// The idle timeout this cell learnt its server keeps to, if any.
    pub fn server_idle_timeout(&self) -> Option<Duration> {
        self.state.lock().idle_lesson.learnt()
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
        let mut lesson = IdleLesson::default();
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
        let mut five = IdleLesson::default();
        five.heard(5 * S + ms(300), t0);
        assert_eq!(five.heard(5 * S, t0 + 6 * S), Some(5 * S));
        assert_eq!(five.limit(), Some(4 * S), "a second under it");
    }

    #[test]
    fn closes_that_disagree_come_together_or_follow_a_response_teach_nothing() {
        let t0 = Instant::now();
        let mut lesson = IdleLesson::default();
        lesson.heard(ms(1_000), t0);
        assert_eq!(lesson.heard(ms(1_200), t0 + 2 * S), None, "disagree");
        // A restart: connections idle alike, closed at one instant.
        assert_eq!(lesson.heard(ms(3_000), t0 + 10 * S), None);
        assert_eq!(lesson.heard(ms(3_000), t0 + 10 * S + ms(40)), None);
        // A server closing each connection after its response.
        let mut quota = IdleLesson::default();
        quota.heard(ms(2), t0);
        assert_eq!(quota.heard(ms(2), t0 + S), None);
        assert_eq!(quota.learnt(), None);
        // A server that closes on a one-second tick: not the last close, the one before.
        let mut ticking = IdleLesson::default();
        assert_eq!(ticking.heard(ms(2_300), t0), None);
        assert_eq!(ticking.heard(ms(2_800), t0 + 4 * S), None);
        assert_eq!(ticking.heard(ms(2_310), t0 + 8 * S), Some(ms(2_300)));
        // Within an eighth of the shorter.
        let mut near = IdleLesson::default();
        near.heard(ms(400), t0);
        assert_eq!(near.heard(ms(450), t0 + S), Some(ms(400)));
        let mut far = IdleLesson::default();
        far.heard(ms(400), t0);
        assert_eq!(far.heard(ms(451), t0 + S), None);
    }
}
