//! One origin in one partition: its idle HTTP/1 connections, its HTTP/2 generation, the
//! establishment in flight, and the requests waiting for any of them.
//!
//! The cell is the only place that decides which waiting request a connection serves. All of
//! its state sits under one lock. Every transition takes that lock, lets the parts decide, and
//! collects what must happen next as deferred actions (`actions`): it releases the lock and
//! only then wakes waiters, closes connections (which may run listeners), launches
//! establishments (through the pool's launch hook) or talks to the origin's [`Admission`].
//! Nothing here performs I/O, and time comes in as an argument (or, for the few transitions
//! that have no caller-supplied instant, from the pool's clock in [`CellHooks`]).
//!
//! ```text
//!  acquire ─► a generation with a free stream, gate open? ─► H2 hit
//!          ─► idle H1 (newest first) that commits? ─► H1 hit          (the reuse hit: one lock)
//!          ─► miss: enqueue a waiter, then
//!               unbounded: launch (an attempt, or the cell's single flight / join it)
//!               bounded:   free permit ─► launch;  else publish demand, borrow an eligible
//!                          peer's connection, or reclaim a peer's idle one
//! ```
//!
//! The parts, one file each, with plain `&mut` methods on their piece of the state and the
//! cell-level transitions that are about them:
//!
//! | file | what it owns |
//! |---|---|
//! | `types` | the API: protocol types, hooks, grants, transition outcomes |
//! | `waiters` | the two waiter queues, claiming, compaction |
//! | `idle` | the HTTP/1 idle set and the release of a returning connection |
//! | `idle_lesson` | the server's idle timeout, learnt from the idle connections it closed |
//! | `attempts` | HTTP/1 attempts, spare-attempt adoption, install of a new connection |
//! | `flight` | the HTTP/2 flight, the post-ALPN converge, failed establishments |
//! | `gate` | the accepting generation and its activation turns (the generation gate) |
//! | `expiry` | idle deadlines and closing everything idle |
//! | `actions` | deferred actions, run after the lock is released |
//! | `bounded` | the bounded view of a cell: demand snapshots, fairness between partitions |
//! | `permits` | a permit delivered to the cell; seeking capacity after a bounded miss |
//! | `borrow` | using a peer's connection, handing a returning connection or a free stream to a peer; a quiet generation closing for a peer of another group |
//! | `reclaim` | closing a peer's idle connection (or quiet generation) to move its permit |
//! | `retire` | retiring a cell with nothing in it, for its owner to drop |
//!
//! # Remembered protocol (Auto mode)
//!
//! The cell remembers the protocol its origin last negotiated:
//!
//! * nothing yet: the first miss launches a flight (a *probe*); later misses wait for its ALPN
//!   result instead of dialing their own. If it says HTTP/2 they share the generation it
//!   publishes; if it says HTTP/1.1 they all launch their own attempts at once (fan-out), so a
//!   cold burst to an HTTP/2 origin costs one TLS handshake and a burst to an HTTP/1.1 origin
//!   waits one handshake longer than necessary, once.
//! * HTTP/1.1: every miss launches its own attempt, as an HTTP/1 pool should. An attempt that
//!   unexpectedly negotiates HTTP/2 (the origin was upgraded) converges into a flight, and the
//!   memory flips to HTTP/2.
//! * HTTP/2: a miss (no accepting generation, e.g. after GOAWAY) launches or joins a flight. If
//!   the flight negotiates HTTP/1.1 the memory flips and the joiners fan out.
//!
//! Every successful ALPN result overwrites the memory. A failed establishment (refused, timeout,
//! TLS error) says nothing about the protocol and leaves it unchanged.

mod actions;
mod attempts;
mod borrow;
mod bounded;
mod expiry;
mod flight;
mod gate;
mod idle;
mod idle_lesson;
mod permits;
mod quota;
mod reclaim;
mod retire;
mod types;
mod waiters;

#[cfg(test)]
// The loom models use a few of the fakes; the cell's unit tests, the rest, are not built there.
#[cfg_attr(pool_loom, allow(dead_code))]
pub(crate) mod fakes;
#[cfg(all(test, not(pool_loom)))]
mod tests;

use std::fmt;
use std::time::{Duration, Instant};

pub use gate::DEFAULT_H2_CONNECTIONS;
pub use types::{
    ACTIVATION_TURN, Acquire, ArmExpiry, CellHooks, CellTypes, CellWaiter, Converge, EstablishMode,
    FlightId, Grant, Launch, LaunchHook, PooledH1, PooledH2, Released, WentIdle,
};

use crate::admission::{Admission, CapacityLease};
use crate::events::{OpenReason, Protocol};
use crate::progress::Progress;
use crate::stats::{Gauge, Gauges};
use crate::sync::atomic::AtomicBool;
use crate::sync::{Arc, Mutex};
use crate::time::ConnectTimeout;
use crate::waiter::{Requirement, Waiter};

use actions::Actions;
use attempts::Attempts;
use bounded::{Bound, DemandState};
use flight::Flights;
use gate::H2Slot;
use idle::IdleSet;
pub use idle_lesson::IdleLearner;
pub use quota::{Ended, QuotaLearner};
use waiters::WaitQueues;

/// The admission of a bounded origin whose members are cells.
pub type CellAdmission<T> = Admission<Cell<T>>;

/// One permit of a bounded origin whose members are cells.
pub type CellPermit<T> = CapacityLease<Cell<T>>;

/// A membership of a bounded origin's admission whose members are cells.
pub type CellMembership<T> = crate::admission::Membership<Cell<T>>;

/// Everything a cell coordinates, under its one lock: one field per part.
struct State<T: CellTypes> {
    /// Requests waiting for a connection.
    waiters: WaitQueues<T>,
    /// Idle HTTP/1 connections.
    idle: IdleSet<T::H1>,
    /// HTTP/1 attempts in flight and the requests counting on them (unbounded HTTP/1 cells).
    attempts: Attempts,
    /// The HTTP/2 flight in progress.
    flights: Flights,
    /// The accepting HTTP/2 generation and its gate.
    h2: H2Slot<T::H2>,
    /// The protocol the origin last negotiated (Auto mode; fixed in the other modes).
    negotiated: Option<Protocol>,
    /// The earliest expiry sweep scheduled for this cell (every value set here was handed to
    /// the arm hook or returned by [`Cell::expire`], so maintenance holds an entry for it).
    armed_at: Option<Instant>,
    /// The last demand published to admission (bounded cells).
    demand: DemandState,
}

/// The coordination state of one (partition, origin).
pub struct Cell<T: CellTypes> {
    /// How this cell establishes connections.
    mode: EstablishMode,
    /// The pool's idle timeout (`None`: connections never expire).
    idle_timeout: Option<Duration>,
    /// Gauges of this (partition, origin).
    gauges: Arc<Gauges>,
    /// Launch, expiry and clock hooks.
    hooks: CellHooks<T>,
    /// The origin's admission, for a bounded origin.
    bound: Option<Bound<T>>,
    /// How many HTTP/2 generations an unbounded cell may hold (a bounded one is capped by its
    /// permits).
    h2_cap: usize,
    /// How many HTTP/1 connections the idle set keeps; one returning to a full set closes.
    max_idle: usize,
    /// Everything the cell coordinates, under its one lock.
    state: Mutex<State<T>>,
    /// Set under the lock when the cell is retired (see `retire`); read without it by the
    /// owner's lookups.
    retired: AtomicBool,
    /// What is known of the HTTP/2 server's per-connection request quota (see `quota.rs`),
    /// shared by the origin's cells in every partition when the owner hands them one learner
    /// ([`Cell::with_request_quota_learner`]); lock-free, as connections report to it under a
    /// cell's lock or not.
    request_quota: Arc<QuotaLearner>,
    /// What is known of the server's idle timeout (see `idle_lesson.rs`), shared like the
    /// request quota's learner ([`Cell::with_idle_timeout_learner`]).
    idle_timeout_learner: Arc<IdleLearner>,
}

impl<T: CellTypes> Cell<T> {
    /// An empty cell. `admission` is `(admission, partition index)` for a bounded origin: the
    /// cell is then one of the admission's members until it retires or is dropped, and counts
    /// in the partition's gauges there (`gauges` are used only if it is the partition's first
    /// cell of the origin).
    pub fn new(
        mode: EstablishMode,
        idle_timeout: Option<Duration>,
        gauges: Arc<Gauges>,
        hooks: CellHooks<T>,
        admission: Option<(CellAdmission<T>, usize)>,
    ) -> Cell<T> {
        let gauges = match &admission {
            Some((admission, partition)) => admission.gauges_for(*partition, gauges),
            None => gauges,
        };
        let negotiated = match mode {
            EstablishMode::Http1 => Some(Protocol::Http1),
            EstablishMode::Http2 => Some(Protocol::Http2),
            EstablishMode::Auto => None,
        };
        Cell {
            mode,
            idle_timeout,
            gauges,
            hooks,
            bound: admission.map(|(admission, partition)| Bound {
                membership: admission.join(),
                admission,
                partition,
            }),
            h2_cap: DEFAULT_H2_CONNECTIONS,
            max_idle: usize::MAX,
            state: Mutex::new(State {
                waiters: WaitQueues::new(),
                idle: IdleSet::new(),
                attempts: Attempts::default(),
                flights: Flights::default(),
                h2: H2Slot::new(),
                negotiated,
                armed_at: None,
                demand: DemandState::default(),
            }),
            retired: AtomicBool::new(false),
            request_quota: Arc::new(QuotaLearner::default()),
            idle_timeout_learner: Arc::new(IdleLearner::default()),
        }
    }

    /// Caps the HTTP/2 generations of an unbounded cell at `cap` (at least one; the default is
    /// [`DEFAULT_H2_CONNECTIONS`]). Beyond it requests wait for a free stream.
    pub fn with_h2_connection_cap(mut self, cap: usize) -> Cell<T> {
        self.h2_cap = cap.max(1);
        self
    }

    /// Learns the server's HTTP/2 request quota with `learner` (by default each cell has its
    /// own). The owner hands every cell of one origin the same learner, so that what one
    /// partition's connections teach the others keep to from their first connection, and one
    /// probe checks it for all of them.
    pub fn with_request_quota_learner(mut self, learner: Arc<QuotaLearner>) -> Cell<T> {
        self.request_quota = learner;
        self
    }

    /// Keeps at most `max` idle HTTP/1 connections (the default: no limit). A connection that
    /// finishes an exchange with nobody waiting for it, or is established for a request that
    /// no longer waits, closes ([`CloseReason::IdleLimit`](crate::CloseReason::IdleLimit))
    /// when `max` usable connections are idle already; 0 keeps none.
    pub fn with_max_idle(mut self, max: usize) -> Cell<T> {
        self.max_idle = max;
        self
    }

    /// The cell's gauges.
    pub fn gauges(&self) -> &Arc<Gauges> {
        &self.gauges
    }

    /// The establishment mode.
    pub fn mode(&self) -> EstablishMode {
        self.mode
    }

    /// The origin's admission, for a bounded origin.
    pub fn admission(&self) -> Option<&CellAdmission<T>> {
        self.bound.as_ref().map(|b| &b.admission)
    }

    /// The protocol this cell's origin last negotiated, if known.
    pub fn negotiated_protocol(&self) -> Option<Protocol> {
        self.state.lock().negotiated
    }

    /// Finds a connection for a request or queues it.
    ///
    /// `seq` is called only on a miss, to number the new waiter among all waiters (so a reuse hit
    /// writes nothing shared by the origin); `now` is read only when the request hits the HTTP/2
    /// generation (its idle age restarts). `connect_timeout` travels with the waiter to whatever
    /// establishment is launched for it.
    pub fn acquire(
        &self,
        requirement: Requirement,
        connect_timeout: Option<&ConnectTimeout>,
        seq: impl FnOnce() -> u64,
        now: impl FnOnce() -> Instant,
    ) -> Acquire<T> {
        self.acquire_for(
            OpenReason::Request,
            requirement,
            (connect_timeout, None),
            seq,
            now,
        )
    }

    /// [`acquire`](Self::acquire) on behalf of `reason`: an establishment launched for the
    /// waiter (on a miss) records it in its connection's description. A warm-up acquires as
    /// [`OpenReason::Preconnect`]. The request's `progress`, when its caller follows it,
    /// travels with the waiter as its connect timeout does.
    pub fn acquire_for(
        &self,
        reason: OpenReason,
        requirement: Requirement,
        (connect_timeout, progress): (Option<&ConnectTimeout>, Option<&Progress>),
        seq: impl FnOnce() -> u64,
        now: impl FnOnce() -> Instant,
    ) -> Acquire<T> {
        let mut actions = Actions::default();
        let mut needs_capacity = false;
        let outcome = self.acquire_locked(
            (reason, requirement),
            (connect_timeout, progress),
            seq,
            now,
            &mut actions,
            &mut needs_capacity,
        );
        self.run(actions);
        if needs_capacity {
            if let Some(bounded) = self.bounded() {
                bounded.seek_capacity();
            }
        }
        outcome
    }

    fn acquire_locked(
        &self,
        (reason, requirement): (OpenReason, Requirement),
        (connect_timeout, progress): (Option<&ConnectTimeout>, Option<&Progress>),
        seq: impl FnOnce() -> u64,
        now: impl FnOnce() -> Instant,
        actions: &mut Actions<T>,
        needs_capacity: &mut bool,
    ) -> Acquire<T> {
        let mut st = self.state.lock();
        if self.retired_under_lock() {
            // Read under the lock that set it: nothing enters a retired cell.
            return Acquire::Retired;
        }
        let gate_closed = st.h2.activations > 0 || self.gauges.get(Gauge::WaitingRequests) > 0;
        if st.h2.is_held() {
            if !gate_closed {
                // One pass: the oldest accepting generation with a free stream.
                if let Some(generation) = st.h2.reserve(Some(now())) {
                    return Acquire::H2(generation);
                }
            }
            st.h2.prune();
        }
        // A generation with a free stream serves this request once the gate lets it in.
        let h2_serves = st.h2.can_serve();
        if requirement == Requirement::Any && !h2_serves {
            if let Some(conn) = st.idle.pop_usable(&mut actions.close) {
                return Acquire::H1(conn);
            }
        }
        // A miss.
        if self.mode == EstablishMode::Http1 && requirement == Requirement::Http2 {
            return Acquire::Unsupported;
        }
        if let Some(bound) = &self.bound {
            if !bound.admission.enter_waiting(bound.partition) {
                return Acquire::Saturated;
            }
        }
        let waiter = Arc::new(
            Waiter::new(seq(), requirement, connect_timeout.cloned())
                .with_open_reason(reason)
                .with_progress(progress.cloned()),
        );
        let needs_flight = self.needs_flight(&st);
        let joins_flight = needs_flight && st.flights.in_progress();
        let connection_coming = h2_serves || joins_flight;
        if joins_flight && !h2_serves {
            // The flight another request launched is what this one waits for.
            waiter.joined();
        }
        if !connection_coming {
            if self.bound.is_some() {
                *needs_capacity = true;
            } else if needs_flight && st.h2.count() >= self.h2_cap {
                // Every generation the cap allows is at its stream limit: wait for a stream.
            } else if self.tracks_attempts() && st.attempts.spare() {
                // A spare attempt: its request was served or left while it ran.
                waiter.mark_launched();
                waiter.joined();
                st.attempts.adopt();
            } else {
                let launch = Self::start_launch(&mut st, needs_flight);
                waiter.mark_launched();
                if self.tracks_attempts() {
                    st.attempts.launch();
                }
                self.gauges.inc(Gauge::Establishing);
                actions.launches.push((waiter.clone(), launch));
            }
        }
        self.enqueue(&mut st, waiter.clone());
        Acquire::Wait(waiter)
    }

    /// The request behind `waiter` is leaving. Returns anything it had been granted to where it
    /// belongs.
    pub fn cancel(&self, waiter: &Arc<CellWaiter<T>>, now: Instant) {
        match waiter.cancel() {
            None => {
                self.left_waiting();
                if self.tracks_attempts() && waiter.is_launched() {
                    self.attempt_dependent_left(&mut self.state.lock(), waiter);
                }
                self.republish();
            }
            Some(Some(grant)) => self.refunnel(grant, now),
            Some(None) => {}
        }
    }

    /// The number of entries in the idle set, including closed ones not yet skipped.
    pub fn idle_len(&self) -> usize {
        self.state.lock().idle.len()
    }
}

impl<T: CellTypes> fmt::Debug for Cell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cell")
            .field("mode", &self.mode)
            .field("bounded", &self.bound.is_some())
            .field("gauges", &self.gauges)
            .finish()
    }
}
