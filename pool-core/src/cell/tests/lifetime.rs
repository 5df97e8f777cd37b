//! Maximum connection lifetime: HTTP/1 connections retire at their return or while idle, and an
//! HTTP/2 generation is renewed before it stops accepting.

use super::fakes::{FakeH2, record_retiring};
use super::*;
use crate::events::OpenReason;
use std::sync::atomic::AtomicBool;

fn h1_retiring(cell: &Cell<Fake>, at: Instant) -> FakeH1 {
    FakeH1 {
        record: record_retiring(cell, Protocol::Http1, None, Some(at)),
        open: true,
    }
}

fn h2_retiring(cell: &Cell<Fake>, at: Instant) -> FakeH2 {
    FakeH2 {
        record: record_retiring(cell, Protocol::Http2, None, Some(at)),
        accepting: std::sync::Arc::new(AtomicBool::new(true)),
        streams: std::sync::Arc::default(),
    }
}

#[test]
fn h1_past_its_lifetime_retires_at_return_instead_of_serving_a_waiter() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let conn = h1_retiring(c, t0 + Duration::from_secs(10));
    let record = conn.record.clone();
    let waiter = rig.wait(Requirement::Any, 1, t0);
    assert_eq!(rig.launches().len(), 1, "the waiter has its own attempt");
    assert_eq!(
        c.release_h1(conn, t0 + Duration::from_secs(10)),
        Released::Closed
    );
    assert_eq!(record.close_reason(), Some(CloseReason::MaxLifetime));
    assert!(
        waiter.is_waiting(),
        "the waiter keeps waiting for its attempt"
    );
    assert_eq!(c.idle_len(), 0);
}

#[test]
fn h1_younger_than_its_lifetime_is_reused() {
    let t0 = Instant::now();
    let rig = Rig::new(EstablishMode::Http1);
    let c = &rig.cell;
    let conn = h1_retiring(c, t0 + Duration::from_secs(10));
    assert_eq!(
        c.release_h1(conn, t0 + Duration::from_secs(9)),
        Released::Idle
    );
    assert!(matches!(
        c.acquire(Requirement::Any, None, || 1, || t0),
        Acquire::H1(_)
    ));
}

#[test]
fn idle_h1_is_swept_at_its_lifetime_before_its_idle_deadline() {
    let t0 = Instant::now();
    let rig = Rig::with(EstablishMode::Http1, Some(Duration::from_secs(90)), None);
    let c = &rig.cell;
    // The first idles with a long lifetime, the second with a short one: deadlines out of
    // order in the idle set.
    let long = h1_retiring(c, t0 + Duration::from_secs(600));
    let short = h1_retiring(c, t0 + Duration::from_secs(20));
    let (long_record, short_record) = (long.record.clone(), short.record.clone());
    c.release_h1(long, t0);
    c.release_h1(short, t0 + Duration::from_secs(1));
    assert_eq!(
        *rig.armed.lock().unwrap(),
        vec![t0 + Duration::from_secs(90), t0 + Duration::from_secs(20)],
        "the earlier lifetime re-arms the sweep"
    );
    // The sweep armed for 90 s first is stale once the 20 s one is pending... until 20 s.
    assert_eq!(
        c.expire(t0 + Duration::from_secs(20)),
        Some(t0 + Duration::from_secs(90))
    );
    assert_eq!(short_record.close_reason(), Some(CloseReason::MaxLifetime));
    assert!(!long_record.is_closed());
    assert_eq!(c.idle_len(), 1);
    assert_eq!(c.expire(t0 + Duration::from_secs(90)), None);
    assert_eq!(long_record.close_reason(), Some(CloseReason::IdleTimeout));
}

#[test]
fn a_superseded_sweep_does_nothing() {
    let t0 = Instant::now();
    let rig = Rig::with(EstablishMode::Http1, Some(Duration::from_secs(90)), None);
    let c = &rig.cell;
    c.release_h1(h1_retiring(c, t0 + Duration::from_secs(600)), t0);
    c.release_h1(h1_retiring(c, t0 + Duration::from_secs(30)), t0);
    // Maintenance holds entries for 30 s and 90 s; the 30 s sweep re-arms for 90 s.
    assert_eq!(
        c.expire(t0 + Duration::from_secs(30)),
        Some(t0 + Duration::from_secs(90))
    );
    assert_eq!(c.idle_len(), 1);
}

/// A generation retiring at 60 s, published at t0 with its first waiter served.
fn published(rig: &Rig, t0: Instant) -> FakeH2 {
    let c = &rig.cell;
    let w = rig.wait(Requirement::Any, 1, t0);
    let f = rig.first_flight();
    let generation = h2_retiring(c, t0 + Duration::from_secs(60));
    c.publish_h2(generation.clone(), f, t0);
    assert!(matches!(take(&w), Some(Grant::H2(_))));
    c.activation_done();
    generation
}

#[test]
fn h2_generation_is_renewed_before_it_stops_accepting() {
    let rig = Rig::with(EstablishMode::Http2, Some(Duration::from_secs(90)), None);
    let t0 = rig.now();
    let c = &rig.cell;
    let old = published(&rig, t0);
    assert!(
        rig.armed
            .lock()
            .unwrap()
            .contains(&(t0 + Duration::from_secs(60))),
        "publication arms the lifetime"
    );
    let t60 = t0 + Duration::from_secs(60);
    let next = c.expire(t60);
    let renewal = rig.launches();
    assert_eq!(renewal.len(), 1, "one renewal flight");
    let (launcher, Launch::Flight(flight)) = &renewal[0] else {
        panic!("a renewal is a flight")
    };
    assert_eq!(launcher.open_reason(), OpenReason::LifetimeRenewal);
    assert!(!launcher.is_waiting(), "nobody waits on a renewal");
    assert_eq!(
        next,
        Some(t60 + Duration::from_secs(30)),
        "the idle deadline remains"
    );
    assert_eq!(c.gauges().get(Gauge::Establishing), 1);
    // While the replacement is established, requests still hit the old generation.
    let hit = c.acquire(Requirement::Any, None, || 2, || t60);
    assert!(matches!(&hit, Acquire::H2(g) if Arc::ptr_eq(&g.record, &old.record)));
    assert!(rig.launches().is_empty(), "no second renewal");
    assert_eq!(
        c.expire(t60 + Duration::from_secs(30)),
        Some(t60 + Duration::from_secs(90))
    );
    assert!(rig.launches().is_empty(), "still no second renewal");
    // The replacement is published: the old one retires and drains.
    let new = h2_retiring(c, t60 + Duration::from_secs(60));
    c.publish_h2(new.clone(), *flight, t60);
    assert_eq!(old.record.close_reason(), Some(CloseReason::MaxLifetime));
    let hit = c.acquire(Requirement::Any, None, || 3, || t60);
    assert!(matches!(&hit, Acquire::H2(g) if Arc::ptr_eq(&g.record, &new.record)));
    assert!(!new.record.is_closed());
}

#[test]
fn failed_renewal_retires_the_old_generation_and_queued_requests_relaunch() {
    let rig = Rig::with(EstablishMode::Http2, Some(Duration::from_secs(90)), None);
    let t0 = rig.now();
    let c = &rig.cell;
    let old = published(&rig, t0);
    let t60 = t0 + Duration::from_secs(60);
    rig.clock.set(t60);
    c.expire(t60);
    let (launcher, launch) = rig.launches().remove(0);
    c.fail(launch, &launcher, "refused");
    assert_eq!(old.record.close_reason(), Some(CloseReason::MaxLifetime));
    assert_eq!(c.gauges().get(Gauge::Establishing), 0);
    // The next request misses and starts an ordinary flight.
    let w = rig.wait(Requirement::Any, 5, t60);
    let relaunch = rig.launches();
    assert_eq!(relaunch.len(), 1);
    assert!(Arc::ptr_eq(&relaunch[0].0, &w));
    assert_eq!(relaunch[0].0.open_reason(), OpenReason::Request);
}

#[test]
fn renewal_that_negotiates_http1_retires_the_generation() {
    let t0 = Instant::now();
    let rig = Rig::with(EstablishMode::Auto, Some(Duration::from_secs(90)), None);
    let c = &rig.cell;
    let old = published(&rig, t0);
    let t60 = t0 + Duration::from_secs(60);
    c.expire(t60);
    let (launcher, launch) = rig.launches().remove(0);
    assert_eq!(
        c.converge(launch, &launcher, Protocol::Http1),
        Converge::Http1
    );
    assert_eq!(old.record.close_reason(), Some(CloseReason::MaxLifetime));
    assert_eq!(c.negotiated_protocol(), Some(Protocol::Http1));
}

#[test]
fn renewal_in_auto_mode_leads_its_flight_instead_of_joining() {
    let t0 = Instant::now();
    let rig = Rig::with(EstablishMode::Auto, Some(Duration::from_secs(90)), None);
    let c = &rig.cell;
    published(&rig, t0);
    c.expire(t0 + Duration::from_secs(60));
    let (launcher, launch) = rig.launches().remove(0);
    let Launch::Flight(f) = launch else {
        panic!("a renewal is a flight")
    };
    assert_eq!(
        c.converge(launch, &launcher, Protocol::Http2),
        Converge::LeadFlight(f)
    );
}

#[test]
fn bounded_renewal_without_a_free_permit_retires_first() {
    let t0 = Instant::now();
    let admission = Admission::new(1, None, vec![0]);
    let rig = Rig::with(
        EstablishMode::Http2,
        Some(Duration::from_secs(90)),
        Some((admission.clone(), 0)),
    );
    let c = &rig.cell;
    let w = rig.wait(Requirement::Any, 1, t0);
    let (_, launch, permit) = rig.launches_with_permits().remove(0);
    let Launch::Flight(f) = launch else { panic!() };
    let old = FakeH2 {
        record: record_retiring(
            c,
            Protocol::Http2,
            permit,
            Some(t0 + Duration::from_secs(60)),
        ),
        accepting: std::sync::Arc::new(AtomicBool::new(true)),
        streams: std::sync::Arc::default(),
    };
    c.publish_h2(old.clone(), f, t0);
    take(&w);
    c.activation_done();
    assert_eq!(admission.available(), 0);
    c.expire(t0 + Duration::from_secs(60));
    assert!(rig.launches().is_empty(), "no permit, no overlap");
    assert_eq!(old.record.close_reason(), Some(CloseReason::MaxLifetime));
    assert_eq!(admission.available(), 1, "its permit went back");
    assert_eq!(c.gauges().get(Gauge::Establishing), 0);
}
