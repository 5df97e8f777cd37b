//! One origin in one partition: its idle HTTP/1 connections, its HTTP/2 generation, the
//! establishment in flight, and the requests waiting for any of them.
//!
//! The cell is the only place that decides which waiting request a connection serves. All of
//! its state sits under one lock; every method takes that lock, decides, releases it, and only
//! then wakes waiters, closes connections (which may run listeners), launches establishments
//! (through the pool's launch hook) or talks to the origin's [`Admission`]. Nothing here
//! performs I/O.
//!
//! ```text
//!  acquire ─► accepting H2 and no activation pending? ─► H2 hit
//!          ─► idle H1 (newest first) that commits?    ─► H1 hit          (the reuse hit: one lock)
//!          ─► miss: enqueue a waiter, then
//!               unbounded: launch (an Attempt, or the cell's single Flight / join it)
//!               bounded:   free permit ─► launch;  else publish demand, borrow an eligible
//!                          peer's connection, or reclaim a peer's idle one
//! ```
//!
//! # Attempts and flights
//!
//! An HTTP/1 establishment is an *attempt*: several run at once and each produces a connection
//! for the waiter that launched it (or, if that waiter was served meanwhile, for the oldest
//! waiter, or the idle set). An HTTP/2 establishment is a *flight*: at most one per cell, and
//! requests that miss while it runs join it. In `Auto` mode the protocol is learned from ALPN;
//! [`Cell::converge`] is the one cell-local transition after ALPN that either joins the
//! accepting generation, joins the flight, or makes the caller the flight.
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
//!
//! # Generation gate
//!
//! When a generation is published, the waiters already queued activate first, oldest first, at
//! most [`ACTIVATION_TURN`] at a time: each activated waiter, once it takes its grant, lets the
//! next one in. While activations are pending, new arrivals queue behind them rather than
//! hitting the generation directly, so publication never barges a newer request ahead of an
//! older one and never wakes an unbounded number of tasks at once.
//!
//! # Bounded origins
//!
//! With an [`Admission`], nothing is established without a [`CapacityLease`]. A waiter that has
//! no connection coming (no attempt of its own, no flight or generation covering it) is
//! *demand*; the cell publishes the arrival order of its oldest such waiter as its ticket. A
//! permit delivered to the cell ([`Cell::deliver_permit`]) first re-probes the idle set (a
//! connection may have come back meanwhile), then launches for that oldest waiter.
//!
//! * **Borrow**: a miss searches the peers of its eligibility group for an idle HTTP/1
//!   connection or an accepting generation and serves its oldest waiter with it; the I/O stays
//!   with its owner. A connection returning to a cell with nobody waiting serves the oldest
//!   ticket of its group instead of idling.
//! * **Reclaim**: when no permit is free and no eligible connection exists, a miss closes the
//!   oldest idle HTTP/1 connection of another partition (whatever the scope: reclaim moves
//!   capacity, not I/O), and a returning connection nobody eligible can use closes instead of
//!   idling; the freed permit goes to the oldest ticket. Work in flight is never interrupted.
//! * **Pending cap**: a miss that would have to wait beyond the origin's cap fails at once
//!   ([`Acquire::Saturated`]) without touching any connection.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use crate::admission::{Admission, CapacityLease, DeliveryId, Demand, Precedence};
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::events::Protocol;
use crate::stats::{Gauge, Gauges};
use crate::sync::{Arc, Mutex};
use crate::time::TimeSource;
use crate::waiter::{Requirement, Waiter};

/// How many waiters a publication activates before the activated ones let the next in.
pub const ACTIVATION_TURN: usize = 8;

/// Queues shorter than this are never compacted.
const COMPACT_MIN: usize = 64;

/// The protocol types a cell holds, supplied by the assembled pool.
pub trait CellTypes: Send + Sync + Sized + 'static {
    /// A checked-out or idle HTTP/1 connection (the sender plus its record).
    type H1: PooledH1;
    /// A handle to an accepting HTTP/2 generation; cloning it is cheap.
    type H2: PooledH2;
    /// Why an establishment failed; cloned to every waiter that depended on it.
    type Error: Clone + Send + 'static;
}

/// What the cell needs to know about an HTTP/1 connection.
pub trait PooledH1: Send + 'static {
    /// Its lifecycle record.
    fn record(&self) -> &Arc<ConnectionRecord>;
    /// Whether the protocol layer still takes requests: hyper's `!is_closed()`, not its
    /// `is_ready()`. A connection only goes idle once hyper was ready for another request, and
    /// stays ready while idle until it closes; a fresh connection whose driver has not run yet
    /// is not "ready" but takes its first request (hyper buffers one), so readiness would
    /// wrongly retire it.
    fn is_open(&self) -> bool;
}

/// What the cell needs to know about an HTTP/2 generation.
pub trait PooledH2: Clone + Send + Sync + 'static {
    /// Its lifecycle record.
    fn record(&self) -> &Arc<ConnectionRecord>;
    /// Whether it still accepts new streams.
    fn is_accepting(&self) -> bool;
}

/// What a waiting request receives.
pub enum Grant<T: CellTypes> {
    /// Dispatch on this HTTP/1 connection (already committed `ACTIVE`). It may belong to
    /// another partition (a borrow); its record says which.
    H1(T::H1),
    /// Take a stream lease on this cell's generation, then call [`Cell::activation_done`].
    H2(T::H2),
    /// Take a stream lease on another partition's generation (a borrow under bounded
    /// pressure); no activation bookkeeping follows.
    Loan(T::H2),
    /// The establishment this request waited on failed.
    Failed(T::Error),
    /// The request requires HTTP/2 and the origin negotiated HTTP/1.1.
    Unsupported,
}

impl<T: CellTypes> fmt::Debug for Grant<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Grant::H1(_) => "Grant::H1",
            Grant::H2(_) => "Grant::H2",
            Grant::Loan(_) => "Grant::Loan",
            Grant::Failed(_) => "Grant::Failed",
            Grant::Unsupported => "Grant::Unsupported",
        })
    }
}

/// A waiter of a cell.
pub type CellWaiter<T> = Waiter<Grant<T>>;

/// How a cell establishes connections, fixed by the pool's protocol policy and the origin's
/// scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EstablishMode {
    /// Only HTTP/1.1 (cleartext without prior knowledge, or an HTTP/1-only policy).
    Http1,
    /// Only HTTP/2 (h2c with prior knowledge, or an HTTP/2-only policy over TLS).
    Http2,
    /// ALPN decides per connection (TLS offering `h2` and `http/1.1`).
    Auto,
}

/// Identity of one flight of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlightId(u64);

/// An establishment to start (on the owner partition) for a waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// An independent attempt.
    Attempt,
    /// The cell's single flight.
    Flight(FlightId),
}

/// Starts an establishment for a waiter; called with no lock held. The lease is the permit of
/// a bounded origin (`None` for an unbounded one); the establishment owns it from here on.
pub type LaunchHook<T> =
    std::sync::Arc<dyn Fn(Arc<CellWaiter<T>>, Launch, Option<CapacityLease<T>>) + Send + Sync>;

/// Called (with no lock held) when a cell with no pending expiry gains a deadline: the
/// partition's maintenance must run [`Cell::expire`] no later than the given instant.
pub type ArmExpiry = std::sync::Arc<dyn Fn(Instant) + Send + Sync>;

/// What a cell is wired to, supplied by the assembled pool.
pub struct CellHooks<T: CellTypes> {
    /// Starts establishments.
    pub launch: LaunchHook<T>,
    /// Schedules expiry sweeps.
    pub arm_expiry: Option<ArmExpiry>,
    /// The pool's clock (for idle deadlines of connections the cell handles on its own).
    pub time: std::sync::Arc<dyn TimeSource>,
}

impl<T: CellTypes> fmt::Debug for CellHooks<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CellHooks")
            .field("arm_expiry", &self.arm_expiry.is_some())
            .field("time", &self.hooks_time())
            .finish()
    }
}

impl<T: CellTypes> CellHooks<T> {
    fn hooks_time(&self) -> &dyn TimeSource {
        &*self.time
    }
}

/// The outcome of [`Cell::acquire`].
pub enum Acquire<T: CellTypes> {
    /// A reuse hit on an idle HTTP/1 connection, committed `ACTIVE`.
    H1(T::H1),
    /// A reuse hit on the accepting generation.
    H2(T::H2),
    /// The request requires HTTP/2 and this cell only establishes HTTP/1.1.
    Unsupported,
    /// The origin's pending-request cap is reached: fail without waiting.
    Saturated,
    /// A miss: wait on `waiter` (whatever establishment it needs has been started or
    /// requested already).
    Wait(Arc<CellWaiter<T>>),
}

impl<T: CellTypes> fmt::Debug for Acquire<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Acquire::H1(_) => f.write_str("Acquire::H1"),
            Acquire::H2(_) => f.write_str("Acquire::H2"),
            Acquire::Unsupported => f.write_str("Acquire::Unsupported"),
            Acquire::Saturated => f.write_str("Acquire::Saturated"),
            Acquire::Wait(waiter) => f.debug_tuple("Acquire::Wait").field(waiter).finish(),
        }
    }
}

/// The outcome of [`Cell::converge`].
#[derive(Debug, PartialEq, Eq)]
pub enum Converge {
    /// Run the HTTP/1 handshake.
    Http1,
    /// Run the HTTP/2 handshake as this flight, then [`Cell::publish_h2`].
    LeadFlight(FlightId),
    /// Another generation or flight serves the launcher: close this transport unhandshaken
    /// (and drop its permit, if any).
    Join,
}

/// What happened to a released HTTP/1 connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    /// A waiting request took it (possibly in another partition: a borrow).
    Delivered,
    /// It entered the idle set.
    Idle,
    /// It was closed instead (poisoned, closed while returning, or reclaimed).
    Closed,
}

struct IdleEntry<H> {
    conn: H,
    /// When it expires; `None` when idle timeout is disabled.
    deadline: Option<Instant>,
}

struct State<T: CellTypes> {
    /// Idle HTTP/1 connections: newest at the back (reused first), oldest at the front
    /// (expired and reclaimed first). May hold closed entries, skipped when reached.
    idle: VecDeque<IdleEntry<T::H1>>,
    /// The accepting generation, if any.
    h2: Option<T::H2>,
    /// When `h2` last dispatched (or was published); its idle age is measured from here.
    h2_last_dispatch: Option<Instant>,
    /// The flight in progress, if any.
    flight: Option<FlightId>,
    /// Source of flight identities.
    next_flight: u64,
    /// The protocol the origin last negotiated (Auto mode).
    known: Option<Protocol>,
    /// Waiters any connection can serve, oldest first; may hold entries that left.
    any: VecDeque<Arc<CellWaiter<T>>>,
    /// Waiters that require HTTP/2, oldest first; may hold entries that left.
    h2_only: VecDeque<Arc<CellWaiter<T>>>,
    /// Generation grants handed out and not yet taken (the generation gate is closed while
    /// this is non-zero or waiters are queued).
    activations: usize,
    /// Whether an expiry is scheduled for this cell.
    expiry_armed: bool,
    /// Version of the last demand snapshot (bounded cells).
    demand_version: u64,
    /// The head of the last published demand (bounded cells), to publish only on change.
    published_head: Option<u64>,
    /// HTTP/1 attempts in flight (unbounded HTTP/1 cells; see "Spare attempts").
    attempts: usize,
    /// Waiting requests that count on one of those attempts (their `launched` flag is set).
    attempt_dependents: usize,
}

/// The link of a bounded cell to its origin's admission.
struct Bound<T: CellTypes> {
    admission: Admission<T>,
    /// This cell's partition index within the admission.
    partition: usize,
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
    /// Everything the cell coordinates, under its one lock.
    state: Mutex<State<T>>,
}

/// Work decided under the cell lock, performed after it is released.
struct After<T: CellTypes> {
    grants: Vec<(Arc<CellWaiter<T>>, Grant<T>)>,
    launches: Vec<(Arc<CellWaiter<T>>, Launch)>,
    close: Vec<(T::H1, CloseReason)>,
    arm: Option<Instant>,
    publish: Option<Demand>,
}

impl<T: CellTypes> Default for After<T> {
    fn default() -> Self {
        After {
            grants: Vec::new(),
            launches: Vec::new(),
            close: Vec::new(),
            arm: None,
            publish: None,
        }
    }
}

/// A connection lent by a peer under bounded pressure.
enum Loan<T: CellTypes> {
    H1(T::H1),
    H2(T::H2),
}

impl<T: CellTypes> Cell<T> {
    /// An empty cell. `admission` is `(admission, partition index)` for a bounded origin.
    pub fn new(
        mode: EstablishMode,
        idle_timeout: Option<Duration>,
        gauges: Arc<Gauges>,
        hooks: CellHooks<T>,
        admission: Option<(Admission<T>, usize)>,
    ) -> Cell<T> {
        let known = match mode {
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
                admission,
                partition,
            }),
            state: Mutex::new(State {
                idle: VecDeque::new(),
                h2: None,
                h2_last_dispatch: None,
                flight: None,
                next_flight: 0,
                known,
                any: VecDeque::new(),
                h2_only: VecDeque::new(),
                activations: 0,
                expiry_armed: false,
                demand_version: 0,
                published_head: None,
                attempts: 0,
                attempt_dependents: 0,
            }),
        }
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
    pub fn admission(&self) -> Option<&Admission<T>> {
        self.bound.as_ref().map(|b| &b.admission)
    }

    /// The protocol this cell's origin last negotiated, if known.
    pub fn known_protocol(&self) -> Option<Protocol> {
        self.state.lock().known
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
        connect_timeout: Option<Duration>,
        seq: impl FnOnce() -> u64,
        now: impl FnOnce() -> Instant,
    ) -> Acquire<T> {
        let mut after = After::default();
        let mut needs_capacity = false;
        let outcome = self.acquire_locked(
            requirement,
            connect_timeout,
            seq,
            now,
            &mut after,
            &mut needs_capacity,
        );
        self.finish(after);
        if needs_capacity {
            self.seek_capacity();
        }
        outcome
    }

    fn acquire_locked(
        &self,
        requirement: Requirement,
        connect_timeout: Option<Duration>,
        seq: impl FnOnce() -> u64,
        now: impl FnOnce() -> Instant,
        after: &mut After<T>,
        needs_capacity: &mut bool,
    ) -> Acquire<T> {
        let mut st = self.state.lock();
        let gate_closed = st.activations > 0 || self.gauges.get(Gauge::WaitingRequests) > 0;
        let h2_serves = match &st.h2 {
            Some(generation) if generation.is_accepting() => true,
            Some(_) => {
                st.h2 = None;
                false
            }
            None => false,
        };
        if h2_serves && !gate_closed {
            st.h2_last_dispatch = Some(now());
            let generation = st.h2.clone().expect("checked above");
            return Acquire::H2(generation);
        }
        if requirement == Requirement::Any && !h2_serves {
            while let Some(entry) = st.idle.pop_back() {
                if entry.conn.record().checkout() && entry.conn.is_open() {
                    return Acquire::H1(entry.conn);
                }
                after.close.push((entry.conn, CloseReason::ProtocolClosed));
            }
        }
        // A miss.
        if self.mode == EstablishMode::Http1 && requirement == Requirement::Http2 {
            return Acquire::Unsupported;
        }
        if let Some(bound) = &self.bound {
            if !bound.admission.enter_waiting() {
                return Acquire::Saturated;
            }
        }
        let waiter = Arc::new(Waiter::new(seq(), requirement, connect_timeout));
        let needs_flight = self.needs_flight(&st);
        let covered = h2_serves || (needs_flight && st.flight.is_some());
        if !covered {
            if self.bound.is_some() {
                *needs_capacity = true;
            } else if self.tracks_attempts() && st.attempts > st.attempt_dependents {
                // A spare attempt: its request was served or left while it ran.
                waiter.mark_launched();
                st.attempt_dependents += 1;
            } else {
                let launch = self.start_launch(&mut st, needs_flight);
                waiter.mark_launched();
                if self.tracks_attempts() {
                    st.attempts += 1;
                    st.attempt_dependents += 1;
                }
                self.gauges.inc(Gauge::Establishing);
                after.launches.push((waiter.clone(), launch));
            }
        }
        self.enqueue(&mut st, waiter.clone());
        Acquire::Wait(waiter)
    }

    /// Whether a miss in this cell establishes through the cell's single flight.
    fn needs_flight(&self, st: &State<T>) -> bool {
        !matches!(
            (self.mode, st.known),
            (EstablishMode::Http1, _) | (EstablishMode::Auto, Some(Protocol::Http1))
        )
    }

    /// Picks the kind of a new establishment, installing a flight if that is what it is.
    fn start_launch(&self, st: &mut State<T>, needs_flight: bool) -> Launch {
        if !needs_flight {
            return Launch::Attempt;
        }
        let id = FlightId(st.next_flight);
        st.next_flight += 1;
        st.flight = Some(id);
        Launch::Flight(id)
    }

    fn enqueue(&self, st: &mut State<T>, waiter: Arc<CellWaiter<T>>) {
        let waiting = self.gauges.get(Gauge::WaitingRequests);
        let queue = match waiter.requirement() {
            Requirement::Any => &mut st.any,
            Requirement::Http2 => &mut st.h2_only,
        };
        // Waiters that left stay queued until reached; compact when they dominate so a storm of
        // cancellations cannot grow the queue without bound.
        if queue.len() >= COMPACT_MIN && queue.len() > 2 * waiting {
            queue.retain(|w| w.is_waiting());
        }
        queue.push_back(waiter);
        self.gauges.inc(Gauge::WaitingRequests);
    }

    /// Claims `waiter` for a grant, keeping `waiting_requests` (and the origin's pending count)
    /// in step.
    fn claim(&self, waiter: &CellWaiter<T>) -> bool {
        let claimed = waiter.claim();
        if claimed {
            self.left_waiting();
        }
        claimed
    }

    fn left_waiting(&self) {
        self.gauges.dec(Gauge::WaitingRequests);
        if let Some(bound) = &self.bound {
            bound.admission.leave_waiting();
        }
    }

    /// Pops the oldest waiting request any connection can serve, claimed.
    fn pop_any(&self, st: &mut State<T>) -> Option<Arc<CellWaiter<T>>> {
        while let Some(w) = st.any.pop_front() {
            if self.claim(&w) {
                self.uncover(st, &w);
                return Some(w);
            }
        }
        None
    }

    /// Whether this cell counts its HTTP/1 attempts (see "Spare attempts" in the module docs).
    fn tracks_attempts(&self) -> bool {
        self.bound.is_none() && self.mode == EstablishMode::Http1
    }

    /// `waiter` stopped waiting (claimed): the attempt it counted on, if any, is spare now.
    fn uncover(&self, st: &mut State<T>, waiter: &CellWaiter<T>) {
        if self.tracks_attempts() && waiter.is_launched() {
            debug_assert!(
                st.attempt_dependents > 0,
                "attempt dependents went below zero"
            );
            st.attempt_dependents = st.attempt_dependents.saturating_sub(1);
        }
    }

    /// An attempt of this cell ended (a connection, or an error); `claimed` is its launcher if
    /// the outcome went to it. If more waiting requests count on attempts than remain, one is
    /// launched for the newest of them (it had adopted the attempt that just ended).
    fn end_attempt(&self, claimed: Option<&CellWaiter<T>>) {
        if !self.tracks_attempts() {
            return;
        }
        let mut after = After::default();
        {
            let mut st = self.state.lock();
            if let Some(launcher) = claimed {
                self.uncover(&mut st, launcher);
            }
            debug_assert!(st.attempts > 0, "an attempt ended that never started");
            st.attempts = st.attempts.saturating_sub(1);
            if st.attempt_dependents > st.attempts {
                let newest = st
                    .any
                    .iter()
                    .rev()
                    .find(|w| w.is_waiting() && w.is_launched())
                    .cloned();
                if let Some(waiter) = newest {
                    st.attempts += 1;
                    self.gauges.inc(Gauge::Establishing);
                    after.launches.push((waiter, Launch::Attempt));
                }
            }
        }
        self.finish(after);
    }

    /// Pops the oldest waiting request of either queue, claimed.
    fn pop_oldest_claimed(&self, st: &mut State<T>) -> Option<Arc<CellWaiter<T>>> {
        loop {
            let State { any, h2_only, .. } = &mut *st;
            let w = pop_oldest(any, h2_only)?;
            if self.claim(&w) {
                self.uncover(st, &w);
                return Some(w);
            }
        }
    }

    /// Pops a usable idle HTTP/1 connection (newest first), committed `ACTIVE`.
    fn pop_idle(st: &mut State<T>, dead: &mut Vec<(T::H1, CloseReason)>) -> Option<T::H1> {
        while let Some(entry) = st.idle.pop_back() {
            if entry.conn.record().checkout() && entry.conn.is_open() {
                return Some(entry.conn);
            }
            dead.push((entry.conn, CloseReason::ProtocolClosed));
        }
        None
    }

    /// Takes the cell's demand snapshot (bounded cells): the arrival order of the oldest
    /// waiting request with no connection coming. Returns it only if it changed since the last
    /// publication, so admission hears about changes, not about every event.
    fn demand(&self, st: &mut State<T>, force: bool) -> Option<Demand> {
        self.bound.as_ref()?;
        let covered = st.flight.is_some() || st.h2.as_ref().is_some_and(PooledH2::is_accepting);
        let head = if covered {
            None
        } else {
            trim_front(&mut st.any);
            trim_front(&mut st.h2_only);
            let first = |q: &VecDeque<Arc<CellWaiter<T>>>| {
                q.iter()
                    .find(|w| w.is_waiting() && !w.is_launched())
                    .map(|w| w.seq())
            };
            match (first(&st.any), first(&st.h2_only)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        if !force && head == st.published_head {
            return None;
        }
        st.demand_version += 1;
        st.published_head = head;
        Some(Demand {
            version: st.demand_version,
            head,
        })
    }

    /// Performs the work decided under the lock.
    fn finish(&self, after: After<T>) {
        let After {
            grants,
            launches,
            close,
            arm,
            publish,
        } = after;
        if let (Some(at), Some(hook)) = (arm, &self.hooks.arm_expiry) {
            hook(at);
        }
        for (waiter, launch) in launches {
            (self.hooks.launch)(waiter, launch, None);
        }
        if let (Some(demand), Some(bound)) = (publish, &self.bound) {
            bound.admission.publish(bound.partition, demand);
        }
        self.deliver(grants);
        close_all(close);
    }

    /// The post-ALPN transition of an establishment launched as `launch` for `launcher`.
    pub fn converge(
        &self,
        launch: Launch,
        launcher: &Arc<CellWaiter<T>>,
        negotiated: Protocol,
    ) -> Converge {
        let mut after = After::default();
        let outcome = {
            let mut st = self.state.lock();
            if self.mode == EstablishMode::Auto {
                st.known = Some(negotiated);
            }
            let is_current_flight = matches!(launch, Launch::Flight(f) if st.flight == Some(f));
            match negotiated {
                Protocol::Http2 => {
                    let accepting = st.h2.as_ref().is_some_and(PooledH2::is_accepting);
                    if accepting || (st.flight.is_some() && !is_current_flight) {
                        if is_current_flight {
                            st.flight = None;
                        }
                        // The launcher now depends on the generation or flight it joins.
                        launcher.unmark_launched();
                        self.gauges.dec(Gauge::Establishing);
                        if accepting {
                            self.activate(&mut st, &mut after.grants);
                        }
                        Converge::Join
                    } else {
                        let id = match launch {
                            Launch::Flight(id) => id,
                            Launch::Attempt => {
                                let id = FlightId(st.next_flight);
                                st.next_flight += 1;
                                id
                            }
                        };
                        st.flight = Some(id);
                        Converge::LeadFlight(id)
                    }
                }
                Protocol::Http1 => {
                    if is_current_flight {
                        st.flight = None;
                        // The flight's joiners need connections of their own now: launched at
                        // once when unbounded, published as demand when bounded.
                        if self.bound.is_none() {
                            for w in st.any.iter() {
                                if w.is_waiting() && !Arc::ptr_eq(w, launcher) && w.mark_launched()
                                {
                                    self.gauges.inc(Gauge::Establishing);
                                    after.launches.push((w.clone(), Launch::Attempt));
                                }
                            }
                        }
                        for w in st.h2_only.iter() {
                            if !w.is_launched() && !Arc::ptr_eq(w, launcher) && self.claim(w) {
                                after.grants.push((w.clone(), Grant::Unsupported));
                            }
                        }
                        after.publish = self.demand(&mut st, false);
                    }
                    Converge::Http1
                }
            }
        };
        self.finish(after);
        outcome
    }

    /// A new HTTP/1 connection (installed `ACTIVE`) serves its launcher if the launcher still
    /// waits and accepts HTTP/1, and otherwise is released like a returning connection. A
    /// launcher that requires HTTP/2 receives [`Grant::Unsupported`].
    pub fn install_h1(&self, conn: T::H1, launcher: &Arc<CellWaiter<T>>, now: Instant) -> Released {
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

    /// Publishes the cell's demand if it changed (bounded cells).
    fn republish(&self) {
        if self.bound.is_none() {
            return;
        }
        let demand = self.demand(&mut self.state.lock(), false);
        if let (Some(demand), Some(bound)) = (demand, &self.bound) {
            bound.admission.publish(bound.partition, demand);
        }
    }

    /// An HTTP/1 connection finished an exchange and is ready for another: the oldest waiting
    /// request takes it; otherwise, under bounded pressure, a waiting peer of its group takes
    /// it (borrow) or it closes to free its permit (reclaim); otherwise it becomes idle.
    pub fn release_h1(&self, mut conn: T::H1, now: Instant) -> Released {
        if let Some(owner) = self.foreign_owner(&conn) {
            // A borrowed connection whose borrower left before using it: it belongs in its
            // owner's idle set (its gauges are the owner's).
            return owner.release_h1(conn, now);
        }
        loop {
            match self.yield_to_older_peer(conn) {
                Ok(released) => return released,
                Err(back) => conn = back,
            }
            let mut after = After::default();
            let target = {
                let mut st = self.state.lock();
                match self.pop_any(&mut st) {
                    Some(w) => {
                        after.publish = self.demand(&mut st, false);
                        Some(w)
                    }
                    None => None,
                }
            };
            let Some(target) = target else { break };
            self.finish(after);
            match target.fill(Grant::H1(conn)) {
                Ok(()) => return Released::Delivered,
                Err(Grant::H1(back)) => conn = back,
                Err(_) => unreachable!("fill returns what it was given"),
            }
        }
        // Nobody here waits.
        if let Some(bound) = &self.bound {
            if bound.admission.under_pressure() {
                match self.serve_peer_demand(conn) {
                    Ok(released) => return released,
                    Err(back) => conn = back,
                }
            }
        }
        let released = self.idle(conn, now);
        if released == Released::Idle {
            self.recheck_pressure();
        }
        released
    }

    /// Fair waiting across partitions (bounded cells under pressure): when a peer's oldest
    /// waiting request arrived before this cell's, a returning connection goes to that peer
    /// (eligible: a borrow) or closes so its permit moves there (not eligible: a reclaim),
    /// instead of serving a newer request here. Hands the connection back when this cell's own
    /// request goes first, or nobody waits here (the caller then idles it or serves peers).
    fn yield_to_older_peer(&self, conn: T::H1) -> Result<Released, T::H1> {
        let Some(bound) = &self.bound else {
            return Err(conn);
        };
        if !bound.admission.under_pressure() {
            return Err(conn);
        }
        let local_head = {
            let st = self.state.lock();
            st.any.iter().find(|w| w.is_waiting()).map(|w| w.seq())
        };
        let Some(local_head) = local_head else {
            return Err(conn);
        };
        match bound.admission.precedence(bound.partition, local_head) {
            Precedence::Local => Err(conn),
            Precedence::Borrow(peer, id) => {
                self.hand_to_peer(conn, peer, id);
                Ok(Released::Delivered)
            }
            Precedence::Reclaim => {
                if conn.record().close(CloseReason::Reclaimed, None) {
                    drop(conn);
                    Ok(Released::Closed)
                } else {
                    Err(conn)
                }
            }
        }
    }

    /// Delivers a returning connection against `peer`'s fenced ticket `id`; a peer without a
    /// cell (the pool is being dropped) has its fence lifted with no demand, and the
    /// connection returns to this cell's owner.
    fn hand_to_peer(&self, conn: T::H1, peer: usize, id: DeliveryId) {
        let bound = self.bound.as_ref().expect("bounded");
        match bound.admission.cell(peer) {
            Some(cell) => cell.accept_returning(conn, id, bound.partition),
            None => {
                bound.admission.ack(
                    peer,
                    id,
                    Demand {
                        version: u64::MAX,
                        head: None,
                    },
                );
                close_all([(conn, CloseReason::PoolDropped)]);
            }
        }
    }

    /// The second half of the idle-versus-demand handshake (see
    /// [`Admission::under_pressure`]): having entered the idle set, look again for demand a peer
    /// published meanwhile, and serve it with an idle connection.
    fn recheck_pressure(&self) {
        let Some(bound) = &self.bound else { return };
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
        if !bound.admission.under_pressure() {
            return;
        }
        let Some(Loan::H1(conn)) = self.lend_h1() else {
            return;
        };
        if let Err(conn) = self.serve_peer_demand(conn) {
            // Nobody could take it after all: back to idle, without another round.
            self.idle(conn, self.hooks.time.now());
        }
    }

    /// The owner cell of a connection that belongs to another partition of this origin.
    fn foreign_owner(&self, conn: &T::H1) -> Option<Arc<Cell<T>>> {
        if Arc::ptr_eq(conn.record().gauges(), &self.gauges) {
            return None;
        }
        let bound = self.bound.as_ref()?;
        bound
            .admission
            .peers(bound.partition)
            .filter_map(|p| bound.admission.cell(p))
            .find(|cell| Arc::ptr_eq(cell.gauges(), conn.record().gauges()))
    }

    /// Puts a connection (checked out, `ACTIVE`) into the idle set.
    fn idle(&self, conn: T::H1, now: Instant) -> Released {
        if !conn.record().checkin() {
            let reason = if conn.record().is_poisoned() {
                CloseReason::Poisoned
            } else {
                CloseReason::ProtocolClosed
            };
            close_all([(conn, reason)]);
            return Released::Closed;
        }
        let arm = {
            let mut st = self.state.lock();
            let deadline = self.idle_timeout.map(|t| now + t);
            st.idle.push_back(IdleEntry { conn, deadline });
            match deadline {
                Some(d) if !st.expiry_armed => {
                    st.expiry_armed = true;
                    Some(d)
                }
                _ => None,
            }
        };
        if let (Some(at), Some(hook)) = (arm, &self.hooks.arm_expiry) {
            hook(at);
        }
        Released::Idle
    }

    /// A returning connection with nobody waiting here, under bounded pressure: it serves the
    /// oldest ticket of its eligibility group (borrow), or closes so its permit moves to a
    /// ticket it may not serve (reclaim). Hands the connection back when neither applies.
    fn serve_peer_demand(&self, conn: T::H1) -> Result<Released, T::H1> {
        let bound = self.bound.as_ref().expect("bounded");
        if let Some((peer, id)) = bound.admission.claim_ticket_in_group(bound.partition) {
            self.hand_to_peer(conn, peer, id);
            return Ok(Released::Delivered);
        }
        if bound.admission.wants_reclaim() && conn.record().close(CloseReason::Reclaimed, None) {
            drop(conn);
            return Ok(Released::Closed);
        }
        Err(conn)
    }

    /// A peer's returning connection, delivered against this cell's fenced ticket `id`: its
    /// oldest waiting request takes it; if none waits any more, it goes back to its owner.
    fn accept_returning(&self, conn: T::H1, id: DeliveryId, owner: usize) {
        let bound = self.bound.as_ref().expect("bounded");
        let (target, demand) = {
            let mut st = self.state.lock();
            let target = self.pop_any(&mut st);
            let demand = self
                .demand(&mut st, true)
                .expect("bounded cells have demand snapshots");
            (target, demand)
        };
        let back = match target {
            Some(w) => w.fill(Grant::H1(conn)).err().map(|g| match g {
                Grant::H1(conn) => conn,
                _ => unreachable!("fill returns what it was given"),
            }),
            None => Some(conn),
        };
        bound.admission.ack(bound.partition, id, demand);
        if let Some(conn) = back {
            self.return_to_owner(conn, owner);
        }
    }

    /// Sends a borrowed connection nobody here could use back to the cell that owns it.
    fn return_to_owner(&self, conn: T::H1, owner: usize) {
        let now = self.hooks.time.now();
        match self.bound.as_ref().and_then(|b| b.admission.cell(owner)) {
            Some(cell) => {
                cell.release_h1(conn, now);
            }
            None => close_all([(conn, CloseReason::PoolDropped)]),
        }
    }

    /// After a bounded miss: take a free permit, or publish demand and try to borrow an eligible
    /// peer's connection, or reclaim an idle one from any peer.
    fn seek_capacity(&self) {
        let bound = self.bound.as_ref().expect("bounded");
        if let Some(lease) = bound.admission.take_free_permit() {
            self.deliver_permit(lease, None);
            return;
        }
        self.republish();
        if self.try_borrow() {
            return;
        }
        self.try_reclaim();
    }

    /// Looks for an idle HTTP/1 connection or an accepting generation in the partitions of this
    /// cell's eligibility group, and serves this cell's oldest waiter with it. Runs after the
    /// demand is published, with a fence between: the first half of the idle-versus-demand
    /// handshake (see [`Admission::under_pressure`]).
    fn try_borrow(&self) -> bool {
        let bound = self.bound.as_ref().expect("bounded");
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
        for peer_index in bound.admission.peers_in_group(bound.partition) {
            let Some(peer) = bound.admission.cell(peer_index) else {
                continue;
            };
            let gauges = peer.gauges();
            if gauges.get(Gauge::H1Idle) == 0 && gauges.get(Gauge::H2Accepting) == 0 {
                continue;
            }
            if let Some(loan) = peer.lend() {
                return self.accept_loan(loan, peer_index);
            }
        }
        false
    }

    /// Takes the newest idle HTTP/1 connection (committed `ACTIVE`) to lend it.
    fn lend_h1(&self) -> Option<Loan<T>> {
        let mut dead = Vec::new();
        let loan = Self::pop_idle(&mut self.state.lock(), &mut dead).map(Loan::H1);
        close_all(dead);
        loan
    }

    /// Lends one of this cell's connections to a peer: the accepting generation, or the newest
    /// idle HTTP/1 connection (committed `ACTIVE`).
    fn lend(&self) -> Option<Loan<T>> {
        let mut dead = Vec::new();
        let loan = {
            let mut st = self.state.lock();
            match &st.h2 {
                Some(generation) if generation.is_accepting() => Some(Loan::H2(generation.clone())),
                _ => Self::pop_idle(&mut st, &mut dead).map(Loan::H1),
            }
        };
        close_all(dead);
        loan
    }

    /// Serves this cell's oldest waiter with a peer's connection; gives it back if nobody waits.
    fn accept_loan(&self, loan: Loan<T>, owner: usize) -> bool {
        let mut after = After::default();
        let target = {
            let mut st = self.state.lock();
            let target = match loan {
                Loan::H1(_) => self.pop_any(&mut st),
                Loan::H2(_) => self.pop_oldest_claimed(&mut st),
            };
            after.publish = self.demand(&mut st, false);
            target
        };
        self.finish(after);
        let Some(waiter) = target else {
            if let Loan::H1(conn) = loan {
                self.return_to_owner(conn, owner);
            }
            return false;
        };
        let grant = match loan {
            Loan::H1(conn) => Grant::H1(conn),
            Loan::H2(generation) => Grant::Loan(generation),
        };
        if let Err(Grant::H1(conn)) = waiter.fill(grant) {
            self.return_to_owner(conn, owner);
        }
        true
    }

    /// Closes the oldest idle HTTP/1 connection of another partition so its permit moves to
    /// the oldest ticket (a reclaim), when no permit is free. A peer of this cell's own group
    /// whose connection became idle since the borrow search lends it instead: closing a
    /// connection this request may use would only delay it.
    fn try_reclaim(&self) {
        let bound = self.bound.as_ref().expect("bounded");
        if !bound.admission.wants_reclaim() {
            return;
        }
        let own_group: Vec<usize> = bound.admission.peers_in_group(bound.partition).collect();
        for peer_index in bound.admission.peers(bound.partition) {
            let Some(peer) = bound.admission.cell(peer_index) else {
                continue;
            };
            if peer.gauges().get(Gauge::H1Idle) == 0 {
                continue;
            }
            if own_group.contains(&peer_index) {
                if let Some(loan) = peer.lend_h1() {
                    self.accept_loan(loan, peer_index);
                    return;
                }
            } else if let Some(conn) = peer.surrender_oldest_idle() {
                close_all([(conn, CloseReason::Reclaimed)]);
                return;
            }
        }
    }

    /// Takes this cell's oldest idle HTTP/1 connection out of the idle set (committed, so a
    /// concurrent checkout cannot also take it).
    fn surrender_oldest_idle(&self) -> Option<T::H1> {
        let mut st = self.state.lock();
        while let Some(entry) = st.idle.pop_front() {
            if entry.conn.record().checkout() {
                return Some(entry.conn);
            }
        }
        None
    }

    /// A permit for this (bounded) cell: `delivery` is the fenced ticket it answers, or `None`
    /// when the cell took a free permit itself. The final local probe serves the oldest waiter
    /// with a connection that came back meanwhile (the permit then goes back); otherwise the
    /// oldest waiter without a connection coming gets an establishment that owns the permit.
    pub fn deliver_permit(&self, lease: CapacityLease<T>, delivery: Option<DeliveryId>) {
        let bound = self.bound.as_ref().expect("permits go to bounded cells");
        let mut after = After::default();
        let mut launch = None;
        let demand = {
            let mut st = self.state.lock();
            let mut served = false;
            if let Some(conn) = Self::pop_idle(&mut st, &mut after.close) {
                match self.pop_any(&mut st) {
                    Some(waiter) => {
                        after.grants.push((waiter, Grant::H1(conn)));
                        served = true;
                    }
                    None => {
                        // Nobody can use it: it stays idle (its deadline restarts).
                        if conn.record().checkin() {
                            let deadline = self.idle_timeout.map(|t| self.hooks.time.now() + t);
                            st.idle.push_back(IdleEntry { conn, deadline });
                        } else {
                            after.close.push((conn, CloseReason::ProtocolClosed));
                        }
                    }
                }
            }
            let covered = st.flight.is_some() || st.h2.as_ref().is_some_and(PooledH2::is_accepting);
            if !served && !covered {
                let needs_flight = self.needs_flight(&st);
                trim_front(&mut st.any);
                trim_front(&mut st.h2_only);
                if let Some(waiter) = oldest_waiting(&st.any, &st.h2_only, |w| !w.is_launched()) {
                    let kind = self.start_launch(&mut st, needs_flight);
                    waiter.mark_launched();
                    self.gauges.inc(Gauge::Establishing);
                    launch = Some((waiter, kind));
                }
            }
            self.demand(&mut st, true)
                .expect("bounded cells have demand snapshots")
        };
        let lease = match launch {
            Some((waiter, kind)) => {
                (self.hooks.launch)(waiter, kind, Some(lease));
                None
            }
            None => Some(lease),
        };
        match delivery {
            Some(id) => bound.admission.ack(bound.partition, id, demand),
            None => bound.admission.publish(bound.partition, demand),
        }
        // An unused permit goes back after the fence is lifted, so it can come back here if
        // this cell's demand is still the oldest.
        drop(lease);
        self.finish(after);
    }

    /// An establishment launched as `launch` for `launcher` failed: the launcher (if still
    /// waiting) and, for a flight, every waiter that depended on it receive `error`.
    pub fn fail(&self, launch: Launch, launcher: &Arc<CellWaiter<T>>, error: T::Error) {
        self.gauges.dec(Gauge::Establishing);
        let mut after = After::default();
        let claimed = self.claim(launcher);
        if claimed {
            after
                .grants
                .push((launcher.clone(), Grant::Failed(error.clone())));
        }
        self.end_attempt(claimed.then_some(&**launcher));
        {
            let mut st = self.state.lock();
            if let Launch::Flight(f) = launch {
                if st.flight == Some(f) {
                    st.flight = None;
                    let State { any, h2_only, .. } = &mut *st;
                    for w in any.iter().chain(h2_only.iter()) {
                        if !w.is_launched() && self.claim(w) {
                            after.grants.push((w.clone(), Grant::Failed(error.clone())));
                        }
                    }
                }
            }
            after.publish = self.demand(&mut st, false);
        }
        self.finish(after);
    }

    /// The flight `flight` completed its HTTP/2 handshake: `generation` becomes the accepting
    /// generation and the first activation turn is granted.
    pub fn publish_h2(&self, generation: T::H2, flight: FlightId, now: Instant) {
        let mut after = After::default();
        {
            let mut st = self.state.lock();
            if st.flight == Some(flight) {
                st.flight = None;
            }
            st.known = Some(Protocol::Http2);
            st.h2 = Some(generation);
            st.h2_last_dispatch = Some(now);
            self.activate(&mut st, &mut after.grants);
            if let Some(t) = self.idle_timeout {
                if !st.expiry_armed {
                    st.expiry_armed = true;
                    after.arm = Some(now + t);
                }
            }
            after.publish = self.demand(&mut st, false);
        }
        self.finish(after);
    }

    /// Grants the accepting generation to the oldest waiters until a turn is outstanding.
    fn activate(&self, st: &mut State<T>, grants: &mut Vec<(Arc<CellWaiter<T>>, Grant<T>)>) {
        let Some(generation) = st.h2.clone() else {
            return;
        };
        while st.activations < ACTIVATION_TURN {
            let Some(w) = self.pop_oldest_claimed(st) else {
                break;
            };
            st.activations += 1;
            grants.push((w, Grant::H2(generation.clone())));
        }
    }

    /// An activated waiter took its generation grant (or gave it back): let the next one in.
    /// If the generation stopped accepting meanwhile and requests still wait, a replacement is
    /// launched (or, bounded, requested from admission).
    pub fn activation_done(&self) {
        let mut after = After::default();
        {
            let mut st = self.state.lock();
            st.activations = st.activations.saturating_sub(1);
            if st.h2.as_ref().is_some_and(PooledH2::is_accepting) {
                self.activate(&mut st, &mut after.grants);
            } else {
                st.h2 = None;
                self.relaunch_flight(&mut st, &mut after);
            }
        }
        self.finish(after);
    }

    /// The generation stopped accepting (GOAWAY, closed dispatcher, error, poison, expiry).
    /// Removes it; if requests still wait for activation, a replacement is launched (or,
    /// bounded, requested from admission).
    pub fn retire_h2(&self, record: &Arc<ConnectionRecord>) {
        let mut after = After::default();
        {
            let mut st = self.state.lock();
            if st
                .h2
                .as_ref()
                .is_some_and(|g| Arc::ptr_eq(g.record(), record))
            {
                st.h2 = None;
                st.h2_last_dispatch = None;
                self.relaunch_flight(&mut st, &mut after);
            }
        }
        self.finish(after);
    }

    /// With no accepting generation and no flight, the oldest request still waiting without an
    /// establishment of its own launches a new flight (unbounded), or becomes demand (bounded).
    fn relaunch_flight(&self, st: &mut State<T>, after: &mut After<T>) {
        if st.flight.is_some() || st.h2.is_some() {
            return;
        }
        if self.bound.is_some() {
            after.publish = self.demand(st, false);
            return;
        }
        let Some(waiter) = oldest_waiting(&st.any, &st.h2_only, |w| !w.is_launched()) else {
            return;
        };
        let id = FlightId(st.next_flight);
        st.next_flight += 1;
        st.flight = Some(id);
        waiter.mark_launched();
        self.gauges.inc(Gauge::Establishing);
        after.launches.push((waiter, Launch::Flight(id)));
    }

    /// The request behind `waiter` is leaving. Returns anything it had been granted to where it
    /// belongs.
    pub fn cancel(&self, waiter: &Arc<CellWaiter<T>>, now: Instant) {
        match waiter.cancel() {
            None => {
                self.left_waiting();
                if self.tracks_attempts() && waiter.is_launched() {
                    self.uncover(&mut self.state.lock(), waiter);
                }
                self.republish();
            }
            Some(Some(grant)) => self.refunnel(grant, now),
            Some(None) => {}
        }
    }

    /// Takes back a grant whose waiter left before taking it.
    fn refunnel(&self, grant: Grant<T>, now: Instant) {
        match grant {
            Grant::H1(conn) => {
                // A connection the leaving request never used serves the next waiter here or
                // idles here, even if it was borrowed: it returns to its owner after its next
                // exchange, through its home.
                self.release_h1(conn, now);
            }
            Grant::H2(_) => self.activation_done(),
            Grant::Loan(_) | Grant::Failed(_) | Grant::Unsupported => {}
        }
    }

    /// Hands grants out after the lock is released, taking back those whose waiter left.
    fn deliver(&self, grants: Vec<(Arc<CellWaiter<T>>, Grant<T>)>) {
        for (waiter, grant) in grants {
            if let Err(back) = waiter.fill(grant) {
                match back {
                    Grant::H1(conn) => {
                        self.release_h1(conn, self.hooks.time.now());
                    }
                    // An activation nobody took: the next waiter goes instead.
                    Grant::H2(_) => self.activation_done(),
                    Grant::Loan(_) | Grant::Failed(_) | Grant::Unsupported => {}
                }
            }
        }
    }

    /// Closes what expired by `now`: idle HTTP/1 connections past their deadline and a
    /// generation without a dispatch for the idle timeout. Returns when to run again.
    pub fn expire(&self, now: Instant) -> Option<Instant> {
        let mut expired = Vec::new();
        let mut expired_h2 = None;
        let next = {
            let mut st = self.state.lock();
            while let Some(entry) = st.idle.front() {
                let closed = entry.conn.record().is_closed();
                if !closed && entry.deadline.is_some_and(|d| d > now) {
                    break;
                }
                let entry = st.idle.pop_front().expect("front exists");
                expired.push((entry.conn, CloseReason::IdleTimeout));
            }
            let h2_deadline = match (st.h2_last_dispatch, self.idle_timeout) {
                (Some(last), Some(t)) if st.h2.is_some() => Some(last + t),
                _ => None,
            };
            if h2_deadline.is_some_and(|d| d <= now) {
                expired_h2 = st.h2.take();
                st.h2_last_dispatch = None;
            }
            let idle_next = st.idle.front().and_then(|e| e.deadline);
            let h2_next = h2_deadline.filter(|d| *d > now);
            let next = match (idle_next, h2_next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            st.expiry_armed = next.is_some();
            next
        };
        close_all(expired);
        if let Some(generation) = expired_h2 {
            generation.record().close(CloseReason::IdleTimeout, None);
        }
        next
    }

    /// Closes every idle connection and the accepting generation with `reason` (the pool is
    /// dropped). In-flight exchanges and streams finish.
    pub fn close_idle(&self, reason: CloseReason) {
        let (idle, generation) = {
            let mut st = self.state.lock();
            st.expiry_armed = false;
            st.h2_last_dispatch = None;
            (std::mem::take(&mut st.idle), st.h2.take())
        };
        close_all(idle.into_iter().map(|e| (e.conn, reason)));
        if let Some(generation) = generation {
            generation.record().close(reason, None);
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

/// Closes connections with their reasons (no lock held), then drops them.
///
/// Every connection is closed even if a listener panics on one of them; the first panic is
/// re-raised afterwards, so the task that raised the event still unwinds.
fn close_all<H: PooledH1>(conns: impl IntoIterator<Item = (H, CloseReason)>) {
    let mut panic = None;
    for (conn, reason) in conns {
        let closed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            conn.record().close(reason, None);
        }));
        drop(conn);
        if let Err(payload) = closed {
            panic.get_or_insert(payload);
        }
    }
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

/// Drops entries that left from the front of a queue.
fn trim_front<W>(queue: &mut VecDeque<Arc<Waiter<W>>>) {
    while queue.front().is_some_and(|w| !w.is_waiting()) {
        queue.pop_front();
    }
}

/// Pops the oldest waiting entry across the two queues (the caller claims it).
fn pop_oldest<W>(
    a: &mut VecDeque<Arc<Waiter<W>>>,
    b: &mut VecDeque<Arc<Waiter<W>>>,
) -> Option<Arc<Waiter<W>>> {
    trim_front(a);
    trim_front(b);
    let take_a = match (a.front(), b.front()) {
        (None, None) => return None,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (Some(x), Some(y)) => x.seq() <= y.seq(),
    };
    if take_a { a.pop_front() } else { b.pop_front() }
}

/// The oldest waiting entry across two queues that satisfies `pred`, without removing it.
fn oldest_waiting<W>(
    a: &VecDeque<Arc<Waiter<W>>>,
    b: &VecDeque<Arc<Waiter<W>>>,
    pred: impl Fn(&Waiter<W>) -> bool,
) -> Option<Arc<Waiter<W>>> {
    let first =
        |q: &VecDeque<Arc<Waiter<W>>>| q.iter().find(|w| w.is_waiting() && pred(w)).cloned();
    match (first(a), first(b)) {
        (Some(x), Some(y)) => Some(if x.seq() <= y.seq() { x } else { y }),
        (x, y) => x.or(y),
    }
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;
    use crate::admission::Admission;
    use crate::events::{ConnectionId, ConnectionInfo};
    use crate::origin::OriginKey;
    use crate::partition::PartitionId;
    use crate::stats::PartitionStats;
    use std::sync::Mutex as StdMutex;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::task::{Context, Poll, Waker};

    pub(crate) struct Fake;
    pub(crate) struct FakeH1 {
        record: Arc<ConnectionRecord>,
        open: bool,
    }
    #[derive(Clone)]
    pub(crate) struct FakeH2 {
        record: Arc<ConnectionRecord>,
        accepting: Arc<AtomicBool>,
    }
    impl PooledH1 for FakeH1 {
        fn record(&self) -> &Arc<ConnectionRecord> {
            &self.record
        }
        fn is_open(&self) -> bool {
            self.open
        }
    }
    impl PooledH2 for FakeH2 {
        fn record(&self) -> &Arc<ConnectionRecord> {
            &self.record
        }
        fn is_accepting(&self) -> bool {
            self.accepting.load(Ordering::SeqCst) && !self.record.is_closed()
        }
    }
    impl CellTypes for Fake {
        type H1 = FakeH1;
        type H2 = FakeH2;
        type Error = &'static str;
    }

    #[derive(Debug)]
    struct FixedTime(Instant);
    impl TimeSource for FixedTime {
        fn now(&self) -> Instant {
            self.0
        }
    }

    type LaunchRecord = (Arc<CellWaiter<Fake>>, Launch, Option<CapacityLease<Fake>>);
    type Launched = Arc<StdMutex<Vec<LaunchRecord>>>;

    /// A cell whose launches are recorded instead of performed.
    struct Rig {
        cell: Arc<Cell<Fake>>,
        launched: Launched,
        armed: Arc<StdMutex<Vec<Instant>>>,
    }

    impl Rig {
        fn new(mode: EstablishMode) -> Rig {
            Rig::with(mode, Some(Duration::from_secs(90)), None)
        }

        fn with(
            mode: EstablishMode,
            idle: Option<Duration>,
            admission: Option<(Admission<Fake>, usize)>,
        ) -> Rig {
            let launched: Launched = Arc::default();
            let armed: Arc<StdMutex<Vec<Instant>>> = Arc::default();
            let log = launched.clone();
            let arm_log = armed.clone();
            let hooks = CellHooks {
                launch: std::sync::Arc::new(move |w, l, lease| {
                    log.lock().unwrap().push((w, l, lease))
                }),
                arm_expiry: Some(std::sync::Arc::new(move |at| {
                    arm_log.lock().unwrap().push(at)
                })),
                time: std::sync::Arc::new(FixedTime(Instant::now())),
            };
            let bounded = admission.clone();
            let cell = Arc::new(Cell::new(
                mode,
                idle,
                Arc::new(Gauges::default()),
                hooks,
                admission,
            ));
            if let Some((admission, partition)) = bounded {
                admission.register(partition, cell.clone());
            }
            Rig {
                cell,
                launched,
                armed,
            }
        }

        /// The launches so far, without their permits (those are dropped, i.e. returned).
        fn launches(&self) -> Vec<(Arc<CellWaiter<Fake>>, Launch)> {
            self.launched
                .lock()
                .unwrap()
                .drain(..)
                .map(|(w, l, _)| (w, l))
                .collect()
        }

        /// The launches so far, keeping their permits.
        fn launches_with_permits(&self) -> Vec<LaunchRecord> {
            std::mem::take(&mut *self.launched.lock().unwrap())
        }

        fn wait(&self, requirement: Requirement, seq: u64, now: Instant) -> Arc<CellWaiter<Fake>> {
            match self.cell.acquire(requirement, None, || seq, || now) {
                Acquire::Wait(w) => w,
                other => panic!("expected a miss, got {other:?}"),
            }
        }
    }

    static IDS: AtomicU64 = AtomicU64::new(1);

    fn record(cell: &Cell<Fake>, protocol: Protocol) -> Arc<ConnectionRecord> {
        let origin = OriginKey::from_uri(&"https://cell.test".parse().unwrap()).unwrap();
        let id = ConnectionId::from_u64(IDS.fetch_add(1, Ordering::Relaxed));
        let info = ConnectionInfo::new(id, origin, PartitionId::ANONYMOUS, protocol);
        // Connections the tests create out of thin air still pass through `establishing`.
        if cell.gauges().get(Gauge::Establishing) == 0 {
            cell.gauges().inc(Gauge::Establishing);
        }
        ConnectionRecord::install(info, cell.gauges().clone(), None, None)
    }

    fn h1(cell: &Cell<Fake>) -> FakeH1 {
        FakeH1 {
            record: record(cell, Protocol::Http1),
            open: true,
        }
    }

    /// A connection that comes back from an exchange, established before this test's attempts
    /// (so it does not take their `establishing` count).
    fn returning(cell: &Cell<Fake>) -> FakeH1 {
        cell.gauges().inc(Gauge::Establishing);
        h1(cell)
    }

    fn h2(cell: &Cell<Fake>) -> FakeH2 {
        FakeH2 {
            record: record(cell, Protocol::Http2),
            accepting: Arc::new(AtomicBool::new(true)),
        }
    }

    fn take(w: &Arc<CellWaiter<Fake>>) -> Option<Grant<Fake>> {
        let mut cx = Context::from_waker(Waker::noop());
        match w.poll_take(&mut cx) {
            Poll::Ready(g) => Some(g),
            Poll::Pending => None,
        }
    }

    #[test]
    fn http1_miss_install_release_then_hit() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let w = rig.wait(Requirement::Any, 1, t0);
        assert_eq!(rig.launches()[0].1, Launch::Attempt);
        let s = c.gauges().snapshot();
        assert_eq!((s.establishing, s.waiting_requests), (1, 1));
        assert_eq!(c.install_h1(h1(c), &w, t0), Released::Delivered);
        let Some(Grant::H1(conn)) = take(&w) else {
            panic!("launcher gets its connection")
        };
        let s = c.gauges().snapshot();
        assert_eq!((s.establishing, s.h1_active, s.waiting_requests), (0, 1, 0));
        assert_eq!(c.release_h1(conn, t0), Released::Idle);
        assert_eq!(c.gauges().snapshot().h1_idle, 1);
        assert!(
            matches!(
                c.acquire(Requirement::Any, None, || 2, || t0),
                Acquire::H1(_)
            ),
            "reuse hit"
        );
        assert_eq!(c.gauges().snapshot().h1_active, 1);
    }

    #[test]
    fn idle_reuse_is_newest_first_and_expiry_oldest_first() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let (a, b) = (h1(c), h1(c));
        let (a_id, b_id) = (a.record.info().id(), b.record.info().id());
        c.release_h1(a, t0);
        c.release_h1(b, t0 + Duration::from_secs(10));
        let Acquire::H1(newest) = c.acquire(Requirement::Any, None, || 1, || t0) else {
            panic!()
        };
        assert_eq!(newest.record.info().id(), b_id);
        c.release_h1(newest, t0 + Duration::from_secs(20));
        let next = c.expire(t0 + Duration::from_secs(90));
        assert_eq!(next, Some(t0 + Duration::from_secs(110)));
        let s = c.gauges().snapshot();
        assert_eq!(
            (s.h1_idle, s.h1_draining),
            (1, 1),
            "a is closed but its I/O is not gone"
        );
        let Acquire::H1(left) = c.acquire(Requirement::Any, None, || 2, || t0) else {
            panic!()
        };
        assert_ne!(left.record.info().id(), a_id);
    }

    #[test]
    fn closed_idle_connections_are_skipped() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let good = h1(c);
        let good_id = good.record.info().id();
        c.release_h1(good, t0);
        let shut = h1(c);
        c.release_h1(
            FakeH1 {
                record: shut.record.clone(),
                open: false,
            },
            t0,
        );
        let closed = h1(c);
        let closed_record = closed.record.clone();
        c.release_h1(closed, t0);
        closed_record.close(CloseReason::ProtocolClosed, None);
        let Acquire::H1(got) = c.acquire(Requirement::Any, None, || 1, || t0) else {
            panic!()
        };
        assert_eq!(got.record.info().id(), good_id);
        assert!(
            shut.record.is_closed(),
            "an idle connection hyper closed is retired"
        );
    }

    #[test]
    fn a_miss_adopts_the_attempt_of_a_request_served_meanwhile() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        assert_eq!(rig.launches().len(), 1);
        // A returning connection serves w1 while its attempt still runs.
        assert_eq!(c.release_h1(returning(c), t0), Released::Delivered);
        assert!(matches!(take(&w1), Some(Grant::H1(_))));
        let w2 = rig.wait(Requirement::Any, 2, t0);
        assert!(rig.launches().is_empty(), "w2 adopted the spare attempt");
        assert_eq!(c.gauges().snapshot().establishing, 1);
        // The attempt completes: its connection goes to w2.
        assert_eq!(c.install_h1(h1(c), &w1, t0), Released::Delivered);
        assert!(matches!(take(&w2), Some(Grant::H1(_))));
        assert!(rig.launches().is_empty());
    }

    #[test]
    fn a_request_that_left_leaves_its_attempt_to_the_next_miss() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        c.cancel(&w1, t0);
        let w2 = rig.wait(Requirement::Any, 2, t0);
        let w3 = rig.wait(Requirement::Any, 3, t0);
        let launches = rig.launches();
        assert_eq!(
            launches.len(),
            2,
            "one launch for w1, one for w3; w2 adopted"
        );
        assert!(Arc::ptr_eq(&launches[1].0, &w3));
        assert_eq!(c.install_h1(h1(c), &w1, t0), Released::Delivered);
        assert!(matches!(take(&w2), Some(Grant::H1(_))));
        assert!(take(&w3).is_none());
    }

    #[test]
    fn an_adopted_attempt_that_fails_is_replaced_not_inherited() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        rig.launches();
        c.release_h1(returning(c), t0);
        assert!(matches!(take(&w1), Some(Grant::H1(_))));
        let w2 = rig.wait(Requirement::Any, 2, t0);
        assert!(rig.launches().is_empty());
        c.fail(Launch::Attempt, &w1, "refused");
        assert!(take(&w2).is_none(), "w2 does not get w1's error");
        let replacement = rig.launches();
        assert_eq!(replacement.len(), 1, "w2 gets an attempt of its own");
        assert!(Arc::ptr_eq(&replacement[0].0, &w2));
        assert_eq!(c.gauges().snapshot().establishing, 1);
        c.fail(Launch::Attempt, &w2, "refused again");
        assert!(matches!(take(&w2), Some(Grant::Failed("refused again"))));
        assert_eq!(c.gauges().snapshot().establishing, 0);
    }

    #[test]
    fn concurrent_misses_each_launch_while_no_attempt_is_spare() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let waiters: Vec<_> = (1..=4).map(|i| rig.wait(Requirement::Any, i, t0)).collect();
        assert_eq!(rig.launches().len(), 4);
        for w in &waiters {
            assert_eq!(
                rig.cell.install_h1(h1(&rig.cell), w, t0),
                Released::Delivered
            );
        }
        assert!(
            rig.launches().is_empty(),
            "no replacement: every attempt served its own"
        );
    }

    #[test]
    fn released_connection_goes_to_the_oldest_waiter() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let w2 = rig.wait(Requirement::Any, 2, t0);
        assert_eq!(c.release_h1(h1(c), t0), Released::Delivered);
        assert!(matches!(take(&w1), Some(Grant::H1(_))));
        assert!(take(&w2).is_none());
        assert_eq!(c.install_h1(h1(c), &w2, t0), Released::Delivered);
        assert!(matches!(take(&w2), Some(Grant::H1(_))));
    }

    #[test]
    fn cancelled_waiter_gives_its_connection_to_the_next() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let w2 = rig.wait(Requirement::Any, 2, t0);
        c.release_h1(h1(c), t0);
        c.cancel(&w1, t0);
        assert!(matches!(take(&w2), Some(Grant::H1(_))));
        assert_eq!(c.gauges().snapshot().waiting_requests, 0);
        let w3 = rig.wait(Requirement::Any, 3, t0);
        c.cancel(&w3, t0);
        assert_eq!(c.release_h1(h1(c), t0), Released::Idle);
    }

    #[test]
    fn http1_mode_refuses_http2_requirement() {
        let rig = Rig::new(EstablishMode::Http1);
        assert!(matches!(
            rig.cell
                .acquire(Requirement::Http2, None, || 1, Instant::now),
            Acquire::Unsupported
        ));
    }

    #[test]
    fn auto_cold_burst_shares_one_flight_and_publication() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Auto);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let joiners: Vec<_> = (2..=20)
            .map(|seq| rig.wait(Requirement::Any, seq, t0))
            .collect();
        let launches = rig.launches();
        assert_eq!(launches.len(), 1, "later misses wait for the probe");
        let Launch::Flight(f) = launches[0].1 else {
            panic!("the probe is a flight")
        };
        assert_eq!(c.gauges().snapshot().establishing, 1);
        assert_eq!(
            c.converge(Launch::Flight(f), &w1, Protocol::Http2),
            Converge::LeadFlight(f)
        );
        c.publish_h2(h2(c), f, t0);
        assert_eq!(c.known_protocol(), Some(Protocol::Http2));
        assert!(matches!(take(&w1), Some(Grant::H2(_))));
        assert_eq!(
            joiners.iter().filter(|w| !w.is_waiting()).count(),
            ACTIVATION_TURN - 1
        );
        let late = rig.wait(Requirement::Any, 100, t0);
        assert!(
            rig.launches().is_empty(),
            "the gate queues new arrivals without launching"
        );
        c.activation_done();
        for w in &joiners {
            while w.is_waiting() {
                c.activation_done();
            }
            assert!(matches!(take(w), Some(Grant::H2(_))));
        }
        while late.is_waiting() {
            c.activation_done();
        }
        assert!(matches!(take(&late), Some(Grant::H2(_))));
        for _ in 0..ACTIVATION_TURN {
            c.activation_done();
        }
        assert!(
            matches!(
                c.acquire(Requirement::Any, None, || 200, || t0),
                Acquire::H2(_)
            ),
            "gate open: direct hit"
        );
    }

    #[test]
    fn flight_that_negotiates_http1_fans_out() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Auto);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let Launch::Flight(f) = rig.launches()[0].1 else {
            panic!()
        };
        let w2 = rig.wait(Requirement::Any, 2, t0);
        let w3 = rig.wait(Requirement::Any, 3, t0);
        let strict = rig.wait(Requirement::Http2, 4, t0);
        assert_eq!(
            c.converge(Launch::Flight(f), &w1, Protocol::Http1),
            Converge::Http1
        );
        let fan_out = rig.launches();
        assert_eq!(fan_out.len(), 2);
        assert!(fan_out.iter().all(|(_, l)| *l == Launch::Attempt));
        assert!(
            fan_out.iter().any(|(w, _)| Arc::ptr_eq(w, &w2))
                && fan_out.iter().any(|(w, _)| Arc::ptr_eq(w, &w3))
        );
        assert!(matches!(take(&strict), Some(Grant::Unsupported)));
        assert_eq!(
            c.gauges().snapshot().establishing,
            3,
            "probe plus two fanned-out attempts"
        );
        assert_eq!(c.known_protocol(), Some(Protocol::Http1));
        rig.wait(Requirement::Any, 5, t0);
        assert_eq!(
            rig.launches()[0].1,
            Launch::Attempt,
            "with HTTP/1 remembered, misses launch attempts"
        );
    }

    #[test]
    fn http2_requiring_launcher_gets_unsupported_and_the_connection_stays() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Auto);
        let c = &rig.cell;
        let w = rig.wait(Requirement::Http2, 1, t0);
        let Launch::Flight(f) = rig.launches()[0].1 else {
            panic!()
        };
        assert_eq!(
            c.converge(Launch::Flight(f), &w, Protocol::Http1),
            Converge::Http1
        );
        assert_eq!(c.install_h1(h1(c), &w, t0), Released::Idle);
        assert!(matches!(take(&w), Some(Grant::Unsupported)));
        assert_eq!(c.gauges().snapshot().h1_idle, 1);
    }

    #[test]
    fn attempts_that_negotiate_http2_converge_to_one_flight() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Auto);
        let c = &rig.cell;
        let w0 = rig.wait(Requirement::Any, 0, t0);
        let Launch::Flight(f0) = rig.launches()[0].1 else {
            panic!()
        };
        c.converge(Launch::Flight(f0), &w0, Protocol::Http1);
        c.install_h1(h1(c), &w0, t0);
        let Some(Grant::H1(conn)) = take(&w0) else {
            panic!()
        };
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let w2 = rig.wait(Requirement::Any, 2, t0);
        let Converge::LeadFlight(f) = c.converge(Launch::Attempt, &w1, Protocol::Http2) else {
            panic!()
        };
        assert_eq!(
            c.converge(Launch::Attempt, &w2, Protocol::Http2),
            Converge::Join
        );
        assert!(!w2.is_launched(), "the joiner now depends on the flight");
        c.publish_h2(h2(c), f, t0);
        assert!(matches!(take(&w1), Some(Grant::H2(_))));
        assert!(matches!(take(&w2), Some(Grant::H2(_))));
        drop(conn);
    }

    #[test]
    fn failed_flight_fails_its_dependents_only() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http2);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let Launch::Flight(f) = rig.launches()[0].1 else {
            panic!()
        };
        let w2 = rig.wait(Requirement::Http2, 2, t0);
        c.fail(Launch::Flight(f), &w1, "refused");
        assert!(matches!(take(&w1), Some(Grant::Failed("refused"))));
        assert!(matches!(take(&w2), Some(Grant::Failed("refused"))));
        assert_eq!(c.gauges().snapshot(), PartitionStats::default());
        rig.wait(Requirement::Any, 3, t0);
        assert!(
            matches!(rig.launches()[0].1, Launch::Flight(_)),
            "the next miss starts a new flight"
        );
    }

    #[test]
    fn retired_generation_relaunches_for_queued_waiters() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http2);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let Launch::Flight(f) = rig.launches()[0].1 else {
            panic!()
        };
        let waiters: Vec<_> = (2..=12)
            .map(|s| rig.wait(Requirement::Any, s, t0))
            .collect();
        let generation = h2(c);
        c.publish_h2(generation.clone(), f, t0);
        assert!(matches!(take(&w1), Some(Grant::H2(_))));
        generation.accepting.store(false, Ordering::SeqCst);
        c.retire_h2(&generation.record);
        let relaunch = rig.launches();
        assert_eq!(relaunch.len(), 1, "queued waiters need a new flight");
        assert!(matches!(relaunch[0].1, Launch::Flight(_)));
        assert!(waiters.iter().any(|w| Arc::ptr_eq(w, &relaunch[0].0)));
        assert!(relaunch[0].0.is_waiting());
    }

    #[test]
    fn idle_generation_expires_after_the_timeout_since_last_dispatch() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http2);
        let c = &rig.cell;
        let w1 = rig.wait(Requirement::Any, 1, t0);
        let Launch::Flight(f) = rig.launches()[0].1 else {
            panic!()
        };
        let generation = h2(c);
        c.publish_h2(generation.clone(), f, t0);
        take(&w1);
        c.activation_done();
        let t30 = t0 + Duration::from_secs(30);
        assert!(matches!(
            c.acquire(Requirement::Any, None, || 2, || t30),
            Acquire::H2(_)
        ));
        assert_eq!(
            c.expire(t0 + Duration::from_secs(90)),
            Some(t30 + Duration::from_secs(90))
        );
        assert!(!generation.record.is_closed());
        assert_eq!(c.expire(t30 + Duration::from_secs(90)), None);
        assert_eq!(
            generation.record.close_reason(),
            Some(CloseReason::IdleTimeout)
        );
    }

    #[test]
    fn close_idle_closes_everything_idle() {
        let t0 = Instant::now();
        let rig = Rig::new(EstablishMode::Http1);
        let c = &rig.cell;
        let a = h1(c);
        let record = a.record.clone();
        c.release_h1(a, t0);
        c.close_idle(CloseReason::PoolDropped);
        assert_eq!(record.close_reason(), Some(CloseReason::PoolDropped));
        assert_eq!(c.idle_len(), 0);
    }

    #[test]
    fn arm_hook_fires_once_until_the_sweep() {
        let rig = Rig::with(EstablishMode::Http1, Some(Duration::from_secs(5)), None);
        let c = &rig.cell;
        let t0 = Instant::now();
        c.release_h1(h1(c), t0);
        c.release_h1(h1(c), t0 + Duration::from_secs(1));
        assert_eq!(
            *rig.armed.lock().unwrap(),
            vec![t0 + Duration::from_secs(5)]
        );
        assert_eq!(
            c.expire(t0 + Duration::from_secs(5)),
            Some(t0 + Duration::from_secs(6))
        );
        assert_eq!(c.expire(t0 + Duration::from_secs(6)), None);
        c.release_h1(h1(c), t0 + Duration::from_secs(7));
        assert_eq!(
            rig.armed.lock().unwrap().len(),
            2,
            "re-armed after the cell emptied"
        );
    }

    // ---- bounded origins ----

    /// Two partitions of one bounded origin; `groups` decides eligibility.
    fn bounded(
        limit: usize,
        pending: Option<usize>,
        groups: Vec<usize>,
    ) -> (Admission<Fake>, Vec<Rig>) {
        let admission = Admission::new(limit, pending, groups.clone());
        let rigs = (0..groups.len())
            .map(|p| {
                Rig::with(
                    EstablishMode::Http1,
                    Some(Duration::from_secs(90)),
                    Some((admission.clone(), p)),
                )
            })
            .collect();
        (admission, rigs)
    }

    #[test]
    fn bounded_miss_takes_a_free_permit_and_the_launch_owns_it() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(2, None, vec![0]);
        let w = rigs[0].wait(Requirement::Any, 1, t0);
        let mut launches = rigs[0].launches_with_permits();
        assert_eq!(launches.len(), 1);
        assert!(Arc::ptr_eq(&launches[0].0, &w));
        assert!(launches[0].2.is_some(), "the establishment owns a permit");
        assert_eq!(admission.available(), 1);
        launches.pop().unwrap().2.unwrap().release();
        assert_eq!(admission.available(), 2, "a dropped permit comes back");
    }

    #[test]
    fn permits_go_to_the_oldest_ticket_across_partitions() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(1, None, vec![0, 1]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let first = rigs[0].launches_with_permits().pop().unwrap();
        let b_old = rigs[1].wait(Requirement::Any, 2, t0);
        let _a_new = rigs[0].wait(Requirement::Any, 3, t0);
        assert!(
            rigs[1].launches().is_empty() && rigs[0].launches().is_empty(),
            "no permit free"
        );
        // The permit goes to partition 1 (head arrived at 2), not partition 0 (head at 3).
        drop(first.2);
        let to_b = rigs[1].launches_with_permits();
        assert_eq!(to_b.len(), 1);
        assert!(Arc::ptr_eq(&to_b[0].0, &b_old));
        assert!(rigs[0].launches().is_empty());
        assert_eq!(admission.available(), 0);
    }

    #[test]
    fn pending_cap_fails_fast_without_touching_anything() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(1, Some(2), vec![0]);
        let _w1 = rigs[0].wait(Requirement::Any, 1, t0);
        let _w2 = rigs[0].wait(Requirement::Any, 2, t0);
        assert!(matches!(
            rigs[0].cell.acquire(Requirement::Any, None, || 3, || t0),
            Acquire::Saturated
        ));
        assert_eq!(admission.waiting(), 2);
        assert_eq!(rigs[0].cell.gauges().snapshot().waiting_requests, 2);
    }

    #[test]
    fn cancelling_the_demand_head_returns_its_permit() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(1, None, vec![0, 1]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let first = rigs[0].launches_with_permits().pop().unwrap();
        let w = rigs[1].wait(Requirement::Any, 2, t0);
        rigs[1].cell.cancel(&w, t0);
        drop(first.2);
        assert_eq!(
            admission.available(),
            1,
            "no demand left: the permit is free"
        );
        assert_eq!(
            admission.waiting(),
            1,
            "only partition 0's launcher still waits"
        );
    }

    /// Completes a launch: a connection that owns the launch's permit, delivered to its launcher.
    /// Its socket is reported gone when the returned link says so (`link.gone()`).
    fn establish(rig: &Rig, t0: Instant) -> (FakeH1, Arc<crate::connection::PhysicalLink>) {
        let (waiter, _, lease) = rig.launches_with_permits().pop().expect("a launch");
        let origin = OriginKey::from_uri(&"https://cell.test".parse().unwrap()).unwrap();
        let id = ConnectionId::from_u64(IDS.fetch_add(1, Ordering::Relaxed));
        let info = ConnectionInfo::new(id, origin, PartitionId::ANONYMOUS, Protocol::Http1);
        let permit = lease.map(|l| Box::new(l) as Box<dyn crate::connection::Releasable>);
        let link = crate::connection::PhysicalLink::new(rig.cell.gauges().clone());
        let record = ConnectionRecord::install(info, rig.cell.gauges().clone(), None, permit);
        link.attach(&record);
        rig.cell
            .install_h1(FakeH1 { record, open: true }, &waiter, t0);
        let Some(Grant::H1(conn)) = take(&waiter) else {
            panic!("the launcher gets its connection")
        };
        (conn, link)
    }

    #[test]
    fn a_waiter_borrows_an_idle_connection_of_its_group() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(1, None, vec![0, 0]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let (conn, _link) = establish(&rigs[0], t0);
        rigs[0].cell.release_h1(conn, t0);
        assert_eq!(rigs[0].cell.gauges().snapshot().h1_idle, 1);

        let borrower = rigs[1].wait(Requirement::Any, 2, t0);
        let Some(Grant::H1(borrowed)) = take(&borrower) else {
            panic!("borrowed the peer's idle connection")
        };
        assert!(
            Arc::ptr_eq(borrowed.record.gauges(), rigs[0].cell.gauges()),
            "it stays partition 0's"
        );
        assert!(rigs[1].launches().is_empty(), "nothing new was established");
        assert_eq!((admission.waiting(), admission.available()), (0, 0));
        // Returned through the borrower's cell, it goes home to its owner.
        rigs[1].cell.release_h1(borrowed, t0);
        assert_eq!(rigs[0].cell.gauges().snapshot().h1_idle, 1);
        assert_eq!(rigs[0].cell.idle_len(), 1);
        assert_eq!(rigs[1].cell.idle_len(), 0);
    }

    #[test]
    fn a_returning_connection_serves_an_eligible_peer_that_waits() {
        let t0 = Instant::now();
        let (_admission, rigs) = bounded(1, None, vec![0, 0]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let (conn, _link) = establish(&rigs[0], t0);
        let waiting = rigs[1].wait(Requirement::Any, 2, t0);
        assert!(take(&waiting).is_none(), "busy connection, no permit");
        assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Delivered);
        assert!(
            matches!(take(&waiting), Some(Grant::H1(_))),
            "claimed as it returned"
        );
    }

    #[test]
    fn without_eligibility_an_idle_peer_connection_is_reclaimed() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(1, None, vec![0, 1]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let (conn, link) = establish(&rigs[0], t0);
        let record0 = conn.record.clone();
        rigs[0].cell.release_h1(conn, t0);
        assert_eq!(admission.available(), 0);

        let w = rigs[1].wait(Requirement::Any, 2, t0);
        assert_eq!(record0.close_reason(), Some(CloseReason::Reclaimed));
        assert!(
            rigs[1].launches_with_permits().is_empty(),
            "the permit moves once the socket is gone"
        );
        link.gone();
        let to_b = rigs[1].launches_with_permits();
        assert_eq!(
            to_b.len(),
            1,
            "the reclaimed permit went to the waiting partition"
        );
        assert!(Arc::ptr_eq(&to_b[0].0, &w) && to_b[0].2.is_some());
    }

    #[test]
    fn a_returning_connection_nobody_eligible_can_use_is_reclaimed() {
        let t0 = Instant::now();
        let (_admission, rigs) = bounded(1, None, vec![0, 1]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let (conn, link) = establish(&rigs[0], t0);
        let record0 = conn.record.clone();
        let w = rigs[1].wait(Requirement::Any, 2, t0);
        assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Closed);
        assert_eq!(record0.close_reason(), Some(CloseReason::Reclaimed));
        link.gone();
        let to_b = rigs[1].launches_with_permits();
        assert!(Arc::ptr_eq(&to_b[0].0, &w) && to_b[0].2.is_some());
    }

    /// Partition 0's connection is busy and its own requests keep arriving; partition 1's
    /// request arrived before the newer one of partition 0.
    #[allow(clippy::type_complexity)]
    fn older_peer_waits(
        groups: Vec<usize>,
    ) -> (
        Vec<Rig>,
        FakeH1,
        Arc<crate::connection::PhysicalLink>,
        Arc<CellWaiter<Fake>>,
    ) {
        let t0 = Instant::now();
        let (_admission, rigs) = bounded(1, None, groups);
        rigs[0].wait(Requirement::Any, 1, t0);
        let (conn, link) = establish(&rigs[0], t0);
        let older = rigs[1].wait(Requirement::Any, 2, t0);
        let _newer_local = rigs[0].wait(Requirement::Any, 3, t0);
        (rigs, conn, link, older)
    }

    #[test]
    fn a_returning_connection_serves_an_older_eligible_peer_before_a_newer_local_request() {
        let t0 = Instant::now();
        let (rigs, conn, _link, older) = older_peer_waits(vec![0, 0]);
        assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Delivered);
        assert!(
            matches!(take(&older), Some(Grant::H1(_))),
            "the peer's older request was served first"
        );
        assert_eq!(rigs[0].cell.gauges().snapshot().waiting_requests, 1);
    }

    #[test]
    fn a_returning_connection_closes_for_an_older_ineligible_peer() {
        let t0 = Instant::now();
        let (rigs, conn, link, older) = older_peer_waits(vec![0, 1]);
        let record = conn.record.clone();
        assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Closed);
        assert_eq!(record.close_reason(), Some(CloseReason::Reclaimed));
        assert!(
            take(&older).is_none(),
            "it gets the permit, not the connection"
        );
        link.gone();
        let to_b = rigs[1].launches_with_permits();
        assert_eq!(to_b.len(), 1, "the permit moved to the older request");
        assert!(Arc::ptr_eq(&to_b[0].0, &older) && to_b[0].2.is_some());
        assert!(rigs[0].launches().is_empty());
    }

    #[test]
    fn one_reclaim_at_a_time_for_an_older_ineligible_peer() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(2, None, vec![0, 1]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let (first, first_link) = establish(&rigs[0], t0);
        rigs[0].wait(Requirement::Any, 2, t0);
        let (second, _second_link) = establish(&rigs[0], t0);
        let older = rigs[1].wait(Requirement::Any, 3, t0);
        let _newer_local = rigs[0].wait(Requirement::Any, 4, t0);
        let _newest_local = rigs[0].wait(Requirement::Any, 5, t0);
        assert_eq!(rigs[0].cell.release_h1(first, t0), Released::Closed);
        assert_eq!(
            rigs[0].cell.release_h1(second, t0),
            Released::Delivered,
            "the first reclaim's permit is on its way: the second connection serves locally"
        );
        first_link.gone();
        let to_b = rigs[1].launches_with_permits();
        assert!(Arc::ptr_eq(&to_b[0].0, &older) && to_b[0].2.is_some());
        assert_eq!(admission.available(), 0);
    }

    #[test]
    fn a_newer_peer_request_does_not_overtake_a_local_one() {
        let t0 = Instant::now();
        let (_admission, rigs) = bounded(1, None, vec![0, 0]);
        rigs[0].wait(Requirement::Any, 1, t0);
        let (conn, _link) = establish(&rigs[0], t0);
        let local = rigs[0].wait(Requirement::Any, 2, t0);
        let newer_peer = rigs[1].wait(Requirement::Any, 3, t0);
        assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Delivered);
        assert!(matches!(take(&local), Some(Grant::H1(_))));
        assert!(take(&newer_peer).is_none());
    }

    #[test]
    fn a_permit_delivery_prefers_a_connection_that_came_back() {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(2, None, vec![0]);
        let c = &rigs[0].cell;
        c.acquire(Requirement::Any, None, || 1, || t0);
        let (conn, _link) = establish(&rigs[0], t0);
        // A second request waits for capacity while the connection is busy... and the permit
        // it would get is held back, so the only way to serve it is the connection coming back.
        let w2 = rigs[0].wait(Requirement::Any, 2, t0);
        let (_, _, second_permit) = rigs[0].launches_with_permits().pop().unwrap();
        c.release_h1(conn, t0);
        let served = take(&w2);
        assert!(
            matches!(served, Some(Grant::H1(_))),
            "the returning connection served it"
        );
        drop(second_permit);
        assert_eq!(
            admission.available(),
            1,
            "the unused permit came back; the connection keeps its own"
        );
        drop(served);
    }
}
