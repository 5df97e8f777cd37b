//! Loom models of the coordination code (`RUSTFLAGS="--cfg pool_loom" cargo test -p pool-core
//! --release --lib loom`, run by `cargo xtask ci` with `LOOM_MAX_PREEMPTIONS=2`).
//!
//! Each model runs the production code of this crate (cells, admission, waiters, records)
//! against loom's scheduler with two or three threads, and checks one ownership invariant over
//! every interleaving loom explores:
//!
//! * a permit delivered while its waiter cancels is refunnelled exactly once;
//! * a returning HTTP/1 connection racing a new request's borrow ends in exactly one place;
//! * a returning connection with a local request waiting, racing an older peer request's
//!   arrival, serves one of them and then the other (fairness never strands either);
//! * two partitions at their share whose connections return at once each serve their own
//!   request, although one of them waits with the older request (local preference);
//! * demand published out of order never resurrects a stale ticket;
//! * a logical close racing a dispatch commit accounts the connection exactly once;
//! * a logical close racing the drop of the connection's I/O never takes a gauge below zero
//!   (every model checks that: `Gauges::dec` asserts it under loom);
//! * a waiter's claim racing its cancellation hands the value to exactly one side;
//! * a scale-out generation published while a stream of the full one ends gives the waiting
//!   request exactly one stream, and starts no second flight;
//! * a bounded generation published while a peer's request misses lends that request exactly
//!   one stream (a request left waiting beside a generation it may use, with the only permit
//!   held by that generation, would wait forever);
//! * a generation whose last stream ends while a request of a partition that may not use it
//!   misses closes exactly once, and its permit launches that request's connection;
//! * a cell retiring while a request misses in it either turns the request away and stays
//!   empty, or stays and queues the request: never a request queued in a retired cell;
//! * a bounded cell retiring while the only permit is on its way to its partition, followed by
//!   a successor cell whose request waits there: the permit ends launched for that request (or
//!   for the retiring cell's own request, which then keeps it from retiring), never lost;
//! * a connection returning while the peer partition it would serve loses its request, its cell
//!   retires and a successor's request waits there serves that request (or gives it its
//!   permit), exactly once: never idle at home beside it.
//!
//! One file per concern: `permits` (delivery and demand versions), `returns` (a returning
//! HTTP/1 connection and the requests it may serve), `records` (records and waiters),
//! `streams` (HTTP/2 generations), `retire` (cells that retire); the fakes' helpers here.

use std::time::{Duration, Instant};

use loom::sync::atomic::{AtomicBool, Ordering};

use crate::admission::Demand;
use crate::cell::fakes::{self, Fake, FakeH1, Launched};
use crate::cell::{Cell, CellAdmission, CellPermit, CellWaiter, EstablishMode, Grant};
use crate::close::CloseReason;
use crate::connection::{ConnectionRecord, PhysicalLink};
use crate::events::{ConnectionId, ConnectionInfo, Protocol};
use crate::origin::OriginKey;
use crate::partition::PartitionId;
use crate::stats::{Gauge, Gauges};
use crate::sync::Arc;
use crate::waiter::{Requirement, Waiter};

pub(super) type Model = Fake;
pub(super) type Admission<C> = crate::admission::Admission<C>;
pub(super) type Launches = Launched;

mod permits;
mod records;
mod retire;
mod returns;
mod streams;

/// A bounded HTTP/1 cell whose launches are recorded.
pub(super) fn cell(
    admission: &CellAdmission<Model>,
    partition: usize,
    launches: &Launches,
) -> Arc<Cell<Model>> {
    cell_in(EstablishMode::Http1, admission, partition, launches)
}

/// [`cell`] establishing in `mode`.
pub(super) fn cell_in(
    mode: EstablishMode,
    admission: &CellAdmission<Model>,
    partition: usize,
    launches: &Launches,
) -> Arc<Cell<Model>> {
    fakes::recording_cell(
        mode,
        Some(Duration::from_secs(90)),
        Some((admission.clone(), partition)),
        launches,
        None,
    )
}

/// An HTTP/1 connection of `cell`, installed `ACTIVE`, owning `permit`.
pub(super) fn connection(cell: &Cell<Model>, permit: CellPermit<Model>) -> FakeH1 {
    FakeH1 {
        record: fakes::record_with_permit(cell, Protocol::Http1, Some(permit)),
        open: true,
    }
}

pub(super) fn wait(cell: &Cell<Model>, seq: u64) -> Arc<CellWaiter<Model>> {
    fakes::wait(cell, Requirement::Any, seq, Instant::now())
}

/// Bound 1, partitions 0 and 1 in one group: the admission, the launches, partition 0's cell,
/// partition 1's cell, and partition 0's connection holding the only permit (`ACTIVE`).
pub(super) fn owner_and_peer() -> (
    CellAdmission<Model>,
    Launches,
    Arc<Cell<Model>>,
    Arc<Cell<Model>>,
    FakeH1,
) {
    let admission = Admission::<Cell<Model>>::new(1, None, vec![0, 0]);
    let launches = Launches::default();
    let owner = cell(&admission, 0, &launches);
    let peer = cell(&admission, 1, &launches);
    let conn = connection(&owner, admission.take_free_permit(0).expect("one permit"));
    (admission, launches, owner, peer, conn)
}

/// Returns `conn` to `owner` on a thread of its own.
pub(super) fn return_on_thread(
    owner: &Arc<Cell<Model>>,
    conn: FakeH1,
) -> loom::thread::JoinHandle<()> {
    let owner = owner.clone();
    loom::thread::spawn(move || {
        owner.release_h1(conn, Instant::now());
    })
}
