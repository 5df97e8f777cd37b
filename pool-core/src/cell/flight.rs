//! The HTTP/2 flight: at most one HTTP/2 establishment per cell, which the requests that miss
//! while it runs join, and the post-ALPN transition that turns an establishment into a flight,
//! a join, or an HTTP/1 connection.
//!
//! An HTTP/1 establishment is an *attempt* (see `attempts`): several run at once and each
//! produces a connection. An HTTP/2 establishment is a *flight*. In `Auto` mode the protocol is
//! learned from ALPN; [`Cell::converge`] is the one cell-local transition after ALPN that
//! either joins the accepting generation, joins the flight, or makes the caller the flight.

use super::{
    Actions, Cell, CellTypes, CellWaiter, Converge, EstablishMode, FlightId, Grant, Launch,
    PooledH2, State,
};
use crate::close::CloseReason;
use crate::events::Protocol;
use crate::stats::Gauge;
use crate::sync::Arc;

/// The flight of a cell.
#[derive(Debug, Default)]
pub(super) struct Flights {
    /// The flight in progress, if any.
    current: Option<FlightId>,
    /// Whether the flight in progress renews an accepting generation that reached its
    /// lifetime (see `expiry`), rather than serving requests that found none.
    renewing: bool,
    /// Source of flight identities.
    next: u64,
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
        self.renewing = false;
    }

    /// Starts a new flight.
    pub(super) fn start(&mut self) -> FlightId {
        let id = FlightId::next(&mut self.next);
        self.current = Some(id);
        self.renewing = false;
        id
    }

    /// Starts the renewal flight of an accepting generation.
    pub(super) fn start_renewal(&mut self) -> FlightId {
        let id = self.start();
        self.renewing = true;
        id
    }

    /// Whether the flight in progress is a renewal.
    pub(super) fn renewing(&self) -> bool {
        self.current.is_some() && self.renewing
    }

    /// Whether `id` is the flight in progress and a renewal.
    pub(super) fn is_renewal(&self, id: FlightId) -> bool {
        self.is_current(id) && self.renewing
    }

    /// Flight `id` ended (published, failed, or joined elsewhere); returns whether it was the
    /// flight in progress.
    pub(super) fn end(&mut self, id: FlightId) -> bool {
        let current = self.is_current(id);
        if current {
            self.current = None;
            self.renewing = false;
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

    /// Picks the kind of a new establishment, starting a flight if that is what it is.
    pub(super) fn start_launch(st: &mut State<T>, needs_flight: bool) -> Launch {
        if needs_flight {
            Launch::Flight(st.flights.start())
        } else {
            Launch::Attempt
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
        let mut retired = None;
        let outcome = {
            let mut st = self.state.lock();
            if self.mode == EstablishMode::Auto {
                st.negotiated = Some(negotiated);
            }
            let is_current_flight = matches!(launch, Launch::Flight(f) if st.flights.is_current(f));
            let renewal = matches!(launch, Launch::Flight(f) if st.flights.is_renewal(f));
            match negotiated {
                Protocol::Http2 => {
                    // A renewal replaces the accepting generation instead of joining it.
                    let accepting = st.h2.accepting() && !renewal;
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
                            Launch::Attempt => st.flights.start(),
                        };
                        Converge::LeadFlight(id)
                    }
                }
                Protocol::Http1 => {
                    if renewal {
                        // The origin now speaks HTTP/1.1: the renewed generation retires
                        // (below), and this connection becomes an ordinary HTTP/1 one.
                        retired = st.h2.take();
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
        if let Some(generation) = retired {
            generation.record().close(CloseReason::MaxLifetime, None);
        }
        outcome
    }

    /// The flight negotiated HTTP/1.1: its joiners need connections of their own now, launched
    /// at once when unbounded, published as demand when bounded; those that require HTTP/2
    /// are told it is unsupported.
    fn fan_out(&self, st: &mut State<T>, launcher: &Arc<CellWaiter<T>>, actions: &mut Actions<T>) {
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
        let mut renewed = None;
        {
            let mut st = self.state.lock();
            if let Launch::Flight(f) = launch {
                if st.flights.is_renewal(f) {
                    // Requests queued behind the renewed generation's gate still activate on
                    // it; the generation retires (below) and they get a flight of their own.
                    st.flights.end(f);
                    renewed = st.h2.accepting_generation();
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
        if let Some(old) = renewed {
            old.record().close(CloseReason::MaxLifetime, None);
            self.retire_h2(old.record());
        }
    }

    /// With no accepting generation and no flight, the oldest request still waiting without an
    /// establishment of its own launches a new flight (unbounded), or becomes demand (bounded).
    pub(super) fn relaunch_flight(&self, st: &mut State<T>, actions: &mut Actions<T>) {
        if st.flights.in_progress() || st.h2.is_held() {
            return;
        }
        if self.bound.is_some() {
            actions.publish = self.demand_change(st);
            return;
        }
        let Some(waiter) = st.waiters.oldest(|w| !w.is_launched()) else {
            return;
        };
        let id = st.flights.start();
        waiter.mark_launched();
        self.gauges.inc(Gauge::Establishing);
        actions.launches.push((waiter, Launch::Flight(id)));
    }
}
