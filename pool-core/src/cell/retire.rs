//! Retiring a cell with nothing in it, so that a pool which has met many origins does not keep
//! one cell per origin for ever (a gateway whose upstreams are pod addresses meets a new origin
//! at every deploy).
//!
//! A cell is *unused* when it holds nothing and nobody waits on it: no connection in any state
//! (establishing, idle, active, draining; no HTTP/2 generation, no stream), no HTTP/1 attempt
//! and no waiting request. Every way something enters a cell takes its lock: a request's
//! acquisition, the install or publish of a new connection (whose establishment the gauges
//! count from its launch, under the lock), and a connection's return (counted active until it
//! is checked in, under the lock). So an unused cell seen under the lock stays unused if the
//! lock marks it retired before it lets go: from then on an acquisition answers
//! [`Acquire::Retired`](super::Acquire::Retired) and adds nothing, and its owner looks the
//! origin up again, which makes a new cell.
//!
//! Bounded cells are never retired: their admission keeps, per partition, the gauges of the
//! first cell and the version of the demand it last published. A new cell would count apart
//! from those gauges, and its demand, numbered from zero again, would read as stale to the
//! admission: its requests would never be given a permit.
//!
//! What this module does not do: decide when to look for unused cells, or take them out of
//! the owner's map (the assembled pool does both).

use super::{Cell, CellTypes};
use crate::sync::atomic::Ordering;

impl<T: CellTypes> Cell<T> {
    /// Retires the cell if it is unused (see the module docs); whether it is retired now.
    pub fn retire_if_unused(&self) -> bool {
        if self.bound.is_some() {
            return false;
        }
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
            && self.gauges.all_zero();
        if unused {
            self.retired.store(true, Ordering::Release);
        }
        unused
    }

    /// Whether the cell was retired: it serves no further request.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }
}
