//! The cell's HTTP/2 generations, the streams they allow, and the order in which waiting
//! requests reach them (the generation gate).
//!
//! # Several generations, one at a time
//!
//! A cell holds every accepting generation of its origin, oldest first. Each knows the peer's
//! `SETTINGS_MAX_CONCURRENT_STREAMS` (once a response proved its SETTINGS arrived) and how
//! many of those streams are taken; the cell reserves a stream, under its lock, for every
//! request it sends to a generation, so it never sends more than the peer allows. A request
//! that finds every generation at its limit *waits in the cell* (a waiting request in the
//! gauges, not a hidden entry in h2's queue) and takes the next stream that is freed.
//!
//! A second generation is opened only when every accepting generation is at its *known* limit,
//! requests wait, and no flight is in progress: one flight at a time, so a burst scales out one
//! connection per handshake, never a herd. A cold burst therefore costs one handshake: until
//! the first response tells the limit, the first generation takes every stream (h2 applies its
//! own initial limit meanwhile, and a peer that allows fewer refuses the excess, which the pool
//! re-sends). An unbounded cell holds at most its HTTP/2 connection cap of generations; a
//! bounded one as many as its permits allow.
//!
//! **Which generation serves**: the oldest with a free stream. Packing the oldest keeps the
//! others as spare capacity that sees no dispatch once the load falls, so the idle timeout
//! retires surplus generations on its own; spreading would keep every generation warm and
//! none would ever expire. Measured against a round-robin spread (nghttpd with 10 streams per
//! connection, `poolcurl load -c 100`, every generation full): spreading gave 3–8% more
//! requests/s, the cost of packing's scan past full generations from the oldest; at `-c 55`
//! the runs went either way. Packing stays, for the expiry (docs/BENCHMARKS.md).
//!
//! # The gate
//!
//! When a generation is published, or streams free up, the waiters already queued activate
//! first, oldest first, at most [`ACTIVATION_TURN`] at a time: each activated waiter, once it
//! takes its grant, lets the next one in ([`Cell::activation_done`]). While activations are
//! pending or requests wait, new arrivals queue behind them rather than hitting a generation
//! directly, so neither publication nor a freed stream ever barges a newer request ahead of
//! an older one, across all generations.

use std::time::{Duration, Instant};

use super::idle::earliest;
use super::{
    ACTIVATION_TURN, Actions, Cell, CellTypes, CellWaiter, FlightId, Grant, PooledH2, State,
};
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::events::{OpenReason, Protocol};
use crate::stats::Gauge;
use crate::sync::Arc;

/// The default cap on HTTP/2 connections per (partition, origin) for an unbounded origin.
pub const DEFAULT_H2_CONNECTIONS: usize = 16;

/// One held generation.
struct Held<G> {
    generation: G,
    /// When it last dispatched (or was published, or a sweep found it in use); its idle age
    /// is measured from here.
    last_dispatch: Instant,
    /// A sweep found streams in use since the idle age last restarted (see `take_idle`).
    busy: bool,
}

/// The generations of a cell and its gate.
pub(super) struct H2Slot<G> {
    /// Held generations, oldest first; one that stopped accepting is dropped when noticed.
    held: Vec<Held<G>>,
    /// Generation grants handed out and not yet taken (the gate is closed while this is
    /// non-zero or waiters are queued).
    pub(super) activations: usize,
}

impl<G: PooledH2> H2Slot<G> {
    pub(super) fn new() -> H2Slot<G> {
        H2Slot {
            held: Vec::new(),
            activations: 0,
        }
    }

    /// Whether a generation is held (accepting or not yet noticed to have stopped).
    pub(super) fn is_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// How many generations are held.
    pub(super) fn count(&self) -> usize {
        self.held.len()
    }

    /// Forgets generations that stopped accepting.
    pub(super) fn prune(&mut self) {
        self.held.retain(|h| h.generation.is_accepting());
    }

    /// Whether a held generation can take a stream now (or before its limit is known): a
    /// waiting request has a stream coming without a new connection.
    pub(super) fn can_serve(&self) -> bool {
        self.held
            .iter()
            .any(|h| h.generation.is_accepting() && !h.generation.is_full())
    }

    /// Reserves a stream on the oldest accepting generation that has one free; `now` restarts
    /// its idle age.
    pub(super) fn reserve(&mut self, now: Option<Instant>) -> Option<G> {
        let held = self
            .held
            .iter_mut()
            .find(|h| h.generation.is_accepting() && h.generation.try_reserve())?;
        if let Some(now) = now {
            held.last_dispatch = now;
        }
        Some(held.generation.clone())
    }

    /// Adds a published generation (the newest); until it knows its peer's limit, it assumes
    /// the one its siblings know, unless that is zero: a generation assuming no streams would
    /// take no request, and so never hear the response that makes its own limit known (a
    /// server may allow streams on a new connection while an old one allows none).
    fn push(&mut self, generation: G, now: Instant) {
        if let Some(limit) = self.held.iter().find_map(|h| h.generation.stream_limit()) {
            if limit > 0 {
                generation.assume_stream_limit(limit);
            }
        }
        self.held.push(Held {
            generation,
            last_dispatch: now,
            busy: false,
        });
    }

    /// The earliest idle deadline of the held generations.
    pub(super) fn idle_deadline(&self, timeout: Option<Duration>) -> Option<Instant> {
        let timeout = timeout?;
        self.held.iter().map(|h| h.last_dispatch + timeout).min()
    }

    /// Removes the generations idle for `timeout` by `now`: without a dispatch for that long,
    /// and without a stream in use.
    ///
    /// A generation still serving a stream at its deadline (a long download, an event stream)
    /// is not idle, as in Go's transport: its age restarts. Closing it made the origin's next
    /// request open a new connection (a handshake, and one more socket at the server for as
    /// long as the stream lasts, since a closed HTTP/2 connection gives its permit back while
    /// it drains) where this one could take it. Nothing tells the cell when such a stream ends,
    /// so the first sweep to find the generation quiet again restarts its age once more: it
    /// closes after one to two timeouts without a stream, never fewer.
    pub(super) fn take_idle(&mut self, now: Instant, timeout: Option<Duration>) -> Vec<G> {
        let Some(timeout) = timeout else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        self.held.retain_mut(|h| {
            if h.last_dispatch + timeout > now {
                return true;
            }
            let in_use = h.generation.has_streams();
            if in_use || std::mem::take(&mut h.busy) {
                h.last_dispatch = now;
                h.busy = in_use;
                return true;
            }
            taken.push(h.generation.clone());
            false
        });
        taken
    }

    /// The earliest maximum-lifetime instant of the accepting generations.
    pub(super) fn retire_deadline(&self) -> Option<Instant> {
        self.held
            .iter()
            .filter(|h| h.generation.is_accepting())
            .filter_map(|h| h.generation.record().retires_at())
            .min()
    }

    /// Removes the generations past their maximum lifetime at `now`.
    pub(super) fn take_past_lifetime(&mut self, now: Instant) -> Vec<G> {
        self.take_where(|h| h.generation.record().is_past_lifetime(now))
    }

    /// Whether the generation of `record` is held and accepting.
    fn holds_accepting(&self, record: &Arc<ConnectionRecord>) -> bool {
        self.held
            .iter()
            .any(|h| Arc::ptr_eq(h.generation.record(), record) && h.generation.is_accepting())
    }

    /// Removes the generation of `record`.
    pub(super) fn take_record(&mut self, record: &Arc<ConnectionRecord>) -> Option<G> {
        self.take_where(|h| Arc::ptr_eq(h.generation.record(), record))
            .pop()
    }

    /// Removes the oldest generation that still accepts streams.
    pub(super) fn take_oldest_accepting(&mut self) -> Option<G> {
        let mut found = false;
        self.take_where(|h| {
            let take = !found && h.generation.is_accepting();
            found |= take;
            take
        })
        .pop()
    }

    /// Removes the generations without a stream taken. A stream is reserved under the cell's
    /// lock, which the caller holds, so none can be taken on one of these meanwhile.
    pub(super) fn take_unused(&mut self) -> Vec<G> {
        self.take_where(|h| !h.generation.has_streams())
    }

    /// Removes every generation (expiry of the whole cell, or the pool closes it).
    pub(super) fn take_all(&mut self) -> Vec<G> {
        std::mem::take(&mut self.held)
            .into_iter()
            .map(|h| h.generation)
            .collect()
    }

    fn take_where(&mut self, mut remove: impl FnMut(&Held<G>) -> bool) -> Vec<G> {
        let mut taken = Vec::new();
        self.held.retain(|h| {
            if remove(h) {
                taken.push(h.generation.clone());
                false
            } else {
                true
            }
        });
        taken
    }
}

/// Closes generations with `reason` (no lock held).
pub(super) fn close_generations<G: PooledH2>(generations: Vec<G>, reason: CloseReason) {
    for generation in generations {
        generation.record().close(reason, None);
    }
}

impl<T: CellTypes> Cell<T> {
    /// The flight `flight` completed its HTTP/2 handshake: `generation` joins the accepting
    /// generations (the newest) and the first activation turn is granted.
    ///
    /// A renewal flight's generation replaces those past their maximum lifetime, which retire
    /// (`MaxLifetime`) and drain their open streams.
    pub fn publish_h2(&self, generation: T::H2, flight: FlightId, now: Instant) {
        let mut actions = Actions::default();
        let renewed = {
            let mut st = self.state.lock();
            let renewal = st.flights.is_renewal(flight);
            st.flights.end(flight);
            st.negotiated = Some(Protocol::Http2);
            st.h2.prune();
            let renewed = if renewal {
                st.h2.take_past_lifetime(now)
            } else {
                Vec::new()
            };
            let retires_at = generation.record().retires_at();
            // It carries at most the server's per-connection request quota, once the cell
            // learnt one.
            if let Some(quota) = self.request_quota.for_new_generation() {
                generation.limit_requests(quota);
            }
            st.h2.push(generation, now);
            self.activate(&mut st, &mut actions.grants);
            // Those the first turn did not reach wait for a stream of the connection they
            // brought (or, at its limit, for one to free up): no longer for the flight.
            st.waiters.joins_ended();
            let idle_deadline = self.idle_timeout.map(|t| now + t);
            if let Some(at) = earliest(idle_deadline, retires_at) {
                actions.arm = st.arm(at);
            }
            actions.publish = self.demand_change(&mut st);
            renewed
        };
        self.run(actions);
        close_generations(renewed, CloseReason::MaxLifetime);
        self.lend_streams();
    }

    /// Grants a stream of the oldest generation that has one free to the oldest waiters, until
    /// a turn is outstanding or no stream is free.
    pub(super) fn activate(
        &self,
        st: &mut State<T>,
        grants: &mut Vec<(Arc<CellWaiter<T>>, Grant<T>)>,
    ) {
        if !st.h2.is_held() || self.gauges.get(Gauge::WaitingRequests) == 0 {
            return;
        }
        let now = self.hooks.time.now();
        while st.h2.activations < ACTIVATION_TURN {
            let Some(generation) = st.h2.reserve(Some(now)) else {
                break;
            };
            let Some(w) = self.pop_oldest_claimed(st) else {
                generation.unreserve_quietly();
                break;
            };
            st.h2.activations += 1;
            grants.push((w, Grant::H2(generation)));
        }
    }

    /// An activated waiter took its generation grant (or gave it back): let the next one in.
    /// If requests still wait and no generation can serve them, a new connection is launched
    /// (or, bounded, requested from admission).
    pub fn activation_done(&self) {
        let mut actions = Actions::default();
        {
            let mut st = self.state.lock();
            st.h2.activations = st.h2.activations.saturating_sub(1);
            self.serve_waiting(&mut st, &mut actions);
        }
        self.run(actions);
        self.lend_streams();
    }

    /// Generations were taken out: `generations` close with `reason` (no lock held), and the
    /// requests still waiting go to the other generations or a new connection.
    pub(super) fn retire_generations(&self, generations: Vec<T::H2>, reason: CloseReason) {
        if generations.is_empty() {
            return;
        }
        close_generations(generations, reason);
        let mut actions = Actions::default();
        self.serve_waiting(&mut self.state.lock(), &mut actions);
        self.run(actions);
    }

    /// The generations changed (one stopped, was taken out, or a turn ended): forget those
    /// that stopped, let waiting requests take free streams, and launch (or, bounded, request)
    /// a new connection for those still without one.
    fn serve_waiting(&self, st: &mut State<T>, actions: &mut Actions<T>) {
        st.h2.prune();
        self.activate(st, &mut actions.grants);
        self.relaunch_flight(st, actions);
    }

    /// A stream of a generation that was at its limit ended (or the peer raised its limit):
    /// the oldest waiting request takes the freed stream.
    pub fn h2_stream_freed(&self) {
        let mut actions = Actions::default();
        {
            let mut st = self.state.lock();
            self.activate(&mut st, &mut actions.grants);
            actions.publish = self.demand_change(&mut st);
        }
        self.run(actions);
        self.lend_streams();
    }

    /// A stream of the generation of `record` ended below its limit. Nothing to do unless the
    /// origin is bounded and a partition has unmet demand (one flag, read without a lock):
    /// then free streams go to peers' requests that may use them, and a generation nobody here
    /// waits for closes when a peer that may not use it is owed capacity (see
    /// `borrow::Bounded::release_generation`).
    pub fn h2_stream_ended(&self, record: &Arc<ConnectionRecord>) {
        let Some(bounded) = self.bounded() else {
            return;
        };
        // The stream's count went down before this fence, and a peer's miss publishes its
        // demand before its own fence and then reads that count (`try_reclaim`): one of the
        // two sees the other, so a generation cannot go quiet unseen beside a request that
        // waits for its permit.
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
        if !bounded.admission().under_pressure() {
            return;
        }
        self.lend_streams_after_fence(&bounded);
        bounded.release_generation(record);
    }

    /// The generation of `record` stopped accepting (GOAWAY, closed dispatcher, error, poison,
    /// expiry). Removes it; requests still waiting go to the other generations, or a
    /// replacement is launched (or, bounded, requested from admission).
    pub fn retire_h2(&self, record: &Arc<ConnectionRecord>) {
        let mut actions = Actions::default();
        {
            let mut st = self.state.lock();
            if st.h2.take_record(record).is_some() {
                self.serve_waiting(&mut st, &mut actions);
            }
        }
        self.run(actions);
    }

    /// The generation of `record` is about to carry the last window of its request quota (the
    /// streams it may still take fit in one round of its stream limit): its successor opens
    /// now, so that the requests after the quota find it ready instead of waiting for a
    /// handshake when the generation retires. Nothing opens if the generation is no longer
    /// held, a flight is in progress (it brings a generation), an unbounded cell holds its cap
    /// of generations, or no permit of a bounded origin is free (the generation's own permit
    /// comes back when it retires, and the next request opens the successor then).
    pub fn h2_successor_wanted(&self, record: &Arc<ConnectionRecord>) {
        let flight = {
            let mut st = self.state.lock();
            let capped = self.bound.is_none() && st.h2.count() >= self.h2_cap;
            if !st.h2.holds_accepting(record) || st.flights.in_progress() || capped {
                return;
            }
            let flight = st.flights.start_quota_renewal();
            self.gauges.inc(Gauge::Establishing);
            flight
        };
        if !self.launch_unawaited(flight, OpenReason::QuotaRenewal) {
            // Requests that missed meanwhile joined the flight: they get another.
            let mut actions = Actions::default();
            {
                let mut st = self.state.lock();
                st.flights.end(flight);
                self.serve_waiting(&mut st, &mut actions);
            }
            self.run(actions);
        }
    }

    /// The per-connection request quota this cell learnt of its server, if any.
    pub fn request_quota(&self) -> Option<u64> {
        self.request_quota.learned()
    }

    /// How many HTTP/2 generations this cell holds (accepting, or not yet noticed to have
    /// stopped).
    pub fn h2_generations(&self) -> usize {
        self.state.lock().h2.count()
    }
}
