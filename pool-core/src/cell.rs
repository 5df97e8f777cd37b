//! One origin in one partition: its idle HTTP/1 connections, its HTTP/2 generation, the
//! establishment in flight, and the requests waiting for any of them.
//!
//! The cell is the only place that decides which waiting request a connection serves. All of
//! its state sits under one lock; every method takes that lock once, decides, releases it, and
//! only then wakes waiters or closes connections (which may run listeners). Nothing here
//! performs I/O: launching an establishment is *returned* to the caller as a [`Launch`].
//!
//! ```text
//!  acquire ─► accepting H2 and no activation pending? ─► H2 hit
//!          ─► idle H1 (newest first) that commits?    ─► H1 hit          (the reuse hit: one lock)
//!          ─► miss: enqueue a waiter, and launch
//!               Http1 mode, or Auto with HTTP/1 remembered  → an independent Attempt
//!               Http2 mode, or Auto with nothing / HTTP/2   → the cell's single Flight, or join it
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

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::events::Protocol;
use crate::stats::{Gauge, Gauges};
use crate::sync::{Arc, Mutex};
use crate::waiter::{Requirement, Waiter};

/// How many waiters a publication activates before the activated ones let the next in.
pub const ACTIVATION_TURN: usize = 8;

/// Queues shorter than this are never compacted.
const COMPACT_MIN: usize = 64;

/// The protocol types a cell holds, supplied by the assembled pool.
pub trait CellTypes: Send + Sync + 'static {
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
    /// Whether the protocol layer would accept a request now (hyper's `is_ready`).
    fn is_ready(&self) -> bool;
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
    /// Dispatch on this HTTP/1 connection (already committed `ACTIVE`).
    H1(T::H1),
    /// Take a stream lease on this generation.
    H2(T::H2),
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

/// An establishment the caller must start (on the owner partition) for a waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// An independent attempt.
    Attempt,
    /// The cell's single flight.
    Flight(FlightId),
}

/// The outcome of [`Cell::acquire`].
pub enum Acquire<T: CellTypes> {
    /// A reuse hit on an idle HTTP/1 connection, committed `ACTIVE`.
    H1(T::H1),
    /// A reuse hit on the accepting generation.
    H2(T::H2),
    /// The request requires HTTP/2 and this cell only establishes HTTP/1.1.
    Unsupported,
    /// A miss: wait on `waiter`; when `launch` is set, start that establishment for it.
    Wait {
        /// The queued waiter.
        waiter: Arc<CellWaiter<T>>,
        /// The establishment to start, if this miss must start one.
        launch: Option<Launch>,
    },
}

impl<T: CellTypes> fmt::Debug for Acquire<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Acquire::H1(_) => f.write_str("Acquire::H1"),
            Acquire::H2(_) => f.write_str("Acquire::H2"),
            Acquire::Unsupported => f.write_str("Acquire::Unsupported"),
            Acquire::Wait { waiter, launch } => f
                .debug_struct("Acquire::Wait")
                .field("waiter", waiter)
                .field("launch", launch)
                .finish(),
        }
    }
}

/// The outcome of [`Cell::converge`].
pub enum Converge<T: CellTypes> {
    /// Run the HTTP/1 handshake; also launch an attempt for each waiter in `fan_out`.
    Http1 {
        /// Waiters of a flight that turned out HTTP/1, each needing its own attempt now.
        fan_out: Vec<Arc<CellWaiter<T>>>,
    },
    /// Run the HTTP/2 handshake as this flight, then [`Cell::publish_h2`].
    LeadFlight(FlightId),
    /// Another generation or flight serves the launcher: close this transport unhandshaken.
    Join,
}

impl<T: CellTypes> fmt::Debug for Converge<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Converge::Http1 { fan_out } => {
                write!(f, "Converge::Http1 {{ fan_out: {} }}", fan_out.len())
            }
            Converge::LeadFlight(id) => write!(f, "Converge::LeadFlight({id:?})"),
            Converge::Join => f.write_str("Converge::Join"),
        }
    }
}

/// What happened to a released HTTP/1 connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    /// A waiting request took it.
    Delivered,
    /// It entered the idle set.
    Idle,
    /// It was closed instead (poisoned, or closed while returning).
    Closed,
}

/// Called (with no lock held) when a cell with no pending expiry gains a deadline: the
/// partition's maintenance must run [`Cell::expire`] no later than the given instant.
pub type ArmExpiry = Arc<dyn Fn(Instant) + Send + Sync>;

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
}

/// The coordination state of one (partition, origin).
pub struct Cell<T: CellTypes> {
    /// How this cell establishes connections.
    mode: EstablishMode,
    /// The pool's idle timeout (`None`: connections never expire).
    idle_timeout: Option<Duration>,
    /// Gauges of this (partition, origin).
    gauges: Arc<Gauges>,
    /// Schedules an expiry sweep with the partition's maintenance.
    arm_expiry: Option<ArmExpiry>,
    /// Everything the cell coordinates, under its one lock.
    state: Mutex<State<T>>,
}

/// Grants to hand out after the lock is released.
type Grants<T> = Vec<(Arc<CellWaiter<T>>, Grant<T>)>;

impl<T: CellTypes> Cell<T> {
    /// An empty cell. `arm_expiry` is called whenever the cell gains a deadline while none is
    /// scheduled.
    pub fn new(
        mode: EstablishMode,
        idle_timeout: Option<Duration>,
        gauges: Arc<Gauges>,
        arm_expiry: Option<ArmExpiry>,
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
            arm_expiry,
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

    /// The protocol this cell's origin last negotiated, if known.
    pub fn known_protocol(&self) -> Option<Protocol> {
        self.state.lock().known
    }

    /// Finds a connection for a request or queues it.
    ///
    /// `seq` is called only on a miss, to number the new waiter among all waiters (so a reuse hit
    /// writes nothing shared by the origin); `now` is read only when the request hits the HTTP/2
    /// generation (its idle age restarts).
    pub fn acquire(
        &self,
        requirement: Requirement,
        seq: impl FnOnce() -> u64,
        now: impl FnOnce() -> Instant,
    ) -> Acquire<T> {
        let mut dead = Vec::new();
        let outcome = self.acquire_locked(requirement, seq, now, &mut dead);
        // Connections found unusable on the way are closed with no lock held.
        close_all(dead.into_iter().map(|c| (c, CloseReason::ProtocolClosed)));
        outcome
    }

    fn acquire_locked(
        &self,
        requirement: Requirement,
        seq: impl FnOnce() -> u64,
        now: impl FnOnce() -> Instant,
        dead: &mut Vec<T::H1>,
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
                if entry.conn.record().checkout() && entry.conn.is_ready() {
                    return Acquire::H1(entry.conn);
                }
                dead.push(entry.conn);
            }
        }
        self.miss(&mut st, requirement, seq(), h2_serves)
    }

    fn miss(
        &self,
        st: &mut State<T>,
        requirement: Requirement,
        seq: u64,
        h2_serves: bool,
    ) -> Acquire<T> {
        let needs_flight = match (self.mode, st.known) {
            (EstablishMode::Http1, _) if requirement == Requirement::Http2 => {
                return Acquire::Unsupported;
            }
            (EstablishMode::Http1, _) | (EstablishMode::Auto, Some(Protocol::Http1)) => false,
            _ => true,
        };
        let launch = if h2_serves {
            // The generation gate is closed: wait for activation, establish nothing.
            None
        } else if !needs_flight {
            Some(Launch::Attempt)
        } else if st.flight.is_some() {
            None
        } else {
            let id = FlightId(st.next_flight);
            st.next_flight += 1;
            st.flight = Some(id);
            Some(Launch::Flight(id))
        };
        let waiter = Arc::new(Waiter::new(seq, requirement));
        if launch.is_some() {
            waiter.mark_launched();
            self.gauges.inc(Gauge::Establishing);
        }
        self.enqueue(st, waiter.clone());
        Acquire::Wait { waiter, launch }
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

    /// Claims `waiter` for a grant, keeping `waiting_requests` in step.
    fn claim(&self, waiter: &CellWaiter<T>) -> bool {
        let claimed = waiter.claim();
        if claimed {
            self.gauges.dec(Gauge::WaitingRequests);
        }
        claimed
    }

    /// The post-ALPN transition of an establishment launched as `launch` for `launcher`.
    pub fn converge(
        &self,
        launch: Launch,
        launcher: &Arc<CellWaiter<T>>,
        negotiated: Protocol,
    ) -> Converge<T> {
        let mut grants = Vec::new();
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
                            self.activate(&mut st, &mut grants);
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
                    let mut fan_out = Vec::new();
                    if is_current_flight {
                        st.flight = None;
                        for w in st.any.iter() {
                            if w.is_waiting() && !Arc::ptr_eq(w, launcher) && w.mark_launched() {
                                self.gauges.inc(Gauge::Establishing);
                                fan_out.push(w.clone());
                            }
                        }
                        for w in st.h2_only.iter() {
                            if !w.is_launched() && !Arc::ptr_eq(w, launcher) && self.claim(w) {
                                grants.push((w.clone(), Grant::Unsupported));
                            }
                        }
                    }
                    Converge::Http1 { fan_out }
                }
            }
        };
        self.deliver(grants);
        outcome
    }

    /// A new HTTP/1 connection (installed `ACTIVE`) serves its launcher if the launcher still
    /// waits and accepts HTTP/1, and otherwise is released like a returning connection. A
    /// launcher that requires HTTP/2 receives [`Grant::Unsupported`].
    pub fn install_h1(&self, conn: T::H1, launcher: &Arc<CellWaiter<T>>, now: Instant) -> Released {
        let conn = match launcher.requirement() {
            Requirement::Any if self.claim(launcher) => match launcher.fill(Grant::H1(conn)) {
                Ok(()) => return Released::Delivered,
                Err(Grant::H1(conn)) => conn,
                Err(_) => unreachable!("fill returns what it was given"),
            },
            Requirement::Http2 if self.claim(launcher) => {
                let _ = launcher.fill(Grant::Unsupported);
                conn
            }
            _ => conn,
        };
        self.release_h1(conn, now)
    }

    /// An HTTP/1 connection finished an exchange and is ready for another: the oldest waiting
    /// request takes it, or it becomes idle.
    pub fn release_h1(&self, mut conn: T::H1, now: Instant) -> Released {
        loop {
            let target = {
                let mut st = self.state.lock();
                let mut target = None;
                while let Some(w) = st.any.pop_front() {
                    if self.claim(&w) {
                        target = Some(w);
                        break;
                    }
                }
                match target {
                    Some(w) => w,
                    None => {
                        if !conn.record().checkin() {
                            drop(st);
                            let reason = if conn.record().is_poisoned() {
                                CloseReason::Poisoned
                            } else {
                                CloseReason::ProtocolClosed
                            };
                            close_all([(conn, reason)]);
                            return Released::Closed;
                        }
                        let deadline = self.idle_timeout.map(|t| now + t);
                        st.idle.push_back(IdleEntry { conn, deadline });
                        let arm = match deadline {
                            Some(d) if !st.expiry_armed => {
                                st.expiry_armed = true;
                                Some(d)
                            }
                            _ => None,
                        };
                        drop(st);
                        self.arm(arm);
                        return Released::Idle;
                    }
                }
            };
            match target.fill(Grant::H1(conn)) {
                Ok(()) => return Released::Delivered,
                Err(Grant::H1(back)) => conn = back,
                Err(_) => unreachable!("fill returns what it was given"),
            }
        }
    }

    /// An establishment launched as `launch` for `launcher` failed: the launcher (if still
    /// waiting) and, for a flight, every waiter that depended on it receive `error`.
    pub fn fail(&self, launch: Launch, launcher: &Arc<CellWaiter<T>>, error: T::Error) {
        self.gauges.dec(Gauge::Establishing);
        let mut grants = Vec::new();
        if self.claim(launcher) {
            grants.push((launcher.clone(), Grant::Failed(error.clone())));
        }
        if let Launch::Flight(f) = launch {
            let mut st = self.state.lock();
            if st.flight == Some(f) {
                st.flight = None;
                let State { any, h2_only, .. } = &mut *st;
                for w in any.iter().chain(h2_only.iter()) {
                    if !w.is_launched() && self.claim(w) {
                        grants.push((w.clone(), Grant::Failed(error.clone())));
                    }
                }
            }
        }
        self.deliver(grants);
    }

    /// The flight `flight` completed its HTTP/2 handshake: `generation` becomes the accepting
    /// generation and the first activation turn is granted.
    pub fn publish_h2(&self, generation: T::H2, flight: FlightId, now: Instant) {
        let mut grants = Vec::new();
        let arm = {
            let mut st = self.state.lock();
            if st.flight == Some(flight) {
                st.flight = None;
            }
            st.known = Some(Protocol::Http2);
            st.h2 = Some(generation);
            st.h2_last_dispatch = Some(now);
            self.activate(&mut st, &mut grants);
            match self.idle_timeout {
                Some(t) if !st.expiry_armed => {
                    st.expiry_armed = true;
                    Some(now + t)
                }
                _ => None,
            }
        };
        self.arm(arm);
        self.deliver(grants);
    }

    fn arm(&self, at: Option<Instant>) {
        if let (Some(at), Some(hook)) = (at, &self.arm_expiry) {
            hook(at);
        }
    }

    /// Grants the accepting generation to the oldest waiters until a turn is outstanding.
    fn activate(&self, st: &mut State<T>, grants: &mut Grants<T>) {
        let Some(generation) = st.h2.clone() else {
            return;
        };
        while st.activations < ACTIVATION_TURN {
            let Some(w) = pop_oldest(&mut st.any, &mut st.h2_only) else {
                break;
            };
            if self.claim(&w) {
                st.activations += 1;
                grants.push((w, Grant::H2(generation.clone())));
            }
        }
    }

    /// An activated waiter took its generation grant (or gave it back): let the next one in.
    /// If the generation stopped accepting meanwhile and requests still wait, returns the
    /// waiter that must launch a new flight.
    pub fn activation_done(&self) -> Option<(Arc<CellWaiter<T>>, Launch)> {
        let mut grants = Vec::new();
        let relaunch = {
            let mut st = self.state.lock();
            st.activations = st.activations.saturating_sub(1);
            if st.h2.as_ref().is_some_and(PooledH2::is_accepting) {
                self.activate(&mut st, &mut grants);
                None
            } else {
                st.h2 = None;
                self.relaunch_flight(&mut st)
            }
        };
        self.deliver(grants);
        relaunch
    }

    /// The generation stopped accepting (GOAWAY, closed dispatcher, error, poison, expiry).
    /// Removes it; if requests still wait for activation, returns the waiter that must launch a
    /// replacement flight.
    pub fn retire_h2(
        &self,
        record: &Arc<ConnectionRecord>,
    ) -> Option<(Arc<CellWaiter<T>>, Launch)> {
        let mut st = self.state.lock();
        if st
            .h2
            .as_ref()
            .is_some_and(|g| Arc::ptr_eq(g.record(), record))
        {
            st.h2 = None;
            st.h2_last_dispatch = None;
            self.relaunch_flight(&mut st)
        } else {
            None
        }
    }

    /// With no accepting generation and no flight, the oldest request still waiting without an
    /// establishment of its own launches a new flight.
    fn relaunch_flight(&self, st: &mut State<T>) -> Option<(Arc<CellWaiter<T>>, Launch)> {
        if st.flight.is_some() || st.h2.is_some() {
            return None;
        }
        let waiter = oldest_waiting(&st.any, &st.h2_only, |w| !w.is_launched())?;
        let id = FlightId(st.next_flight);
        st.next_flight += 1;
        st.flight = Some(id);
        waiter.mark_launched();
        self.gauges.inc(Gauge::Establishing);
        Some((waiter, Launch::Flight(id)))
    }

    /// The request behind `waiter` is leaving. Returns anything it had been granted to where it
    /// belongs, and reports the launch to start if it was holding activation for others.
    pub fn cancel(
        &self,
        waiter: &Arc<CellWaiter<T>>,
        now: Instant,
    ) -> Option<(Arc<CellWaiter<T>>, Launch)> {
        match waiter.cancel() {
            None => {
                self.gauges.dec(Gauge::WaitingRequests);
                None
            }
            Some(Some(grant)) => self.refunnel(grant, now),
            Some(None) => None,
        }
    }

    /// Takes back a grant whose waiter left before taking it.
    fn refunnel(&self, grant: Grant<T>, now: Instant) -> Option<(Arc<CellWaiter<T>>, Launch)> {
        match grant {
            Grant::H1(conn) => {
                // A connection the leaving request never used goes to the next waiter or idles.
                self.release_h1(conn, now);
                None
            }
            Grant::H2(_) => self.activation_done(),
            Grant::Failed(_) | Grant::Unsupported => None,
        }
    }

    /// Hands grants out after the lock is released, taking back those whose waiter left.
    ///
    /// HTTP/1 connections are never batched here (they are handed over one at a time by
    /// [`release_h1`](Self::release_h1), which takes them back itself).
    fn deliver(&self, grants: Grants<T>) {
        for (waiter, grant) in grants {
            if let Err(back) = waiter.fill(grant) {
                match back {
                    Grant::H1(conn) => {
                        debug_assert!(false, "HTTP/1 grants are not batched");
                        conn.record().close(CloseReason::ProtocolClosed, None);
                    }
                    Grant::H2(_) => {
                        // An activation nobody took: the next waiter goes instead. A relaunch
                        // cannot be needed here, since the generation was accepting a moment ago
                        // and `activation_done` only relaunches for a non-accepting one, which
                        // `retire_h2` reports itself.
                        self.activation_done();
                    }
                    Grant::Failed(_) | Grant::Unsupported => {}
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

/// Pops the oldest entry across the two queues (skipping none: the caller claims).
fn pop_oldest<W>(
    a: &mut VecDeque<Arc<Waiter<W>>>,
    b: &mut VecDeque<Arc<Waiter<W>>>,
) -> Option<Arc<Waiter<W>>> {
    loop {
        while a.front().is_some_and(|w| !w.is_waiting()) {
            a.pop_front();
        }
        while b.front().is_some_and(|w| !w.is_waiting()) {
            b.pop_front();
        }
        let take_a = match (a.front(), b.front()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(x), Some(y)) => x.seq() <= y.seq(),
        };
        let w = if take_a { a.pop_front() } else { b.pop_front() };
        if let Some(w) = w {
            return Some(w);
        }
    }
}

/// The oldest waiting entry across two queues that satisfies `pred`, without removing it.
fn oldest_waiting<W>(
    a: &VecDeque<Arc<Waiter<W>>>,
    b: &VecDeque<Arc<Waiter<W>>>,
    pred: impl Fn(&Waiter<W>) -> bool,
) -> Option<Arc<Waiter<W>>> {
    a.iter()
        .chain(b.iter())
        .filter(|w| w.is_waiting() && pred(w))
        .min_by_key(|w| w.seq())
        .cloned()
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;
    use crate::events::{ConnectionId, ConnectionInfo};
    use crate::origin::OriginKey;
    use crate::partition::PartitionId;
    use crate::stats::PartitionStats;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::task::{Context, Poll, Waker};

    struct Fake;
    struct FakeH1 {
        record: Arc<ConnectionRecord>,
        ready: bool,
    }
    #[derive(Clone)]
    struct FakeH2 {
        record: Arc<ConnectionRecord>,
        accepting: Arc<AtomicBool>,
    }
    impl PooledH1 for FakeH1 {
        fn record(&self) -> &Arc<ConnectionRecord> {
            &self.record
        }
        fn is_ready(&self) -> bool {
            self.ready
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
            ready: true,
        }
    }

    fn h2(cell: &Cell<Fake>) -> FakeH2 {
        FakeH2 {
            record: record(cell, Protocol::Http2),
            accepting: Arc::new(AtomicBool::new(true)),
        }
    }

    fn cell(mode: EstablishMode) -> Cell<Fake> {
        Cell::new(
            mode,
            Some(Duration::from_secs(90)),
            Arc::new(Gauges::default()),
            None,
        )
    }

    fn take(w: &Arc<CellWaiter<Fake>>) -> Option<Grant<Fake>> {
        let mut cx = Context::from_waker(Waker::noop());
        match w.poll_take(&mut cx) {
            Poll::Ready(g) => Some(g),
            Poll::Pending => None,
        }
    }

    fn wait(acq: Acquire<Fake>) -> (Arc<CellWaiter<Fake>>, Option<Launch>) {
        match acq {
            Acquire::Wait { waiter, launch } => (waiter, launch),
            other => panic!("expected a miss, got {other:?}"),
        }
    }

    #[test]
    fn http1_miss_install_release_then_hit() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http1);
        let (w, launch) = wait(c.acquire(Requirement::Any, || 1, || t0));
        assert_eq!(launch, Some(Launch::Attempt));
        let s = c.gauges().snapshot();
        assert_eq!((s.establishing, s.waiting_requests), (1, 1));
        let conn = h1(&c);
        assert_eq!(c.install_h1(conn, &w, t0), Released::Delivered);
        let Some(Grant::H1(conn)) = take(&w) else {
            panic!("launcher gets its connection")
        };
        let s = c.gauges().snapshot();
        assert_eq!((s.establishing, s.h1_active, s.waiting_requests), (0, 1, 0));
        assert_eq!(c.release_h1(conn, t0), Released::Idle);
        assert_eq!(c.gauges().snapshot().h1_idle, 1);
        assert!(
            matches!(c.acquire(Requirement::Any, || 2, || t0), Acquire::H1(_)),
            "reuse hit"
        );
        assert_eq!(c.gauges().snapshot().h1_active, 1);
    }

    #[test]
    fn idle_reuse_is_newest_first_and_expiry_oldest_first() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http1);
        let (a, b) = (h1(&c), h1(&c));
        let (a_id, b_id) = (a.record.info().id(), b.record.info().id());
        c.release_h1(a, t0);
        c.release_h1(b, t0 + Duration::from_secs(10));
        let Acquire::H1(newest) = c.acquire(Requirement::Any, || 1, || t0) else {
            panic!()
        };
        assert_eq!(newest.record.info().id(), b_id);
        c.release_h1(newest, t0 + Duration::from_secs(20));
        // At 90 s only `a` (idle since 0 s) has expired; the next deadline is b's (20 s + 90 s).
        let next = c.expire(t0 + Duration::from_secs(90));
        assert_eq!(next, Some(t0 + Duration::from_secs(110)));
        let s = c.gauges().snapshot();
        assert_eq!(
            (s.h1_idle, s.h1_draining),
            (1, 1),
            "a is closed but its I/O is not gone"
        );
        let Acquire::H1(left) = c.acquire(Requirement::Any, || 2, || t0) else {
            panic!()
        };
        assert_ne!(left.record.info().id(), a_id);
    }

    #[test]
    fn closed_and_unready_idle_connections_are_skipped() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http1);
        let good = h1(&c);
        let good_id = good.record.info().id();
        c.release_h1(good, t0);
        let unready = h1(&c);
        c.release_h1(
            FakeH1 {
                record: unready.record.clone(),
                ready: false,
            },
            t0,
        );
        let closed = h1(&c);
        let closed_record = closed.record.clone();
        c.release_h1(closed, t0);
        closed_record.close(CloseReason::ProtocolClosed, None);
        let Acquire::H1(got) = c.acquire(Requirement::Any, || 1, || t0) else {
            panic!()
        };
        assert_eq!(got.record.info().id(), good_id);
        assert!(
            unready.record.is_closed(),
            "an unready idle connection is retired"
        );
    }

    #[test]
    fn released_connection_goes_to_the_oldest_waiter() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http1);
        let (w1, _) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let (w2, _) = wait(c.acquire(Requirement::Any, || 2, || t0));
        let conn = h1(&c);
        assert_eq!(c.release_h1(conn, t0), Released::Delivered);
        assert!(matches!(take(&w1), Some(Grant::H1(_))));
        assert!(take(&w2).is_none());
        // w2's own attempt completes: delivered to w2, its launcher.
        assert_eq!(c.install_h1(h1(&c), &w2, t0), Released::Delivered);
        assert!(matches!(take(&w2), Some(Grant::H1(_))));
    }

    #[test]
    fn cancelled_waiter_gives_its_connection_to_the_next() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http1);
        let (w1, _) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let (w2, _) = wait(c.acquire(Requirement::Any, || 2, || t0));
        c.release_h1(h1(&c), t0);
        // w1 was filled but leaves without taking the connection: it goes to w2.
        c.cancel(&w1, t0);
        assert!(matches!(take(&w2), Some(Grant::H1(_))));
        assert_eq!(c.gauges().snapshot().waiting_requests, 0);
        // A waiter cancelled before anything arrived is simply skipped.
        let (w3, _) = wait(c.acquire(Requirement::Any, || 3, || t0));
        c.cancel(&w3, t0);
        assert_eq!(c.release_h1(h1(&c), t0), Released::Idle);
    }

    #[test]
    fn http1_mode_refuses_http2_requirement() {
        let c = cell(EstablishMode::Http1);
        assert!(matches!(
            c.acquire(Requirement::Http2, || 1, Instant::now),
            Acquire::Unsupported
        ));
    }

    #[test]
    fn auto_cold_burst_shares_one_flight_and_publication() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Auto);
        let (w1, l1) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let Some(Launch::Flight(f)) = l1 else {
            panic!("first miss is the probe flight")
        };
        let mut joiners = Vec::new();
        for seq in 2..=20 {
            let (w, launch) = wait(c.acquire(Requirement::Any, || seq, || t0));
            assert_eq!(launch, None, "later misses wait for the probe");
            joiners.push(w);
        }
        assert_eq!(c.gauges().snapshot().establishing, 1);
        assert!(
            matches!(c.converge(Launch::Flight(f), &w1, Protocol::Http2), Converge::LeadFlight(id) if id == f)
        );
        c.publish_h2(h2(&c), f, t0);
        assert_eq!(c.known_protocol(), Some(Protocol::Http2));
        // One turn is activated, oldest first.
        assert!(matches!(take(&w1), Some(Grant::H2(_))));
        let activated = joiners.iter().filter(|w| !w.is_waiting()).count();
        assert_eq!(activated, ACTIVATION_TURN - 1);
        // While activations are pending a new arrival queues behind them (the gate).
        let (late, launch) = wait(c.acquire(Requirement::Any, || 100, || t0));
        assert_eq!(launch, None);
        // Each activated waiter lets the next one in.
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
            matches!(c.acquire(Requirement::Any, || 200, || t0), Acquire::H2(_)),
            "gate open: direct hit"
        );
    }

    #[test]
    fn flight_that_negotiates_http1_fans_out() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Auto);
        let (w1, l1) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let Some(Launch::Flight(f)) = l1 else {
            panic!()
        };
        let (w2, _) = wait(c.acquire(Requirement::Any, || 2, || t0));
        let (w3, _) = wait(c.acquire(Requirement::Any, || 3, || t0));
        let (strict, _) = wait(c.acquire(Requirement::Http2, || 4, || t0));
        let Converge::Http1 { fan_out } = c.converge(Launch::Flight(f), &w1, Protocol::Http1)
        else {
            panic!()
        };
        assert_eq!(fan_out.len(), 2);
        assert!(
            fan_out.iter().any(|w| Arc::ptr_eq(w, &w2))
                && fan_out.iter().any(|w| Arc::ptr_eq(w, &w3))
        );
        assert!(matches!(take(&strict), Some(Grant::Unsupported)));
        assert_eq!(
            c.gauges().snapshot().establishing,
            3,
            "probe plus two fanned-out attempts"
        );
        assert_eq!(c.known_protocol(), Some(Protocol::Http1));
        // With HTTP/1 remembered, the next miss launches its own attempt.
        let (_, launch) = wait(c.acquire(Requirement::Any, || 5, || t0));
        assert_eq!(launch, Some(Launch::Attempt));
    }

    #[test]
    fn http2_requiring_launcher_gets_unsupported_and_the_connection_stays() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Auto);
        let (w, l) = wait(c.acquire(Requirement::Http2, || 1, || t0));
        let Some(Launch::Flight(f)) = l else { panic!() };
        assert!(matches!(
            c.converge(Launch::Flight(f), &w, Protocol::Http1),
            Converge::Http1 { .. }
        ));
        assert_eq!(c.install_h1(h1(&c), &w, t0), Released::Idle);
        assert!(matches!(take(&w), Some(Grant::Unsupported)));
        assert_eq!(c.gauges().snapshot().h1_idle, 1);
    }

    #[test]
    fn attempts_that_negotiate_http2_converge_to_one_flight() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Auto);
        // Remember HTTP/1 first so misses launch independent attempts.
        let (w0, l0) = wait(c.acquire(Requirement::Any, || 0, || t0));
        let Some(Launch::Flight(f0)) = l0 else {
            panic!()
        };
        c.converge(Launch::Flight(f0), &w0, Protocol::Http1);
        c.install_h1(h1(&c), &w0, t0);
        let Some(Grant::H1(conn)) = take(&w0) else {
            panic!()
        };
        let (w1, _) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let (w2, _) = wait(c.acquire(Requirement::Any, || 2, || t0));
        let Converge::LeadFlight(f) = c.converge(Launch::Attempt, &w1, Protocol::Http2) else {
            panic!()
        };
        assert!(matches!(
            c.converge(Launch::Attempt, &w2, Protocol::Http2),
            Converge::Join
        ));
        assert!(!w2.is_launched(), "the joiner now depends on the flight");
        c.publish_h2(h2(&c), f, t0);
        assert!(matches!(take(&w1), Some(Grant::H2(_))));
        assert!(matches!(take(&w2), Some(Grant::H2(_))));
        drop(conn);
    }

    #[test]
    fn failed_flight_fails_its_dependents_only() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http2);
        let (w1, l1) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let Some(Launch::Flight(f)) = l1 else {
            panic!()
        };
        let (w2, _) = wait(c.acquire(Requirement::Http2, || 2, || t0));
        c.fail(Launch::Flight(f), &w1, "refused");
        assert!(matches!(take(&w1), Some(Grant::Failed("refused"))));
        assert!(matches!(take(&w2), Some(Grant::Failed("refused"))));
        assert_eq!(c.gauges().snapshot(), PartitionStats::default());
        // The next miss starts a new flight.
        let (_, launch) = wait(c.acquire(Requirement::Any, || 3, || t0));
        assert!(matches!(launch, Some(Launch::Flight(_))));
    }

    #[test]
    fn retired_generation_relaunches_for_queued_waiters() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http2);
        let (w1, l1) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let Some(Launch::Flight(f)) = l1 else {
            panic!()
        };
        let waiters: Vec<_> = (2..=12)
            .map(|s| wait(c.acquire(Requirement::Any, || s, || t0)).0)
            .collect();
        let generation = h2(&c);
        c.publish_h2(generation.clone(), f, t0);
        assert!(matches!(take(&w1), Some(Grant::H2(_))));
        // GOAWAY before the rest were activated.
        generation.accepting.store(false, Ordering::SeqCst);
        let relaunch = c.retire_h2(&generation.record);
        let (leader, launch) = relaunch.expect("queued waiters need a new flight");
        assert!(matches!(launch, Launch::Flight(_)));
        assert!(waiters.iter().any(|w| Arc::ptr_eq(w, &leader)));
        assert!(leader.is_waiting());
    }

    #[test]
    fn idle_generation_expires_after_the_timeout_since_last_dispatch() {
        let t0 = Instant::now();
        let c = cell(EstablishMode::Http2);
        let (w1, l1) = wait(c.acquire(Requirement::Any, || 1, || t0));
        let Some(Launch::Flight(f)) = l1 else {
            panic!()
        };
        let generation = h2(&c);
        c.publish_h2(generation.clone(), f, t0);
        take(&w1);
        c.activation_done();
        let t30 = t0 + Duration::from_secs(30);
        assert!(matches!(
            c.acquire(Requirement::Any, || 2, || t30),
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
        let c = cell(EstablishMode::Http1);
        let a = h1(&c);
        let record = a.record.clone();
        c.release_h1(a, t0);
        c.close_idle(CloseReason::PoolDropped);
        assert_eq!(record.close_reason(), Some(CloseReason::PoolDropped));
        assert_eq!(c.idle_len(), 0);
    }

    #[test]
    fn arm_hook_fires_once_until_the_sweep() {
        let armed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let hook_log = armed.clone();
        let hook: ArmExpiry = Arc::new(move |at| hook_log.lock().unwrap().push(at));
        let c: Cell<Fake> = Cell::new(
            EstablishMode::Http1,
            Some(Duration::from_secs(5)),
            Arc::new(Gauges::default()),
            Some(hook),
        );
        let t0 = Instant::now();
        c.release_h1(h1(&c), t0);
        c.release_h1(h1(&c), t0 + Duration::from_secs(1));
        assert_eq!(*armed.lock().unwrap(), vec![t0 + Duration::from_secs(5)]);
        assert_eq!(
            c.expire(t0 + Duration::from_secs(5)),
            Some(t0 + Duration::from_secs(6))
        );
        assert_eq!(c.expire(t0 + Duration::from_secs(6)), None);
        c.release_h1(h1(&c), t0 + Duration::from_secs(7));
        assert_eq!(
            armed.lock().unwrap().len(),
            2,
            "re-armed after the cell emptied"
        );
    }
}
