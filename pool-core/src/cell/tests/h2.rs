//! The cell's HTTP/2 transitions: the flight, convergence after ALPN, the generation gate, expiry.

use super::*;

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
    let f = rig.first_flight();
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

/// A request that joined the flight reads `Joined` while it runs, and `Waiting` once the flight
/// negotiated HTTP/1.1 and the request needs a connection of its own (its launch notes its
/// steps from there).
#[test]
fn a_joiner_of_a_flight_that_negotiates_http1_waits_again() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Auto);
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let f = rig.first_flight();
    let progress = crate::Progress::new();
    let Acquire::Wait(_w2) = c.acquire_for(
        OpenReason::Request,
        Requirement::Any,
        (None, Some(&progress)),
        || 2,
        || t0,
    ) else {
        panic!("expected a miss");
    };
    assert_eq!(progress.stage(), crate::RequestStage::Joined);
    c.converge(Launch::Flight(f), &w1, Protocol::Http1);
    assert_eq!(progress.stage(), crate::RequestStage::Waiting);
}

#[test]
fn http2_requiring_launcher_gets_unsupported_and_the_connection_stays() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Auto);
    let c = &rig.cell;
    let w = rig.wait(Requirement::Http2, 1, t0);
    let f = rig.first_flight();
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
    let f0 = rig.first_flight();
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
    let f = rig.first_flight();
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
    let f = rig.first_flight();
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
fn generations_published_after_two_equal_cuts_carry_the_learnt_request_quota() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let first = serving_one_stream(&rig, t0);
    assert_eq!(first.quota(), None);
    // The server cut two connections off after 100 requests each.
    c.connection_ended(ended(100, true));
    assert_eq!(c.request_quota(), None, "one cut is not enough");
    c.connection_ended(ended(100, true));
    assert_eq!(c.request_quota(), Some(100));
    // The next generation published keeps to it; the one already held is left as it was.
    first.accepting.store(false, Ordering::SeqCst);
    let w = rig.wait(Requirement::Any, 2, t0);
    c.retire_h2(&first.record);
    let flight = rig
        .launches()
        .into_iter()
        .find_map(|(_, launch)| match launch {
            Launch::Flight(f) => Some(f),
            _ => None,
        })
        .expect("the waiting request needs a new flight");
    let next = h2(c);
    c.publish_h2(next.clone(), flight, t0);
    assert!(matches!(take(&w), Some(Grant::H2(_))));
    assert_eq!(next.quota(), Some(100));
    assert_eq!(first.quota(), None);
}

#[test]
fn a_request_quota_one_cell_learnt_is_kept_by_every_cell_sharing_its_learner() {
    let t0 = Instant::now();
    let learner = Arc::new(QuotaLearner::default());
    let (a, b) = (
        Rig::sharing_quota(EstablishMode::Http2, learner.clone()),
        Rig::sharing_quota(EstablishMode::Http2, learner),
    );
    // One cut in each partition's cell: two in a row at the same count, for the server.
    a.cell.connection_ended(ended(100, true));
    assert_eq!(b.cell.request_quota(), None, "one cut is not enough");
    b.cell.connection_ended(ended(100, true));
    assert_eq!(a.cell.request_quota(), Some(100));
    assert_eq!(b.cell.request_quota(), Some(100));
    // Each cell's first generation keeps to it.
    for rig in [&a, &b] {
        let generation = serving_one_stream(rig, t0);
        assert_eq!(generation.quota(), Some(100));
    }
    // A connection of either that carries more than the quota makes both forget it.
    a.cell.connection_ended(ended(150, false));
    assert_eq!(b.cell.request_quota(), None);
    // A cell of its own learns alone.
    let alone = Rig::new(EstablishMode::Http2);
    alone.cell.connection_ended(ended(100, true));
    a.cell.connection_ended(ended(100, true));
    assert_eq!(alone.cell.request_quota(), None);
}

#[test]
fn a_generation_near_its_request_quota_opens_one_successor_ahead() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let generation = serving_one_stream(&rig, t0);
    c.h2_successor_wanted(&generation.record);
    let launches = rig.launches();
    assert_eq!(launches.len(), 1);
    let (launcher, Launch::Flight(flight)) = &launches[0] else {
        panic!("the successor is a flight")
    };
    assert_eq!(launcher.open_reason(), OpenReason::QuotaRenewal);
    assert!(!launcher.is_waiting(), "nobody waits on it");
    // One flight at a time: asking again while it runs opens nothing more.
    c.h2_successor_wanted(&generation.record);
    assert!(rig.launches().is_empty());
    // The successor joins beside the generation, which keeps serving until it retires.
    let successor = h2(c);
    c.publish_h2(successor.clone(), *flight, t0);
    assert_eq!(c.h2_generations(), 2);
    assert!(generation.is_accepting() && successor.is_accepting());
    // A generation the cell no longer holds asks for nothing.
    generation.accepting.store(false, Ordering::SeqCst);
    c.retire_h2(&generation.record);
    c.h2_successor_wanted(&generation.record);
    assert!(rig.launches().is_empty());
}

/// A generation published at `t0` whose first request took a stream, still in use.
fn serving_one_stream(rig: &Rig, t0: Instant) -> FakeH2 {
    let c = &rig.cell;
    let w1 = rig.wait(Requirement::Any, 1, t0);
    let f = rig.first_flight();
    let generation = h2(c);
    c.publish_h2(generation.clone(), f, t0);
    assert!(matches!(take(&w1), Some(Grant::H2(_))));
    c.activation_done();
    assert_eq!(
        generation.taken(),
        1,
        "the first request's stream is in use"
    );
    generation
}

#[test]
fn idle_generation_expires_after_the_timeout_since_last_dispatch() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let generation = serving_one_stream(&rig, t0);
    let t30 = t0 + Duration::from_secs(30);
    assert!(matches!(
        c.acquire(Requirement::Any, None, || 2, || t30),
        Acquire::H2(_)
    ));
    // Both streams end soon after their dispatch.
    generation.end_stream();
    generation.end_stream();
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

/// A stream that outlives the idle timeout (a long download, an event stream) keeps its
/// generation: one in use is not idle. Once a sweep finds it quiet, it gets a full timeout
/// more, since the cell cannot know when in the last period the stream ended.
#[test]
fn a_generation_serving_a_stream_past_the_idle_timeout_is_not_idle() {
    let t0 = Instant::now();
    let secs = |n| t0 + Duration::from_secs(n);
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let generation = serving_one_stream(&rig, t0);
    assert_eq!(
        c.expire(secs(91)),
        Some(secs(181)),
        "in use: its age restarts"
    );
    assert_eq!(c.expire(secs(181)), Some(secs(271)), "still in use");
    assert!(generation.is_accepting());
    generation.end_stream();
    assert_eq!(
        c.expire(secs(271)),
        Some(secs(361)),
        "quiet, but the stream may have ended just before"
    );
    assert!(generation.is_accepting());
    assert_eq!(c.expire(secs(361)), None);
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
