//! Placement across the partitions of a bounded origin: a partition at its share serves its
//! own requests first, capacity moves only when an imbalance outlasts the tolerance, a
//! connection idle between two local requests is not closed, and a free permit goes to a
//! partition below its share before an older ticket.

use super::bounded::{bounded, establish};
use super::*;
use crate::admission::DEFAULT_TOLERANCE;

/// Every rig's clock at `at`.
fn set_clocks(rigs: &[Rig], at: Instant) {
    for rig in rigs {
        rig.clock.set(at);
    }
}

type Link = Arc<crate::connection::PhysicalLink>;

/// A connection for a new request of `rig` (sequence `seq`), established with a free permit,
/// and the link that reports its socket gone.
fn held_connection(rig: &Rig, seq: u64, t0: Instant) -> (FakeH1, Link) {
    rig.wait(Requirement::Any, seq, t0);
    establish(rig, t0)
}

#[test]
fn a_partition_at_its_share_serves_its_own_request_before_an_older_peer_request() {
    for groups in [vec![0, 0], vec![0, 1]] {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(2, None, groups.clone());
        set_clocks(&rigs, t0);
        let (a, _a_link) = held_connection(&rigs[0], 1, t0);
        let (b, _b_link) = held_connection(&rigs[1], 2, t0);
        let older_b = rigs[1].wait(Requirement::Any, 3, t0);
        let newer_a = rigs[0].wait(Requirement::Any, 4, t0);
        // Long past the tolerance: the imbalance rule is not what keeps this local.
        let later = t0 + DEFAULT_TOLERANCE * 10;
        set_clocks(&rigs, later);
        assert_eq!(rigs[0].cell.release_h1(a, later), Released::Delivered);
        let Some(Grant::H1(served)) = take(&newer_a) else {
            panic!("{groups:?}: partition 0's own request is served first")
        };
        assert!(Arc::ptr_eq(served.record.gauges(), rigs[0].cell.gauges()));
        assert!(
            take(&older_b).is_none(),
            "{groups:?}: no borrow, no reclaim"
        );
        assert_eq!(rigs[1].cell.release_h1(b, later), Released::Delivered);
        assert!(matches!(take(&older_b), Some(Grant::H1(_))));
        assert_eq!((admission.held(0), admission.held(1)), (1, 1));
        assert!(rigs[0].launches().is_empty() && rigs[1].launches().is_empty());
    }
}

#[test]
fn capacity_moves_once_a_partition_below_its_share_has_waited_the_tolerance() {
    for groups in [vec![0, 0], vec![0, 1]] {
        let t0 = Instant::now();
        let (admission, rigs) = bounded(4, None, groups.clone());
        set_clocks(&rigs, t0);
        // Partition 1 holds one permit, partition 0 three (its burst came while 1 was quiet).
        let _b = held_connection(&rigs[1], 1, t0);
        let (a1, _a1_link) = held_connection(&rigs[0], 2, t0);
        let (a2, a2_link) = held_connection(&rigs[0], 3, t0);
        let (a3, _a3_link) = held_connection(&rigs[0], 4, t0);
        assert_eq!(
            (admission.held(0), admission.held(1), admission.available()),
            (3, 1, 0)
        );

        let short_b = rigs[1].wait(Requirement::Any, 5, t0);
        let local_a = rigs[0].wait(Requirement::Any, 6, t0);
        // Within the tolerance the imbalance may be a burst: the connection stays local.
        let soon = t0 + DEFAULT_TOLERANCE / 2;
        set_clocks(&rigs, soon);
        assert_eq!(rigs[0].cell.release_h1(a1, soon), Released::Delivered);
        assert!(matches!(take(&local_a), Some(Grant::H1(_))));
        assert!(take(&short_b).is_none());

        // Past it, partition 0 (3 > its share of 2) gives one permit to partition 1 (1 < 2).
        let _local_a2 = rigs[0].wait(Requirement::Any, 7, soon);
        let late = t0 + DEFAULT_TOLERANCE;
        set_clocks(&rigs, late);
        let record = a2.record.clone();
        assert_eq!(
            rigs[0].cell.release_h1(a2, late),
            Released::Closed,
            "{groups:?}"
        );
        assert_eq!(record.close_reason(), Some(CloseReason::Reclaimed));
        drop(record);
        a2_link.gone();
        let to_b = rigs[1].launches_with_permits();
        assert_eq!(to_b.len(), 1, "{groups:?}: the permit moved to partition 1");
        assert!(Arc::ptr_eq(&to_b[0].0, &short_b));
        assert_eq!((admission.held(0), admission.held(1)), (2, 2));

        // At two each, nothing moves any more however long partition 1 waits.
        let _more_b = rigs[1].wait(Requirement::Any, 8, late);
        let much_later = t0 + DEFAULT_TOLERANCE * 10;
        set_clocks(&rigs, much_later);
        assert_eq!(rigs[0].cell.release_h1(a3, much_later), Released::Delivered);
        assert_eq!((admission.held(0), admission.held(1)), (2, 2));
        drop(to_b);
    }
}

#[test]
fn a_connection_idle_between_its_own_requests_is_not_reclaimed_until_it_is_spare() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(2, None, vec![0, 1]);
    set_clocks(&rigs, t0);
    let (a, a_link) = held_connection(&rigs[0], 1, t0);
    let a_record = a.record.clone();
    let _b = held_connection(&rigs[1], 2, t0);
    assert_eq!(rigs[0].cell.release_h1(a, t0), Released::Idle);

    // Partition 1 holds its share: a young idle connection of partition 0 stays.
    let soon = t0 + DEFAULT_TOLERANCE / 2;
    set_clocks(&rigs, soon);
    let first_b = rigs[1].wait(Requirement::Any, 3, soon);
    assert_eq!(a_record.close_reason(), None);
    assert_eq!(rigs[0].cell.gauges().snapshot().h1_idle, 1);

    // Idle past the tolerance it is spare: the next miss of partition 1 reclaims it.
    let late = t0 + DEFAULT_TOLERANCE;
    set_clocks(&rigs, late);
    let _second_b = rigs[1].wait(Requirement::Any, 4, late);
    assert_eq!(a_record.close_reason(), Some(CloseReason::Reclaimed));
    drop(a_record);
    a_link.gone();
    let to_b = rigs[1].launches_with_permits();
    assert_eq!(to_b.len(), 1, "the permit went to partition 1");
    assert!(Arc::ptr_eq(&to_b[0].0, &first_b));
    assert_eq!((admission.held(0), admission.held(1)), (0, 2));
}

#[test]
fn a_free_permit_goes_to_a_partition_below_its_share_before_an_older_ticket() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(2, None, vec![0, 1]);
    set_clocks(&rigs, t0);
    let _a = held_connection(&rigs[0], 1, t0);
    rigs[0].wait(Requirement::Any, 2, t0);
    let (_, _, second_permit) = rigs[0].launches_with_permits().pop().unwrap();
    let older_a = rigs[0].wait(Requirement::Any, 3, t0);
    let newer_b = rigs[1].wait(Requirement::Any, 4, t0);
    assert_eq!((admission.held(0), admission.held(1)), (2, 0));
    // Partition 0's second establishment fails: its permit goes to partition 1, which holds
    // nothing, although partition 0's ticket is older.
    drop(second_permit);
    let to_b = rigs[1].launches_with_permits();
    assert_eq!(to_b.len(), 1);
    assert!(Arc::ptr_eq(&to_b[0].0, &newer_b));
    assert!(rigs[0].launches().is_empty());
    assert!(take(&older_a).is_none());
    assert_eq!((admission.held(0), admission.held(1)), (1, 1));
}

#[test]
fn a_partition_whose_last_connection_closes_competes_with_its_exact_head() {
    let t0 = Instant::now();
    let (admission, rigs) = bounded(1, None, vec![0, 1]);
    set_clocks(&rigs, t0);
    let (a, a_link) = held_connection(&rigs[0], 1, t0);
    let older_a = rigs[0].wait(Requirement::Any, 2, t0);
    let older_b = rigs[1].wait(Requirement::Any, 3, t0);
    let newer_a = rigs[0].wait(Requirement::Any, 4, t0);
    // Partition 0's connection serves its own oldest request (2, older than partition 1's 3);
    // the head it leaves published is 2 while its real one is now 4.
    assert_eq!(rigs[0].cell.release_h1(a, t0), Released::Delivered);
    let Some(Grant::H1(a)) = take(&older_a) else {
        panic!("partition 0's older request is served locally")
    };
    // That connection closes: partition 0 holds nothing any more and its permit returns. It
    // goes to partition 1, whose request (3) is older than partition 0's real head (4).
    let record = a.record.clone();
    drop(a);
    record.close(CloseReason::ProtocolClosed, None);
    drop(record);
    a_link.gone();
    let to_b = rigs[1].launches_with_permits();
    assert_eq!(to_b.len(), 1, "the permit went to the older request");
    assert!(Arc::ptr_eq(&to_b[0].0, &older_b));
    assert!(rigs[0].launches().is_empty());
    assert!(take(&newer_a).is_none());
    assert_eq!((admission.held(0), admission.held(1)), (0, 1));
}
