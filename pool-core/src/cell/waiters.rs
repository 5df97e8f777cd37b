//! The waiter queues of a cell: requests any connection can serve, and requests that require
//! HTTP/2, each oldest first by arrival order (`seq`). A request sent again after its
//! connection failed waits with the number it arrived with, so it goes ahead of every request
//! that came after it: an HTTP/2 server that stops each connection after N requests (a
//! `GOAWAY`) otherwise refuses the same re-sent streams again and again, since the requests
//! that completions started in the meantime take the next connection's first N. Requests
//! that left stay queued until reached (leaving must not take the cell lock); the queues skip
//! them, and compact when they dominate.

use std::collections::VecDeque;

use super::{Cell, CellTypes, CellWaiter, State};
use crate::stats::Gauge;
use crate::sync::Arc;
use crate::waiter::{Requirement, Waiter};

/// Queues shorter than this are never compacted.
const COMPACT_MIN: usize = 64;

/// The two queues of waiting requests, oldest first; both may hold entries that left.
pub(super) struct WaitQueues<T: CellTypes> {
    /// Waiters any connection can serve.
    pub(super) any: VecDeque<Arc<CellWaiter<T>>>,
    /// Waiters that require HTTP/2.
    pub(super) h2_only: VecDeque<Arc<CellWaiter<T>>>,
}

impl<T: CellTypes> WaitQueues<T> {
    pub(super) fn new() -> WaitQueues<T> {
        WaitQueues {
            any: VecDeque::new(),
            h2_only: VecDeque::new(),
        }
    }

    /// Places `waiter` in its queue by arrival: after every waiter with the same or an earlier
    /// number, which for a new request is the back (found at the first look). `waiting` is how
    /// many requests of the cell still wait. Waiters that left are dropped first when they
    /// dominate, so a storm of cancellations cannot grow the queue without bound.
    pub(super) fn push(&mut self, waiter: Arc<CellWaiter<T>>, waiting: usize) {
        let queue = match waiter.requirement() {
            Requirement::Any => &mut self.any,
            Requirement::Http2 => &mut self.h2_only,
        };
        if queue.len() >= COMPACT_MIN && queue.len() > 2 * waiting {
            queue.retain(|w| w.is_waiting());
        }
        let at = queue
            .iter()
            .rposition(|w| w.seq() <= waiter.seq())
            .map_or(0, |i| i + 1);
        queue.insert(at, waiter);
    }

    /// The flight (or attempt) that waiters joined ended and they still wait: each whose
    /// request follows its progress reads `Waiting` again (a waiter with an establishment of
    /// its own is left to it). Once per establishment, not per request.
    pub(super) fn joins_ended(&self) {
        for w in self.any.iter().chain(self.h2_only.iter()) {
            if w.is_waiting() && !w.is_launched() {
                w.join_ended();
            }
        }
    }

    /// Drops entries that left from the front of both queues.
    pub(super) fn trim(&mut self) {
        trim_front(&mut self.any);
        trim_front(&mut self.h2_only);
    }

    /// Pops the oldest waiting entry across the two queues (the caller claims it).
    pub(super) fn pop_oldest(&mut self) -> Option<Arc<CellWaiter<T>>> {
        self.trim();
        let take_any = match (self.any.front(), self.h2_only.front()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(x), Some(y)) => x.seq() <= y.seq(),
        };
        if take_any {
            self.any.pop_front()
        } else {
            self.h2_only.pop_front()
        }
    }

    /// The oldest waiting entry across both queues that satisfies `pred`, left in place.
    pub(super) fn oldest(
        &self,
        pred: impl Fn(&CellWaiter<T>) -> bool,
    ) -> Option<Arc<CellWaiter<T>>> {
        let first = |q: &VecDeque<Arc<CellWaiter<T>>>| {
            q.iter().find(|w| w.is_waiting() && pred(w)).cloned()
        };
        match (first(&self.any), first(&self.h2_only)) {
            (Some(x), Some(y)) => Some(if x.seq() <= y.seq() { x } else { y }),
            (x, y) => x.or(y),
        }
    }

    /// The arrival order of the oldest request that any connection can serve.
    pub(super) fn any_head(&self) -> Option<u64> {
        self.any.iter().find(|w| w.is_waiting()).map(|w| w.seq())
    }

    /// The newest request any connection can serve that still waits and counts on an attempt.
    pub(super) fn newest_counting_on_attempt(&self) -> Option<Arc<CellWaiter<T>>> {
        self.any
            .iter()
            .rev()
            .find(|w| w.is_waiting() && w.is_launched())
            .cloned()
    }
}

/// Drops entries that left from the front of a queue.
fn trim_front<W>(queue: &mut VecDeque<Arc<Waiter<W>>>) {
    while queue.front().is_some_and(|w| !w.is_waiting()) {
        queue.pop_front();
    }
}

impl<T: CellTypes> Cell<T> {
    /// Queues a request that missed.
    pub(super) fn enqueue(&self, st: &mut State<T>, waiter: Arc<CellWaiter<T>>) {
        st.waiters
            .push(waiter, self.gauges.get(Gauge::WaitingRequests));
        self.gauges.inc(Gauge::WaitingRequests);
    }

    /// Claims `waiter` for a grant, keeping `waiting_requests` (and the origin's pending count)
    /// in step.
    pub(super) fn claim(&self, waiter: &CellWaiter<T>) -> bool {
        let claimed = waiter.claim();
        if claimed {
            self.left_waiting();
        }
        claimed
    }

    /// One request of this cell stopped waiting (claimed or cancelled).
    pub(super) fn left_waiting(&self) {
        self.gauges.dec(Gauge::WaitingRequests);
        if let Some(bound) = &self.bound {
            bound.admission.leave_waiting(bound.partition);
        }
    }

    /// Pops the oldest waiting request any connection can serve, claimed.
    pub(super) fn pop_any(&self, st: &mut State<T>) -> Option<Arc<CellWaiter<T>>> {
        while let Some(w) = st.waiters.any.pop_front() {
            if self.claim(&w) {
                self.attempt_dependent_left(st, &w);
                return Some(w);
            }
        }
        None
    }

    /// Pops the oldest waiting request of either queue, claimed.
    pub(super) fn pop_oldest_claimed(&self, st: &mut State<T>) -> Option<Arc<CellWaiter<T>>> {
        loop {
            let w = st.waiters.pop_oldest()?;
            if self.claim(&w) {
                self.attempt_dependent_left(st, &w);
                return Some(w);
            }
        }
    }
}
