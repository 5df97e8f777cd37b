//! The demand order of one bounded origin: one ticket per partition, ordered by the arrival
//! of the oldest request that needs a new connection there, with versions that reject stale
//! publications and fences that hold a ticket while a permit or connection is on its way.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{Admission, CapacityLease, Member};
use crate::sync::atomic::Ordering;

/// A cell's demand as it publishes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demand {
    /// Increases with every snapshot the cell takes; stale snapshots are rejected.
    pub version: u64,
    /// The arrival order of the cell's oldest request that needs capacity, or `None` when no
    /// request of the cell needs a new connection.
    pub head: Option<u64>,
    /// Since when the cell has had such a request without a break (`None` with `head`): how
    /// long its unmet demand has lasted, which placement weighs before moving capacity.
    pub since: Option<Instant>,
}

impl Demand {
    /// Demand of `head` (none when `None`), unbroken since `since`.
    pub fn new(version: u64, head: Option<u64>, since: Option<Instant>) -> Demand {
        Demand {
            version,
            head,
            since: head.and(since),
        }
    }
}

/// Identity of one delivery (a permit, or a returning connection) to a fenced ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryId(u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ticket {
    Inactive,
    Active(u64),
    Delivering(DeliveryId),
}

#[derive(Debug)]
struct Slot {
    /// The newest demand version applied (or held while fenced).
    version: u64,
    ticket: Ticket,
    /// Since when the partition's demand has been unbroken (from its last applied demand).
    since: Option<Instant>,
    /// Demand published while the ticket was fenced, applied at the ack.
    held: Option<Demand>,
}

/// The tickets of every partition, kept under the admission lock.
#[derive(Debug)]
pub(super) struct DemandOrder {
    /// One slot per partition.
    slots: Vec<Slot>,
    /// Active tickets, oldest head first: `(head arrival, partition)`.
    order: BTreeSet<(u64, usize)>,
    /// Source of delivery identities.
    next_delivery: u64,
}

impl DemandOrder {
    pub(super) fn new(partitions: usize) -> DemandOrder {
        DemandOrder {
            slots: (0..partitions)
                .map(|_| Slot {
                    version: 0,
                    ticket: Ticket::Inactive,
                    since: None,
                    held: None,
                })
                .collect(),
            order: BTreeSet::new(),
            next_delivery: 0,
        }
    }

    /// Whether no ticket is active (fenced ones are not in the order).
    pub(super) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The number of active tickets.
    pub(super) fn active_tickets(&self) -> usize {
        self.order.len()
    }

    /// Whether any ticket is active or fenced: the pressure flag.
    pub(super) fn has_demand(&self) -> bool {
        !self.order.is_empty()
            || self
                .slots
                .iter()
                .any(|s| matches!(s.ticket, Ticket::Delivering(_)))
    }

    /// The oldest active ticket: `(head, partition)`.
    pub(super) fn oldest(&self) -> Option<(u64, usize)> {
        self.order.first().copied()
    }

    /// Active tickets, oldest head first: `(head, partition)`.
    pub(super) fn active(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.order.iter().copied()
    }

    /// Whether partition `p` has a ticket, active or fenced.
    pub(super) fn has_ticket(&self, p: usize) -> bool {
        self.slots[p].ticket != Ticket::Inactive
    }

    /// Since when partition `p`'s demand has been unbroken, if it has demand.
    pub(super) fn demand_since(&self, p: usize) -> Option<Instant> {
        self.slots[p].since
    }

    /// Sets partition `p`'s ticket from its demand (outside any fence).
    fn set_ticket(&mut self, p: usize, demand: Demand) {
        if let Ticket::Active(old) = self.slots[p].ticket {
            self.order.remove(&(old, p));
        }
        self.slots[p].since = demand.since;
        self.slots[p].ticket = match demand.head {
            Some(h) => {
                self.order.insert((h, p));
                Ticket::Active(h)
            }
            None => Ticket::Inactive,
        };
    }

    /// Takes partition `partition`'s active ticket (head `head`) out of the order and fences it
    /// for a delivery; returns the delivery's identity.
    pub(super) fn fence(&mut self, head: u64, partition: usize) -> DeliveryId {
        self.order.remove(&(head, partition));
        let id = DeliveryId(self.next_delivery);
        self.next_delivery += 1;
        self.slots[partition].ticket = Ticket::Delivering(id);
        id
    }

    /// Lifts partition `p`'s fence of delivery `id` without an ack (the delivery reached no
    /// cell that takes it): the demand the partition published while it was fenced applies;
    /// with none, the partition has no ticket until it publishes again.
    pub(super) fn lift_fence(&mut self, p: usize, id: DeliveryId) {
        if self.slots[p].ticket != Ticket::Delivering(id) {
            return;
        }
        self.slots[p].ticket = Ticket::Inactive;
        match self.slots[p].held.take() {
            Some(held) => self.set_ticket(p, held),
            None => self.slots[p].since = None,
        }
    }
}

impl<C: Member> Admission<C> {
    /// A partition publishes its demand. A stale version is ignored.
    pub fn publish(&self, partition: usize, demand: Demand) {
        let delivery = {
            let mut state = self.shared.state.lock();
            let order = &mut state.order;
            let slot = &mut order.slots[partition];
            if demand.version <= slot.version {
                return;
            }
            slot.version = demand.version;
            let delivery = if let Ticket::Delivering(_) = slot.ticket {
                slot.held = Some(demand);
                None
            } else {
                order.set_ticket(partition, demand);
                self.demand_changed();
                self.next_delivery(&mut state)
            };
            self.update_hints(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// A partition acknowledges the delivery `id` with its demand after it.
    pub fn ack(&self, partition: usize, id: DeliveryId, demand: Demand) {
        let delivery = {
            let mut state = self.shared.state.lock();
            let order = &mut state.order;
            let slot = &mut order.slots[partition];
            if slot.ticket != Ticket::Delivering(id) {
                debug_assert!(false, "ack for a delivery that is not in flight");
                return;
            }
            let newest = match slot.held.take() {
                Some(held) if held.version > demand.version => held,
                _ => demand,
            };
            slot.version = slot.version.max(newest.version);
            slot.ticket = Ticket::Inactive;
            order.set_ticket(partition, newest);
            self.demand_changed();
            let delivery = self.next_delivery(&mut state);
            self.update_hints(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// Lifts the fence of delivery `id` to `partition` when no cell there takes it: none is
    /// registered (not yet, or the pool is being dropped), or the one the delivery reached
    /// was retired (see `Cell::retire_if_unused`). `permit`, the permit the delivery carried
    /// if it carried one, is free again, and the next delivery is decided.
    ///
    /// The demand the partition published while fenced applies; with none held, the
    /// partition is left without a ticket rather than with the head it was fenced for. That
    /// head may be a retired cell's, which must not come straight back here; and a cell that
    /// published before it was registered publishes its exact demand again when it registers
    /// (see [`register`](Admission::register)).
    pub fn refuse(&self, partition: usize, id: DeliveryId, permit: Option<CapacityLease<C>>) {
        self.decide_and_deliver(|state| {
            state.order.lift_fence(partition, id);
            self.demand_changed();
            if let Some(permit) = permit {
                permit.forget();
                state.ledger.put_back();
                let previous = self.shared.held[partition].fetch_sub(1, Ordering::AcqRel);
                debug_assert!(previous > 0, "a refused permit was not counted");
            }
        });
    }
}
