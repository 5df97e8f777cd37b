//! Retiring a cell with nothing in it, so that a pool which has met many origins does not keep
//! one cell per origin for ever (a gateway whose upstreams are pod addresses meets a new origin
//! at every deploy; a crawler bounded per host meets millions).
//!
//! A cell is *unused* when it holds nothing and nobody waits on it: no connection in any state
//! (establishing, idle, active, draining; no HTTP/2 generation, no stream), no HTTP/1 attempt
//! and no waiting request. Every way something enters a cell takes its lock: a request's
//! acquisition, the install or publish of a new connection (whose establishment the gauges
//! count from its launch, under the lock), a connection's return (counted active until it is
//! checked in, under the lock), and a delivery from the origin's admission. So an unused cell
//! seen under the lock stays unused if the lock marks it retired before it lets go: from then
//! on an acquisition answers [`Acquire::Retired`](super::Acquire::Retired) and adds nothing,
//! and its owner looks the origin up again, which makes a new cell.
//!
//! A cell of a bounded origin retires the same way, with three more rules, because its
//! partition's place in the admission outlives it and a successor cell takes that place:
//!
//! * It retires only with no demand published (its last publication cleared its head), so the
//!   admission is not left holding a ticket nobody serves.
//! * A retired cell speaks for its partition no more. A delivery that reaches it (a permit, a
//!   returning peer connection, a lent stream) is refused
//!   ([`Admission::refuse`](crate::admission::Admission::refuse)) instead of acknowledged, and
//!   it publishes nothing. Its successor takes its demand versions from the same per-partition
//!   counter and counts in the same gauges, so nothing it publishes reads as stale.
//! * It leaves the admission's cell directory (unless a successor took its place already) and
//!   its membership, so the owner can forget the admission once no member is left.
//!
//! What this module does not do: decide when to look for unused cells, take them out of the
//! owner's map, or forget an admission (the assembled pool does all three).

use super::{Cell, CellTypes};
use crate::sync::atomic::Ordering;

impl<T: CellTypes> Cell<T> {
    /// Retires the cell if it is unused (see the module docs); whether it is retired now.
    pub fn retire_if_unused(&self) -> bool {
        {
            let mut st = self.state.lock();
            if self.retired.load(Ordering::Relaxed) {
                return true;
            }
            st.h2.prune();
            let unused = st.idle.len() == 0
                && !st.h2.is_held()
                && st.h2.activations == 0
                && !st.flights.in_progress()
                && st.attempts.is_empty()
                && st.demand.published_head.is_none()
                && self.gauges.all_zero();
            if !unused {
                return false;
            }
            self.retired.store(true, Ordering::Release);
        }
        if let Some(bound) = &self.bound {
            bound.admission.unregister(bound.partition, self);
            bound.membership.leave();
        }
        true
    }

    /// Whether the cell was retired, for a caller holding its lock (the flag is set under it,
    /// so the read needs no ordering of its own).
    pub(super) fn retired_under_lock(&self) -> bool {
        self.retired.load(Ordering::Relaxed)
    }

    /// Whether the cell was retired: it serves no further request.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }
}
