//! HTTP/1 attempts and spare-attempt adoption, and the install of a new HTTP/1 connection.
//!
//! An HTTP/1 establishment is an *attempt*: several run at once and each produces a connection
//! for the waiter that launched it (or, if that waiter was served meanwhile, for the oldest
//! waiter, or the idle set).
//!
//! **Spare attempts** (unbounded HTTP/1 cells): when a request that launched an attempt is
//! served by a returning connection or leaves, its attempt keeps running with nobody counting
//! on it. The next request that misses *adopts* that spare attempt instead of launching
//! another, so the cell never has more attempts in flight than requests waiting for them, and a
//! closed loop of `c` requests opens at most `c` connections even when connections come back
//! while others are still being established. The cell counts attempts in flight and the
//! waiting requests that count on one; when an attempt ends (connection or error) and more
//! requests count on attempts than remain, one is launched for the newest of them. Attempts
//! are interchangeable: a connection goes to the oldest waiting request, an error to the
//! request that launched the attempt if it still waits (others that counted on it get a
//! replacement attempt, not its error). A bounded cell needs none of this: its permits already
//! cap what it establishes.

use std::time::Instant;

use super::{
    Actions, Cell, CellTypes, CellWaiter, EstablishMode, Grant, Launch, PooledH1, Released, State,
};
use crate::stats::Gauge;
use crate::sync::Arc;
use crate::waiter::Requirement;

/// HTTP/1 attempts in flight and the waiting requests that count on one (their `launched` flag
/// is set).
#[derive(Debug, Default)]
pub(super) struct Attempts {
    in_flight: usize,
    dependents: usize,
}

impl Attempts {
    /// Whether no attempt runs and no request counts on one.
    pub(super) fn is_empty(&self) -> bool {
        self.in_flight == 0 && self.dependents == 0
    }

    /// Whether an attempt runs that no waiting request counts on.
    pub(super) fn spare(&self) -> bool {
        self.in_flight > self.dependents
    }

    /// A request that missed counts on a spare attempt.
    pub(super) fn adopt(&mut self) {
        self.dependents += 1;
    }

    /// A request that missed launched an attempt and counts on it.
    pub(super) fn launch(&mut self) {
        self.in_flight += 1;
        self.dependents += 1;
    }

    /// A request that counted on an attempt stopped waiting.
    fn dependent_left(&mut self) {
        debug_assert!(self.dependents > 0, "attempt dependents went below zero");
        self.dependents = self.dependents.saturating_sub(1);
    }

    /// An attempt ended; returns whether more requests count on attempts than remain.
    fn end(&mut self) -> bool {
        debug_assert!(self.in_flight > 0, "an attempt ended that never started");
        self.in_flight = self.in_flight.saturating_sub(1);
        self.dependents > self.in_flight
    }

    /// A replacement attempt was launched for a request that already counts on one.
    fn relaunch(&mut self) {
        self.in_flight += 1;
    }
}

impl<T: CellTypes> Cell<T> {
    /// Whether this cell counts its HTTP/1 attempts (spare attempts, above).
    pub(super) fn tracks_attempts(&self) -> bool {
        self.bound.is_none() && self.mode == EstablishMode::Http1
    }

    /// `waiter` stopped waiting (claimed or cancelled): the attempt it counted on, if any, is
    /// spare now.
    pub(super) fn attempt_dependent_left(&self, st: &mut State<T>, waiter: &CellWaiter<T>) {
        if self.tracks_attempts() && waiter.is_launched() {
            st.attempts.dependent_left();
        }
    }

    /// An attempt of this cell ended (a connection, or an error); `claimed` is its launcher if
    /// the outcome went to it. If more waiting requests count on attempts than remain, one is
    /// launched for the newest of them (it had adopted the attempt that just ended).
    pub(super) fn end_attempt(&self, claimed: Option<&CellWaiter<T>>) {
        if !self.tracks_attempts() {
            return;
        }
        let mut actions = Actions::default();
        {
            let mut st = self.state.lock();
            if let Some(launcher) = claimed {
                self.attempt_dependent_left(&mut st, launcher);
            }
            if st.attempts.end() {
                if let Some(waiter) = st.waiters.newest_counting_on_attempt() {
                    st.attempts.relaunch();
                    self.gauges.inc(Gauge::Establishing);
                    actions.launches.push((waiter, Launch::Attempt));
                }
            }
        }
        self.run(actions);
    }

    /// A new HTTP/1 connection (installed `ACTIVE`) serves its launcher if the launcher still
    /// waits and accepts HTTP/1, and otherwise is released like a returning connection. A
    /// launcher that requires HTTP/2 receives [`Grant::Unsupported`].
    pub fn install_h1(&self, conn: T::H1, launcher: &Arc<CellWaiter<T>>, now: Instant) -> Released {
        self.keep_h1_to_quota(conn.record());
        if !self.claim(launcher) {
            // Its request was served or left: the connection goes to the oldest waiter (whose
            // own attempt, if any, becomes spare) before the attempt counts as ended, so the
            // end does not launch a replacement for a request this connection serves.
            let released = self.release_h1(conn, now);
            self.end_attempt(None);
            return released;
        }
        self.end_attempt(Some(launcher));
        let conn = match launcher.requirement() {
            Requirement::Any => match launcher.fill(Grant::H1(conn)) {
                Ok(()) => {
                    self.republish();
                    return Released::Delivered;
                }
                Err(Grant::H1(conn)) => conn,
                Err(_) => unreachable!("fill returns what it was given"),
            },
            Requirement::Http2 => {
                let _ = launcher.fill(Grant::Unsupported);
                conn
            }
        };
        self.release_h1(conn, now)
    }
}
