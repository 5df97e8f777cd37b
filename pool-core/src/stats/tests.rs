//! The gauges' layout and the origin totals.

use super::*;

/// The waiting count, written on every request that waits, shares no 128-byte block with
/// the connection gauges that peers read on a miss at the bound.
#[test]
fn the_waiting_count_has_a_line_of_its_own() {
    assert_eq!(std::mem::align_of::<Gauges>(), 128);
    assert_eq!(std::mem::size_of::<Gauges>(), 256);
    let connection_gauges_end =
        std::mem::offset_of!(Gauges, peak_admitted) + std::mem::size_of::<AtomicUsize>();
    assert!(connection_gauges_end <= 128);
    assert_eq!(std::mem::offset_of!(Gauges, waiting) % 128, 0);
    assert!(std::mem::offset_of!(Gauges, waiting) >= 128);
    let g = Gauges::default();
    g.inc(Gauge::WaitingRequests);
    g.inc(Gauge::WaitingRequests);
    g.dec(Gauge::WaitingRequests);
    assert_eq!(g.get(Gauge::WaitingRequests), 1);
    assert_eq!(g.peaks().waiting, 2);
    assert_eq!(g.get(Gauge::PhysicallyLive), 0);
}

#[test]
fn admitted_is_derived_from_rows() {
    let g = Gauges::default();
    g.inc(Gauge::Establishing);
    g.inc(Gauge::H1Idle);
    g.inc(Gauge::H1Idle);
    g.transfer(Gauge::H1Idle, Gauge::H1Active);
    g.inc(Gauge::H2Accepting);
    g.inc(Gauge::H1Draining);
    g.inc(Gauge::WaitingRequests);
    let row = g.snapshot();
    assert_eq!((row.h1_idle, row.h1_active), (1, 1));
    assert_eq!(row.admitted(), 4, "draining and waiting hold no permit");
    let stats = OriginStats::new(
        Some(8),
        vec![
            (PartitionId::from_index(0), row),
            (PartitionId::from_index(1), row),
        ],
    );
    assert_eq!(stats.admitted(), 8);
    assert_eq!(stats.limit(), Some(8));
    assert_eq!(stats.get(PartitionId::from_index(1)), Some(&row));
    assert_eq!(stats.get(PartitionId::ANONYMOUS), None);
    assert_eq!(stats.total().h1_draining, 2);
    assert!(!stats.is_empty());
    assert!(OriginStats::default().is_empty());
    assert_eq!((stats.waiting_requests(), stats.h1_idle()), (2, 2));
}

/// Two cells' gauges sharing an idle total: it follows the sum of their idle gauges
/// through every kind of change, and nothing else.
#[test]
fn a_shared_idle_total_is_the_sum_of_the_idle_gauges() {
    let total = Arc::new(AtomicUsize::new(0));
    let a = Gauges::counting_idle_in(total.clone());
    let b = Gauges::counting_idle_in(total.clone());
    a.inc(Gauge::Establishing);
    a.transfer(Gauge::Establishing, Gauge::H1Idle);
    b.inc(Gauge::H1Idle);
    // A checkin that lost its race: counted first, taken back.
    b.arrive(Gauge::H1Idle);
    b.dec(Gauge::H1Idle);
    assert_eq!(total.load(Ordering::Relaxed), 2);
    a.arrive(Gauge::H1Active);
    a.dec(Gauge::H1Idle);
    b.inc(Gauge::H1Draining);
    b.inc(Gauge::WaitingRequests);
    assert_eq!(total.load(Ordering::Relaxed), 1);
    assert_eq!(
        total.load(Ordering::Relaxed),
        a.get(Gauge::H1Idle) + b.get(Gauge::H1Idle)
    );
    b.transfer(Gauge::H1Idle, Gauge::H1Active);
    assert_eq!(total.load(Ordering::Relaxed), 0);
    assert!(Gauges::default().idle_total.is_none());
}

#[test]
fn peaks_rise_with_growth_and_restart_at_a_reset() {
    let g = Gauges::default();
    g.inc(Gauge::Establishing);
    g.inc(Gauge::Establishing);
    g.transfer(Gauge::Establishing, Gauge::H1Active);
    g.transfer(Gauge::H1Active, Gauge::H1Idle);
    g.transfer(Gauge::H1Idle, Gauge::H1Active);
    g.inc(Gauge::WaitingRequests);
    g.inc(Gauge::WaitingRequests);
    g.inc(Gauge::WaitingRequests);
    g.dec(Gauge::WaitingRequests);
    assert_eq!(
        g.peaks(),
        Peaks {
            admitted: 2,
            waiting: 3
        }
    );
    g.dec(Gauge::Establishing);
    g.transfer(Gauge::H1Active, Gauge::H1Draining);
    g.transfer(Gauge::H1Draining, Gauge::H1Idle);
    assert_eq!(g.peaks().admitted, 2, "a peak stays after its gauge falls");
    g.reset_peaks();
    assert_eq!(
        g.peaks(),
        Peaks {
            admitted: 1,
            waiting: 2
        }
    );
    let stats = OriginStats::new(Some(3), vec![(PartitionId::from_index(0), g.snapshot())])
        .with_peaks([
            g.peaks(),
            Peaks {
                admitted: 4,
                waiting: 1,
            },
        ]);
    assert_eq!(
        (stats.peak_admitted(), stats.peak_waiting()),
        (3, 3),
        "capped by the limit"
    );
}
