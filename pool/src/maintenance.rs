//! Per-partition idle maintenance.
//!
//! One task per partition, started the first time one of its cells gains an idle deadline, on
//! that partition's runtime. It keeps the deadlines cells asked for in a min-heap, sleeps (with
//! the pool's injected [`AsyncSleep`](pool_core::AsyncSleep)) until the nearest one, runs
//! [`Cell::expire`](pool_core::cell::Cell::expire) on the cells that are due, and schedules each
//! cell's next deadline. Checkout never scans for expired connections.
//!
//! Ages are measured against the deadline each entry was given when it went idle (the instant
//! it went idle plus the timeout), compared with the time source when the task wakes; a late
//! wake-up closes what is due then, it never stretches or shrinks a deadline.
//!
//! A deadline added later may be earlier than every one already scheduled (a connection's
//! lifetime ends before another's idle deadline), so adding one wakes the task when it sleeps
//! with nothing scheduled or towards a later deadline; it then sleeps again towards the new
//! earliest. A cell asks again only for a deadline earlier than the one it already asked for,
//! and ignores a superseded sweep, so the heap holds few entries per cell. The task ends when
//! the pool is dropped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

use pool_core::sync::atomic::{AtomicBool, Ordering};
use pool_core::sync::{Arc, Mutex, Weak};
use pool_core::{AsyncSleep, TimeSource};
use tokio::sync::Notify;

use crate::cell::CellEntry;
use crate::partition::PartitionRuntime;

/// A cell due for an expiry sweep at `at`.
struct Due {
    at: Instant,
    /// Tie-breaker so the heap order is total.
    seq: u64,
    cell: Weak<CellEntry>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Schedule {
    heap: BinaryHeap<Reverse<Due>>,
    seq: u64,
    /// Whether the task has been started.
    started: bool,
    /// Whether the task sleeps with nothing scheduled (and so must be woken by a new entry).
    parked: bool,
}

/// The maintenance state of one partition.
#[derive(Default)]
pub(crate) struct Maintenance {
    schedule: Mutex<Schedule>,
    wake: Notify,
    shut: AtomicBool,
}

impl std::fmt::Debug for Maintenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let schedule = self.schedule.lock();
        f.debug_struct("Maintenance")
            .field("scheduled", &schedule.heap.len())
            .field("started", &schedule.started)
            .finish()
    }
}

impl Maintenance {
    /// Schedules an expiry sweep of `cell` at `at`, starting the partition's task if needed.
    ///
    /// Called with no pool lock held (the cell calls its arm hook after unlocking).
    pub(crate) fn schedule(
        &self,
        runtime: &Arc<PartitionRuntime>,
        cell: Weak<CellEntry>,
        at: Instant,
        time: &Arc<dyn TimeSource>,
        sleep: &Arc<dyn AsyncSleep>,
    ) {
        let (start, wake) = {
            let mut schedule = self.schedule.lock();
            schedule.seq += 1;
            let seq = schedule.seq;
            let earlier = schedule.heap.peek().is_some_and(|Reverse(d)| at < d.at);
            schedule.heap.push(Reverse(Due { at, seq, cell }));
            let start = !schedule.started;
            schedule.started = true;
            let wake = std::mem::take(&mut schedule.parked) || earlier;
            (start, wake)
        };
        if start {
            let task = run(Arc::downgrade(runtime), time.clone(), sleep.clone());
            runtime.spawn(Box::pin(task));
        } else if wake {
            self.wake.notify_one();
        }
    }

    /// Stops the task (the pool was dropped).
    pub(crate) fn shutdown(&self) {
        self.shut.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Pops every entry due by `now`; returns them and the next deadline (marking the task
    /// parked when there is none).
    fn take_due(&self, now: Instant) -> (Vec<Weak<CellEntry>>, Option<Instant>) {
        let mut schedule = self.schedule.lock();
        let mut due = Vec::new();
        while schedule.heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
            let Reverse(d) = schedule.heap.pop().expect("peeked");
            due.push(d.cell);
        }
        let next = schedule.heap.peek().map(|Reverse(d)| d.at);
        schedule.parked = next.is_none() && due.is_empty();
        (due, next)
    }

    fn reschedule(&self, cell: Weak<CellEntry>, at: Instant) {
        let mut schedule = self.schedule.lock();
        schedule.seq += 1;
        let seq = schedule.seq;
        schedule.heap.push(Reverse(Due { at, seq, cell }));
    }
}

/// The partition's maintenance loop.
async fn run(
    runtime: Weak<PartitionRuntime>,
    time: Arc<dyn TimeSource>,
    sleep: Arc<dyn AsyncSleep>,
) {
    loop {
        let Some(rt) = runtime.upgrade() else { return };
        if rt.maintenance.shut.load(Ordering::Acquire) {
            return;
        }
        let now = time.now();
        let (due, next) = rt.maintenance.take_due(now);
        if !due.is_empty() {
            for cell in due {
                let Some(entry) = cell.upgrade() else {
                    continue;
                };
                if let Some(at) = entry.cell.expire(now) {
                    rt.maintenance.reschedule(cell, at);
                }
            }
            continue;
        }
        // A wake between `take_due` and the await is kept: Notify stores one permit. Holding `rt`
        // while asleep is fine: the pool's drop sets `shut` and wakes this task, which then ends.
        let notified = rt.maintenance.wake.notified();
        match next {
            Some(at) => {
                let nap = sleep.sleep(at.saturating_duration_since(now));
                tokio::select! {
                    () = nap => {}
                    () = notified => {}
                }
            }
            None => notified.await,
        }
    }
}
