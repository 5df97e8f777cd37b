//! The HTTP/2 flight: at most one HTTP/2 establishment per cell, which the requests that miss
//! while it runs join, and the post-ALPN transition that turns an establishment into a flight,
//! a join, or an HTTP/1 connection.
//!
//! An HTTP/1 establishment is an *attempt* (see `attempts`): several run at once and each
//! produces a connection. An HTTP/2 establishment is a *flight*. In `Auto` mode the protocol is
//! learned from ALPN; [`Cell::converge`] is the one cell-local transition after ALPN that
//! either joins the accepting generation, joins the flight, or makes the caller the flight.

use super::{
    Actions, Cell, CellTypes, CellWaiter, Converge, EstablishMode, FlightId, Grant, Launch, State,
};
use crate::events::Protocol;
use crate::stats::Gauge;
use crate::sync::Arc;

/// The flight of a cell.
#[derive(Debug, Default)]
pub(super) struct Flights {
    /// The flight in progress, if any.
    current: Option<FlightId>,
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

    /// Starts a new flight.
    pub(super) fn start(&mut self) -> FlightId {
        let id = FlightId::next(&mut self.next);
        self.current = Some(id);
        id
    }

    /// Flight `id` ended (published, failed, or joined elsewhere); returns whether it was the
    /// flight in progress.
    pub(super) fn end(&mut self, id: FlightId) -> bool {
        let current = self.is_current(id);
        if current {
            self.current = None;
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
        let outcome = {
            let mut st = self.state.lock();
            if self.mode == EstablishMode::Auto {
                st.negotiated = Some(negotiated);
            }
            let is_current_flight = matches!(launch, Launch::Flight(f) if st.flights.is_current(f));
            match negotiated {
                Protocol::Http2 => {
                    let accepting = st.h2.accepting();
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
                    if is_current_flight {
                        st.flights.current = None;
                        self.fan_out(&mut st, launcher, &mut actions);
                    }
                    Converge::Http1
                }
            }
        };
        self.run(actions);
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
        {
            let mut st = self.state.lock();
            if let Launch::Flight(f) = launch {
                if st.flights.end(f) {
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
