//! Capacity and demand shared by the cells of one bounded origin.
//!
//! An [`Admission`] exists only for an origin with `max_connections_per_host = N`. It owns the
//! origin's `N` permits, the origin-wide order of demand, and the per-origin count of waiting
//! requests (the pending cap). Cells and admission never hold each other's lock: a cell
//! computes its demand under its own lock and publishes it afterwards; admission decides under
//! its lock and delivers afterwards.
//!
//! ```text
//!  cell (partition p) ── publish(Demand { version, head }) ──►  admission
//!                                                                 tickets: one per partition,
//!                                                                 ordered by their head's arrival
//!  permit released ──► admission: oldest ticket ─ fence ─► cell p: final local probe, then
//!                                                          launch for its head (or give back)
//!                                                     ◄── ack(p, delivery, Demand)
//! ```
//!
//! * **Tickets.** A cell carries at most one active ticket however many of its requests wait;
//!   the ticket names the arrival order of the cell's oldest request that has no connection
//!   coming. Each publication carries a version; a publication older than the ticket's current
//!   version is stale and ignored, so out-of-order publications can never resurrect demand
//!   that was satisfied or cancelled.
//! * **Delivery fence.** A permit is delivered to the cell of the oldest ticket, which is fenced
//!   (`Delivering`) until the cell acknowledges with its new demand. A cell therefore receives
//!   one permit at a time, and demand published while it is fenced is held until the ack.
//! * **Permits.** A [`CapacityLease`] is one permit with exactly one owner: an establishment,
//!   then the connection's record. Dropping it, wherever that happens (logical close, a failed
//!   or cancelled establishment, a panic unwinding), returns the permit, which goes straight to
//!   the oldest ticket.
//!
//! Ordering demand costs `O(log P)` in the number of partitions with waiting requests; the
//! number of waiting requests does not enter it. Searching peers for a connection to borrow or
//! reclaim (done by cells on a bounded miss) reads one gauge per partition of the origin.
//!
//! What admission does not do: decide eligibility (which partition may use which connection);
//! that is the reuse scope's group, fixed per partition. Capacity and eligibility never read
//! each other's state.

use std::collections::BTreeSet;
use std::fmt;

use crate::cell::{Cell, CellTypes};
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex};

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

/// Identity of one permit delivery, for the fence.
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

struct State {
    /// Permits nobody holds.
    available: usize,
    /// One slot per partition.
    slots: Vec<Slot>,
    /// Active tickets, oldest head first: `(head arrival, partition)`.
    order: BTreeSet<(u64, usize)>,
    /// Source of delivery identities.
    next_delivery: u64,
    /// Returning connections told to close for an older ticket ([`Precedence::Reclaim`]) whose
    /// permit has not come back yet. Any returned permit counts one off: it goes to the oldest
    /// ticket, which is the one the reclaim was for or an even older one.
    reclaims_in_transit: usize,
}

/// A permit to hand to a partition, decided under the admission lock and delivered after it.
#[derive(Debug)]
struct Delivery {
    partition: usize,
    id: DeliveryId,
    /// The ticket's head, to restore it if the cell cannot take the delivery yet.
    head: u64,
}

/// The permits, demand order and pending count of one bounded origin. A cheap handle: clones
/// share the same admission.
pub struct Admission<T: CellTypes> {
    inner: Arc<Inner<T>>,
}

impl<T: CellTypes> Clone for Admission<T> {
    fn clone(&self) -> Self {
        Admission {
            inner: self.inner.clone(),
        }
    }
}

impl<T: CellTypes> std::ops::Deref for Admission<T> {
    type Target = Inner<T>;

    fn deref(&self) -> &Inner<T> {
        &self.inner
    }
}

/// The state behind an [`Admission`] handle.
pub struct Inner<T: CellTypes> {
    /// `max_connections_per_host`.
    limit: usize,
    /// `max_pending_per_host`, if set.
    pending_cap: Option<usize>,
    /// Requests of this origin currently waiting in some cell (for the pending cap).
    waiting: AtomicUsize,
    /// Whether any ticket is active or fenced; written under the lock after each change, read
    /// without it by connections returning to a cell with nobody waiting (the common case must
    /// not take an origin-wide lock).
    pressure: AtomicBool,
    /// Partition index → eligibility group index (fixed at construction).
    groups: Vec<usize>,
    /// Partition index → the origin's cell there, once created. Strong references (loom models
    /// no `Weak`); [`Admission::detach`] breaks the cycle when the pool is dropped.
    cells: Vec<Mutex<Option<Arc<Cell<T>>>>>,
    /// Partition index → whether its cell is registered, readable under the state lock (a cell
    /// slot's own lock must not be taken there).
    registered: Vec<AtomicBool>,
    /// Permits and tickets.
    state: Mutex<State>,
}

/// One permit of a bounded origin, owned by exactly one party at a time. Dropping it returns
/// the permit to the origin's admission.
pub struct CapacityLease<T: CellTypes> {
    admission: Option<Admission<T>>,
}

impl<T: CellTypes> CapacityLease<T> {
    /// Returns the permit now (the same as dropping the lease).
    pub fn release(mut self) {
        if let Some(admission) = self.admission.take() {
            admission.release_permit();
        }
    }
}

impl<T: CellTypes> Drop for CapacityLease<T> {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            admission.release_permit();
        }
    }
}

impl<T: CellTypes> fmt::Debug for CapacityLease<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CapacityLease")
    }
}

impl<T: CellTypes> Admission<T> {
    /// Admission for an origin bounded to `limit` connections, with an optional cap on waiting
    /// requests. `groups[p]` is the eligibility group of partition index `p`.
    ///
    /// # Panics
    ///
    /// If `limit` is zero (the builder rejects it first).
    pub fn new(limit: usize, pending_cap: Option<usize>, groups: Vec<usize>) -> Admission<T> {
        assert!(limit > 0, "a bounded origin needs at least one permit");
        let partitions = groups.len();
        let inner = Arc::new(Inner {
            limit,
            pending_cap,
            waiting: AtomicUsize::new(0),
            pressure: AtomicBool::new(false),
            cells: (0..partitions).map(|_| Mutex::new(None)).collect(),
            registered: (0..partitions).map(|_| AtomicBool::new(false)).collect(),
            groups,
            state: Mutex::new(State {
                available: limit,
                slots: (0..partitions)
                    .map(|_| Slot {
                        version: 0,
                        ticket: Ticket::Inactive,
                        held: None,
                    })
                    .collect(),
                order: BTreeSet::new(),
                next_delivery: 0,
                reclaims_in_transit: 0,
            }),
        });
        Admission { inner }
    }

    /// The origin's bound.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The origin's pending cap (`max_pending_per_host`), if set.
    pub fn pending_cap(&self) -> Option<usize> {
        self.pending_cap
    }

    /// Permits nobody holds right now.
    pub fn available(&self) -> usize {
        self.state.lock().available
    }

    /// Requests of this origin waiting in some cell.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Records the origin's cell in partition `partition`. A permit that could not be delivered
    /// while the cell was not yet registered (its requests were already publishing) is
    /// delivered now.
    pub fn register(&self, partition: usize, cell: Arc<Cell<T>>) {
        *self.cells[partition].lock() = Some(cell);
        self.registered[partition].store(true, Ordering::Release);
        let delivery = {
            let mut state = self.state.lock();
            let delivery = next_delivery(&mut state);
            self.update_pressure(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// Forgets every cell (breaks the cell ↔ admission reference cycle when the pool is dropped).
    pub fn detach(&self) {
        for (cell, registered) in self.cells.iter().zip(&self.registered) {
            registered.store(false, Ordering::Release);
            cell.lock().take();
        }
    }

    /// The origin's cell in partition `partition`, if it exists.
    pub fn cell(&self, partition: usize) -> Option<Arc<Cell<T>>> {
        self.cells.get(partition)?.lock().clone()
    }

    /// Partitions in the same eligibility group as `partition`, other than it.
    pub fn peers_in_group(&self, partition: usize) -> impl Iterator<Item = usize> + '_ {
        let group = self.groups[partition];
        (0..self.groups.len()).filter(move |q| *q != partition && self.groups[*q] == group)
    }

    /// Every partition other than `partition`.
    pub fn peers(&self, partition: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.groups.len()).filter(move |q| *q != partition)
    }

    /// Counts one more waiting request unless the pending cap is reached.
    pub fn enter_waiting(&self) -> bool {
        let Some(cap) = self.pending_cap else {
            self.waiting.fetch_add(1, Ordering::AcqRel);
            return true;
        };
        let mut current = self.waiting.load(Ordering::Acquire);
        loop {
            if current >= cap {
                return false;
            }
            match self.waiting.compare_exchange_weak(
                current,
                current + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    /// Counts one waiting request less.
    pub fn leave_waiting(&self) {
        let previous = self.waiting.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(previous > 0, "waiting count went below zero");
    }

    /// Whether any partition has unmet demand: one flag, read without the admission lock.
    ///
    /// # Concurrency
    ///
    /// A connection going idle and a request publishing demand race: the connection may read
    /// `false` just before the demand appears, while the request searches its peers just before
    /// the connection is idle. Both sides therefore write first and read second with a
    /// sequentially consistent fence between (the request publishes, then reads peers' idle
    /// gauges; the connection enters the idle set, then reads this flag), so at least one of
    /// them sees the other and the request cannot be left waiting beside an idle connection it
    /// may use.
    pub fn under_pressure(&self) -> bool {
        self.pressure.load(Ordering::SeqCst)
    }

    /// Recomputes the pressure flag; called with the state locked, after every change.
    fn update_pressure(&self, state: &State) {
        let pressure = !state.order.is_empty()
            || state
                .slots
                .iter()
                .any(|s| matches!(s.ticket, Ticket::Delivering(_)));
        self.pressure.store(pressure, Ordering::SeqCst);
    }

    /// Takes a free permit if one exists and no other partition is waiting for one (a newer
    /// request never overtakes an older ticket).
    pub fn take_free_permit(&self) -> Option<CapacityLease<T>> {
        let mut state = self.state.lock();
        if state.available > 0 && state.order.is_empty() {
            state.available -= 1;
            Some(CapacityLease {
                admission: Some(self.clone()),
            })
        } else {
            None
        }
    }

    /// A partition publishes its demand. A stale version is ignored.
    pub fn publish(&self, partition: usize, demand: Demand) {
        let delivery = {
            let mut state = self.state.lock();
            let slot = &mut state.slots[partition];
            if demand.version <= slot.version {
                return;
            }
            slot.version = demand.version;
            let delivery = if let Ticket::Delivering(_) = slot.ticket {
                slot.held = Some(demand);
                None
            } else {
                set_ticket(&mut state, partition, demand.head);
                next_delivery(&mut state)
            };
            self.update_pressure(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// A partition acknowledges the permit delivery `id` with its demand after it.
    pub fn ack(&self, partition: usize, id: DeliveryId, demand: Demand) {
        let delivery = {
            let mut state = self.state.lock();
            let slot = &mut state.slots[partition];
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
            set_ticket(&mut state, partition, newest.head);
            let delivery = next_delivery(&mut state);
            self.update_pressure(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// Returns one permit: it goes to the oldest ticket, or becomes free.
    fn release_permit(&self) {
        let delivery = {
            let mut state = self.state.lock();
            state.available += 1;
            state.reclaims_in_transit = state.reclaims_in_transit.saturating_sub(1);
            debug_assert!(
                state.available <= self.limit,
                "more permits returned than exist"
            );
            let delivery = next_delivery(&mut state);
            self.update_pressure(&state);
            delivery
        };
        self.deliver(delivery);
    }

    /// Claims the oldest active ticket of `group` other than `source`'s own, for handing it a
    /// returning connection (a borrow). The ticket is fenced until the receiving cell acks.
    pub fn claim_ticket_in_group(&self, source: usize) -> Option<(usize, DeliveryId)> {
        let group = self.groups[source];
        let mut state = self.state.lock();
        let (head, partition) = state.order.iter().copied().find(|(_, p)| {
            *p != source && self.groups[*p] == group && self.registered[*p].load(Ordering::Acquire)
        })?;
        let id = fence(&mut state, head, partition);
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
        let group = self.groups[source];
        let mut state = self.state.lock();
        let older = state
            .order
            .iter()
            .copied()
            .take_while(|(head, _)| *head < local_head)
            .find(|(_, p)| *p != source && self.registered[*p].load(Ordering::Acquire));
        let Some((head, partition)) = older else {
            return Precedence::Local;
        };
        if self.groups[partition] != group {
            // A free permit, or one a reclaim already set moving, reaches that ticket first
            // (permits go to the oldest ticket): closing another connection for it would only
            // churn.
            if state.available > 0 || state.reclaims_in_transit > 0 {
                return Precedence::Local;
            }
            state.reclaims_in_transit += 1;
            return Precedence::Reclaim;
        }
        let id = fence(&mut state, head, partition);
        self.update_pressure(&state);
        Precedence::Borrow(partition, id)
    }

    /// Whether some partition waits while no permit is free: closing an idle connection would
    /// move its permit to that demand (a reclaim).
    pub fn wants_reclaim(&self) -> bool {
        let state = self.state.lock();
        state.available == 0 && !state.order.is_empty()
    }

    /// Hands a permit decided under the lock to its cell, now that the lock is released.
    fn deliver(&self, delivery: Option<Delivery>) {
        let Some(Delivery {
            partition,
            id,
            head,
        }) = delivery
        else {
            return;
        };
        match self.cell(partition) {
            Some(cell) => cell.deliver_permit(
                CapacityLease {
                    admission: Some(self.clone()),
                },
                Some(id),
            ),
            None => {
                // The cell published before it was registered (or the pool is being dropped):
                // undo the fence and keep the permit free; `register` delivers it.
                let mut state = self.state.lock();
                if state.slots[partition].ticket == Ticket::Delivering(id) {
                    state.slots[partition].ticket = Ticket::Active(head);
                    state.order.insert((head, partition));
                }
                state.available += 1;
                self.update_pressure(&state);
            }
        }
    }
}

/// Sets partition `p`'s ticket from its demand head (outside any fence).
fn set_ticket(state: &mut State, p: usize, head: Option<u64>) {
    if let Ticket::Active(old) = state.slots[p].ticket {
        state.order.remove(&(old, p));
    }
    state.slots[p].ticket = match head {
        Some(h) => {
            state.order.insert((h, p));
            Ticket::Active(h)
        }
        None => Ticket::Inactive,
    };
}

/// Takes partition `partition`'s active ticket (head `head`) out of the order and fences it
/// for a delivery; returns the delivery's identity.
fn fence(state: &mut State, head: u64, partition: usize) -> DeliveryId {
    state.order.remove(&(head, partition));
    let id = DeliveryId(state.next_delivery);
    state.next_delivery += 1;
    state.slots[partition].ticket = Ticket::Delivering(id);
    id
}

/// If a permit is free and a ticket waits, takes both and fences the ticket.
fn next_delivery(state: &mut State) -> Option<Delivery> {
    if state.available == 0 {
        return None;
    }
    let &(head, partition) = state.order.first()?;
    state.available -= 1;
    let id = fence(state, head, partition);
    Some(Delivery {
        partition,
        id,
        head,
    })
}

impl<T: CellTypes> fmt::Debug for Admission<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}

impl<T: CellTypes> fmt::Debug for Inner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("Admission")
            .field("limit", &self.limit)
            .field("available", &state.available)
            .field("waiting", &self.waiting.load(Ordering::Relaxed))
            .field("tickets", &state.order.len())
            .finish()
    }
}
