//! Permit delivery: a permit decided under the admission lock goes to the cell of the oldest
//! ticket after the lock is released. The cell receives it through [`Member`], so admission
//! does not depend on the cell type, and the cell answers with an ack (or a publication) that
//! lifts the fence.

use super::{Admission, CapacityLease, DeliveryId, State};
use crate::stats::Gauges;
use crate::sync::Arc;

/// A cell of a bounded origin, as admission sees it: something a permit can be delivered to.
pub trait Member: Send + Sync + Sized + 'static {
    /// A permit for this cell: `delivery` is the fenced ticket it answers (the cell must
    /// [`ack`](Admission::ack) it, or [`refuse`](Admission::refuse) it once retired), or
    /// `None` when the cell took a free permit itself (the cell then
    /// [`publish`](Admission::publish)es its demand).
    fn deliver_permit(&self, lease: CapacityLease<Self>, delivery: Option<DeliveryId>);

    /// The cell's gauges, which admission keeps so a peer can read them without the cell.
    fn gauges(&self) -> &Arc<Gauges>;

    /// The cell's last permit is about to return: it publishes its exact demand first. A cell
    /// that holds permits may leave an older head published while it serves its own requests
    /// (see `Cell::demand_after_serving`); once it holds none, its head competes in the
    /// first-come order among partitions without capacity, where it must be exact.
    fn refresh_demand(&self) {}

    /// The cell was just registered: it publishes its exact demand, changed or not, and looks
    /// for capacity if a request waits. Demand it published before may have lost its ticket to
    /// a delivery that found no cell registered (see [`Admission::refuse`]), and a peer's
    /// connection could not be handed to it.
    fn publish_demand(&self);
}

/// A permit to hand to a partition, decided under the admission lock and delivered after it.
#[derive(Debug)]
pub(super) struct Delivery {
    partition: usize,
    id: DeliveryId,
}

impl<C: Member> Admission<C> {
    /// If a permit is free and a ticket waits, takes both for the ticket placement picks (the
    /// oldest of a partition below its share, else the oldest), counts the permit for its
    /// partition and fences the ticket. Called with the state locked.
    pub(super) fn next_delivery(&self, state: &mut State) -> Option<Delivery> {
        let (head, partition) = self.delivery_target(&state.order)?;
        if !state.ledger.take() {
            return None;
        }
        self.hold(partition);
        let id = state.order.fence(head, partition);
        Some(Delivery { partition, id })
    }

    /// Applies `change` under the lock, then delivers a permit if one became deliverable.
    pub(super) fn decide_and_deliver(&self, change: impl FnOnce(&mut State)) {
        let delivery = {
            let mut state = self.shared.state.lock();
            change(&mut state);
            let delivery = self.next_delivery(&mut state);
            self.update_hints(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// Hands a permit decided under the lock to its cell, now that the lock is released.
    pub(super) fn deliver(&self, delivery: Option<Delivery>) {
        let Some(Delivery { partition, id }) = delivery else {
            return;
        };
        let permit = CapacityLease::new(self.clone(), partition);
        match self.cell(partition) {
            Some(cell) => cell.deliver_permit(permit, Some(id)),
            // Not registered yet (its requests published first), no longer (its cell was
            // retired), or the pool is being dropped: refused; a cell that registers later
            // publishes its demand again.
            None => self.refuse(partition, id, Some(permit)),
        }
    }
}
