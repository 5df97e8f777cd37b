//! The demand order of one bounded origin: one ticket per partition, ordered by the arrival
//! of the oldest request that needs a new connection there, with versions that reject stale
//! publications and fences that hold a ticket while a permit or connection is on its way.

use std::collections::BTreeSet;

use super::{Admission, Member};

/// A cell's demand as it publishes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demand {
    /// Increases with every snapshot the cell takes; stale snapshots are rejected.
    pub version: u64,
    /// The arrival order of the cell's oldest request that needs capacity, or `None` when no
    /// request of the cell needs a new connection.
    pub head: Option<u64>,
}

/// Who goes first for a connection that finished an exchange: see [`Admission::precedence`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precedence {
    /// The cell's own oldest waiting request is the oldest that may use the connection.
    Local,
    /// An older request waits in this eligible partition; its ticket is fenced for the
    /// delivery.
    Borrow(usize, DeliveryId),
    /// An older request waits in a partition that may not use the connection, and no permit
    /// is free: closing the connection moves its permit there.
    Reclaim,
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

    /// Sets partition `p`'s ticket from its demand head (outside any fence).
    fn set_ticket(&mut self, p: usize, head: Option<u64>) {
        if let Ticket::Active(old) = self.slots[p].ticket {
            self.order.remove(&(old, p));
        }
        self.slots[p].ticket = match head {
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

    /// Lifts the fence of delivery `id` without an ack (its cell could not be reached): the
    /// ticket becomes active again with its old head.
    pub(super) fn unfence(&mut self, partition: usize, id: DeliveryId, head: u64) {
        if self.slots[partition].ticket == Ticket::Delivering(id) {
            self.slots[partition].ticket = Ticket::Active(head);
            self.order.insert((head, partition));
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
                order.set_ticket(partition, demand.head);
                state.next_delivery()
            };
            self.update_pressure(&state);
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
            order.set_ticket(partition, newest.head);
            let delivery = state.next_delivery();
            self.update_pressure(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// Claims the oldest active ticket of `source`'s group other than `source`'s own, for
    /// handing it a returning connection (a borrow). The ticket is fenced until the receiving
    /// cell acks.
    pub fn claim_ticket_in_group(&self, source: usize) -> Option<(usize, DeliveryId)> {
        let groups = &self.shared.groups;
        let group = groups[source];
        let mut state = self.shared.state.lock();
        let (head, partition) = state
            .order
            .order
            .iter()
            .copied()
            .find(|(_, p)| *p != source && groups[*p] == group && self.is_registered(*p))?;
        let id = state.order.fence(head, partition);
        self.update_pressure(&state);
        Some((partition, id))
    }

    /// Whether a partition other than `source` waits for a request that arrived before
    /// `local_head` (the oldest request waiting in `source`'s cell), for a connection of
    /// `source` that finished an exchange. Keeps waiting fair across partitions: without it, a
    /// partition whose own requests keep its connections busy would serve its own newer
    /// requests forever while an older request of a peer starves.
    ///
    /// A peer of `source`'s eligibility group has its ticket claimed and fenced (it receives
    /// the connection, a borrow); a peer outside it gets [`Precedence::Reclaim`]: the
    /// connection should close so its permit moves to that peer, unless a permit is already on
    /// its way (one reclaim at a time, so returning connections do not all close for one
    /// request).
    pub fn precedence(&self, source: usize, local_head: u64) -> Precedence {
        let groups = &self.shared.groups;
        let mut state = self.shared.state.lock();
        let older = state
            .order
            .order
            .iter()
            .copied()
            .take_while(|(head, _)| *head < local_head)
            .find(|(_, p)| *p != source && self.is_registered(*p));
        let Some((head, partition)) = older else {
            return Precedence::Local;
        };
        if groups[partition] != groups[source] {
            // A free permit, or one a reclaim already set moving, reaches that ticket first
            // (permits go to the oldest ticket): closing another connection for it would only
            // churn.
            if state.ledger.permit_coming() {
                return Precedence::Local;
            }
            state.ledger.reclaim_started();
            return Precedence::Reclaim;
        }
        let id = state.order.fence(head, partition);
        self.update_pressure(&state);
        Precedence::Borrow(partition, id)
    }
}
