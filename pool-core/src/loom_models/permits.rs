//! Models of permits and demand: a permit delivered while its waiter cancels, and demand
//! published out of order.

use super::*;

/// A permit released (the connection holding it closes and its socket goes) while the request
/// that would receive it cancels: the permit ends launched for that request or free again,
/// never both and never lost.
#[test]
fn loom_permit_delivery_races_cancellation() {
    loom::model(|| {
        let admission = Admission::<Cell<Model>>::new(1, None, vec![0]);
        let launches = Launches::default();
        let cell = cell(&admission, 0, &launches);
        let held = admission.take_free_permit(0).expect("one permit");
        let waiter = wait(&cell, 1);
        assert!(launches.lock().unwrap().is_empty(), "no permit was free");

        let releaser = loom::thread::spawn(move || drop(held));
        let canceller = {
            let (cell, waiter) = (cell.clone(), waiter.clone());
            loom::thread::spawn(move || cell.cancel(&waiter, Instant::now()))
        };
        releaser.join().unwrap();
        canceller.join().unwrap();

        // A launch that received the permit while the waiter was leaving still owns it; the
        // establishment would find nobody to serve and its guard would return the permit.
        let launched: Vec<_> = launches.lock().unwrap().drain(..).collect();
        assert!(launched.len() <= 1);
        drop(launched);
        assert_eq!(admission.available(), 1, "the permit is back exactly once");
        assert_eq!(admission.waiting(), 0);
        assert_eq!(cell.gauges().get(Gauge::WaitingRequests), 0);
        admission.detach();
    });
}

/// Two snapshots of one cell's demand published from two threads in either order: the newer
/// one wins, so demand the cell no longer has is never resurrected.
#[test]
fn loom_stale_demand_versions_are_rejected() {
    loom::model(|| {
        let admission = Admission::<Cell<Model>>::new(1, None, vec![0]);
        let _held = admission.take_free_permit(0).expect("one permit");
        let older = {
            let admission = admission.clone();
            loom::thread::spawn(move || admission.publish(0, Demand::new(1, Some(7), None)))
        };
        let newer = {
            let admission = admission.clone();
            loom::thread::spawn(move || admission.publish(0, Demand::new(2, None, None)))
        };
        older.join().unwrap();
        newer.join().unwrap();
        assert!(
            !admission.under_pressure(),
            "the newest snapshot (no demand) stands"
        );
    });
}
