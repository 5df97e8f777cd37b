//! The permit ledger of one bounded origin: how many of its `N` permits nobody holds, how many
//! each partition holds, and the lease type that makes every permit have exactly one owner.

use std::fmt;

use super::{Admission, Member};
use crate::sync::atomic::Ordering;

/// The permit counts, kept under the admission lock.
#[derive(Debug)]
pub(super) struct Ledger {
    /// `max_connections_per_host`.
    limit: usize,
    /// Permits nobody holds.
    available: usize,
    /// Returning connections told to close for an older ticket
    /// ([`Precedence::Reclaim`](super::Precedence::Reclaim)) whose permit has not come back
    /// yet. Any returned permit counts one off: it goes to the next ticket, which is the one
    /// the reclaim was for or one with an equal or better claim.
    reclaims_in_transit: usize,
}

impl Ledger {
    pub(super) fn new(limit: usize) -> Ledger {
        Ledger {
            limit,
            available: limit,
            reclaims_in_transit: 0,
        }
    }

    pub(super) fn available(&self) -> usize {
        self.available
    }

    /// Takes one free permit, if any.
    pub(super) fn take(&mut self) -> bool {
        if self.available == 0 {
            return false;
        }
        self.available -= 1;
        true
    }

    /// A permit came back (or a delivery could not be made).
    pub(super) fn put_back(&mut self) {
        self.available += 1;
        debug_assert!(
            self.available <= self.limit,
            "more permits returned than exist"
        );
    }

    /// A permit came back from its owner: it also settles one reclaim in transit.
    pub(super) fn returned(&mut self) {
        self.put_back();
        self.reclaims_in_transit = self.reclaims_in_transit.saturating_sub(1);
    }

    /// Whether a permit is free or already moving toward the next ticket.
    pub(super) fn permit_coming(&self) -> bool {
        self.available > 0 || self.reclaims_in_transit > 0
    }

    /// A returning connection was told to close so its permit moves.
    pub(super) fn reclaim_started(&mut self) {
        self.reclaims_in_transit += 1;
    }

    /// A reclaim that was counted closed nothing.
    pub(super) fn reclaim_abandoned(&mut self) {
        self.reclaims_in_transit = self.reclaims_in_transit.saturating_sub(1);
    }
}

/// One permit of a bounded origin, owned by exactly one party at a time, and counted for the
/// partition that took it for as long as it lives (a connection never changes owner cell).
/// Dropping it returns the permit to the origin's admission.
pub struct CapacityLease<C: Member> {
    admission: Option<Admission<C>>,
    partition: usize,
}

impl<C: Member> CapacityLease<C> {
    /// A lease on a permit just taken from `admission`'s ledger for `partition`, whose held
    /// count the caller raised under the same lock.
    pub(super) fn new(admission: Admission<C>, partition: usize) -> CapacityLease<C> {
        CapacityLease {
            admission: Some(admission),
            partition,
        }
    }

    /// The partition this permit is counted for.
    pub fn partition(&self) -> usize {
        self.partition
    }

    /// Disarms the lease without returning the permit: the caller accounts for it under the
    /// admission lock (a refused delivery, see `Admission::refuse`).
    pub(super) fn forget(mut self) {
        self.admission = None;
    }

    /// Returns the permit now (the same as dropping the lease).
    pub fn release(mut self) {
        if let Some(admission) = self.admission.take() {
            admission.release_permit(self.partition);
        }
    }
}

impl<C: Member> Drop for CapacityLease<C> {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            admission.release_permit(self.partition);
        }
    }
}

impl<C: Member> fmt::Debug for CapacityLease<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CapacityLease")
    }
}

impl<C: Member> Admission<C> {
    /// Permits nobody holds right now.
    pub fn available(&self) -> usize {
        self.shared.state.lock().ledger.available()
    }

    /// Takes a free permit for `partition` if one exists and no other partition is waiting for
    /// one (a newer request never overtakes an older ticket).
    ///
    /// # Concurrency
    ///
    /// With no permit free by the lock-free hint, this returns at once without the lock (every
    /// request of a bounded origin at its bound misses, on every partition). A permit freed
    /// after that read is not lost: a release with a ticket waiting delivers it to that ticket,
    /// and the caller publishes its demand next, which takes any free permit for the oldest
    /// ticket.
    pub fn take_free_permit(&self, partition: usize) -> Option<CapacityLease<C>> {
        if self.shared.free.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut state = self.shared.state.lock();
        if !(state.order.is_empty() && state.ledger.take()) {
            return None;
        }
        // Counted under the lock, as every held count is (placement reads them exactly there).
        self.hold(partition);
        self.update_hints(&state);
        Some(CapacityLease::new(self.clone(), partition))
    }

    /// Permits partition `partition` holds (read without the lock; exact under it).
    pub fn held(&self, partition: usize) -> usize {
        self.shared.held[partition].load(Ordering::Acquire)
    }

    /// Counts one more permit for `partition`; called with the state locked.
    pub(super) fn hold(&self, partition: usize) {
        self.shared.held[partition].fetch_add(1, Ordering::AcqRel);
    }

    /// Whether some partition waits while no permit is free: closing an idle connection would
    /// move its permit to that demand (a reclaim).
    pub fn wants_reclaim(&self) -> bool {
        let state = self.shared.state.lock();
        state.ledger.available() == 0 && !state.order.is_empty()
    }

    /// Returns `partition`'s permit: it goes to the next ticket (see `delivery`), or becomes
    /// free.
    fn release_permit(&self, partition: usize) {
        // Read without the lock: a refresh that turns out unneeded republishes nothing new.
        if self.held(partition) == 1 {
            if let Some(cell) = self.cell(partition) {
                cell.refresh_demand();
            }
        }
        self.decide_and_deliver(|state| {
            state.ledger.returned();
            let previous = self.shared.held[partition].fetch_sub(1, Ordering::AcqRel);
            debug_assert!(
                previous > 0,
                "a partition returned a permit it did not hold"
            );
        });
    }
}
