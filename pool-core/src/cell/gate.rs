//! The generation gate: the cell's accepting HTTP/2 generation, and the order in which waiting
//! requests reach it.
//!
//! When a generation is published, the waiters already queued activate first, oldest first, at
//! most [`ACTIVATION_TURN`] at a time: each activated waiter, once it takes its grant, lets the
//! next one in ([`Cell::activation_done`]). While activations are pending, new arrivals queue
//! behind them rather than hitting the generation directly, so publication never barges a
//! newer request ahead of an older one and never wakes an unbounded number of tasks at once.

use std::time::Instant;

use super::idle::earliest;
use super::{
    ACTIVATION_TURN, Actions, Cell, CellTypes, CellWaiter, FlightId, Grant, PooledH2, State,
};
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::events::Protocol;
use crate::sync::Arc;

/// The accepting generation of a cell and its gate.
pub(super) struct H2Slot<G> {
    /// The accepting generation, if any.
    generation: Option<G>,
    /// When `generation` last dispatched (or was published); its idle age is measured from
    /// here.
    last_dispatch: Option<Instant>,
    /// Generation grants handed out and not yet taken (the gate is closed while this is
    /// non-zero or waiters are queued).
    pub(super) activations: usize,
}

impl<G: PooledH2> H2Slot<G> {
    pub(super) fn new() -> H2Slot<G> {
        H2Slot {
            generation: None,
            last_dispatch: None,
            activations: 0,
        }
    }

    /// Whether a generation is held (accepting or not yet noticed to have stopped).
    pub(super) fn is_held(&self) -> bool {
        self.generation.is_some()
    }

    /// Whether the held generation still accepts streams.
    pub(super) fn accepting(&self) -> bool {
        self.generation.as_ref().is_some_and(PooledH2::is_accepting)
    }

    /// The held generation if it accepts streams, to lend to a peer.
    pub(super) fn accepting_generation(&self) -> Option<G> {
        self.generation.clone().filter(PooledH2::is_accepting)
    }

    /// Whether the held generation accepts streams; forgets one that stopped.
    pub(super) fn drop_unless_accepting(&mut self) -> bool {
        match &self.generation {
            Some(generation) if generation.is_accepting() => true,
            Some(_) => {
                self.generation = None;
                false
            }
            None => false,
        }
    }

    /// The generation for a request that hits it at `now` (its idle age restarts).
    pub(super) fn dispatch(&mut self, now: Instant) -> G {
        self.last_dispatch = Some(now);
        self.generation
            .clone()
            .expect("dispatch follows an accepting check")
    }

    /// The deadline of the held generation's idle timeout.
    pub(super) fn idle_deadline(&self, timeout: Option<std::time::Duration>) -> Option<Instant> {
        match (self.last_dispatch, timeout) {
            (Some(last), Some(t)) if self.generation.is_some() => Some(last + t),
            _ => None,
        }
    }

    /// Removes the held generation (expired, or the pool closes it).
    pub(super) fn take(&mut self) -> Option<G> {
        self.last_dispatch = None;
        self.generation.take()
    }
}

impl<T: CellTypes> Cell<T> {
    /// The flight `flight` completed its HTTP/2 handshake: `generation` becomes the accepting
    /// generation and the first activation turn is granted.
    ///
    /// A renewal flight's generation replaces the one it renews, which retires
    /// (`MaxLifetime`) and drains its open streams.
    pub fn publish_h2(&self, generation: T::H2, flight: FlightId, now: Instant) {
        let mut actions = Actions::default();
        let replaced = {
            let mut st = self.state.lock();
            st.flights.end(flight);
            st.negotiated = Some(Protocol::Http2);
            let retires_at = generation.record().info().retires_at();
            let replaced = st.h2.generation.replace(generation);
            st.h2.last_dispatch = Some(now);
            self.activate(&mut st, &mut actions.grants);
            let idle_deadline = self.idle_timeout.map(|t| now + t);
            if let Some(at) = earliest(idle_deadline, retires_at) {
                actions.arm = st.arm(at);
            }
            actions.publish = self.demand_change(&mut st);
            replaced
        };
        self.run(actions);
        // Only a renewal replaces a generation that still accepts; one that stopped (and was
        // not noticed yet) keeps the reason it stopped for.
        if let Some(old) = replaced.filter(PooledH2::is_accepting) {
            old.record().close(CloseReason::MaxLifetime, None);
        }
    }

    /// Grants the accepting generation to the oldest waiters until a turn is outstanding.
    pub(super) fn activate(
        &self,
        st: &mut State<T>,
        grants: &mut Vec<(Arc<CellWaiter<T>>, Grant<T>)>,
    ) {
        let Some(generation) = st.h2.generation.clone() else {
            return;
        };
        while st.h2.activations < ACTIVATION_TURN {
            let Some(w) = self.pop_oldest_claimed(st) else {
                break;
            };
            st.h2.activations += 1;
            grants.push((w, Grant::H2(generation.clone())));
        }
    }

    /// An activated waiter took its generation grant (or gave it back): let the next one in.
    /// If the generation stopped accepting meanwhile and requests still wait, a replacement is
    /// launched (or, bounded, requested from admission).
    pub fn activation_done(&self) {
        let mut actions = Actions::default();
        {
            let mut st = self.state.lock();
            st.h2.activations = st.h2.activations.saturating_sub(1);
            if st.h2.accepting() {
                self.activate(&mut st, &mut actions.grants);
            } else {
                st.h2.generation = None;
                self.relaunch_flight(&mut st, &mut actions);
            }
        }
        self.run(actions);
    }

    /// The generation stopped accepting (GOAWAY, closed dispatcher, error, poison, expiry).
    /// Removes it; if requests still wait for activation, a replacement is launched (or,
    /// bounded, requested from admission).
    pub fn retire_h2(&self, record: &Arc<ConnectionRecord>) {
        let mut actions = Actions::default();
        {
            let mut st = self.state.lock();
            let current = st
                .h2
                .generation
                .as_ref()
                .is_some_and(|g| Arc::ptr_eq(g.record(), record));
            if current {
                st.h2.take();
                self.relaunch_flight(&mut st, &mut actions);
            }
        }
        self.run(actions);
    }
}
