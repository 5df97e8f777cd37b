//! The cell's bounded transitions: permits, the pending cap, borrow, reclaim, fairness between
//! partitions.

use super::*;

/// Partitions of one bounded origin; `groups` decides eligibility.
pub(super) fn bounded(
    limit: usize,
    pending: Option<usize>,
    groups: Vec<usize>,
) -> (CellAdmission<Fake>, Vec<Rig>) {
    bounded_in(EstablishMode::Http1, limit, pending, groups)
}

/// [`bounded`] with cells establishing in `mode`.
fn bounded_in(
    mode: EstablishMode,
    limit: usize,
    pending: Option<usize>,
    groups: Vec<usize>,
) -> (CellAdmission<Fake>, Vec<Rig>) {
    let admission = Admission::new(limit, pending, groups.clone());
    let rigs = (0..groups.len())
        .map(|p| {
            Rig::with(
                mode,
                Some(Duration::from_secs(90)),
                Some((admission.clone(), p)),
            )
        })
        .collect();
    (admission, rigs)
}

/// Bound 1, HTTP/2: partition 0's first request launches the flight with the permit, and the
/// generation it publishes (owning the permit, its peer's limit `limit`) serves that request,
/// whose stream stays open.
fn bounded_h2_generation(rigs: &[Rig], limit: usize, t0: Instant) -> FakeH2 {
    let first = rigs[0].wait(Requirement::Any, 1, t0);
    publish_launched(&rigs[0], &first, limit, t0)
}

/// Publishes the generation of the flight `rig` launched (with the permit) for `first`, its
/// peer's limit `limit`, and checks that it serves `first`, whose stream stays open.
fn publish_launched(rig: &Rig, first: &Arc<CellWaiter<Fake>>, limit: usize, t0: Instant) -> FakeH2 {
    let (waiter, launch, permit) = rig.launches_with_permits().remove(0);
    assert!(Arc::ptr_eq(&waiter, first));
    let Launch::Flight(flight) = launch else {
        panic!("an HTTP/2 cell launches flights")
    };
    let generation = FakeH2 {
        record: record_with_permit(&rig.cell, Protocol::Http2, permit),
        ..h2(&rig.cell)
    };
    generation.set_limit(limit);
    rig.cell.publish_h2(generation.clone(), flight, t0);
    assert!(matches!(take(first), Some(Grant::H2(_))));
    rig.cell.activation_done();
    generation
}

/// The last open stream of `generation` (counted in `rig`'s gauge) ends, as a stream guard
/// ends it: the gauge first, then the stream, then the cell is told.
fn end_counted_stream(rig: &Rig, generation: &FakeH2) {
    rig.cell.gauges().dec(Gauge::H2ActiveStreams);
    generation.end_stream();
    rig.cell.h2_stream_ended(&generation.record);
}

#[test]
fn a_generation_at_its_limit_lends_the_stream_that_frees_to_a_waiting_peer() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded_in(EstablishMode::Http2, 1, None, vec![0, 0]);
    let generation = bounded_h2_generation(&rigs, 1, t0);
    // Partition 1's request finds the generation full and no permit free.
    let waiting = rigs[1].wait(Requirement::Any, 2, t0);
    assert!(take(&waiting).is_none());
    assert!(rigs[1].launches().is_empty());
    // The stream ends at the limit: the freed stream goes to partition 1's request.
    generation.end_stream();
    rigs[0].cell.h2_stream_freed();
    assert!(
        matches!(take(&waiting), Some(Grant::BorrowedH2(_))),
        "lent the freed stream"
    );
    assert_eq!(generation.taken(), 1);
    assert_eq!((admission.waiting(), admission.available()), (0, 0));
}

#[test]
fn a_quiet_generation_closes_for_a_partition_that_may_not_use_it() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded_in(EstablishMode::Http2, 1, None, vec![0, 1]);
    let generation = bounded_h2_generation(&rigs, 100, t0);
    rigs[0].cell.gauges().inc(Gauge::H2ActiveStreams);
    let waiting = rigs[1].wait(Requirement::Any, 2, t0);
    assert!(
        rigs[1].launches().is_empty(),
        "a stream is open: nothing moves"
    );
    // Its last stream ends (the gauge first, as a stream guard does): the generation closes
    // and the permit launches partition 1's connection.
    end_counted_stream(&rigs[0], &generation);
    assert_eq!(
        generation.record.close_reason(),
        Some(CloseReason::Reclaimed)
    );
    assert_eq!(rigs[0].cell.h2_generations(), 0);
    let launched = rigs[1].launches_with_permits();
    assert_eq!(launched.len(), 1);
    assert!(Arc::ptr_eq(&launched[0].0, &waiting));
    assert!(launched[0].2.is_some(), "with the permit");
    drop(launched);
    assert_eq!(admission.available(), 1, "the dropped launch gave it back");
}

/// Bound 1, three partitions of three groups. Partition 0's generation fails (its record
/// closes, its permit goes to partition 1) and its last stream ends before it retires: the
/// reclaim that stream end counts for partition 2 closes nothing, and must not stay counted as
/// in transit. Otherwise no capacity moves again: partition 1's generation, quiet, would
/// keep the permit while partition 2 waits for ever (a stress run with a server closing
/// connections under the pool hung so).
#[test]
fn a_reclaim_counted_for_a_generation_that_already_failed_does_not_stop_later_reclaims() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded_in(EstablishMode::Http2, 1, None, vec![0, 1, 2]);
    let failed = bounded_h2_generation(&rigs, 100, t0);
    rigs[0].cell.gauges().inc(Gauge::H2ActiveStreams);
    let first = rigs[1].wait(Requirement::Any, 2, t0);
    let starving = rigs[2].wait(Requirement::Any, 3, t0);
    assert!(rigs[1].launches().is_empty() && rigs[2].launches().is_empty());

    // The connection fails: its permit launches partition 1's flight. Its stream ends before
    // the generation retires.
    failed.record.close(CloseReason::ProtocolClosed, None);
    end_counted_stream(&rigs[0], &failed);
    assert_eq!(
        failed.record.close_reason(),
        Some(CloseReason::ProtocolClosed)
    );

    // Partition 1's generation serves its request, whose stream then ends.
    let generation = publish_launched(&rigs[1], &first, 100, t0);
    rigs[1].cell.gauges().inc(Gauge::H2ActiveStreams);
    end_counted_stream(&rigs[1], &generation);

    // Quiet, it closes for partition 2, which holds nothing and waits.
    assert_eq!(
        generation.record.close_reason(),
        Some(CloseReason::Reclaimed)
    );
    let launched = rigs[2].launches_with_permits();
    assert_eq!(launched.len(), 1, "partition 2 got the permit");
    assert!(Arc::ptr_eq(&launched[0].0, &starving));
    drop(launched);
    assert_eq!(admission.available(), 1);
}

#[test]
fn bounded_miss_takes_a_free_permit_and_the_launch_owns_it() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(2, None, vec![0]);
    let w = rigs[0].wait(Requirement::Any, 1, t0);
    let mut launches = rigs[0].launches_with_permits();
    assert_eq!(launches.len(), 1);
    assert!(Arc::ptr_eq(&launches[0].0, &w));
    assert!(launches[0].2.is_some(), "the establishment owns a permit");
    assert_eq!(admission.available(), 1);
    launches.pop().unwrap().2.unwrap().release();
    assert_eq!(admission.available(), 2, "a dropped permit comes back");
}

#[test]
fn permits_go_to_the_oldest_ticket_across_partitions() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(1, None, vec![0, 1]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let first = rigs[0].launches_with_permits().pop().unwrap();
    let b_old = rigs[1].wait(Requirement::Any, 2, t0);
    let _a_new = rigs[0].wait(Requirement::Any, 3, t0);
    assert!(
        rigs[1].launches().is_empty() && rigs[0].launches().is_empty(),
        "no permit free"
    );
    // The permit goes to partition 1 (head arrived at 2), not partition 0 (head at 3).
    drop(first.2);
    let to_b = rigs[1].launches_with_permits();
    assert_eq!(to_b.len(), 1);
    assert!(Arc::ptr_eq(&to_b[0].0, &b_old));
    assert!(rigs[0].launches().is_empty());
    assert_eq!(admission.available(), 0);
}

#[test]
fn pending_cap_fails_fast_without_touching_anything() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(1, Some(2), vec![0]);
    let _w1 = rigs[0].wait(Requirement::Any, 1, t0);
    let _w2 = rigs[0].wait(Requirement::Any, 2, t0);
    assert!(matches!(
        rigs[0].cell.acquire(Requirement::Any, None, || 3, || t0),
        Acquire::Saturated
    ));
    assert_eq!(admission.waiting(), 2);
    assert_eq!(rigs[0].cell.gauges().snapshot().waiting_requests, 2);
}

#[test]
fn cancelling_the_demand_head_returns_its_permit() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(1, None, vec![0, 1]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let first = rigs[0].launches_with_permits().pop().unwrap();
    let w = rigs[1].wait(Requirement::Any, 2, t0);
    rigs[1].cell.cancel(&w, t0);
    drop(first.2);
    assert_eq!(
        admission.available(),
        1,
        "no demand left: the permit is free"
    );
    assert_eq!(
        admission.waiting(),
        1,
        "only partition 0's launcher still waits"
    );
}

/// Completes a launch: a connection that owns the launch's permit, delivered to its launcher.
/// Its socket is reported gone when the returned link says so (`link.gone()`).
pub(super) fn establish(rig: &Rig, t0: Instant) -> (FakeH1, Arc<crate::connection::PhysicalLink>) {
    let (waiter, _, lease) = rig.launches_with_permits().pop().expect("a launch");
    let origin = OriginKey::from_uri(&"https://cell.test".parse().unwrap()).unwrap();
    let id = ConnectionId::from_u64(IDS.fetch_add(1, Ordering::Relaxed));
    let info = ConnectionInfo::new(id, origin, PartitionId::ANONYMOUS, Protocol::Http1);
    let permit = lease.map(|l| Box::new(l) as Box<dyn crate::connection::Releasable>);
    let link = crate::connection::PhysicalLink::new(rig.cell.gauges().clone());
    let record = ConnectionRecord::install(info, rig.cell.gauges().clone(), None, permit);
    link.attach(&record);
    rig.cell
        .install_h1(FakeH1 { record, open: true }, &waiter, t0);
    let Some(Grant::H1(conn)) = take(&waiter) else {
        panic!("the launcher gets its connection")
    };
    (conn, link)
}

#[test]
fn a_waiter_borrows_an_idle_connection_of_its_group() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(1, None, vec![0, 0]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let (conn, _link) = establish(&rigs[0], t0);
    rigs[0].cell.release_h1(conn, t0);
    assert_eq!(rigs[0].cell.gauges().snapshot().h1_idle, 1);

    let borrower = rigs[1].wait(Requirement::Any, 2, t0);
    let Some(Grant::H1(borrowed)) = take(&borrower) else {
        panic!("borrowed the peer's idle connection")
    };
    assert!(
        Arc::ptr_eq(borrowed.record.gauges(), rigs[0].cell.gauges()),
        "it stays partition 0's"
    );
    assert!(rigs[1].launches().is_empty(), "nothing new was established");
    assert_eq!((admission.waiting(), admission.available()), (0, 0));
    // Returned through the borrower's cell, it goes home to its owner.
    rigs[1].cell.release_h1(borrowed, t0);
    assert_eq!(rigs[0].cell.gauges().snapshot().h1_idle, 1);
    assert_eq!(rigs[0].cell.idle_len(), 1);
    assert_eq!(rigs[1].cell.idle_len(), 0);
}

#[test]
fn a_returning_connection_serves_an_eligible_peer_that_waits() {
    let t0 = Instant::now();
    let (_admission, rigs) = bounded(1, None, vec![0, 0]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let (conn, _link) = establish(&rigs[0], t0);
    let waiting = rigs[1].wait(Requirement::Any, 2, t0);
    assert!(take(&waiting).is_none(), "busy connection, no permit");
    assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Delivered);
    assert!(
        matches!(take(&waiting), Some(Grant::H1(_))),
        "claimed as it returned"
    );
}

#[test]
fn without_eligibility_an_idle_peer_connection_is_reclaimed() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(1, None, vec![0, 1]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let (conn, link) = establish(&rigs[0], t0);
    let record0 = conn.record.clone();
    rigs[0].cell.release_h1(conn, t0);
    assert_eq!(admission.available(), 0);

    let w = rigs[1].wait(Requirement::Any, 2, t0);
    assert_eq!(record0.close_reason(), Some(CloseReason::Reclaimed));
    assert!(
        rigs[1].launches_with_permits().is_empty(),
        "the permit moves once the socket is gone"
    );
    link.gone();
    let to_b = rigs[1].launches_with_permits();
    assert_eq!(
        to_b.len(),
        1,
        "the reclaimed permit went to the waiting partition"
    );
    assert!(Arc::ptr_eq(&to_b[0].0, &w) && to_b[0].2.is_some());
}

#[test]
fn a_returning_connection_nobody_eligible_can_use_is_reclaimed() {
    let t0 = Instant::now();
    let (_admission, rigs) = bounded(1, None, vec![0, 1]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let (conn, link) = establish(&rigs[0], t0);
    let record0 = conn.record.clone();
    let w = rigs[1].wait(Requirement::Any, 2, t0);
    assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Closed);
    assert_eq!(record0.close_reason(), Some(CloseReason::Reclaimed));
    link.gone();
    let to_b = rigs[1].launches_with_permits();
    assert!(Arc::ptr_eq(&to_b[0].0, &w) && to_b[0].2.is_some());
}

/// Partition 0's connection is busy and its own requests keep arriving; partition 1's
/// request arrived before the newer one of partition 0.
#[allow(clippy::type_complexity)]
fn older_peer_waits(
    groups: Vec<usize>,
) -> (
    Vec<Rig>,
    FakeH1,
    Arc<crate::connection::PhysicalLink>,
    Arc<CellWaiter<Fake>>,
) {
    let t0 = Instant::now();
    let (_admission, rigs) = bounded(1, None, groups);
    rigs[0].wait(Requirement::Any, 1, t0);
    let (conn, link) = establish(&rigs[0], t0);
    let older = rigs[1].wait(Requirement::Any, 2, t0);
    let _newer_local = rigs[0].wait(Requirement::Any, 3, t0);
    (rigs, conn, link, older)
}

#[test]
fn a_returning_connection_serves_an_older_eligible_peer_before_a_newer_local_request() {
    let t0 = Instant::now();
    let (rigs, conn, _link, older) = older_peer_waits(vec![0, 0]);
    assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Delivered);
    assert!(
        matches!(take(&older), Some(Grant::H1(_))),
        "the peer's older request was served first"
    );
    assert_eq!(rigs[0].cell.gauges().snapshot().waiting_requests, 1);
}

#[test]
fn a_returning_connection_closes_for_an_older_ineligible_peer() {
    let t0 = Instant::now();
    let (rigs, conn, link, older) = older_peer_waits(vec![0, 1]);
    let record = conn.record.clone();
    assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Closed);
    assert_eq!(record.close_reason(), Some(CloseReason::Reclaimed));
    assert!(
        take(&older).is_none(),
        "it gets the permit, not the connection"
    );
    link.gone();
    let to_b = rigs[1].launches_with_permits();
    assert_eq!(to_b.len(), 1, "the permit moved to the older request");
    assert!(Arc::ptr_eq(&to_b[0].0, &older) && to_b[0].2.is_some());
    assert!(rigs[0].launches().is_empty());
}

#[test]
fn one_reclaim_at_a_time_for_an_older_ineligible_peer() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(2, None, vec![0, 1]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let (first, first_link) = establish(&rigs[0], t0);
    rigs[0].wait(Requirement::Any, 2, t0);
    let (second, _second_link) = establish(&rigs[0], t0);
    let older = rigs[1].wait(Requirement::Any, 3, t0);
    let _newer_local = rigs[0].wait(Requirement::Any, 4, t0);
    let _newest_local = rigs[0].wait(Requirement::Any, 5, t0);
    assert_eq!(rigs[0].cell.release_h1(first, t0), Released::Closed);
    assert_eq!(
        rigs[0].cell.release_h1(second, t0),
        Released::Delivered,
        "the first reclaim's permit is on its way: the second connection serves locally"
    );
    first_link.gone();
    let to_b = rigs[1].launches_with_permits();
    assert!(Arc::ptr_eq(&to_b[0].0, &older) && to_b[0].2.is_some());
    assert_eq!(admission.available(), 0);
}

#[test]
fn a_newer_peer_request_does_not_overtake_a_local_one() {
    let t0 = Instant::now();
    let (_admission, rigs) = bounded(1, None, vec![0, 0]);
    rigs[0].wait(Requirement::Any, 1, t0);
    let (conn, _link) = establish(&rigs[0], t0);
    let local = rigs[0].wait(Requirement::Any, 2, t0);
    let newer_peer = rigs[1].wait(Requirement::Any, 3, t0);
    assert_eq!(rigs[0].cell.release_h1(conn, t0), Released::Delivered);
    assert!(matches!(take(&local), Some(Grant::H1(_))));
    assert!(take(&newer_peer).is_none());
}

#[test]
fn a_permit_delivery_prefers_a_connection_that_came_back() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(2, None, vec![0]);
    let c = &rigs[0].cell;
    c.acquire(Requirement::Any, None, || 1, || t0);
    let (conn, _link) = establish(&rigs[0], t0);
    // A second request waits for capacity while the connection is busy... and the permit
    // it would get is held back, so the only way to serve it is the connection coming back.
    let w2 = rigs[0].wait(Requirement::Any, 2, t0);
    let (_, _, second_permit) = rigs[0].launches_with_permits().pop().unwrap();
    c.release_h1(conn, t0);
    let served = take(&w2);
    assert!(
        matches!(served, Some(Grant::H1(_))),
        "the returning connection served it"
    );
    drop(second_permit);
    assert_eq!(
        admission.available(),
        1,
        "the unused permit came back; the connection keeps its own"
    );
    drop(served);
}

/// Bound 1, one partition. A bounded cell retires once its request has gone and its demand is
/// cleared; it leaves the admission's directory and membership. Its successor in the same
/// partition counts in the same gauges and publishes past the versions the retired cell used,
/// so its request gets the permit when it comes back. (Versions counted from zero again per
/// cell would read as stale: the successor's request would never be given a permit.)
#[test]
fn a_retired_bounded_cell_hands_its_partition_to_a_successor() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(1, None, vec![0]);
    let old = &rigs[0];
    let held = admission.take_free_permit(0).expect("the only permit");
    let leaving = old.wait(Requirement::Any, 1, t0);
    assert!(!old.cell.retire_if_unused(), "a request waits there");
    old.cell.cancel(&leaving, t0);
    assert_eq!(admission.members(), 1);
    assert!(old.cell.retire_if_unused());
    assert!(admission.cell(0).is_none(), "it left the directory");
    assert_eq!(admission.members(), 0, "and the membership");

    let successor = Rig::with(
        EstablishMode::Http1,
        Some(Duration::from_secs(90)),
        Some((admission.clone(), 0)),
    );
    assert!(Arc::ptr_eq(successor.cell.gauges(), old.cell.gauges()));
    assert_eq!(admission.members(), 1);
    let waiting = successor.wait(Requirement::Any, 2, t0);
    assert!(successor.launches().is_empty(), "no permit is free");
    drop(held);
    let launched = successor.launches_with_permits();
    assert_eq!(
        launched.len(),
        1,
        "the returning permit reached the successor"
    );
    assert!(Arc::ptr_eq(&launched[0].0, &waiting));
    assert!(launched[0].2.is_some());
    assert!(
        old.launches().is_empty(),
        "and nothing reached the retired cell"
    );
    drop(launched);
    assert_eq!(admission.available(), 1);
}

/// A cell's requests may publish before the cell is registered (the pool registers a new cell
/// after it entered the partition's map). A permit released meanwhile finds no cell there: it
/// is free again and the partition keeps no ticket. Registering publishes the cell's demand
/// again, and the permit goes to its request.
#[test]
fn a_cell_that_published_before_registering_gets_its_permit_when_it_registers() {
    let t0 = Instant::now();
    let admission = Admission::new(1, None, vec![0]);
    let launched = super::fakes::Launched::default();
    let held = admission.take_free_permit(0).expect("the only permit");
    let cell = super::fakes::unregistered_cell(&admission, 0, &launched);
    let waiting = super::fakes::wait(&cell, Requirement::Any, 1, t0);
    drop(held);
    assert!(launched.lock().unwrap().is_empty(), "no cell to deliver to");
    assert_eq!(admission.available(), 1, "the permit is free again");
    admission.register(0, cell.clone());
    let launches = std::mem::take(&mut *launched.lock().unwrap());
    assert_eq!(launches.len(), 1, "registering brought the demand back");
    assert!(Arc::ptr_eq(&launches[0].0, &waiting));
    assert!(launches[0].2.is_some());
}
