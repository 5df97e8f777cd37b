//! Expiry: idle HTTP/1 connections past their idle deadline or their maximum lifetime,
//! generations without a dispatch for the idle timeout and without a stream in use (a surplus
//! generation opened past a stream limit retires this way once the load falls; one serving a
//! long stream is not idle, see `H2Slot::take_idle`), and the renewal of generations that
//! reached their lifetime. The partition's maintenance runs [`Cell::expire`] when the cell asked
//! for it through [`CellHooks::arm_expiry`](super::CellHooks::arm_expiry).
//!
//! # Renewing an HTTP/2 generation
//!
//! A generation that reaches its maximum lifetime keeps accepting while a *renewal* flight
//! opens its replacement, so no request waits for the new connection: publishing the
//! replacement retires the old generation (`MaxLifetime`), which drains its open streams.
//! Should the renewal fail, the old generation retires then, and the next request establishes
//! as after a `GOAWAY`. A bounded origin renews only with a free permit; without one the old
//! generation retires first and the replacement is established with its permit when the next
//! request needs it (the bound is never exceeded for an overlap).
//!
//! # Scheduling
//!
//! Deadlines no longer grow monotonically once lifetimes are involved, so the cell remembers
//! the earliest sweep it asked for (`armed_at`) and asks again only for an earlier one. A
//! sweep that finds an earlier one still pending is stale (the earlier one superseded it) and
//! does nothing, so maintenance never accumulates duplicate entries for one cell.

use std::time::Instant;

use super::actions::close_all;
use super::gate::close_generations;
use super::idle::earliest;
use super::{Cell, CellTypes, CellWaiter, FlightId, Launch, State};
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::events::OpenReason;
use crate::stats::Gauge;
use crate::sync::Arc;
use crate::waiter::{Requirement, Waiter};

impl<T: CellTypes> State<T> {
    /// The cell needs a sweep by `at`: returns `at` when no sweep that early is scheduled (the
    /// caller hands it to the arm hook after unlocking).
    pub(super) fn arm(&mut self, at: Instant) -> Option<Instant> {
        match self.armed_at {
            Some(armed) if armed <= at => None,
            _ => {
                self.armed_at = Some(at);
                Some(at)
            }
        }
    }
}

/// A renewal decided under the lock: the flight started for it, and when (the generations
/// past their lifetime then are the ones it renews).
struct Renewal {
    flight: FlightId,
    now: Instant,
}

impl<T: CellTypes> Cell<T> {
    /// Closes what expired by `now`: idle HTTP/1 connections past their idle deadline or
    /// lifetime, and a generation idle (no dispatch, no stream in use) for the idle timeout;
    /// starts the renewal of a generation past its lifetime. Returns when to run again (`None` also for a stale
    /// sweep, see the module docs).
    pub fn expire(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let expired_h2;
        let mut renewal = None;
        let next = {
            let mut st = self.state.lock();
            if st.armed_at.is_some_and(|armed| armed > now) {
                return None;
            }
            let idle_next = st.idle.expire(now, &mut expired);
            st.h2.prune();
            expired_h2 = st.h2.take_idle(now, self.idle_timeout);
            let h2_retire = st.h2.retire_deadline().filter(|_| !st.flights.renewing());
            if h2_retire.is_some_and(|d| d <= now) {
                renewal = self.start_renewal(&mut st, now);
            }
            let retire = h2_retire.filter(|d| *d > now);
            let h2_next = earliest(st.h2.idle_deadline(self.idle_timeout), retire);
            let next = earliest(idle_next, h2_next);
            st.armed_at = next;
            next
        };
        close_all(expired);
        close_generations(expired_h2, CloseReason::IdleTimeout);
        if let Some(renewal) = renewal {
            self.launch_renewal(renewal);
        }
        next
    }

    /// Starts the renewal flight of the generations past their lifetime (no flight may be
    /// running: a scale-out in progress postpones the renewal until it publishes).
    fn start_renewal(&self, st: &mut State<T>, now: Instant) -> Option<Renewal> {
        if st.flights.in_progress() {
            return None;
        }
        let flight = st.flights.start_renewal();
        self.gauges.inc(Gauge::Establishing);
        Some(Renewal { flight, now })
    }

    /// Launches a renewal decided under the lock, with a free permit when the origin is
    /// bounded; without one, retires the old generation at once instead.
    fn launch_renewal(&self, renewal: Renewal) {
        if !self.launch_unawaited(renewal.flight, OpenReason::LifetimeRenewal) {
            self.abandon_renewal(renewal);
        }
    }

    /// Launches `flight`, started under the lock with `Establishing` counted, for a
    /// connection nobody waits on (a renewal: `reason` says which), with a free permit when
    /// the origin is bounded. Without one it launches nothing, uncounts `Establishing` and
    /// returns false: the caller ends the flight.
    ///
    /// Its launcher is a waiter that has already left, so the new generation is published for
    /// the cell and a failure reaches only the requests that joined the flight (none, while
    /// the generation it renews accepts).
    pub(super) fn launch_unawaited(&self, flight: FlightId, reason: OpenReason) -> bool {
        let lease = match self.bounded() {
            None => None,
            Some(bounded) => match bounded.admission().take_free_permit(bounded.partition()) {
                Some(lease) => Some(lease),
                None => {
                    self.gauges.dec(Gauge::Establishing);
                    return false;
                }
            },
        };
        let launcher: Arc<CellWaiter<T>> =
            Arc::new(Waiter::new(0, Requirement::Http2, None).with_open_reason(reason));
        launcher.cancel();
        (self.hooks.launch)(launcher, Launch::Flight(flight), lease);
        true
    }

    /// A renewal that cannot run (no free permit): the generations past their lifetime retire
    /// now, and requests establish their replacement the usual way.
    fn abandon_renewal(&self, renewal: Renewal) {
        let retired = {
            let mut st = self.state.lock();
            st.flights.end(renewal.flight);
            st.h2.take_past_lifetime(renewal.now)
        };
        self.retire_generations(retired, CloseReason::MaxLifetime);
    }

    /// Closes every idle HTTP/1 connection and every generation without a stream taken, with
    /// [`CloseReason::CallerClosedIdle`]. Connections serving requests are left alone: an
    /// HTTP/1 one goes home when its exchange ends, as any does, and a generation with streams
    /// goes on accepting.
    pub fn close_unused(&self) {
        let (idle, generations) = {
            let mut st = self.state.lock();
            let idle: Vec<T::H1> = st.idle.take_all().collect();
            (idle, st.h2.take_unused())
        };
        let reason = CloseReason::CallerClosedIdle;
        close_all(idle.into_iter().map(|conn| (conn, reason)));
        close_generations(generations, reason);
    }

    /// Closes the idle HTTP/1 connection whose record is `record`, with `reason`, if it is in
    /// this cell's idle set; whether it was. A connection that a request took meanwhile is no
    /// longer there (a checkout takes it out under the same lock) and stays in use.
    pub fn close_idle_connection(
        &self,
        record: &Arc<ConnectionRecord>,
        reason: CloseReason,
    ) -> bool {
        let Some(conn) = self.state.lock().idle.remove(record) else {
            return false;
        };
        close_all([(conn, reason)]);
        true
    }

    /// Closes every idle connection and the accepting generation with `reason` (the pool is
    /// dropped). In-flight exchanges and streams finish.
    pub fn close_idle(&self, reason: CloseReason) {
        let (idle, generations) = {
            let mut st = self.state.lock();
            st.armed_at = None;
            let idle: Vec<T::H1> = st.idle.take_all().collect();
            (idle, st.h2.take_all())
        };
        close_all(idle.into_iter().map(|conn| (conn, reason)));
        close_generations(generations, reason);
    }
}
