//! Deferred actions: what a transition decided under the cell lock and performs after
//! releasing it.
//!
//! Each of these may re-enter a cell or run foreign code: waking a waiter can hand back a grant
//! whose request left (which releases a connection into this cell again), closing a connection
//! runs listeners, a launch runs the pool's hook, and publishing demand takes the admission
//! lock, which may deliver a permit back to this cell. None of that may happen under the cell
//! lock, or a listener or a nested transition would deadlock on it.

use std::time::Instant;

use super::{Cell, CellTypes, CellWaiter, Grant, Launch, PooledH1, PooledH2};
use crate::admission::Demand;
use crate::close::CloseReason;
use crate::sync::Arc;

/// Work decided under the cell lock, performed by [`Cell::run`] after it is released.
pub(super) struct Actions<T: CellTypes> {
    /// Grants to hand to waiters.
    pub(super) grants: Vec<(Arc<CellWaiter<T>>, Grant<T>)>,
    /// Establishments to start.
    pub(super) launches: Vec<(Arc<CellWaiter<T>>, Launch)>,
    /// Connections to close.
    pub(super) close: Vec<(T::H1, CloseReason)>,
    /// An expiry sweep to schedule.
    pub(super) arm: Option<Instant>,
    /// Demand to publish to admission (bounded cells).
    pub(super) publish: Option<Demand>,
}

impl<T: CellTypes> Default for Actions<T> {
    fn default() -> Self {
        Actions {
            grants: Vec::new(),
            launches: Vec::new(),
            close: Vec::new(),
            arm: None,
            publish: None,
        }
    }
}

impl<T: CellTypes> Actions<T> {
    /// Whether nothing was decided and nothing was ever put in a list (none of them has
    /// allocated), so the actions own no memory at all.
    fn owns_nothing(&self) -> bool {
        self.grants.capacity() == 0
            && self.launches.capacity() == 0
            && self.close.capacity() == 0
            && self.arm.is_none()
            && self.publish.is_none()
    }
}

impl<T: CellTypes> Cell<T> {
    /// Performs the work decided under the lock.
    pub(super) fn run(&self, actions: Actions<T>) {
        // A reuse hit decides nothing. Walking five empty lists cost it about 200 instructions
        // each time, and even the drop of three unallocated lists is about 60 instructions
        // over a dozen code lines that the hit path otherwise never touches. With no
        // allocation and nothing decided there is nothing to run or free.
        if actions.owns_nothing() {
            std::mem::forget(actions);
            return;
        }
        let Actions {
            grants,
            launches,
            close,
            arm,
            publish,
        } = actions;
        if let (Some(at), Some(hook)) = (arm, &self.hooks.arm_expiry) {
            hook(at);
        }
        for (waiter, launch) in launches {
            (self.hooks.launch)(waiter, launch, None);
        }
        if let (Some(demand), Some(bound)) = (publish, &self.bound) {
            bound.admission.publish(bound.partition, demand);
        }
        self.deliver(grants);
        close_all(close);
    }

    /// Hands grants out after the lock is released, taking back those whose waiter left.
    pub(super) fn deliver(&self, grants: Vec<(Arc<CellWaiter<T>>, Grant<T>)>) {
        for (waiter, grant) in grants {
            if let Err(back) = waiter.fill(grant) {
                self.refunnel(back, self.hooks.time.now());
            }
        }
    }

    /// Takes back a grant whose waiter left before taking it.
    pub(super) fn refunnel(&self, grant: Grant<T>, now: Instant) {
        match grant {
            Grant::H1(conn) => {
                // A connection the leaving request never used serves the next waiter here or
                // idles here, even if it was borrowed: it returns to its owner after its next
                // exchange, through its home.
                self.release_h1(conn, now);
            }
            // An activation nobody took: its stream and its turn go to the next waiter.
            Grant::H2(generation) => {
                generation.unreserve();
                self.activation_done();
            }
            Grant::BorrowedH2(generation) => generation.unreserve(),
            Grant::Failed(_) | Grant::Unsupported => {}
        }
    }
}

/// Closes connections with their reasons (no lock held), then drops them.
///
/// Every connection is closed even if a listener panics on one of them; the first panic is
/// re-raised afterwards, so the task that raised the event still unwinds.
pub(super) fn close_all<H: PooledH1>(conns: impl IntoIterator<Item = (H, CloseReason)>) {
    let mut panic = None;
    for (conn, reason) in conns {
        let closed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            conn.record().close(reason, None);
        }));
        drop(conn);
        if let Err(payload) = closed {
            panic.get_or_insert(payload);
        }
    }
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}
