//! Models of HTTP/2 generations and their streams: a scale-out racing a freed stream, a lent
//! stream racing a peer's miss, and a quiet generation closing for another group.

use super::*;

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
