//! The HTTP/2 flight: at most one HTTP/2 establishment per cell, which the requests that miss
//! while it runs join, and the post-ALPN transition that turns an establishment into a flight,
//! a join, or an HTTP/1 connection.
//!
//! An HTTP/1 establishment is an *attempt* (see `attempts`): several run at once and each
//! produces a connection. An HTTP/2 establishment is a *flight*. In `Auto` mode the protocol is
//! learned from ALPN; [`Cell::converge`] is the one cell-local transition after ALPN that
//! either joins the accepting generation, joins the flight, or makes the caller the flight.

use super::gate::close_generations;
use super::{
    Actions, Cell, CellTypes, CellWaiter, Converge, EstablishMode, FlightId, Grant, Launch, State,
};
use crate::close::CloseReason;
use crate::events::{OpenReason, Protocol};
use crate::stats::Gauge;
use crate::sync::Arc;

/// The flight of a cell.
#[derive(Debug, Default)]
pub(super) struct Flights {
    /// The flight in progress, if any.
    current: Option<FlightId>,
    /// Why the flight in progress runs.
    kind: FlightKind,
    /// Source of flight identities.
    next: u64,
}

/// Why a flight runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum FlightKind {
    /// Requests found no generation.
    #[default]
    Demand,
    /// Every generation is at the peer's stream limit and requests wait: a further
    /// connection.
    ScaleOut,
    /// An accepting generation reached its maximum lifetime (see `expiry`).
    Renewal,
    /// An accepting generation is about to carry the last of its request quota (see
    /// `Cell::h2_successor_wanted`).
    QuotaRenewal,
}

impl Flights {
    /// Whether a flight is in progress.
    pub(super) fn in_progress(&self) -> bool {
        self.current.is_some()
    }

    /// Whether `id` is the flight in progress.
    fn is_current(&self, id: FlightId) -> bool {
        self.current == Some(id)
    }

    /// The flight in progress ended (it turned out to be HTTP/1.1).
    fn end_current(&mut self) {
        self.current = None;
        self.kind = FlightKind::Demand;
    }

    /// Starts a new flight; `scale_out` when generations are held (all at their limit).
    pub(super) fn start(&mut self, scale_out: bool) -> FlightId {
        let id = FlightId::next(&mut self.next);
        self.current = Some(id);
        self.kind = if scale_out {
            FlightKind::ScaleOut
        } else {
            FlightKind::Demand
        };
        id
    }

    /// Starts the renewal flight of an accepting generation.
    pub(super) fn start_renewal(&mut self) -> FlightId {
        let id = self.start(false);
        self.kind = FlightKind::Renewal;
        id
    }

    /// Starts the flight of a generation's successor before it reaches its request quota.
    pub(super) fn start_quota_renewal(&mut self) -> FlightId {
        let id = self.start(false);
        self.kind = FlightKind::QuotaRenewal;
        id
    }

    /// Whether the flight in progress is a renewal.
    pub(super) fn renewing(&self) -> bool {
        self.current.is_some() && self.kind == FlightKind::Renewal
    }

    /// Whether `id` is the flight in progress and a renewal.
    pub(super) fn is_renewal(&self, id: FlightId) -> bool {
        self.is_current(id) && self.kind == FlightKind::Renewal
    }

    /// Why flight `id` opens its connection, if it is the flight in progress and not one that
    /// requests simply missed for.
    fn open_reason(&self, id: FlightId) -> Option<OpenReason> {
        if !self.is_current(id) {
            return None;
        }
        match self.kind {
            FlightKind::Demand => None,
            FlightKind::ScaleOut => Some(OpenReason::StreamLimit),
            FlightKind::Renewal => Some(OpenReason::LifetimeRenewal),
            FlightKind::QuotaRenewal => Some(OpenReason::QuotaRenewal),
        }
    }

    /// Flight `id` ended (published, failed, or joined elsewhere); returns whether it was the
    /// flight in progress.
    pub(super) fn end(&mut self, id: FlightId) -> bool {
        let current = self.is_current(id);
        if current {
            self.current = None;
            self.kind = FlightKind::Demand;
        }
        current
    }
}

impl<T: CellTypes> Cell<T> {
    /// Whether a miss in this cell establishes through the cell's single flight.
    pub(super) fn needs_flight(&self, st: &State<T>) -> bool {
        !matches!(
            (self.mode, st.negotiated),
            (EstablishMode::Http1, _) | (EstablishMode::Auto, Some(Protocol::Http1))
        )
    }

    /// Picks the kind of a new establishment, starting a flight if that is what it is (a
    /// scale-out when generations are held: they are all at their stream limit).
    pub(super) fn start_launch(st: &mut State<T>, needs_flight: bool) -> Launch {
        if needs_flight {
            let scale_out = st.h2.is_held();
            Launch::Flight(st.flights.start(scale_out))
        } else {
            Launch::Attempt
        }
    }

    /// Why the connection of `launch` opens when it is not simply for the requests that missed:
    /// a scale-out past the peer's stream limit, or a lifetime renewal.
    pub fn launch_reason(&self, launch: Launch) -> Option<OpenReason> {
        match launch {
            Launch::Attempt => None,
            Launch::Flight(id) => self.state.lock().flights.open_reason(id),
        }
    }

    /// The post-ALPN transition of an establishment launched as `launch` for `launcher`.
    pub fn converge(
        &self,
        launch: Launch,
        launcher: &Arc<CellWaiter<T>>,
        negotiated: Protocol,
    ) -> Converge {
        let mut actions = Actions::default();
        let mut retired = Vec::new();
        let outcome = {
            let mut st = self.state.lock();
            if self.mode == EstablishMode::Auto {
                st.negotiated = Some(negotiated);
            }
            let is_current_flight = matches!(launch, Launch::Flight(f) if st.flights.is_current(f));
            let renewal = matches!(launch, Launch::Flight(f) if st.flights.is_renewal(f));
            match negotiated {
                Protocol::Http2 => {
                    // Any other establishment joins a generation with a free stream or the
                    // flight in progress. The flight in progress leads: a renewal replaces
                    // generations, and a scale-out whose handshake is done becomes a
                    // generation even if streams freed up meanwhile (its waiter may have taken
                    // one): closing it would throw the handshake away for the next peak to
                    // pay again, and an unused generation expires when idle.
                    let accepting = st.h2.can_serve() && !is_current_flight;
                    if accepting || (st.flights.in_progress() && !is_current_flight) {
                        if let Launch::Flight(f) = launch {
                            st.flights.end(f);
                        }
                        // The launcher now depends on the generation or flight it joins.
                        launcher.unmark_launched();
                        self.gauges.dec(Gauge::Establishing);
                        if accepting {
                            self.activate(&mut st, &mut actions.grants);
                        }
                        Converge::Join
                    } else {
                        let id = match launch {
                            Launch::Flight(id) => {
                                st.flights.current = Some(id);
                                id
                            }
                            Launch::Attempt => {
                                let scale_out = st.h2.is_held();
                                st.flights.start(scale_out)
                            }
                        };
                        Converge::LeadFlight(id)
                    }
                }
                Protocol::Http1 => {
                    if renewal {
                        // The origin now speaks HTTP/1.1: the renewed generations retire
                        // (below), and this connection becomes an ordinary HTTP/1 one.
                        retired = st.h2.take_all();
                    }
                    if is_current_flight {
                        st.flights.end_current();
                        self.fan_out(&mut st, launcher, &mut actions);
                    }
                    Converge::Http1
                }
            }
        };
        self.run(actions);
        close_generations(retired, CloseReason::MaxLifetime);
        outcome
    }

    /// The flight negotiated HTTP/1.1: its joiners need connections of their own now, launched
    /// at once when unbounded, published as demand when bounded; those that require HTTP/2
    /// are told it is unsupported.
    fn fan_out(&self, st: &mut State<T>, launcher: &Arc<CellWaiter<T>>, actions: &mut Actions<T>) {
        // Each now waits for a connection of its own (its launch below notes its steps) or,
        // bounded, for a permit: none for the flight any more.
        st.waiters.joins_ended();
        if self.bound.is_none() {
            for w in st.waiters.any.iter() {
                if w.is_waiting() && !Arc::ptr_eq(w, launcher) && w.mark_launched() {
                    self.gauges.inc(Gauge::Establishing);
                    actions.launches.push((w.clone(), Launch::Attempt));
                }
            }
        }
        for w in st.waiters.h2_only.iter() {
            if !w.is_launched() && !Arc::ptr_eq(w, launcher) && self.claim(w) {
                actions.grants.push((w.clone(), Grant::Unsupported));
            }
        }
        actions.publish = self.demand_change(st);
    }

    /// An establishment launched as `launch` for `launcher` failed: the launcher (if still
    /// waiting) and, for a flight, every waiter that depended on it receive `error`.
    pub fn fail(&self, launch: Launch, launcher: &Arc<CellWaiter<T>>, error: T::Error) {
        self.gauges.dec(Gauge::Establishing);
        let mut actions = Actions::default();
        let claimed = self.claim(launcher);
        if claimed {
            actions
                .grants
                .push((launcher.clone(), Grant::Failed(error.clone())));
        }
        self.end_attempt(claimed.then_some(&**launcher));
        let mut renewed = Vec::new();
        {
            let mut st = self.state.lock();
            if let Launch::Flight(f) = launch {
                if st.flights.is_renewal(f) {
                    // Requests queued behind the renewed generation's gate still activate on
                    // it; the generation retires (below) and they get a flight of their own.
                    st.flights.end(f);
                    renewed = st.h2.take_past_lifetime(self.hooks.time.now());
                } else if st.flights.end(f) {
                    let queues = &st.waiters;
                    for w in queues.any.iter().chain(queues.h2_only.iter()) {
                        if !w.is_launched() && self.claim(w) {
                            actions
                                .grants
                                .push((w.clone(), Grant::Failed(error.clone())));
                        }
                    }
                }
            }
            actions.publish = self.demand_change(&mut st);
        }
        self.run(actions);
        self.retire_generations(renewed, CloseReason::MaxLifetime);
    }

    /// Requests wait and no generation can take another stream (none is held, or all are at
    /// their limit), and no flight runs: the oldest request still waiting without an
    /// establishment of its own launches a flight (unbounded, within the HTTP/2 connection
    /// cap), or becomes demand (bounded). At the cap, requests wait for a stream to free up.
    pub(super) fn relaunch_flight(&self, st: &mut State<T>, actions: &mut Actions<T>) {
        if st.flights.in_progress() || st.h2.can_serve() {
            return;
        }
        if self.bound.is_some() {
            actions.publish = self.demand_change(st);
            return;
        }
        if st.h2.count() >= self.h2_cap {
            return;
        }
        let Some(waiter) = st.waiters.oldest(|w| !w.is_launched()) else {
            return;
        };
        let scale_out = st.h2.is_held();
        let id = st.flights.start(scale_out);
        waiter.mark_launched();
        self.gauges.inc(Gauge::Establishing);
        actions.launches.push((waiter, Launch::Flight(id)));
    }
}
