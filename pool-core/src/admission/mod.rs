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
//!  permit released ──► admission: next ticket ─ fence ─►  cell p: final local probe, then
//!                                                          launch for its head (or give back)
//!                                                     ◄── ack(p, delivery, Demand)
//! ```
//!
//! The parts, one file each:
//!
//! * `ledger`: the permits. A [`CapacityLease`] is one permit with exactly one owner: an
//!   establishment, then the connection's record. Dropping it, wherever that happens (logical
//!   close, a failed or cancelled establishment, a panic unwinding), returns the permit, which
//!   goes straight to the next ticket. The ledger also counts the permits each partition holds.
//! * `order`: the demand order. A cell carries at most one active ticket however many of its
//!   requests wait; the ticket names the arrival order of the cell's oldest request that has no
//!   connection coming. Each publication carries a version; a publication older than the
//!   ticket's current version is stale and ignored, so out-of-order publications can never
//!   resurrect demand that was satisfied or cancelled. A ticket also carries since when its
//!   partition's demand has been unbroken. A cell whose own returning connection served its
//!   oldest request does not republish a head that merely moved on (only demand appearing or
//!   disappearing), so a busy partition does not take the origin-wide lock per request; its
//!   ticket's head may then be older than its current oldest request (see
//!   `Cell::demand_after_serving` for why that is harmless). When a partition's last permit
//!   returns, its cell republishes the exact head first ([`Member::refresh_demand`]), so a
//!   partition holding nothing never competes with a head older than its real one.
//! * `placement`: the shares of the permits among partitions, and the rules built on them: who
//!   goes first for a returning connection ([`Admission::precedence`]), which ticket a permit
//!   goes to (the oldest of a partition below its share, else the oldest), and when a spare
//!   connection closes for another partition. Strict first-come order across partitions is
//!   deliberately not kept: see that module for the rule and why.
//! * `delivery`: a permit goes to the cell of the next ticket, which is fenced (`Delivering`)
//!   until the cell acknowledges with its new demand. A cell therefore receives one permit at
//!   a time, and demand published while it is fenced is held until the ack. Cells receive
//!   permits through the [`Member`] trait, so this module knows nothing of the cell.
//! * this file: the handle, the directory of the origin's cells, the pending count, the
//!   pressure flag, and what outlives a cell: each partition's gauges and demand versions, and
//!   the count of members by which the owner knows when the admission may be forgotten.
//!
//! A partition's cell may retire (`cell::retire`) and a successor take its place. The
//! partition's slot outlives both: its gauges (shared by the successor), its demand versions
//! (taken from one counter, so the successor publishes past its predecessor), its ticket. A
//! delivery that reaches a retired cell, or no cell, is refused ([`Admission::refuse`]); a cell
//! publishes its exact demand when it registers.
//!
//! Ordering demand costs `O(log P)` in the number of partitions with waiting requests; the
//! number of waiting requests does not enter it. Searching peers for a connection to borrow or
//! reclaim (done by cells on a bounded miss) reads one gauge per partition of the origin.
//!
//! What admission does not do: decide eligibility (which partition may use which connection);
//! that is the reuse scope's group, fixed per partition. Capacity and eligibility never read
//! each other's state.

mod delivery;
mod ledger;
mod order;
mod placement;

use std::fmt;
use std::time::Duration;

use crate::stats::Gauges;
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex, OwnLine};

pub use delivery::Member;
pub use ledger::CapacityLease;
pub use order::{DeliveryId, Demand};
pub use placement::{DEFAULT_TOLERANCE, Precedence};

use ledger::Ledger;
use order::DemandOrder;

/// The permits, demand order and pending count of one bounded origin, shared by its cells (the
/// [`Member`]s). A cheap handle: clones share the same admission.
pub struct Admission<C: Member> {
    shared: Arc<Shared<C>>,
}

impl<C: Member> Clone for Admission<C> {
    fn clone(&self) -> Self {
        Admission {
            shared: self.shared.clone(),
        }
    }
}

/// What every handle of one admission shares.
struct Shared<C: Member> {
    /// `max_connections_per_host`.
    limit: usize,
    /// `max_pending_per_host`, if set.
    pending_cap: Option<usize>,
    /// How long a partition's unmet demand must last before capacity moves to it (see
    /// `placement`).
    tolerance: Duration,
    /// Partition index → permits its cell holds (establishing, idle and active connections).
    /// Written under the state lock; read without it by the borrow checks of a miss.
    held: Vec<AtomicUsize>,
    /// Requests of this origin currently waiting in some cell, when a pending cap is set: the
    /// cap needs one exact count.
    waiting: AtomicUsize,
    /// Partition index → its requests waiting, when no pending cap is set. On a busy bounded
    /// origin nearly every request waits, and one counter written by every partition's thread
    /// would move between the cores twice per request (and take the hints read beside it on
    /// every return along); each partition counts on a cache line of its own instead.
    waiting_here: Box<[OwnLine<AtomicUsize>]>,
    /// Whether any ticket is active or fenced; written under the lock after each change, read
    /// without it by connections returning to a cell with nobody waiting (the common case must
    /// not take an origin-wide lock).
    pressure: AtomicBool,
    /// Counts the changes that may give a returning connection a ticket to serve (a
    /// publication, an ack, a refusal, a registration): a connection that found none tries
    /// again if this moved meanwhile (see [`demand_epoch`](Admission::demand_epoch)).
    epoch: AtomicU64,
    /// The ledger's free permits, written under the lock after each change and read without it
    /// by a miss, which then skips the lock when none is free (see `take_free_permit`).
    free: AtomicUsize,
    /// Partition index → the gauges of the origin's cells there: a miss reads its peers' idle
    /// counts here before it takes any of their locks or references. Set by the partition's
    /// first cell and shared by every cell after it (a retired cell's successor counts on in
    /// them: see [`gauges_for`](Admission::gauges_for)).
    gauges: Vec<std::sync::OnceLock<Arc<Gauges>>>,
    /// Partition index → the last demand version taken there. Versions come from the
    /// partition's slot, not its cell, so that a cell that replaces a retired one publishes
    /// past everything its predecessor published (a version counted from zero again would
    /// read as stale, and its requests would never be given a permit).
    versions: Box<[OwnLine<AtomicU64>]>,
    /// Cells created for this admission that are neither retired nor dropped, plus owners
    /// about to create one ([`join`](Admission::join)): the owner forgets the admission only
    /// when none is left.
    members: AtomicUsize,
    /// Partition index → eligibility group index (fixed at construction).
    groups: Vec<usize>,
    /// Partition index → the origin's cell there, once created. Strong references (loom models
    /// no `Weak`); [`Admission::detach`] breaks the cycle when the pool is dropped.
    cells: Vec<Mutex<Option<Arc<C>>>>,
    /// Partition index → whether its cell is registered, readable under the state lock (a cell
    /// slot's own lock must not be taken there).
    registered: Vec<AtomicBool>,
    /// Permits and tickets, under the admission's one lock.
    state: Mutex<State>,
}

/// Everything decided under the admission lock.
struct State {
    ledger: Ledger,
    order: DemandOrder,
}

impl<C: Member> Admission<C> {
    /// Admission for an origin bounded to `limit` connections, with an optional cap on waiting
    /// requests. `groups[p]` is the eligibility group of partition index `p`.
    ///
    /// # Panics
    ///
    /// If `limit` is zero (the builder rejects it first).
    pub fn new(limit: usize, pending_cap: Option<usize>, groups: Vec<usize>) -> Admission<C> {
        Admission::with_tolerance(limit, pending_cap, groups, DEFAULT_TOLERANCE)
    }

    /// [`new`](Self::new) with the placement tolerance: how long a partition's unmet demand
    /// must last before a returning connection of a partition holding more than its share
    /// closes to move its permit there.
    ///
    /// # Panics
    ///
    /// If `limit` is zero (the builder rejects it first).
    pub fn with_tolerance(
        limit: usize,
        pending_cap: Option<usize>,
        groups: Vec<usize>,
        tolerance: Duration,
    ) -> Admission<C> {
        assert!(limit > 0, "a bounded origin needs at least one permit");
        let partitions = groups.len();
        let shared = Arc::new(Shared {
            limit,
            pending_cap,
            tolerance,
            held: (0..partitions).map(|_| AtomicUsize::new(0)).collect(),
            waiting: AtomicUsize::new(0),
            waiting_here: (0..partitions).map(|_| OwnLine::default()).collect(),
            pressure: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            free: AtomicUsize::new(limit),
            gauges: (0..partitions)
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            versions: (0..partitions).map(|_| OwnLine::default()).collect(),
            members: AtomicUsize::new(0),
            cells: (0..partitions).map(|_| Mutex::new(None)).collect(),
            registered: (0..partitions).map(|_| AtomicBool::new(false)).collect(),
            groups,
            state: Mutex::new(State {
                ledger: Ledger::new(limit),
                order: DemandOrder::new(partitions),
            }),
        });
        Admission { shared }
    }

    /// The origin's bound.
    pub fn limit(&self) -> usize {
        self.shared.limit
    }

    /// How many partitions share the bound.
    pub fn partitions(&self) -> usize {
        self.shared.groups.len()
    }

    /// The origin's pending cap (`max_pending_per_host`), if set.
    pub fn pending_cap(&self) -> Option<usize> {
        self.shared.pending_cap
    }

    /// Requests of this origin waiting in some cell.
    pub fn waiting(&self) -> usize {
        let here: usize = self
            .shared
            .waiting_here
            .iter()
            .map(|count| count.0.load(Ordering::Acquire))
            .sum();
        self.shared.waiting.load(Ordering::Acquire) + here
    }

    /// Records the origin's cell in partition `partition`, in place of any earlier one, which
    /// then publishes its exact demand: a delivery that found no cell registered (its requests
    /// were already publishing) left the partition without a ticket.
    pub fn register(&self, partition: usize, cell: Arc<C>) {
        let _ = self.shared.gauges[partition].set(cell.gauges().clone());
        {
            let mut slot = self.shared.cells[partition].lock();
            *slot = Some(cell.clone());
            self.shared.registered[partition].store(true, Ordering::Release);
        }
        cell.publish_demand();
    }

    /// Takes `cell` out of partition `partition` if it is the one registered there (a
    /// retired cell leaving; a successor registered first stays). Deliveries for the
    /// partition are then refused until a cell registers again.
    pub fn unregister(&self, partition: usize, cell: &C) {
        let mut slot = self.shared.cells[partition].lock();
        if slot.as_deref().is_some_and(|held| std::ptr::eq(held, cell)) {
            self.shared.registered[partition].store(false, Ordering::Release);
            *slot = None;
        }
    }

    /// The gauges for a new cell of partition `partition`: the partition's shared ones once
    /// it has had a cell, else `fresh`, which become them.
    pub fn gauges_for(&self, partition: usize, fresh: Arc<Gauges>) -> Arc<Gauges> {
        self.shared.gauges[partition].get_or_init(|| fresh).clone()
    }

    /// The next demand version of partition `partition` (taken under its cell's lock).
    pub fn next_version(&self, partition: usize) -> u64 {
        // Relaxed is enough: a cell takes its versions under its own lock, and a successor
        // cell exists only after its predecessor retired under that lock, so the successor's
        // increments come later in this counter's modification order.
        self.shared.versions[partition]
            .0
            .fetch_add(1, Ordering::Relaxed)
            + 1
    }

    /// Counts one more member (see [`Membership`]) until the returned membership leaves.
    pub fn join(&self) -> Membership<C> {
        self.shared.members.fetch_add(1, Ordering::AcqRel);
        Membership {
            admission: self.clone(),
            left: AtomicBool::new(false),
        }
    }

    /// Members not yet left: cells neither retired nor dropped, and owners about to create
    /// one. With none, no request can reach this admission any more except through a retired
    /// cell, which adds nothing.
    pub fn members(&self) -> usize {
        self.shared.members.load(Ordering::Acquire)
    }

    /// Whether `self` and `other` are handles of the same admission.
    pub fn same(&self, other: &Admission<C>) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Forgets every cell (breaks the cell ↔ admission reference cycle when the pool is dropped).
    pub fn detach(&self) {
        for (cell, registered) in self.shared.cells.iter().zip(&self.shared.registered) {
            registered.store(false, Ordering::Release);
            cell.lock().take();
        }
    }

    /// The origin's cell in partition `partition`, if it exists.
    pub fn cell(&self, partition: usize) -> Option<Arc<C>> {
        self.shared.cells.get(partition)?.lock().clone()
    }

    /// The gauges of partition `partition`'s cell, once it is registered; read without any lock
    /// (they stay after [`detach`](Self::detach): they hold no reference back).
    pub fn gauges(&self, partition: usize) -> Option<&Gauges> {
        self.shared
            .gauges
            .get(partition)?
            .get()
            .map(|gauges| &**gauges)
    }

    /// Whether partitions `a` and `b` are in the same eligibility group.
    pub fn same_group(&self, a: usize, b: usize) -> bool {
        self.shared.groups[a] == self.shared.groups[b]
    }

    /// Whether partition `partition`'s cell is registered (readable under the state lock).
    fn is_registered(&self, partition: usize) -> bool {
        self.shared.registered[partition].load(Ordering::Acquire)
    }

    /// Partitions in the same eligibility group as `partition`, other than it.
    pub fn peers_in_group(&self, partition: usize) -> impl Iterator<Item = usize> + '_ {
        let groups = &self.shared.groups;
        let group = groups[partition];
        (0..groups.len()).filter(move |q| *q != partition && groups[*q] == group)
    }

    /// Every partition other than `partition`.
    pub fn peers(&self, partition: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.shared.groups.len()).filter(move |q| *q != partition)
    }

    /// The counter of `partition`'s waiting requests: the origin's one under a pending cap,
    /// the partition's own otherwise (see `waiting_here`).
    fn waiting_count(&self, partition: usize) -> &AtomicUsize {
        match self.shared.pending_cap {
            Some(_) => &self.shared.waiting,
            None => &self.shared.waiting_here[partition].0,
        }
    }

    /// Counts one more waiting request of `partition` unless the pending cap is reached.
    pub fn enter_waiting(&self, partition: usize) -> bool {
        let waiting = self.waiting_count(partition);
        let Some(cap) = self.shared.pending_cap else {
            waiting.fetch_add(1, Ordering::AcqRel);
            return true;
        };
        let mut current = waiting.load(Ordering::Acquire);
        loop {
            if current >= cap {
                return false;
            }
            match waiting.compare_exchange_weak(
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

    /// Counts one waiting request of `partition` less.
    pub fn leave_waiting(&self, partition: usize) {
        let previous = self.waiting_count(partition).fetch_sub(1, Ordering::AcqRel);
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
        self.shared.pressure.load(Ordering::SeqCst)
    }

    /// The count of demand changes so far. A connection that found no ticket to serve and
    /// went idle reads it before and after: if it moved, a request may have published after
    /// the search and looked for an idle connection while this one was out of the idle set,
    /// so the connection searches again.
    ///
    /// # Concurrency
    ///
    /// Every change that can make a ticket claimable counts here under the state lock, after
    /// the change (`demand_changed`); the request then passes a fence and reads its peers'
    /// idle gauges. The connection reads the count, searches, enters the idle set, passes a
    /// fence and reads the count again. Either the second read sees the change (and the
    /// connection searches again, finding the ticket), or the request's gauge read sees the
    /// connection idle.
    pub fn demand_epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::SeqCst)
    }

    /// Counts a demand change (see [`demand_epoch`](Self::demand_epoch)); called with the
    /// state locked, after the change.
    fn demand_changed(&self) {
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Recomputes the lock-free hints (the pressure flag, the free permits); called with the
    /// state locked, after every change.
    ///
    /// A hint is written only when it changes: both are read by every partition's thread, and
    /// a store of the same value still takes the line away from their caches.
    fn update_hints(&self, state: &State) {
        let (pressure, free) = (state.order.has_demand(), state.ledger.available());
        if self.shared.pressure.load(Ordering::SeqCst) != pressure {
            self.shared.pressure.store(pressure, Ordering::SeqCst);
        }
        if self.shared.free.load(Ordering::SeqCst) != free {
            self.shared.free.store(free, Ordering::SeqCst);
        }
    }
}

/// One member of an admission: a cell, or an owner about to create one. Its owner uses it to
/// know when the admission has none left (and may be forgotten); it leaves when
/// [`leave`](Self::leave) is called or it is dropped, once.
pub struct Membership<C: Member> {
    admission: Admission<C>,
    left: AtomicBool,
}

impl<C: Member> Membership<C> {
    /// The admission this is a member of.
    pub fn admission(&self) -> &Admission<C> {
        &self.admission
    }

    /// Leaves now (a retiring cell); later calls and the drop do nothing.
    pub fn leave(&self) {
        if !self.left.swap(true, Ordering::AcqRel) {
            let previous = self.admission.shared.members.fetch_sub(1, Ordering::AcqRel);
            debug_assert!(previous > 0, "more members left than joined");
        }
    }
}

impl<C: Member> Drop for Membership<C> {
    fn drop(&mut self) {
        self.leave();
    }
}

impl<C: Member> fmt::Debug for Membership<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Membership")
    }
}

impl<C: Member> fmt::Debug for Admission<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("Admission")
            .field("limit", &self.shared.limit)
            .field("available", &state.ledger.available())
            .field("waiting", &self.waiting())
            .field("tickets", &state.order.active_tickets())
            .finish()
    }
}
