//! Unit tests of the cell's transitions, on the fakes of `fakes`.

use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::fakes::{Fake, FakeH1, IDS, Rig, h1, h2};
use super::*;
use crate::admission::Admission;
use crate::close::CloseReason;
use crate::connection::ConnectionRecord;
use crate::events::{ConnectionId, ConnectionInfo, Protocol};
use crate::origin::OriginKey;
use crate::partition::PartitionId;
use crate::stats::{Gauge, PartitionStats};
use crate::waiter::Requirement;

/// A connection that comes back from an exchange, established before this test's attempts
/// (so it does not take their `establishing` count).
fn returning(cell: &Cell<Fake>) -> FakeH1 {
    cell.gauges().inc(Gauge::Establishing);
    h1(cell)
}

fn take(w: &Arc<CellWaiter<Fake>>) -> Option<Grant<Fake>> {
    let mut cx = Context::from_waker(Waker::noop());
    match w.poll_take(&mut cx) {
        Poll::Ready(g) => Some(g),
        Poll::Pending => None,
    }
}

#[test]
fn http1_miss_install_release_then_hit() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let w = rig.wait(Requirement::Any, 1, t0);
    assert_eq!(rig.launches()[0].1, Launch::Attempt);
    let s = c.gauges().snapshot();
    assert_eq!((s.establishing, s.waiting_requests), (1, 1));
    assert_eq!(c.install_h1(h1(c), &w, t0), Released::Delivered);
    let Some(Grant::H1(conn)) = take(&w) else {
        panic!("launcher gets its connection")
    };
    let s = c.gauges().snapshot();
    assert_eq!((s.establishing, s.h1_active, s.waiting_requests), (0, 1, 0));
    assert_eq!(c.release_h1(conn, t0), Released::Idle);
    assert_eq!(c.gauges().snapshot().h1_idle, 1);
    assert!(
        matches!(
            c.acquire(Requirement::Any, None, || 2, || t0),
            Acquire::H1(_)
        ),
        "reuse hit"
    );
    assert_eq!(c.gauges().snapshot().h1_active, 1);
}

#[test]
fn idle_reuse_is_newest_first_and_expiry_oldest_first() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let (a, b) = (h1(c), h1(c));
    let (a_id, b_id) = (a.record.info().id(), b.record.info().id());
    c.release_h1(a, t0);
    c.release_h1(b, t0 + Duration::from_secs(10));
    let Acquire::H1(newest) = c.acquire(Requirement::Any, None, || 1, || t0) else {
        panic!()
    };
    assert_eq!(newest.record.info().id(), b_id);
    c.release_h1(newest, t0 + Duration::from_secs(20));
    let next = c.expire(t0 + Duration::from_secs(90));
    assert_eq!(next, Some(t0 + Duration::from_secs(110)));
    let s = c.gauges().snapshot();
    assert_eq!(
        (s.h1_idle, s.h1_draining),
        (1, 1),
        "a is closed but its I/O is not gone"
    );
    let Acquire::H1(left) = c.acquire(Requirement::Any, None, || 2, || t0) else {
        panic!()
    };
    assert_ne!(left.record.info().id(), a_id);
}

#[test]
fn closed_idle_connections_are_skipped() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let good = h1(c);
    let good_id = good.record.info().id();
    c.release_h1(good, t0);
    let shut = h1(c);
    c.release_h1(
        FakeH1 {
            record: shut.record.clone(),
            open: false,
        },
        t0,
    );
    let closed = h1(c);
    let closed_record = closed.record.clone();
    c.release_h1(closed, t0);
    closed_record.close(CloseReason::ProtocolClosed, None);
    let Acquire::H1(got) = c.acquire(Requirement::Any, None, || 1, || t0) else {
        panic!()
    };
    assert_eq!(got.record.info().id(), good_id);
    assert!(
        shut.record.is_closed(),
        "an idle connection hyper closed is retired"
    );
}

#[test]
fn a_miss_adopts_the_attempt_of_a_request_served_meanwhile() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    assert_eq!(rig.launches().len(), 1);
    // A returning connection serves w1 while its attempt still runs.
    assert_eq!(c.release_h1(returning(c), t0), Released::Delivered);
    assert!(matches!(take(&w1), Some(Grant::H1(_))));
    let w2 = rig.wait(Requirement::Any, 2, t0);
    assert!(rig.launches().is_empty(), "w2 adopted the spare attempt");
    assert_eq!(c.gauges().snapshot().establishing, 1);
    // The attempt completes: its connection goes to w2.
    assert_eq!(c.install_h1(h1(c), &w1, t0), Released::Delivered);
    assert!(matches!(take(&w2), Some(Grant::H1(_))));
    assert!(rig.launches().is_empty());
}

#[test]
fn a_request_that_left_leaves_its_attempt_to_the_next_miss() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    c.cancel(&w1, t0);
    let w2 = rig.wait(Requirement::Any, 2, t0);
    let w3 = rig.wait(Requirement::Any, 3, t0);
    let launches = rig.launches();
    assert_eq!(
        launches.len(),
        2,
        "one launch for w1, one for w3; w2 adopted"
    );
    assert!(Arc::ptr_eq(&launches[1].0, &w3));
    assert_eq!(c.install_h1(h1(c), &w1, t0), Released::Delivered);
    assert!(matches!(take(&w2), Some(Grant::H1(_))));
    assert!(take(&w3).is_none());
}

#[test]
fn an_adopted_attempt_that_fails_is_replaced_not_inherited() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    rig.launches();
    c.release_h1(returning(c), t0);
    assert!(matches!(take(&w1), Some(Grant::H1(_))));
    let w2 = rig.wait(Requirement::Any, 2, t0);
    assert!(rig.launches().is_empty());
    c.fail(Launch::Attempt, &w1, "refused");
    assert!(take(&w2).is_none(), "w2 does not get w1's error");
    let replacement = rig.launches();
    assert_eq!(replacement.len(), 1, "w2 gets an attempt of its own");
    assert!(Arc::ptr_eq(&replacement[0].0, &w2));
    assert_eq!(c.gauges().snapshot().establishing, 1);
    c.fail(Launch::Attempt, &w2, "refused again");
    assert!(matches!(take(&w2), Some(Grant::Failed("refused again"))));
    assert_eq!(c.gauges().snapshot().establishing, 0);
}

#[test]
fn concurrent_misses_each_launch_while_no_attempt_is_spare() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let waiters: Vec<_> = (1..=4).map(|i| rig.wait(Requirement::Any, i, t0)).collect();
    assert_eq!(rig.launches().len(), 4);
    for w in &waiters {
        assert_eq!(
            rig.cell.install_h1(h1(&rig.cell), w, t0),
            Released::Delivered
        );
    }
    assert!(
        rig.launches().is_empty(),
        "no replacement: every attempt served its own"
    );
}

#[test]
fn released_connection_goes_to_the_oldest_waiter() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let w2 = rig.wait(Requirement::Any, 2, t0);
    assert_eq!(c.release_h1(h1(c), t0), Released::Delivered);
    assert!(matches!(take(&w1), Some(Grant::H1(_))));
    assert!(take(&w2).is_none());
    assert_eq!(c.install_h1(h1(c), &w2, t0), Released::Delivered);
    assert!(matches!(take(&w2), Some(Grant::H1(_))));
}

#[test]
fn cancelled_waiter_gives_its_connection_to_the_next() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let w2 = rig.wait(Requirement::Any, 2, t0);
    c.release_h1(h1(c), t0);
    c.cancel(&w1, t0);
    assert!(matches!(take(&w2), Some(Grant::H1(_))));
    assert_eq!(c.gauges().snapshot().waiting_requests, 0);
    let w3 = rig.wait(Requirement::Any, 3, t0);
    c.cancel(&w3, t0);
    assert_eq!(c.release_h1(h1(c), t0), Released::Idle);
}

#[test]
fn http1_mode_refuses_http2_requirement() {
    let rig = Rig::new(EstablishMode::Http1);
    assert!(matches!(
        rig.cell
            .acquire(Requirement::Http2, None, || 1, Instant::now),
        Acquire::Unsupported
    ));
}

#[test]
fn auto_cold_burst_shares_one_flight_and_publication() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Auto);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let joiners: Vec<_> = (2..=20)
        .map(|seq| rig.wait(Requirement::Any, seq, t0))
        .collect();
    let launches = rig.launches();
    assert_eq!(launches.len(), 1, "later misses wait for the probe");
    let Launch::Flight(f) = launches[0].1 else {
        panic!("the probe is a flight")
    };
    assert_eq!(c.gauges().snapshot().establishing, 1);
    assert_eq!(
        c.converge(Launch::Flight(f), &w1, Protocol::Http2),
        Converge::LeadFlight(f)
    );
    c.publish_h2(h2(c), f, t0);
    assert_eq!(c.negotiated_protocol(), Some(Protocol::Http2));
    assert!(matches!(take(&w1), Some(Grant::H2(_))));
    assert_eq!(
        joiners.iter().filter(|w| !w.is_waiting()).count(),
        ACTIVATION_TURN - 1
    );
    let late = rig.wait(Requirement::Any, 100, t0);
    assert!(
        rig.launches().is_empty(),
        "the gate queues new arrivals without launching"
    );
    c.activation_done();
    for w in &joiners {
        while w.is_waiting() {
            c.activation_done();
        }
        assert!(matches!(take(w), Some(Grant::H2(_))));
    }
    while late.is_waiting() {
        c.activation_done();
    }
    assert!(matches!(take(&late), Some(Grant::H2(_))));
    for _ in 0..ACTIVATION_TURN {
        c.activation_done();
    }
    assert!(
        matches!(
            c.acquire(Requirement::Any, None, || 200, || t0),
            Acquire::H2(_)
        ),
        "gate open: direct hit"
    );
}

#[test]
fn flight_that_negotiates_http1_fans_out() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Auto);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let Launch::Flight(f) = rig.launches()[0].1 else {
        panic!()
    };
    let w2 = rig.wait(Requirement::Any, 2, t0);
    let w3 = rig.wait(Requirement::Any, 3, t0);
    let strict = rig.wait(Requirement::Http2, 4, t0);
    assert_eq!(
        c.converge(Launch::Flight(f), &w1, Protocol::Http1),
        Converge::Http1
    );
    let fan_out = rig.launches();
    assert_eq!(fan_out.len(), 2);
    assert!(fan_out.iter().all(|(_, l)| *l == Launch::Attempt));
    assert!(
        fan_out.iter().any(|(w, _)| Arc::ptr_eq(w, &w2))
            && fan_out.iter().any(|(w, _)| Arc::ptr_eq(w, &w3))
    );
    assert!(matches!(take(&strict), Some(Grant::Unsupported)));
    assert_eq!(
        c.gauges().snapshot().establishing,
        3,
        "probe plus two fanned-out attempts"
    );
    assert_eq!(c.negotiated_protocol(), Some(Protocol::Http1));
    rig.wait(Requirement::Any, 5, t0);
    assert_eq!(
        rig.launches()[0].1,
        Launch::Attempt,
        "with HTTP/1 remembered, misses launch attempts"
    );
}

#[test]
fn http2_requiring_launcher_gets_unsupported_and_the_connection_stays() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Auto);
    let c = &rig.cell;
    let w = rig.wait(Requirement::Http2, 1, t0);
    let Launch::Flight(f) = rig.launches()[0].1 else {
        panic!()
    };
    assert_eq!(
        c.converge(Launch::Flight(f), &w, Protocol::Http1),
        Converge::Http1
    );
    assert_eq!(c.install_h1(h1(c), &w, t0), Released::Idle);
    assert!(matches!(take(&w), Some(Grant::Unsupported)));
    assert_eq!(c.gauges().snapshot().h1_idle, 1);
}

#[test]
fn attempts_that_negotiate_http2_converge_to_one_flight() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Auto);
    let c = &rig.cell;
    let w0 = rig.wait(Requirement::Any, 0, t0);
    let Launch::Flight(f0) = rig.launches()[0].1 else {
        panic!()
    };
    c.converge(Launch::Flight(f0), &w0, Protocol::Http1);
    c.install_h1(h1(c), &w0, t0);
    let Some(Grant::H1(conn)) = take(&w0) else {
        panic!()
    };
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let w2 = rig.wait(Requirement::Any, 2, t0);
    let Converge::LeadFlight(f) = c.converge(Launch::Attempt, &w1, Protocol::Http2) else {
        panic!()
    };
    assert_eq!(
        c.converge(Launch::Attempt, &w2, Protocol::Http2),
        Converge::Join
    );
    assert!(!w2.is_launched(), "the joiner now depends on the flight");
    c.publish_h2(h2(c), f, t0);
    assert!(matches!(take(&w1), Some(Grant::H2(_))));
    assert!(matches!(take(&w2), Some(Grant::H2(_))));
    drop(conn);
}

#[test]
fn failed_flight_fails_its_dependents_only() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let Launch::Flight(f) = rig.launches()[0].1 else {
        panic!()
    };
    let w2 = rig.wait(Requirement::Http2, 2, t0);
    c.fail(Launch::Flight(f), &w1, "refused");
    assert!(matches!(take(&w1), Some(Grant::Failed("refused"))));
    assert!(matches!(take(&w2), Some(Grant::Failed("refused"))));
    assert_eq!(c.gauges().snapshot(), PartitionStats::default());
    rig.wait(Requirement::Any, 3, t0);
    assert!(
        matches!(rig.launches()[0].1, Launch::Flight(_)),
        "the next miss starts a new flight"
    );
}

#[test]
fn retired_generation_relaunches_for_queued_waiters() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let Launch::Flight(f) = rig.launches()[0].1 else {
        panic!()
    };
    let waiters: Vec<_> = (2..=12)
        .map(|s| rig.wait(Requirement::Any, s, t0))
        .collect();
    let generation = h2(c);
    c.publish_h2(generation.clone(), f, t0);
    assert!(matches!(take(&w1), Some(Grant::H2(_))));
    generation.accepting.store(false, Ordering::SeqCst);
    c.retire_h2(&generation.record);
    let relaunch = rig.launches();
    assert_eq!(relaunch.len(), 1, "queued waiters need a new flight");
    assert!(matches!(relaunch[0].1, Launch::Flight(_)));
    assert!(waiters.iter().any(|w| Arc::ptr_eq(w, &relaunch[0].0)));
    assert!(relaunch[0].0.is_waiting());
}

#[test]
fn idle_generation_expires_after_the_timeout_since_last_dispatch() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let Launch::Flight(f) = rig.launches()[0].1 else {
        panic!()
    };
    let generation = h2(c);
    c.publish_h2(generation.clone(), f, t0);
    take(&w1);
    c.activation_done();
    let t30 = t0 + Duration::from_secs(30);
    assert!(matches!(
        c.acquire(Requirement::Any, None, || 2, || t30),
        Acquire::H2(_)
    ));
    assert_eq!(
        c.expire(t0 + Duration::from_secs(90)),
        Some(t30 + Duration::from_secs(90))
    );
    assert!(!generation.record.is_closed());
    assert_eq!(c.expire(t30 + Duration::from_secs(90)), None);
    assert_eq!(
        generation.record.close_reason(),
        Some(CloseReason::IdleTimeout)
    );
}

#[test]
fn close_idle_closes_everything_idle() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let a = h1(c);
    let record = a.record.clone();
    c.release_h1(a, t0);
    c.close_idle(CloseReason::PoolDropped);
    assert_eq!(record.close_reason(), Some(CloseReason::PoolDropped));
    assert_eq!(c.idle_len(), 0);
}

#[test]
fn arm_hook_fires_once_until_the_sweep() {
    let rig = Rig::with(EstablishMode::Http1, Some(Duration::from_secs(5)), None);
    let c = &rig.cell;
    let t0 = Instant::now();
    c.release_h1(h1(c), t0);
    c.release_h1(h1(c), t0 + Duration::from_secs(1));
    assert_eq!(
        *rig.armed.lock().unwrap(),
        vec![t0 + Duration::from_secs(5)]
    );
    assert_eq!(
        c.expire(t0 + Duration::from_secs(5)),
        Some(t0 + Duration::from_secs(6))
    );
    assert_eq!(c.expire(t0 + Duration::from_secs(6)), None);
    c.release_h1(h1(c), t0 + Duration::from_secs(7));
    assert_eq!(
        rig.armed.lock().unwrap().len(),
        2,
        "re-armed after the cell emptied"
    );
}

// ---- bounded origins ----

/// Two partitions of one bounded origin; `groups` decides eligibility.
fn bounded(
    limit: usize,
    pending: Option<usize>,
    groups: Vec<usize>,
) -> (CellAdmission<Fake>, Vec<Rig>) {
    let admission = Admission::new(limit, pending, groups.clone());
    let rigs = (0..groups.len())
        .map(|p| {
            Rig::with(
                EstablishMode::Http1,
                Some(Duration::from_secs(90)),
                Some((admission.clone(), p)),
            )
        })
        .collect();
    (admission, rigs)
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
fn establish(rig: &Rig, t0: Instant) -> (FakeH1, Arc<crate::connection::PhysicalLink>) {
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
