//! The HTTP/1 idle set, and where a connection that finished an exchange goes: the oldest
//! waiting request, a peer under bounded pressure, or the idle set.
//!
//! Idle connections are reused newest first (the back of the set) and expire or are reclaimed
//! oldest first (the front). Entries whose connection closed while idle stay until reached and
//! are skipped then.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::actions::close_all;
use super::{Actions, Cell, CellTypes, CellWaiter, Grant, PooledH1, Released, State};
use crate::admission::Demand;
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::sync::Arc;

struct IdleEntry<H> {
    conn: H,
    /// When it became idle.
    since: Instant,
    /// When it expires; `None` when idle timeout is disabled.
    deadline: Option<Instant>,
}

/// Idle HTTP/1 connections: newest at the back, oldest at the front.
pub(super) struct IdleSet<H> {
    entries: VecDeque<IdleEntry<H>>,
}

impl<H: PooledH1> IdleSet<H> {
    pub(super) fn new() -> IdleSet<H> {
        IdleSet {
            entries: VecDeque::new(),
        }
    }

    /// The number of entries, including closed ones not yet skipped.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether at least `max` of the entries are still open. The closed ones not yet skipped
    /// do not count, so a connection that closed while idle never holds a place a returning
    /// one could take. The common answer (fewer entries than `max`) costs one comparison.
    fn holds(&self, max: usize) -> bool {
        if self.entries.len() < max {
            return false;
        }
        let open = self.entries.iter().filter(|e| !e.conn.record().is_closed());
        open.take(max).count() == max
    }

    /// Adds a connection (checked in) idle since `since` that expires at `deadline`.
    pub(super) fn push(&mut self, conn: H, since: Instant, deadline: Option<Instant>) {
        self.entries.push_back(IdleEntry {
            conn,
            since,
            deadline,
        });
    }

    /// When the oldest entry became idle.
    pub(super) fn oldest_since(&self) -> Option<Instant> {
        self.entries.front().map(|e| e.since)
    }

    /// Pops a usable connection, newest first, committed `ACTIVE`; the unusable ones it meets
    /// go to `dead`.
    pub(super) fn pop_usable(&mut self, dead: &mut Vec<(H, CloseReason)>) -> Option<H> {
        while let Some(entry) = self.entries.pop_back() {
            if entry.conn.record().checkout() && entry.conn.is_open() {
                return Some(entry.conn);
            }
            dead.push((entry.conn, CloseReason::ProtocolClosed));
        }
        None
    }

    /// Pops the oldest connection, committed (so a concurrent checkout cannot also take it).
    pub(super) fn pop_oldest(&mut self) -> Option<H> {
        while let Some(entry) = self.entries.pop_front() {
            if entry.conn.record().checkout() {
                return Some(entry.conn);
            }
        }
        None
    }

    /// Moves the connections that expired by `now` (past their idle deadline or their maximum
    /// lifetime, or closed) into `expired`, oldest first; returns the next deadline.
    ///
    /// Idle deadlines grow from front to back (one timeout per pool), but lifetimes do not
    /// (connections were created at any time), so this looks at every entry. It runs on the
    /// partition's maintenance task, never on checkout.
    pub(super) fn expire(
        &mut self,
        now: Instant,
        expired: &mut Vec<(H, CloseReason)>,
    ) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut kept = VecDeque::with_capacity(self.entries.len());
        for entry in self.entries.drain(..) {
            let info = entry.conn.record().info();
            if info.is_past_lifetime(now) {
                expired.push((entry.conn, CloseReason::MaxLifetime));
                continue;
            }
            if entry.conn.record().is_closed() || entry.deadline.is_some_and(|d| d <= now) {
                expired.push((entry.conn, CloseReason::IdleTimeout));
                continue;
            }
            let due = earliest(entry.deadline, info.retires_at());
            next = earliest(next, due);
            kept.push_back(entry);
        }
        self.entries = kept;
        next
    }

    /// Takes out the connection whose record is `record`, if it is in the set.
    pub(super) fn remove(&mut self, record: &Arc<ConnectionRecord>) -> Option<H> {
        let at = self
            .entries
            .iter()
            .position(|e| Arc::ptr_eq(e.conn.record(), record))?;
        self.entries.remove(at).map(|e| e.conn)
    }

    /// Empties the set.
    pub(super) fn take_all(&mut self) -> impl Iterator<Item = H> + use<H> {
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(|e| e.conn)
    }
}

/// The earlier of two optional instants.
pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl<T: CellTypes> Cell<T> {
    /// An HTTP/1 connection finished an exchange and is ready for another: the oldest waiting
    /// request takes it; otherwise, under bounded pressure, a waiting peer of its group takes
    /// it (borrow) or it closes to free its permit (reclaim); otherwise it becomes idle.
    ///
    /// A connection past its maximum lifetime retires here instead (`MaxLifetime`): closing it
    /// releases its permit to the origin's next ticket, and every waiting request of an
    /// unbounded cell already has an establishment of its own coming.
    pub fn release_h1(&self, mut conn: T::H1, now: Instant) -> Released {
        if conn.record().is_past_lifetime(now) {
            close_all([(conn, CloseReason::MaxLifetime)]);
            return Released::Closed;
        }
        let bounded = self.bounded();
        if let Some(owner) = bounded.as_ref().and_then(|b| b.foreign_owner(&conn)) {
            // A borrowed connection whose borrower left before using it: it belongs in its
            // owner's idle set (its gauges are the owner's).
            return owner.release_h1(conn, now);
        }
        let idled = loop {
            if let Some(bounded) = &bounded {
                match bounded.yield_to_peer(conn, now) {
                    Ok(released) => return released,
                    Err(back) => conn = back,
                }
            }
            // One lock for the common return: with nobody waiting (and no bounded pressure to
            // consult), the connection enters the idle set under the lock that found the queue
            // empty, so a request that queues after this unlock finds it there.
            let next = {
                let mut st = self.state.lock();
                match self.pop_any(&mut st) {
                    Some(target) => {
                        let publish = self.demand_after_serving(&mut st);
                        Next::Serve(target, conn, publish)
                    }
                    None if bounded
                        .as_ref()
                        .is_some_and(|b| b.admission().under_pressure()) =>
                    {
                        Next::Pressure(conn)
                    }
                    None => Next::Idled(self.idle_locked(&mut st, conn, now)),
                }
            };
            match next {
                Next::Serve(target, back, publish) => {
                    self.run(Actions {
                        publish,
                        ..Actions::default()
                    });
                    match target.fill(Grant::H1(back)) {
                        Ok(()) => return Released::Delivered,
                        Err(Grant::H1(back)) => conn = back,
                        Err(_) => unreachable!("fill returns what it was given"),
                    }
                }
                Next::Idled(idled) => break idled,
                // Nobody here waits and the origin is under pressure: a waiting peer may need
                // it; otherwise it enters the idle set after all.
                Next::Pressure(back) => {
                    let Some(bounded) = &bounded else {
                        unreachable!("pressure is only consulted for a bounded cell")
                    };
                    match bounded.serve_peer_demand(back, now) {
                        Ok(released) => return released,
                        Err(back) => break self.idle_locked(&mut self.state.lock(), back, now),
                    }
                }
            }
        };
        let released = self.after_idle(idled);
        if let (Released::Idle, Some(bounded)) = (&released, &bounded) {
            bounded.recheck_pressure();
        }
        released
    }

    /// Puts a connection (checked out, `ACTIVE`) into the idle set.
    pub(super) fn idle(&self, conn: T::H1, now: Instant) -> Released {
        let idled = {
            let mut st = self.state.lock();
            self.idle_locked(&mut st, conn, now)
        };
        self.after_idle(idled)
    }

    /// Checks `conn` in and pushes it onto the idle set, under the cell's lock. What must
    /// happen outside the lock (closing a connection that could not be checked in, arming the
    /// expiry timer) is left to [`after_idle`](Self::after_idle).
    fn idle_locked(&self, st: &mut State<T>, conn: T::H1, now: Instant) -> Idled<T::H1> {
        let server = self.server_idle_limit(conn.record());
        // Stamped before the check-in's compare-and-swap publishes the idle phase: a driver
        // on another thread that sees the connection idle then reads this stamp, not the one
        // of its last idle spell (see `idle_lesson.rs`).
        conn.record().went_idle_at(now);
        let refused = if st.idle.holds(self.max_idle) {
            Some(CloseReason::IdleLimit)
        } else if server.is_some_and(|limit| limit.is_zero()) {
            // The server closes it as soon as it is idle: keeping it would only race the close.
            Some(CloseReason::IdleTimeout)
        } else if !conn.record().checkin() {
            Some(CloseReason::ProtocolClosed)
        } else {
            None
        };
        if let Some(reason) = refused {
            // A poisoned connection says so, whatever else refused it.
            let reason = if conn.record().is_poisoned() {
                CloseReason::Poisoned
            } else {
                reason
            };
            return Idled::Refused(conn, reason);
        }
        let deadline = self.idle_deadline(server, now);
        let due = earliest(deadline, conn.record().retires_at());
        let heard = self
            .hooks
            .went_idle
            .is_some()
            .then(|| conn.record().clone());
        if conn.record().requests_served() == 0 {
            // No request is about to take it: its server's close, if one came with early
            // bytes, ends it now (a leaf lock and a wake, no pool lock).
            conn.went_idle_unused();
        }
        st.idle.push(conn, now, deadline);
        Idled::Idle(due.and_then(|at| st.arm(at)), heard)
    }

    /// How long the server lets `record`'s connection stay idle, less a margin: the
    /// connection's [`idle_limit`](crate::connection::ConnectionRecord::idle_limit) (its
    /// `Keep-Alive` hint) or the timeout the cell learnt from its server's closes
    /// (`idle_lesson.rs`), whichever is shorter.
    pub(super) fn server_idle_limit(&self, record: &ConnectionRecord) -> Option<Duration> {
        match (record.idle_limit(), self.idle_timeout_learner.limit()) {
            (Some(said), Some(learnt)) => Some(said.min(learnt)),
            (said, learnt) => said.or(learnt),
        }
    }

    /// When a connection that becomes idle at `now` expires: at the pool's idle timeout, or
    /// earlier when its server closes idle connections sooner (`server`, from
    /// [`server_idle_limit`](Self::server_idle_limit)).
    pub(super) fn idle_deadline(&self, server: Option<Duration>, now: Instant) -> Option<Instant> {
        let idle = match (self.idle_timeout, server) {
            (Some(pool), Some(server)) => Some(pool.min(server)),
            (pool, server) => pool.or(server),
        };
        idle.map(|idle| now + idle)
    }

    /// Finishes [`idle_locked`](Self::idle_locked) outside the lock.
    fn after_idle(&self, idled: Idled<T::H1>) -> Released {
        match idled {
            Idled::Refused(conn, reason) => {
                close_all([(conn, reason)]);
                Released::Closed
            }
            Idled::Idle(arm, heard) => {
                if let (Some(at), Some(hook)) = (arm, &self.hooks.arm_expiry) {
                    hook(at);
                }
                if let (Some(record), Some(hook)) = (heard, &self.hooks.went_idle) {
                    hook(&record);
                }
                Released::Idle
            }
        }
    }
}

/// Where a returning connection goes, as decided under the cell's lock.
enum Next<T: CellTypes> {
    /// To this waiting request, then publish the cell's demand after serving it (bounded).
    Serve(Arc<CellWaiter<T>>, T::H1, Option<Demand>),
    /// Nobody waits, but the origin is under pressure: a peer may need it.
    Pressure(T::H1),
    /// Into the idle set (or closed, if it could not be checked in).
    Idled(Idled<T::H1>),
}

/// What [`Cell::idle_locked`] leaves for after the lock.
enum Idled<H> {
    /// Checked in; arm the expiry timer at this instant, if set, and tell the
    /// [`went_idle`](super::CellHooks::went_idle) hook, if there is one, of this record.
    Idle(Option<Instant>, Option<Arc<ConnectionRecord>>),
    /// Could not be checked in: close it for this reason.
    Refused(H, CloseReason),
}
