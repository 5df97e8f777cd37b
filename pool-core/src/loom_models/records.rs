//! Models of a connection record and a waiter: a close racing a dispatch commit or the I/O
//! drop, and a claim racing a cancel.

use super::*;

/// An HTTP/1 connection of `gauges`, installed `ACTIVE` (one unit of `establishing` moves).
fn h1_record(id: u64, gauges: &Arc<Gauges>) -> Arc<ConnectionRecord> {
    let origin = OriginKey::from_uri(&"http://loom.test".parse().unwrap()).unwrap();
    let info = ConnectionInfo::new(
        ConnectionId::from_u64(id),
        origin,
        PartitionId::ANONYMOUS,
        Protocol::Http1,
    );
    ConnectionRecord::install(info, gauges.clone(), None, None)
}

/// The driver closing a connection (its peer went away) races a request committing a dispatch
/// on it from the idle set: the connection is accounted exactly once either way.
#[test]
fn loom_logical_close_races_dispatch_commit() {
    loom::model(|| {
        let gauges = Arc::new(Gauges::default());
        gauges.inc(Gauge::Establishing);
        let record = h1_record(2, &gauges);
        assert!(record.checkin());

        let committed = std::sync::Arc::new(AtomicBool::new(false));
        let dispatcher = {
            let (record, committed) = (record.clone(), committed.clone());
            loom::thread::spawn(move || committed.store(record.checkout(), Ordering::SeqCst))
        };
        let closer = {
            let record = record.clone();
            loom::thread::spawn(move || record.close(CloseReason::ProtocolClosed, None))
        };
        dispatcher.join().unwrap();
        assert!(closer.join().unwrap(), "the only close wins");

        let s = gauges.snapshot();
        assert_eq!((s.h1_idle, s.h1_active, s.h1_draining), (0, 0, 1), "{s:?}");
        assert!(record.is_closed());
        // A commit that lost reports failure: the request takes another connection.
        let _ = committed.load(Ordering::SeqCst);
    });
}

/// The driver's I/O is dropped on one thread while a close runs on another (an idle
/// connection's driver ends as the pool retires it): `h1_draining` is counted before any
/// drop can take it away, and everything ends at zero.
#[test]
fn loom_close_races_the_io_drop() {
    loom::model(|| {
        let gauges = Arc::new(Gauges::default());
        gauges.inc(Gauge::Establishing);
        let link = PhysicalLink::new(gauges.clone());
        let record = h1_record(3, &gauges);
        link.attach(&record);
        assert!(record.checkin());

        let closer = {
            let record = record.clone();
            loom::thread::spawn(move || record.close(CloseReason::IdleTimeout, None))
        };
        let dropper = loom::thread::spawn(move || link.gone());
        let closed_here = closer.join().unwrap();
        dropper.join().unwrap();

        // Whichever came first names the close: the pool's, or the I/O drop's.
        let reason = record.close_reason();
        assert_eq!(closed_here, reason == Some(CloseReason::IdleTimeout));
        assert!(closed_here || reason == Some(CloseReason::ProtocolClosed));
        assert_eq!(gauges.snapshot(), crate::stats::PartitionStats::default());
    });
}

/// A grant claimed and filled while its waiter cancels: the value ends with exactly one side.
#[test]
fn loom_waiter_claim_races_cancel() {
    loom::model(|| {
        let waiter = Arc::new(Waiter::<u32>::new(1, Requirement::Any, None));
        let filler = {
            let waiter = waiter.clone();
            loom::thread::spawn(move || {
                if waiter.claim() {
                    waiter.fill(7).err()
                } else {
                    Some(7)
                }
            })
        };
        let cancelled = waiter.cancel();
        let back_to_filler = filler.join().unwrap();
        let with_waiter = match cancelled {
            None => None,
            Some(value) => value,
        };
        let taken = waiter.try_take();
        let owners = [back_to_filler, with_waiter, taken]
            .iter()
            .filter(|v| v.is_some())
            .count();
        assert_eq!(owners, 1, "exactly one side ends up with the value");
    });
}
