//! The pool-wide cap on idle HTTP/1 connections ([`Builder::max_idle_connections`], what Go's
//! `Transport.MaxIdleConns` is to its one pool).
//!
//! Every cell's gauges count their idle HTTP/1 connections a second time in one total shared by
//! the whole pool ([`Gauges::counting_idle_in`]), so the total is exact whichever path a
//! connection takes into or out of an idle set (a return, a checkout, an expiry, a close, a
//! peer's borrow). Each cell also tells the cap, through its `went_idle` hook and with no lock
//! held, when a connection enters its idle set; the cap keeps those in the order they went idle.
//! While the total is over the cap, the connection idle longest anywhere in the pool (every
//! origin, every partition) is closed with [`CloseReason::IdleLimit`], through its own cell, so
//! its socket goes with it.
//!
//! "Idle longest" means the longest since its last exchange ended. The order holds a mark per
//! time a connection went idle; a mark is live while its connection is idle and has served no
//! request since (its record's request count). Marks of connections that were reused or closed
//! are dropped when reached, and the order is compacted once it holds more than twice as many
//! marks as there are idle connections, so its size follows the idle connections, not the
//! requests.
//!
//! What it does not do: count HTTP/2 connections (as [`Builder::max_idle_per_host`] does not),
//! or cost a pool that did not ask for it anything beyond a branch: without the cap, cells have
//! no hook and their gauges no shared total. With it, every connection going idle takes this
//! one lock, shared by all partitions, which is the price of one order across them.
//!
//! [`Builder::max_idle_connections`]: crate::Builder::max_idle_connections
//! [`Builder::max_idle_per_host`]: crate::Builder::max_idle_per_host
//! [`Gauges::counting_idle_in`]: pool_core::Gauges::counting_idle_in

use std::collections::VecDeque;
use std::fmt;

use pool_core::connection::ConnectionRecord;
use pool_core::sync::atomic::{AtomicUsize, Ordering};
use pool_core::sync::{Arc, Mutex, Weak};
use pool_core::{CloseReason, Gauges};

use crate::cell::CellEntry;

/// Where an idle connection lives: its cell, which closes it there. A trait so that the
/// order's races can be tested without a pool.
pub(crate) trait IdleHome: Send + Sync {
    /// Closes the idle connection of `record` if it is still in the idle set; whether it was.
    fn close_idle(&self, record: &Arc<ConnectionRecord>) -> bool;
}

impl IdleHome for CellEntry {
    fn close_idle(&self, record: &Arc<ConnectionRecord>) -> bool {
        self.cell
            .close_idle_connection(record, CloseReason::IdleLimit)
    }
}

/// The cap, its shared total and the order connections went idle in.
pub(crate) struct IdleCap {
    max: usize,
    /// Idle HTTP/1 connections in the whole pool: every cell's gauges count here.
    total: Arc<AtomicUsize>,
    order: Mutex<Order>,
}

struct Order {
    /// Oldest first.
    marks: VecDeque<Mark>,
    /// Connections chosen for closing and not closed yet. They still count in `total`, so a
    /// return that races a closing subtracts them: otherwise two returns over the cap by one
    /// would each close a connection.
    closing: usize,
}

/// One connection going idle.
struct Mark {
    home: Weak<dyn IdleHome>,
    record: Arc<ConnectionRecord>,
    /// Its requests served when it went idle.
    served: u64,
}

impl Mark {
    /// Whether the connection is still idle since this mark.
    fn is_live(&self) -> bool {
        self.record.is_idle() && self.record.requests_served() == self.served
    }
}

/// Marks kept beyond twice the idle connections before the order is compacted: the slack
/// that makes compaction rare when few connections are idle.
const COMPACT_SLACK: usize = 64;

impl IdleCap {
    pub(crate) fn new(max: usize) -> IdleCap {
        IdleCap {
            max,
            total: Arc::new(AtomicUsize::new(0)),
            order: Mutex::new(Order {
                marks: VecDeque::new(),
                closing: 0,
            }),
        }
    }

    /// Gauges for a new cell: they count its idle connections in the pool's total.
    pub(crate) fn gauges(&self) -> Gauges {
        Gauges::counting_idle_in(self.total.clone())
    }

    /// The idle HTTP/1 connections of the whole pool.
    pub(crate) fn idle(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// A connection of `home` entered its idle set (the cell's `went_idle` hook, no lock held):
    /// remember it, then close the longest idle while the pool holds more than the cap.
    pub(crate) fn went_idle(&self, home: Weak<dyn IdleHome>, record: &Arc<ConnectionRecord>) {
        {
            let mut order = self.order.lock();
            order.marks.push_back(Mark {
                home,
                record: record.clone(),
                served: record.requests_served(),
            });
            let idle = self.idle();
            if order.marks.len() > idle.saturating_mul(2).saturating_add(COMPACT_SLACK) {
                order.marks.retain(Mark::is_live);
            }
        }
        self.enforce();
    }

    /// Closes the longest idle connections until the pool is within the cap. Each is closed
    /// outside the order's lock (closing takes its cell's lock and fires the listener), then
    /// the count is read again: a connection that a request took meanwhile is left in use and
    /// the next one is tried.
    fn enforce(&self) {
        loop {
            let victim = {
                let mut order = self.order.lock();
                if self.idle().saturating_sub(order.closing) <= self.max {
                    return;
                }
                let Some(mark) = order.pop_live() else {
                    return;
                };
                order.closing += 1;
                mark
            };
            // Counted out again however the close ends: a listener that panics on the close
            // event unwinds this task (see `pool_core::events`), and a victim left counted
            // here would let the pool keep one idle connection over its cap for good.
            let _closing = Closing(self);
            if let Some(home) = victim.home.upgrade() {
                home.close_idle(&victim.record);
            }
        }
    }
}

/// A victim being closed, counted in [`Order::closing`] until this drops.
struct Closing<'a>(&'a IdleCap);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.order.lock().closing -= 1;
    }
}

impl Order {
    /// The oldest live mark, dropping the stale ones before it.
    fn pop_live(&mut self) -> Option<Mark> {
        while let Some(mark) = self.marks.pop_front() {
            if mark.is_live() {
                return Some(mark);
            }
        }
        None
    }
}

impl fmt::Debug for IdleCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdleCap")
            .field("max", &self.max)
            .field("idle", &self.idle())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use pool_core::{ConnectionId, ConnectionInfo, Gauge, OriginKey, PartitionId, Protocol};

    use super::*;

    /// One event run inside a close, standing for another thread at that moment.
    type Race = Box<dyn FnOnce() + Send>;

    /// An idle set of records, as a cell holds one; `race` runs once, inside the first close.
    #[derive(Default)]
    struct FakeHome {
        idle: StdMutex<Vec<Arc<ConnectionRecord>>>,
        race: StdMutex<Option<Race>>,
    }

    impl IdleHome for FakeHome {
        fn close_idle(&self, record: &Arc<ConnectionRecord>) -> bool {
            let race = self.race.lock().unwrap().take();
            if let Some(race) = race {
                race();
            }
            let mut idle = self.idle.lock().unwrap();
            let Some(at) = idle.iter().position(|r| Arc::ptr_eq(r, record)) else {
                return false;
            };
            idle.remove(at);
            drop(idle);
            record.close(CloseReason::IdleLimit, None);
            true
        }
    }

    /// A connection of `home` going idle: checked in (counted in the cap's total), put in the
    /// idle set, then the cap told, as a cell does.
    fn goes_idle(cap: &IdleCap, home: &Arc<FakeHome>, record: &Arc<ConnectionRecord>) {
        assert!(record.checkin());
        home.idle.lock().unwrap().push(record.clone());
        let home: Arc<dyn IdleHome> = home.clone();
        cap.went_idle(Arc::downgrade(&home), record);
    }

    /// A new HTTP/1 connection, `ACTIVE`, counted in the cap's gauges.
    fn connection(cap: &IdleCap, id: u64) -> Arc<ConnectionRecord> {
        let gauges = Arc::new(cap.gauges());
        gauges.inc(Gauge::Establishing);
        let origin = OriginKey::from_uri(&"http://a.test/".parse().unwrap()).unwrap();
        let info = ConnectionInfo::new(
            ConnectionId::from_u64(id),
            origin,
            PartitionId::ANONYMOUS,
            Protocol::Http1,
        );
        ConnectionRecord::install(info, gauges, None, None)
    }

    /// Two returns racing over the cap by one close one connection, not two. A is idle under
    /// a cap of 1; B's return makes two, so A is chosen; while A is being closed, Y goes idle
    /// on "another thread" and makes three for a moment. Y's return must close B only: A is
    /// already on its way out. Counting A as still idle there closed Y as well, leaving none.
    #[test]
    fn a_return_racing_a_close_over_the_cap_closes_one_connection() {
        let cap = Arc::new(IdleCap::new(1));
        let home = Arc::new(FakeHome::default());
        let (a, b, y) = (
            connection(&cap, 1),
            connection(&cap, 2),
            connection(&cap, 3),
        );
        goes_idle(&cap, &home, &a);
        *home.race.lock().unwrap() = Some(Box::new({
            let (cap, home, y) = (cap.clone(), home.clone(), y.clone());
            move || goes_idle(&cap, &home, &y)
        }));
        goes_idle(&cap, &home, &b);
        assert_eq!(a.close_reason(), Some(CloseReason::IdleLimit));
        assert_eq!(b.close_reason(), Some(CloseReason::IdleLimit));
        assert_eq!(y.close_reason(), None, "Y stays: one idle, the cap");
        assert_eq!(cap.idle(), 1);
        assert_eq!(cap.order.lock().closing, 0);
    }

    /// The longest idle is by the end of the last exchange: A went idle before B, but A's
    /// marks from before its later exchanges are stale, so B is the longest idle. However many
    /// times connections go idle, the marks follow the idle connections.
    #[test]
    fn the_longest_idle_is_by_last_exchange_and_the_marks_stay_few() {
        let cap = IdleCap::new(2);
        let home = Arc::new(FakeHome::default());
        let serves_and_returns = |a: &Arc<ConnectionRecord>| {
            assert!(a.checkout());
            a.record_dispatch();
            home.idle.lock().unwrap().retain(|r| !Arc::ptr_eq(r, a));
            goes_idle(&cap, &home, a);
        };
        let (a, b, c) = (
            connection(&cap, 1),
            connection(&cap, 2),
            connection(&cap, 3),
        );
        goes_idle(&cap, &home, &a);
        goes_idle(&cap, &home, &b);
        for _ in 0..3 {
            serves_and_returns(&a);
        }
        goes_idle(&cap, &home, &c);
        assert_eq!(b.close_reason(), Some(CloseReason::IdleLimit));
        assert_eq!((a.close_reason(), c.close_reason()), (None, None));
        assert_eq!(cap.idle(), 2);

        for _ in 0..1000 {
            serves_and_returns(&a);
            assert!(cap.order.lock().marks.len() <= 2 * 2 + COMPACT_SLACK);
        }
        assert_eq!((a.close_reason(), c.close_reason()), (None, None));
    }
}
