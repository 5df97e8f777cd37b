//! Permits for a bounded cell: the one that a miss takes when a permit is free, and the one
//! admission delivers to the cell of the next ticket (see `admission::placement`).
//!
//! A delivered permit first re-probes the idle set (a connection may have come back
//! meanwhile, and then the permit goes back), then launches for the oldest waiter that has no
//! connection coming; the establishment owns the permit from there on. The cell answers with
//! its new demand, which lifts admission's fence on its ticket.

use super::bounded::Bounded;
use super::{Actions, Cell, CellPermit, CellTypes, Grant, PooledH1};
use crate::admission::{DeliveryId, Member};
use crate::close::CloseReason;
use crate::stats::{Gauge, Gauges};
use crate::sync::Arc;

impl<T: CellTypes> Member for Cell<T> {
    fn deliver_permit(&self, lease: CellPermit<T>, delivery: Option<DeliveryId>) {
        match self.bounded() {
            Some(bounded) => bounded.deliver_permit(lease, delivery),
            // Admission only knows bounded cells; a permit that strays here goes straight back.
            None => drop(lease),
        }
    }

    fn refresh_demand(&self) {
        self.republish();
    }

    fn publish_demand(&self) {
        if let Some(bounded) = self.bounded() {
            bounded.publish_at_registration();
        }
    }

    fn gauges(&self) -> &Arc<Gauges> {
        &self.gauges
    }
}

impl<T: CellTypes> Bounded<'_, T> {
    /// After a bounded miss: take a free permit, or publish demand and try to borrow an eligible
    /// peer's idle connection, or reclaim an idle one from a peer that owes capacity (see
    /// `admission::placement`).
    pub(super) fn seek_capacity(&self) {
        if let Some(lease) = self.admission().take_free_permit(self.partition()) {
            self.deliver_permit(lease, None);
            return;
        }
        self.publish_after_miss();
        if self.try_borrow() {
            return;
        }
        self.try_reclaim();
    }

    /// A permit for this cell: `delivery` is the fenced ticket it answers, or `None` when the
    /// cell took a free permit itself. The final local probe serves the oldest waiter with a
    /// connection that came back meanwhile (the permit then goes back); otherwise the oldest
    /// waiter without a connection coming gets an establishment that owns the permit.
    pub(super) fn deliver_permit(&self, lease: CellPermit<T>, delivery: Option<DeliveryId>) {
        let cell = self.cell;
        let mut actions = Actions::default();
        let mut launch = None;
        let demand = {
            let mut st = cell.state.lock();
            if cell.retired_under_lock() {
                // Read under the lock that set it: a retired cell takes nothing, and its ack
                // would speak for a partition whose successor cell may already wait.
                drop(st);
                match delivery {
                    Some(id) => self.admission().refuse(self.partition(), id, Some(lease)),
                    None => drop(lease),
                }
                return;
            }
            let mut served = false;
            if let Some(conn) = st.idle.pop_usable(&mut actions.close) {
                match cell.pop_any(&mut st) {
                    Some(waiter) => {
                        actions.grants.push((waiter, Grant::H1(conn)));
                        served = true;
                    }
                    None => {
                        // Nobody can use it: it stays idle (its deadline restarts).
                        let now = cell.hooks.time.now();
                        // Before the check-in publishes the idle phase (see `idle_locked`).
                        conn.record().went_idle_at(now);
                        if conn.record().checkin() {
                            let server = cell.server_idle_limit(conn.record());
                            let deadline = cell.idle_deadline(server, now);
                            st.idle.push(conn, now, deadline);
                        } else {
                            actions.close.push((conn, CloseReason::ProtocolClosed));
                        }
                    }
                }
            }
            let connection_coming = st.flights.in_progress() || st.h2.can_serve();
            if !served && !connection_coming {
                let needs_flight = cell.needs_flight(&st);
                st.waiters.trim();
                if let Some(waiter) = st.waiters.oldest(|w| !w.is_launched()) {
                    let kind = Cell::start_launch(&mut st, needs_flight);
                    waiter.mark_launched();
                    cell.gauges.inc(Gauge::Establishing);
                    launch = Some((waiter, kind));
                }
            }
            self.snapshot(&mut st)
        };
        let lease = match launch {
            Some((waiter, kind)) => {
                (cell.hooks.launch)(waiter, kind, Some(lease));
                None
            }
            None => Some(lease),
        };
        match delivery {
            Some(id) => self.admission().ack(self.partition(), id, demand),
            None => self.admission().publish(self.partition(), demand),
        }
        // An unused permit goes back after the fence is lifted, so it can come back here if
        // this cell's demand is still the oldest.
        drop(lease);
        cell.run(actions);
    }
}
