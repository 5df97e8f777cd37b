//! HTTP/2 at the peer's stream limit: reservations never exceed it, requests past it wait in
//! the cell and take freed streams oldest first, one further generation is opened at a time
//! (only when every generation's limit is known and reached), within the cap.

use super::fakes::FakeH2;
use super::*;
use crate::events::OpenReason;

/// A published generation whose peer allows `limit` streams, with its first waiter served.
fn published(rig: &Rig, limit: usize) -> FakeH2 {
    let t0 = rig.now();
    let w = rig.wait(Requirement::Any, 1, t0);
    let f = rig.first_flight();
    let generation = h2(&rig.cell);
    generation.set_limit(limit);
    rig.cell.publish_h2(generation.clone(), f, t0);
    assert!(matches!(take(&w), Some(Grant::H2(_))));
    rig.cell.activation_done();
    generation
}

/// The scale-out flight the last waiter started publishes a generation allowing `limit`.
fn scaled_out(rig: &Rig, limit: usize) -> FakeH2 {
    let (_, launch) = rig.launches().remove(0);
    let Launch::Flight(f) = launch else {
        panic!("a scale-out is a flight")
    };
    let generation = h2(&rig.cell);
    generation.set_limit(limit);
    rig.cell.publish_h2(generation.clone(), f, rig.now());
    generation
}

fn hit(c: &Cell<Fake>, seq: u64, now: Instant) -> Acquire<Fake> {
    c.acquire(Requirement::Any, None, || seq, || now)
}

#[test]
fn reservations_stop_at_the_limit_and_the_next_request_waits_in_the_cell() {
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let t0 = rig.now();
    let g = published(&rig, 3);
    assert!(matches!(hit(c, 2, t0), Acquire::H2(_)));
    assert!(matches!(hit(c, 3, t0), Acquire::H2(_)));
    assert_eq!(g.taken(), 3);
    let Acquire::Wait(w) = hit(c, 4, t0) else {
        panic!("at the limit the request waits")
    };
    assert_eq!(c.gauges().get(Gauge::WaitingRequests), 1);
    let scale_out = rig.launches();
    assert_eq!(
        scale_out.len(),
        1,
        "every generation is full: one more flight"
    );
    assert_eq!(
        c.launch_reason(scale_out[0].1),
        Some(OpenReason::StreamLimit)
    );
    // A second waiter does not start a second flight.
    let _w2 = rig.wait(Requirement::Any, 5, t0);
    assert!(rig.launches().is_empty(), "one flight at a time");
    // A stream ends: the oldest waiter takes it.
    g.end_stream();
    c.h2_stream_freed();
    assert!(matches!(take(&w), Some(Grant::H2(_))));
    assert_eq!(g.taken(), 3);
}

/// Over TLS the protocol is known only after the handshake (`converge`). A scale-out flight
/// whose waiter took a stream the old generation freed during that handshake still leads: its
/// handshake is paid for, so the connection becomes a generation (kept for the next peak, or
/// expired when idle) instead of closing unused as a redundant handshake.
#[test]
fn a_scale_out_whose_waiter_was_served_meanwhile_still_becomes_a_generation() {
    let rig = Rig::new(EstablishMode::Auto);
    let c = &rig.cell;
    let t0 = rig.now();
    let old = published(&rig, 2);
    assert!(matches!(hit(c, 2, t0), Acquire::H2(_)));
    let Acquire::Wait(w) = hit(c, 3, t0) else {
        panic!("at the limit the request waits")
    };
    let (launcher, launch) = rig.launches().remove(0);
    let Launch::Flight(f) = launch else {
        panic!("a scale-out is a flight")
    };
    // Both streams end while the scale-out's TLS handshake runs; the waiter takes one.
    old.end_stream();
    old.end_stream();
    c.h2_stream_freed();
    assert!(matches!(take(&w), Some(Grant::H2(_))));
    c.activation_done();
    assert_eq!(old.taken(), 1, "the old generation can serve again");
    assert_eq!(
        c.converge(launch, &launcher, Protocol::Http2),
        Converge::LeadFlight(f)
    );
    let new = h2(c);
    new.set_limit(2);
    c.publish_h2(new, f, t0);
    assert_eq!(c.h2_generations(), 2);
    let Acquire::H2(next) = hit(c, 4, t0) else {
        panic!()
    };
    assert!(Arc::ptr_eq(&next.record, &old.record), "pack the oldest");
}

#[test]
fn an_unknown_limit_takes_every_request_and_opens_nothing() {
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let t0 = rig.now();
    let w = rig.wait(Requirement::Any, 1, t0);
    let f = rig.first_flight();
    let g = h2(c);
    c.publish_h2(g.clone(), f, t0);
    take(&w);
    c.activation_done();
    for seq in 2..200 {
        assert!(matches!(hit(c, seq, t0), Acquire::H2(_)));
    }
    assert!(
        rig.launches().is_empty(),
        "a cold burst costs one handshake"
    );
    // The limit becomes known (10) with 199 streams taken: new requests wait, one flight.
    g.set_limit(10);
    assert!(matches!(hit(c, 300, t0), Acquire::Wait(_)));
    assert_eq!(rig.launches().len(), 1);
}

#[test]
fn requests_go_to_the_oldest_generation_with_a_free_stream() {
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let t0 = rig.now();
    let old = published(&rig, 1);
    let w = rig.wait(Requirement::Any, 2, t0);
    let new = scaled_out(&rig, 1);
    let Some(Grant::H2(got)) = take(&w) else {
        panic!("the waiter takes the new generation's stream")
    };
    assert!(Arc::ptr_eq(&got.record, &new.record));
    c.activation_done();
    // Both full; the old one frees a stream, then the new one: the old one serves first.
    old.end_stream();
    new.end_stream();
    let Acquire::H2(first) = hit(c, 3, t0) else {
        panic!()
    };
    assert!(Arc::ptr_eq(&first.record, &old.record), "pack the oldest");
    let Acquire::H2(second) = hit(c, 4, t0) else {
        panic!()
    };
    assert!(Arc::ptr_eq(&second.record, &new.record));
}

#[test]
fn at_the_connection_cap_requests_wait_for_a_stream() {
    let t0 = Instant::now();
    let launched = super::fakes::Launched::default();
    let cell = super::fakes::recording_cell(EstablishMode::Http2, None, None, &launched, None);
    let cell = Arc::new(
        Arc::try_unwrap(cell)
            .unwrap_or_else(|_| panic!("one owner"))
            .with_h2_connection_cap(1),
    );
    let w = super::fakes::wait(&cell, Requirement::Any, 1, t0);
    let (_, launch, _) = launched.lock().unwrap().remove(0);
    let Launch::Flight(f) = launch else { panic!() };
    let g = h2(&cell);
    g.set_limit(1);
    cell.publish_h2(g.clone(), f, t0);
    take(&w);
    cell.activation_done();
    let waiter = super::fakes::wait(&cell, Requirement::Any, 2, t0);
    assert!(
        launched.lock().unwrap().is_empty(),
        "the cap allows no second connection"
    );
    g.end_stream();
    cell.h2_stream_freed();
    assert!(matches!(take(&waiter), Some(Grant::H2(_))));
}

#[test]
fn a_raised_limit_frees_streams_for_waiting_requests() {
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let t0 = rig.now();
    let g = published(&rig, 1);
    let w = rig.wait(Requirement::Any, 2, t0);
    rig.launches();
    // The peer's SETTINGS raise the limit: the driver tells the cell.
    g.set_limit(2);
    c.h2_stream_freed();
    assert!(matches!(take(&w), Some(Grant::H2(_))));
    assert_eq!(g.taken(), 2);
}

#[test]
fn retiring_one_of_two_generations_sends_waiters_to_the_other() {
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let t0 = rig.now();
    let old = published(&rig, 1);
    let w = rig.wait(Requirement::Any, 2, t0);
    let new = scaled_out(&rig, 1);
    take(&w);
    c.activation_done();
    // GOAWAY on the old one while a request waits for a stream.
    let waiting = rig.wait(Requirement::Any, 3, t0);
    assert!(take(&waiting).is_none());
    old.accepting.store(false, Ordering::SeqCst);
    c.retire_h2(&old.record);
    new.end_stream();
    c.h2_stream_freed();
    let Some(Grant::H2(got)) = take(&waiting) else {
        panic!("the waiter goes to the surviving generation")
    };
    assert!(Arc::ptr_eq(&got.record, &new.record));
    assert!(
        rig.launches().len() <= 1,
        "at most one flight for everything that waited"
    );
}

/// A generation opened beside one whose peer now allows no stream at all does not assume that
/// limit: assuming 0 it would take no request, and so never hear the response that makes its
/// own limit known. It takes the waiting request instead.
#[test]
fn a_generation_opened_beside_one_allowing_no_streams_does_not_assume_none() {
    let rig = Rig::new(EstablishMode::Http2);
    let c = &rig.cell;
    let t0 = rig.now();
    let old = published(&rig, 1);
    // The peer lowers its limit to 0 while the first request is in flight.
    old.set_limit(0);
    let Acquire::Wait(w) = hit(c, 2, t0) else {
        panic!("at the limit the request waits")
    };
    let (_, launch) = rig.launches().remove(0);
    let Launch::Flight(f) = launch else {
        panic!("a scale-out is a flight")
    };
    let new = h2(c);
    c.publish_h2(new.clone(), f, t0);
    assert_eq!(new.stream_limit(), None, "nothing assumed");
    let Some(Grant::H2(granted)) = take(&w) else {
        panic!("the new generation takes the waiting request")
    };
    assert!(Arc::ptr_eq(&granted.record, &new.record));
}
