//! The cell's HTTP/1 transitions: misses, installs, the idle set, spare attempts.

use super::*;

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

/// A request sent again waits with the number it first arrived with: queued after newer
/// requests, it still gets the next connection before them, and the newer ones keep their
/// order among themselves.
#[test]
fn a_waiter_with_an_earlier_arrival_goes_ahead_of_newer_ones() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let newer = rig.wait(Requirement::Any, 5, t0);
    let newest = rig.wait(Requirement::Any, 6, t0);
    let resent = rig.wait(Requirement::Any, 3, t0);
    // Each connection released goes to the waiter named, in turn.
    let served: Vec<_> = [&resent, &newer, &newest]
        .into_iter()
        .map(|w| {
            assert_eq!(c.release_h1(h1(c), t0), Released::Delivered);
            matches!(take(w), Some(Grant::H1(_)))
        })
        .collect();
    assert_eq!(served, [true; 3], "served by arrival, not by queueing");
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

/// With a maximum of idle connections, a connection returning to a full idle set closes
/// (`IdleLimit`) while one a request waits for is still served; closed entries not yet skipped
/// hold no place; 0 keeps none.
#[test]
fn the_idle_set_keeps_at_most_its_maximum() {
    let t0 = Instant::now();
    let rig = Rig::keeping(EstablishMode::Http1, Some(Duration::from_secs(90)), None, 2);
    let c = &rig.cell;
    let (a, b, extra) = (h1(c), h1(c), h1(c));
    let extra_record = extra.record.clone();
    assert_eq!(c.release_h1(a, t0), Released::Idle);
    assert_eq!(c.release_h1(b, t0), Released::Idle);
    assert_eq!(c.release_h1(extra, t0), Released::Closed);
    assert_eq!(extra_record.close_reason(), Some(CloseReason::IdleLimit));
    assert_eq!(c.gauges().snapshot().h1_idle, 2);

    // A waiting request takes a returning connection whatever the idle set holds.
    let Acquire::H1(taken) = c.acquire(Requirement::Any, None, || 1, || t0) else {
        panic!("reuse hit")
    };
    let Acquire::H1(second) = c.acquire(Requirement::Any, None, || 2, || t0) else {
        panic!("reuse hit")
    };
    let w = rig.wait(Requirement::Any, 3, t0);
    assert_eq!(c.release_h1(taken, t0), Released::Delivered);
    assert!(matches!(take(&w), Some(Grant::H1(_))));
    assert_eq!(c.release_h1(second, t0), Released::Idle);

    // An idle connection that closed (the peer hung up) frees its place at once.
    let (late, gone) = (h1(c), h1(c));
    let gone_record = gone.record.clone();
    assert_eq!(c.release_h1(gone, t0), Released::Idle);
    gone_record.close(CloseReason::ProtocolClosed, None);
    assert_eq!(c.release_h1(late, t0), Released::Idle);

    let none = Rig::keeping(EstablishMode::Http1, None, None, 0);
    let conn = h1(&none.cell);
    let record = conn.record.clone();
    assert_eq!(none.cell.release_h1(conn, t0), Released::Closed);
    assert_eq!(record.close_reason(), Some(CloseReason::IdleLimit));
    assert_eq!(none.cell.gauges().snapshot().h1_idle, 0);
    // A poisoned connection closes as poisoned, whatever else refuses it.
    let poisoned = h1(&none.cell);
    let record = poisoned.record.clone();
    record.poison();
    assert_eq!(none.cell.release_h1(poisoned, t0), Released::Closed);
    assert_eq!(record.close_reason(), Some(CloseReason::Poisoned));
}

/// A cell retires only when nothing is in it: a waiting request with its attempt, an active
/// connection, an idle one, or a closed one whose transport is still open each keep it. A retired
/// cell answers every acquisition with `Retired` and takes nothing in.
#[test]
fn a_cell_retires_only_with_nothing_in_it_and_then_serves_nothing() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let w = rig.wait(Requirement::Any, 1, t0);
    assert!(!c.retire_if_unused(), "a waiting request and its attempt");
    assert_eq!(c.install_h1(h1(c), &w, t0), Released::Delivered);
    let Some(Grant::H1(conn)) = take(&w) else {
        panic!("launcher gets its connection")
    };
    let link = crate::connection::PhysicalLink::new(c.gauges().clone());
    link.attach(&conn.record);
    assert!(!c.retire_if_unused(), "an active connection");
    c.release_h1(conn, t0);
    assert!(!c.retire_if_unused(), "an idle connection");
    let Acquire::H1(conn) = c.acquire(Requirement::Any, None, || 2, || t0) else {
        panic!("reuse hit")
    };
    let record = conn.record.clone();
    record.close(CloseReason::ProtocolClosed, None);
    drop(conn);
    assert!(
        !c.retire_if_unused(),
        "a closed connection whose transport is open"
    );
    link.gone();
    assert!(c.gauges().all_zero(), "{:?}", c.gauges().snapshot());
    assert!(!c.is_retired());
    assert!(c.retire_if_unused());
    assert!(c.is_retired() && c.retire_if_unused(), "retired for good");
    assert!(matches!(
        c.acquire(Requirement::Any, None, || 3, || t0),
        Acquire::Retired
    ));
    assert!(
        c.gauges().all_zero(),
        "the refused acquisition left nothing"
    );
    assert!(rig.launches().len() == 1, "and launched nothing");
}

/// A pool that caps its idle connections pool-wide hears of each connection entering a cell's
/// idle set (not of one the cell's own maximum refused), counts it in the total its gauges
/// share, and can close one idle connection by its record; one a request took stays in use.
#[test]
fn a_cell_reports_connections_going_idle_and_closes_one_by_its_record() {
    use super::super::fakes::FixedTime;
    use crate::sync::atomic::AtomicUsize;

    let t0 = Instant::now();
    let total = Arc::new(AtomicUsize::new(0));
    let heard: std::sync::Arc<std::sync::Mutex<Vec<Arc<ConnectionRecord>>>> = Default::default();
    let log = heard.clone();
    let hooks = CellHooks {
        launch: std::sync::Arc::new(|_, _, _| {}) as LaunchHook<Fake>,
        arm_expiry: None,
        went_idle: Some(std::sync::Arc::new(
            move |record: &Arc<ConnectionRecord>| log.lock().unwrap().push(record.clone()),
        )),
        time: std::sync::Arc::new(FixedTime::new()),
    };
    let gauges = Arc::new(Gauges::counting_idle_in(total.clone()));
    let cell = Cell::new(EstablishMode::Http1, None, gauges, hooks, None).with_max_idle(2);
    let (a, b, refused) = (h1(&cell), h1(&cell), h1(&cell));
    let (ra, rb) = (a.record.clone(), b.record.clone());
    assert_eq!(cell.release_h1(a, t0), Released::Idle);
    assert_eq!(cell.release_h1(b, t0), Released::Idle);
    assert_eq!(cell.release_h1(refused, t0), Released::Closed);
    let heard_ids = || -> Vec<ConnectionId> {
        heard
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.info().id())
            .collect()
    };
    assert_eq!(heard_ids(), [ra.info().id(), rb.info().id()]);
    assert_eq!(total.load(Ordering::Relaxed), 2);

    let Acquire::H1(taken) = cell.acquire(Requirement::Any, None, || 1, || t0) else {
        panic!("reuse hit")
    };
    assert_eq!(taken.record.info().id(), rb.info().id(), "newest first");
    assert_eq!(total.load(Ordering::Relaxed), 1);
    assert!(!cell.close_idle_connection(&rb, CloseReason::IdleLimit));
    assert_eq!(rb.close_reason(), None, "in use, left alone");
    assert!(cell.close_idle_connection(&ra, CloseReason::IdleLimit));
    assert_eq!(ra.close_reason(), Some(CloseReason::IdleLimit));
    assert_eq!(total.load(Ordering::Relaxed), 0);
    assert_eq!(cell.gauges().snapshot().h1_idle, 0);
    assert!(!cell.close_idle_connection(&ra, CloseReason::IdleLimit));

    assert_eq!(cell.release_h1(taken, t0), Released::Idle);
    assert_eq!(heard.lock().unwrap().len(), 3);
    assert_eq!(total.load(Ordering::Relaxed), 1);
}

/// Installs a new HTTP/1 connection for a request that waits for it and returns the
/// connection's record.
fn install_one(rig: &Rig, seq: u64, t0: Instant) -> Arc<ConnectionRecord> {
    let c = &rig.cell;
    let w = rig.wait(Requirement::Any, seq, t0);
    rig.launches();
    let conn = h1(c);
    let record = conn.record.clone();
    assert_eq!(c.install_h1(conn, &w, t0), Released::Delivered);
    record
}

#[test]
fn http1_connections_keep_to_a_quota_learnt_from_unannounced_closes_and_probe_it() {
    use crate::connection::QuotaCheck;
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let before = install_one(&rig, 1, t0);
    assert_eq!(before.check_request_quota(1), QuotaCheck::Within);
    // Two connections in a row closed by their server after 3 answered requests, each while a
    // fourth was on its way.
    c.connection_ended(ended(3, true));
    assert_eq!(c.request_quota(), None, "one cut is not enough");
    c.connection_ended(ended(3, true));
    assert_eq!(c.request_quota(), Some(3));
    // New connections retire with their third response; the probe after 16 goes past it.
    let mut seq = 2;
    for _ in 0..16 {
        let record = install_one(&rig, seq, t0);
        seq += 1;
        assert_eq!(record.check_request_quota(2), QuotaCheck::Within);
        assert_eq!(record.check_request_quota(3), QuotaCheck::Spent);
    }
    let probe = install_one(&rig, seq, t0);
    assert_eq!(probe.check_request_quota(3), QuotaCheck::Within);
    assert_eq!(probe.check_request_quota(4), QuotaCheck::PastProbe(4));
    assert_eq!(before.check_request_quota(4), QuotaCheck::Within);
    // The probe's fourth answer is the server keeping connections longer: the quota goes.
    c.h1_served_past_quota(4);
    assert_eq!(c.request_quota(), None);
    let after = install_one(&rig, seq + 1, t0);
    assert_eq!(after.check_request_quota(3), QuotaCheck::Within);
}

/// A server that closes idle connections after a second without saying so: two such closes,
/// heard two seconds apart, teach the cell the timeout, and a connection going idle after
/// that expires half a second in (the timeout less its margin) instead of at the pool's 90 s.
/// Closes of connections that never served, or that came right after the response, teach
/// nothing.
#[test]
fn idle_connections_retire_before_an_idle_timeout_learnt_from_the_servers_closes() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let s = Duration::from_secs(1);
    let closed_after = |went_idle: Instant, idle: Duration, served: bool| {
        let conn = h1(c);
        if served {
            conn.record.count_dispatch();
        }
        let record = conn.record.clone();
        assert_eq!(c.release_h1(conn, went_idle), Released::Idle);
        c.h1_closed_while_idle(&record, went_idle + idle);
        record.close(CloseReason::ProtocolClosed, None);
    };
    closed_after(t0, s, false);
    closed_after(t0 + 2 * s, s, false);
    closed_after(t0 + 4 * s, Duration::from_millis(3), true);
    closed_after(t0 + 6 * s, Duration::from_millis(3), true);
    assert_eq!(c.server_idle_timeout(), None);
    closed_after(t0 + 8 * s, s, true);
    assert_eq!(c.server_idle_timeout(), None, "one close teaches nothing");
    closed_after(t0 + 10 * s, s + Duration::from_millis(20), true);
    assert_eq!(c.server_idle_timeout(), Some(s));

    let conn = h1(c);
    conn.record.count_dispatch();
    let record = conn.record.clone();
    let at = t0 + 20 * s;
    c.release_h1(conn, at);
    let half = Duration::from_millis(500);
    assert_eq!(rig.armed.lock().unwrap().last(), Some(&(at + half)));
    assert!(!record.is_closed());
    c.expire(at + half);
    assert_eq!(record.close_reason(), Some(CloseReason::IdleTimeout));
}
