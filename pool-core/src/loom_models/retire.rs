//! Models of retiring cells: an unbounded cell retiring while a request misses in it, and a
//! bounded cell retiring while a permit or a peer's connection is on its way to its
//! partition and a successor takes its place.

use super::*;

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
