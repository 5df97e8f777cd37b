//! Models of a returning HTTP/1 connection meeting requests of its own and peer partitions:
//! borrow, local preference, and two partitions at their share.

use super::*;

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
