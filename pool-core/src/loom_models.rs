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

type Model = Fake;
type Admission<C> = crate::admission::Admission<C>;
type Launches = Launched;

/// A bounded HTTP/1 cell whose launches are recorded.
fn cell(
    admission: &CellAdmission<Model>,
    partition: usize,
    launches: &Launches,
) -> Arc<Cell<Model>> {
    cell_in(EstablishMode::Http1, admission, partition, launches)
}

/// [`cell`] establishing in `mode`.
fn cell_in(
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
fn connection(cell: &Cell<Model>, permit: CellPermit<Model>) -> FakeH1 {
    FakeH1 {
        record: fakes::record_with_permit(cell, Protocol::Http1, Some(permit)),
        open: true,
    }
}

fn wait(cell: &Cell<Model>, seq: u64) -> Arc<CellWaiter<Model>> {
    fakes::wait(cell, Requirement::Any, seq, Instant::now())
}

/// Bound 1, partitions 0 and 1 in one group: the admission, the launches, partition 0's cell,
/// partition 1's cell, and partition 0's connection holding the only permit (`ACTIVE`).
fn owner_and_peer() -> (
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
fn return_on_thread(owner: &Arc<Cell<Model>>, conn: FakeH1) -> loom::thread::JoinHandle<()> {
    let owner = owner.clone();
    loom::thread::spawn(move || {
        owner.release_h1(conn, Instant::now());
    })
}

/// A permit released (the connection holding it closes and its socket goes) while the request
/// that would receive it cancels: the permit ends launched for that request or free again,
/// never both and never lost.
#[test]
fn loom_permit_delivery_races_cancellation() {
    loom::model(|| {
        let admission = Admission::<Cell<Model>>::new(1, None, vec![0]);
        let launches = Launches::default();
        let cell = cell(&admission, 0, &launches);
        let held = admission.take_free_permit(0).expect("one permit");
        let waiter = wait(&cell, 1);
        assert!(launches.lock().unwrap().is_empty(), "no permit was free");

        let releaser = loom::thread::spawn(move || drop(held));
        let canceller = {
            let (cell, waiter) = (cell.clone(), waiter.clone());
            loom::thread::spawn(move || cell.cancel(&waiter, Instant::now()))
        };
        releaser.join().unwrap();
        canceller.join().unwrap();

        // A launch that received the permit while the waiter was leaving still owns it; the
        // establishment would find nobody to serve and its guard would return the permit.
        let launched: Vec<_> = launches.lock().unwrap().drain(..).collect();
        assert!(launched.len() <= 1);
        drop(launched);
        assert_eq!(admission.available(), 1, "the permit is back exactly once");
        assert_eq!(admission.waiting(), 0);
        assert_eq!(cell.gauges().get(Gauge::WaitingRequests), 0);
        admission.detach();
    });
}

/// A busy connection of partition 0 returns while a request arrives in partition 1 (same
/// eligibility group, no permit free): whichever way they interleave, the connection serves
/// that request, exactly once. (A request left waiting beside an idle connection it may use,
/// with the only permit held by that connection, would wait forever.)
#[test]
fn loom_h1_return_races_borrow() {
    loom::model(|| {
        let (admission, launches, owner, borrower, conn) = owner_and_peer();
        let record = conn.record.clone();

        let returner = return_on_thread(&owner, conn);
        let requester = {
            let borrower = borrower.clone();
            loom::thread::spawn(move || wait(&borrower, 1))
        };
        returner.join().unwrap();
        let waiter = requester.join().unwrap();

        let served = waiter.try_take();
        match &served {
            Some(Grant::H1(got)) => {
                assert!(Arc::ptr_eq(&got.record, &record));
                assert!(
                    !record.is_idle() && !record.is_closed(),
                    "checked out exactly once"
                );
                assert_eq!(owner.idle_len(), 0);
            }
            None => panic!("an eligible connection went idle while a request waited beside it"),
            Some(other) => panic!("unexpected grant {other:?}"),
        }
        assert!(
            launches.lock().unwrap().is_empty(),
            "no permit was free: nothing was established"
        );
        drop(served);
        admission.detach();
    });
}

/// Partition 0's busy connection returns while its own request waits there and an older
/// request arrives in partition 1 (same group, the only permit held by the connection). However
/// they interleave, the connection serves exactly one of the two, and returning it again serves
/// the other: the precedence check never leaves a request waiting with nothing coming.
#[test]
fn loom_h1_return_with_local_waiter_races_older_peer() {
    loom::model(|| {
        let (admission, launches, owner, peer, conn) = owner_and_peer();
        let local = wait(&owner, 2);

        let returner = return_on_thread(&owner, conn);
        let requester = {
            let peer = peer.clone();
            loom::thread::spawn(move || wait(&peer, 1))
        };
        returner.join().unwrap();
        let older = requester.join().unwrap();

        // The request served returns the connection through its own cell.
        let (first, second, via) = match (local.try_take(), older.try_take()) {
            (Some(Grant::H1(conn)), None) => (conn, &older, &owner),
            (None, Some(Grant::H1(conn))) => (conn, &local, &peer),
            (a, b) => panic!("exactly one request gets the connection: {a:?} / {b:?}"),
        };
        via.release_h1(first, Instant::now());
        assert!(
            matches!(second.try_take(), Some(Grant::H1(_))),
            "the other request was served next"
        );
        assert!(launches.lock().unwrap().is_empty(), "no permit was free");
        assert_eq!(admission.waiting(), 0);
        admission.detach();
    });
}

/// Two partitions of one origin each hold their share (one permit of two) and have a request
/// waiting, partition 1's the older; both busy connections return at once. However they
/// interleave, each connection serves its own partition's request (local preference: partition
/// 1 holds its share, so its older request is no claim on partition 0's connection), no permit
/// moves and nothing is established.
#[test]
fn loom_returns_at_their_share_stay_local() {
    loom::model(|| {
        let admission = Admission::<Cell<Model>>::new(2, None, vec![0, 0]);
        let launches = Launches::default();
        let a = cell(&admission, 0, &launches);
        let b = cell(&admission, 1, &launches);
        let conn_a = connection(&a, admission.take_free_permit(0).expect("a permit"));
        let conn_b = connection(&b, admission.take_free_permit(1).expect("a permit"));
        let older_b = wait(&b, 1);
        let newer_a = wait(&a, 2);

        let returns: Vec<_> = [(a.clone(), conn_a), (b.clone(), conn_b)]
            .into_iter()
            .map(|(cell, conn)| {
                loom::thread::spawn(move || {
                    cell.release_h1(conn, Instant::now());
                })
            })
            .collect();
        for handle in returns {
            handle.join().unwrap();
        }

        // Kept until the counts are read: dropping a connection returns its permit.
        let mut served = Vec::new();
        for (waiter, home) in [(&newer_a, &a), (&older_b, &b)] {
            match waiter.try_take() {
                Some(Grant::H1(conn)) => {
                    assert!(
                        Arc::ptr_eq(conn.record.gauges(), home.gauges()),
                        "served by its own partition's connection"
                    );
                    served.push(conn);
                }
                other => panic!("each request is served at once: {other:?}"),
            }
        }
        assert!(
            launches.lock().unwrap().is_empty(),
            "nothing was established"
        );
        assert_eq!(
            (admission.held(0), admission.held(1)),
            (1, 1),
            "no permit moved"
        );
        drop(served);
        admission.detach();
    });
}

/// Two snapshots of one cell's demand published from two threads in either order: the newer
/// one wins, so demand the cell no longer has is never resurrected.
#[test]
fn loom_stale_demand_versions_are_rejected() {
    loom::model(|| {
        let admission = Admission::<Cell<Model>>::new(1, None, vec![0]);
        let _held = admission.take_free_permit(0).expect("one permit");
        let older = {
            let admission = admission.clone();
            loom::thread::spawn(move || admission.publish(0, Demand::new(1, Some(7), None)))
        };
        let newer = {
            let admission = admission.clone();
            loom::thread::spawn(move || admission.publish(0, Demand::new(2, None, None)))
        };
        older.join().unwrap();
        newer.join().unwrap();
        assert!(
            !admission.under_pressure(),
            "the newest snapshot (no demand) stands"
        );
    });
}

/// The driver closing a connection (its peer went away) races a request committing a dispatch
/// on it from the idle set: the connection is accounted exactly once either way.
#[test]
fn loom_logical_close_races_dispatch_commit() {
    loom::model(|| {
        let gauges = Arc::new(Gauges::default());
        gauges.inc(Gauge::Establishing);
        let origin = OriginKey::from_uri(&"http://loom.test".parse().unwrap()).unwrap();
        let info = ConnectionInfo::new(
            ConnectionId::from_u64(2),
            origin,
            PartitionId::ANONYMOUS,
            Protocol::Http1,
        );
        let record = ConnectionRecord::install(info, gauges.clone(), None, None);
        assert!(record.checkin());

        let committed = std::sync::Arc::new(AtomicBool::new(false));
        let dispatcher = {
            let (record, committed) = (record.clone(), committed.clone());
            loom::thread::spawn(move || committed.store(record.checkout(), Ordering::SeqCst))
        };
        let closer = {
            let record = record.clone();
            loom::thread::spawn(move || record.close(CloseReason::ProtocolClosed, None))
        };
        dispatcher.join().unwrap();
        assert!(closer.join().unwrap(), "the only close wins");

        let s = gauges.snapshot();
        assert_eq!((s.h1_idle, s.h1_active, s.h1_draining), (0, 0, 1), "{s:?}");
        assert!(record.is_closed());
        // A commit that lost reports failure: the request takes another connection.
        let _ = committed.load(Ordering::SeqCst);
    });
}

/// The driver's I/O is dropped on one thread while a close runs on another (an idle
/// connection's driver ends as the pool retires it): `h1_draining` is counted before any
/// drop can take it away, and everything ends at zero.
#[test]
fn loom_close_races_the_io_drop() {
    loom::model(|| {
        let gauges = Arc::new(Gauges::default());
        gauges.inc(Gauge::Establishing);
        let link = PhysicalLink::new(gauges.clone());
        let origin = OriginKey::from_uri(&"http://loom.test".parse().unwrap()).unwrap();
        let info = ConnectionInfo::new(
            ConnectionId::from_u64(3),
            origin,
            PartitionId::ANONYMOUS,
            Protocol::Http1,
        );
        let record = ConnectionRecord::install(info, gauges.clone(), None, None);
        link.attach(&record);
        assert!(record.checkin());

        let closer = {
            let record = record.clone();
            loom::thread::spawn(move || record.close(CloseReason::IdleTimeout, None))
        };
        let dropper = loom::thread::spawn(move || link.gone());
        let closed_here = closer.join().unwrap();
        dropper.join().unwrap();

        // Whichever came first names the close: the pool's, or the I/O drop's.
        let reason = record.close_reason();
        assert_eq!(closed_here, reason == Some(CloseReason::IdleTimeout));
        assert!(closed_here || reason == Some(CloseReason::ProtocolClosed));
        assert_eq!(gauges.snapshot(), crate::stats::PartitionStats::default());
    });
}

/// A grant claimed and filled while its waiter cancels: the value ends with exactly one side.
#[test]
fn loom_waiter_claim_races_cancel() {
    loom::model(|| {
        let waiter = Arc::new(Waiter::<u32>::new(1, Requirement::Any, None));
        let filler = {
            let waiter = waiter.clone();
            loom::thread::spawn(move || {
                if waiter.claim() {
                    waiter.fill(7).err()
                } else {
                    Some(7)
                }
            })
        };
        let cancelled = waiter.cancel();
        let back_to_filler = filler.join().unwrap();
        let with_waiter = match cancelled {
            None => None,
            Some(value) => value,
        };
        let taken = waiter.try_take();
        let owners = [back_to_filler, with_waiter, taken]
            .iter()
            .filter(|v| v.is_some())
            .count();
        assert_eq!(owners, 1, "exactly one side ends up with the value");
    });
}

/// Two generations and a flight: a request waits because the only generation is at its stream
/// limit, and its scale-out flight publishes a second generation while a stream of the first
/// ends. Whatever the interleaving, the request gets exactly one stream (on either
/// generation), no stream is reserved twice, and no second flight starts.
#[test]
fn loom_publication_races_a_freed_stream() {
    loom::model(|| {
        let launches = Launches::default();
        let cell = fakes::recording_cell(
            EstablishMode::Http2,
            Some(Duration::from_secs(90)),
            None,
            &launches,
            None,
        );
        let now = Instant::now();
        let first = fakes::wait(&cell, Requirement::Any, 1, now);
        let (_, launch, _) = launches.lock().unwrap().remove(0);
        let crate::cell::Launch::Flight(flight) = launch else {
            panic!("an HTTP/2 cell launches flights")
        };
        let old = fakes::h2(&cell);
        old.set_limit(1);
        cell.publish_h2(old.clone(), flight, now);
        assert!(matches!(first.try_take(), Some(Grant::H2(_))));
        cell.activation_done();
        // The generation is full: the next request waits and scales out.
        let waiting = fakes::wait(&cell, Requirement::Any, 2, now);
        let (_, launch, _) = launches.lock().unwrap().remove(0);
        let crate::cell::Launch::Flight(scale_out) = launch else {
            panic!("a scale-out is a flight")
        };
        let new = fakes::h2(&cell);
        new.set_limit(1);
        let publisher = {
            let (cell, new) = (cell.clone(), new.clone());
            loom::thread::spawn(move || cell.publish_h2(new, scale_out, now))
        };
        old.end_stream();
        cell.h2_stream_freed();
        publisher.join().unwrap();
        let grant = waiting.try_take();
        assert!(
            matches!(grant, Some(Grant::H2(_))),
            "the waiting request got exactly one stream"
        );
        assert_eq!(old.taken() + new.taken(), 1, "one stream reserved, for it");
        assert!(launches.lock().unwrap().is_empty(), "no second flight");
    });
}

/// Two bounded HTTP/2 cells sharing one permit, after partition 0's first request took it.
struct BoundedH2Pair {
    admission: CellAdmission<Model>,
    /// Partition 0's cell, then partition 1's.
    cells: [Arc<Cell<Model>>; 2],
    /// Partition 0's first request, which launched the flight.
    first: Arc<CellWaiter<Model>>,
    /// The generation the flight would publish, owning the permit.
    generation: fakes::FakeH2,
    flight: crate::cell::FlightId,
}

/// [`BoundedH2Pair`] for partitions 0 and 1 in the eligibility groups `groups` says.
fn bounded_h2_pair(groups: Vec<usize>, launches: &Launches, now: Instant) -> BoundedH2Pair {
    let admission = Admission::<Cell<Model>>::new(1, None, groups);
    let h2_cell = |partition| cell_in(EstablishMode::Http2, &admission, partition, launches);
    let (owner, other) = (h2_cell(0), h2_cell(1));
    let first = fakes::wait(&owner, Requirement::Any, 1, now);
    let (_, launch, permit) = launches.lock().unwrap().remove(0);
    let crate::cell::Launch::Flight(flight) = launch else {
        panic!("an HTTP/2 cell launches flights")
    };
    let generation = fakes::FakeH2 {
        record: fakes::record_with_permit(&owner, Protocol::Http2, permit),
        accepting: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
        streams: std::sync::Arc::default(),
    };
    BoundedH2Pair {
        admission,
        cells: [owner, other],
        first,
        generation,
        flight,
    }
}

/// Bound 1, two partitions of one group, HTTP/2: partition 0's flight holds the permit and its
/// generation is published while a request arrives in partition 1. Whichever way they
/// interleave, that request gets one stream of the generation (borrowed), and nothing else is
/// established.
#[test]
fn loom_bounded_publication_races_a_peer_miss() {
    loom::model(|| {
        let launches = Launches::default();
        let now = Instant::now();
        let BoundedH2Pair {
            admission,
            cells: [owner, borrower],
            first,
            generation,
            flight,
        } = bounded_h2_pair(vec![0, 0], &launches, now);
        // Partition 0's request leaves before its flight publishes.
        owner.cancel(&first, now);

        let publisher = {
            let (owner, generation) = (owner.clone(), generation.clone());
            loom::thread::spawn(move || owner.publish_h2(generation, flight, now))
        };
        let requester = {
            let borrower = borrower.clone();
            loom::thread::spawn(move || fakes::wait(&borrower, Requirement::Any, 2, now))
        };
        publisher.join().unwrap();
        let waiter = requester.join().unwrap();

        assert!(
            matches!(waiter.try_take(), Some(Grant::BorrowedH2(_))),
            "the peer's request borrowed a stream"
        );
        assert_eq!(generation.taken(), 1, "one stream reserved, for it");
        assert!(
            launches.lock().unwrap().is_empty(),
            "nothing else established"
        );
        assert_eq!(admission.waiting(), 0);
        admission.detach();
    });
}

/// Bound 1, two partitions of different groups, HTTP/2: partition 0's generation holds the
/// permit, and its one stream ends while a request arrives in partition 1 (which may not use
/// it). Whichever way they interleave, the generation closes as `Reclaimed` exactly once and
/// the permit launches partition 1's connection; nobody is left waiting with nothing coming.
#[test]
fn loom_quiet_generation_races_a_miss_of_another_group() {
    loom::model(|| {
        let launches = Launches::default();
        let now = Instant::now();
        let BoundedH2Pair {
            admission,
            cells: [owner, other],
            first,
            generation,
            flight,
        } = bounded_h2_pair(vec![0, 1], &launches, now);
        owner.publish_h2(generation.clone(), flight, now);
        // The request leases its stream (the pool counts the lease in the gauges).
        assert!(matches!(first.try_take(), Some(Grant::H2(_))));
        owner.activation_done();
        owner.gauges().inc(Gauge::H2ActiveStreams);
        let record = generation.record.clone();

        let ender = {
            let (owner, generation, record) = (owner.clone(), generation.clone(), record.clone());
            loom::thread::spawn(move || {
                owner.gauges().dec(Gauge::H2ActiveStreams);
                generation.end_stream();
                owner.h2_stream_ended(&record);
            })
        };
        let requester = {
            let other = other.clone();
            loom::thread::spawn(move || fakes::wait(&other, Requirement::Any, 2, now))
        };
        ender.join().unwrap();
        let waiter = requester.join().unwrap();

        assert_eq!(record.close_reason(), Some(CloseReason::Reclaimed));
        assert_eq!(owner.h2_generations(), 0);
        let launched: Vec<_> = launches.lock().unwrap().drain(..).collect();
        assert_eq!(
            launched.len(),
            1,
            "one connection launched, for partition 1"
        );
        assert!(Arc::ptr_eq(&launched[0].0, &waiter));
        assert!(launched[0].2.is_some(), "with the permit");
        drop(launched);
        admission.detach();
    });
}

/// An unbounded cell is retired (it had nothing in it) while a request misses in it: either
/// the request is turned away (`Retired`, and it looks its origin up again) and the cell stays
/// empty, or the retirement is refused and the request waits with its attempt launched. A
/// request queued in a retired cell would wait for ever, since its partition drops the cell.
#[test]
fn loom_retirement_races_a_miss() {
    loom::model(|| {
        let launches = Launches::default();
        let cell = fakes::recording_cell(
            EstablishMode::Http1,
            Some(Duration::from_secs(90)),
            None,
            &launches,
            None,
        );
        let retiring = {
            let cell = cell.clone();
            loom::thread::spawn(move || cell.retire_if_unused())
        };
        let acquired = cell.acquire(Requirement::Any, None, || 1, Instant::now);
        let retired = retiring.join().unwrap();
        let launched = launches.lock().unwrap().len();
        match acquired {
            crate::cell::Acquire::Retired => {
                assert!(retired && cell.is_retired());
                assert!(cell.gauges().all_zero(), "{:?}", cell.gauges().snapshot());
                assert_eq!(launched, 0);
            }
            crate::cell::Acquire::Wait(_) => {
                assert!(!retired && !cell.is_retired());
                assert_eq!(cell.gauges().snapshot().waiting_requests, 1);
                assert_eq!(launched, 1);
            }
            other => panic!("a miss or a refusal, got {other:?}"),
        }
    });
}

/// Bound 1, one partition. The only permit is released while the partition's request cancels
/// and its cell retires, after which a successor cell's request waits in the same partition
/// (publishing before the successor registers, as the pool's cells may).
/// Whichever way they interleave (the permit reaching the request before it cancels, the
/// retired cell, no cell, or the successor), it ends launched exactly once, and comes back.
#[test]
fn loom_bounded_retirement_races_a_delivery() {
    loom::model(|| {
        let admission = Admission::<Cell<Model>>::new(1, None, vec![0]);
        let launches = Launches::default();
        let old = cell(&admission, 0, &launches);
        let held = admission.take_free_permit(0).expect("one permit");
        let leaving = wait(&old, 1);

        let releaser = loom::thread::spawn(move || drop(held));
        let (retired, successor) = {
            old.cancel(&leaving, Instant::now());
            if old.retire_if_unused() {
                // As in the pool, the successor's first request may publish before the
                // successor is registered.
                let successor = fakes::unregistered_cell(&admission, 0, &launches);
                let waiting = wait(&successor, 2);
                admission.register(0, successor.clone());
                (true, Some((successor, waiting)))
            } else {
                (false, None)
            }
        };
        releaser.join().unwrap();

        let launched: Vec<_> = launches.lock().unwrap().drain(..).collect();
        assert_eq!(launched.len(), 1, "the permit was launched once");
        assert!(launched[0].2.is_some(), "with the permit");
        match &successor {
            Some((_, waiting)) => {
                assert!(retired);
                assert!(Arc::ptr_eq(&launched[0].0, waiting), "for the successor");
            }
            // The permit reached the request before it left: the launch keeps the cell.
            None => assert!(Arc::ptr_eq(&launched[0].0, &leaving)),
        }
        drop(launched);
        assert_eq!(admission.available(), 1, "the permit is back exactly once");
        admission.detach();
    });
}

/// Bound 1, partitions 0 and 1 in one group. Partition 0's connection (the only permit) returns
/// while partition 1's request, which waits for it, cancels, partition 1's cell retires, and a
/// successor cell's request waits there (publishing before the successor registers). However
/// they interleave, the successor's request is served exactly once: by the connection, or by
/// the permit it gives up when it closes for that request (a reclaim). It never stays idle at
/// home beside a request that may use it.
#[test]
fn loom_a_return_to_a_retiring_peer_serves_its_successor() {
    loom::model(|| {
        let (admission, launches, owner, peer, conn) = owner_and_peer();
        let record = conn.record.clone();
        // The socket, whose drop returns a closed HTTP/1 connection's permit.
        let link = PhysicalLink::new(owner.gauges().clone());
        link.attach(&record);
        let leaving = wait(&peer, 1);

        let returner = return_on_thread(&owner, conn);
        peer.cancel(&leaving, Instant::now());
        assert!(
            peer.retire_if_unused(),
            "nothing was left in the peer's cell"
        );
        let successor = fakes::unregistered_cell(&admission, 1, &launches);
        let waiting = wait(&successor, 2);
        admission.register(1, successor.clone());
        returner.join().unwrap();

        // Served before it left or not, a cancelled request keeps nothing.
        assert!(
            leaving.try_take().is_none(),
            "a cancelled request kept a grant"
        );
        let served = waiting.try_take();
        if served.is_none() && record.is_closed() {
            // Closed for the successor's request: its socket goes, and its permit with it.
            link.gone();
        }
        let launched: Vec<_> = launches.lock().unwrap().drain(..).collect();
        match served {
            // Lent: the connection serves the successor's request.
            Some(Grant::H1(got)) => {
                assert!(Arc::ptr_eq(&got.record, &record));
                assert!(!record.is_idle() && owner.idle_len() == 0);
                assert!(launched.is_empty(), "no permit was free");
            }
            // Or closed so its permit moves there (a reclaim): the permit launches for it.
            None => {
                assert_eq!(
                    record.close_reason(),
                    Some(CloseReason::Reclaimed),
                    "the successor's request waits beside an idle connection"
                );
                assert_eq!(launched.len(), 1);
                assert!(Arc::ptr_eq(&launched[0].0, &waiting));
                assert!(launched[0].2.is_some(), "with the permit");
            }
            Some(other) => panic!("unexpected grant {other:?}"),
        }
        drop(launched);
        admission.detach();
    });
}
