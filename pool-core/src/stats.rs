//! Gauges per (partition, origin) and the snapshots users read.
//!
//! Each gauge changes at its named transition, before any listener callback about that
//! transition runs. Gauges live in the origin's cell of the partition that owns the connection
//! (a waiting request is counted by the partition it waits in), so a reuse hit writes only
//! partition-local counters and nothing shared by the origin. Reads are relaxed: an
//! [`OriginStats`] is not an atomic snapshot of all counters, and one transition may appear in
//! one field before another.

use std::fmt;

use crate::partition::PartitionId;
use crate::sync::atomic::{AtomicUsize, Ordering};

/// One gauge of a [`Gauges`] set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gauge {
    /// Attempts and flights admitted and not yet failed or installed.
    Establishing,
    /// HTTP/1 connections in the idle set, dispatch-eligible.
    H1Idle,
    /// HTTP/1 connections reserved or checked out by a request.
    H1Active,
    /// HTTP/1 connections logically closed whose transport is still live.
    H1Draining,
    /// HTTP/2 generations that accept new streams.
    H2Accepting,
    /// HTTP/2 generations that accept no new streams but whose transport is still live.
    H2Draining,
    /// Request leases (streams) on accepting and draining generations.
    H2ActiveStreams,
    /// Transports from the connector's return until their I/O is dropped.
    PhysicallyLive,
    /// Requests registered in the cell's waiter queues.
    WaitingRequests,
}

const GAUGE_COUNT: usize = 9;

/// The live counters of one (partition, origin) cell.
pub struct Gauges {
    values: [AtomicUsize; GAUGE_COUNT],
}

impl Default for Gauges {
    fn default() -> Self {
        Gauges {
            values: std::array::from_fn(|_| AtomicUsize::new(0)),
        }
    }
}

impl Gauges {
    /// Adds one to `gauge`.
    #[inline]
    pub fn inc(&self, gauge: Gauge) {
        self.values[gauge as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Subtracts one from `gauge`.
    ///
    /// # Panics
    ///
    /// In debug builds, when the gauge is already zero: that is an accounting bug.
    #[inline]
    pub fn dec(&self, gauge: Gauge) {
        let prev = self.values[gauge as usize].fetch_sub(1, Ordering::Relaxed);
        debug_assert!(prev > 0, "gauge {gauge:?} decremented below zero");
    }

    /// Moves one unit from `from` to `to` (for example idle to active).
    #[inline]
    pub fn transfer(&self, from: Gauge, to: Gauge) {
        self.dec(from);
        self.inc(to);
    }

    /// The current value of one gauge (relaxed).
    pub fn get(&self, gauge: Gauge) -> usize {
        self.values[gauge as usize].load(Ordering::Relaxed)
    }

    /// Reads every gauge (relaxed; not an atomic snapshot).
    pub fn snapshot(&self) -> PartitionStats {
        PartitionStats {
            establishing: self.get(Gauge::Establishing),
            h1_idle: self.get(Gauge::H1Idle),
            h1_active: self.get(Gauge::H1Active),
            h1_draining: self.get(Gauge::H1Draining),
            h2_accepting: self.get(Gauge::H2Accepting),
            h2_draining: self.get(Gauge::H2Draining),
            h2_active_streams: self.get(Gauge::H2ActiveStreams),
            physically_live: self.get(Gauge::PhysicallyLive),
            waiting_requests: self.get(Gauge::WaitingRequests),
        }
    }
}

impl fmt::Debug for Gauges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.snapshot(), f)
    }
}

/// The gauges of one origin in one partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionStats {
    /// Attempts and flights admitted and not yet failed or installed.
    pub establishing: usize,
    /// HTTP/1 connections in the idle set.
    pub h1_idle: usize,
    /// HTTP/1 connections serving (or reserved for) a request.
    pub h1_active: usize,
    /// HTTP/1 connections closed logically whose transport is still live.
    pub h1_draining: usize,
    /// HTTP/2 generations accepting new streams.
    pub h2_accepting: usize,
    /// HTTP/2 generations draining their accepted streams.
    pub h2_draining: usize,
    /// Streams in flight on this partition's HTTP/2 generations.
    pub h2_active_streams: usize,
    /// Transports whose I/O has not been dropped yet, in any state.
    pub physically_live: usize,
    /// Requests of this partition waiting for a connection.
    pub waiting_requests: usize,
}

impl PartitionStats {
    /// Connections that hold admission: establishing + H1 idle + H1 active + H2 accepting.
    pub fn admitted(&self) -> usize {
        self.establishing
            .saturating_add(self.h1_idle)
            .saturating_add(self.h1_active)
            .saturating_add(self.h2_accepting)
    }

    fn add(&mut self, other: &PartitionStats) {
        self.establishing += other.establishing;
        self.h1_idle += other.h1_idle;
        self.h1_active += other.h1_active;
        self.h1_draining += other.h1_draining;
        self.h2_accepting += other.h2_accepting;
        self.h2_draining += other.h2_draining;
        self.h2_active_streams += other.h2_active_streams;
        self.physically_live += other.physically_live;
        self.waiting_requests += other.waiting_requests;
    }
}

/// The gauges of one origin across the partitions that have seen it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OriginStats {
    limit: Option<usize>,
    available: Option<usize>,
    rows: Vec<(PartitionId, PartitionStats)>,
}

impl OriginStats {
    /// Assembles the rows read from each partition's cell.
    pub fn new(limit: Option<usize>, rows: Vec<(PartitionId, PartitionStats)>) -> OriginStats {
        OriginStats {
            limit,
            available: None,
            rows,
        }
    }

    /// Adds the number of permits nobody holds (bounded origins).
    pub fn with_available_permits(mut self, available: Option<usize>) -> OriginStats {
        self.available = available;
        self
    }

    /// For a bounded origin, the permits nobody holds: `limit - available_permits` permits are
    /// held by admitted connections, establishments, and HTTP/1 connections whose socket is
    /// still closing. Once everything has settled, `limit - available - admitted` is the number
    /// of leaked permits, which must be zero.
    pub fn available_permits(&self) -> Option<usize> {
        self.available
    }

    /// Admitted connections across partitions (derived from the rows, not another counter).
    pub fn admitted(&self) -> usize {
        self.rows
            .iter()
            .map(|(_, row)| row.admitted())
            .fold(0, usize::saturating_add)
    }

    /// The configured `max_connections_per_host`, or `None` for an unbounded origin.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// The row of one partition.
    pub fn get(&self, partition: PartitionId) -> Option<&PartitionStats> {
        self.rows
            .iter()
            .find(|(id, _)| *id == partition)
            .map(|(_, row)| row)
    }

    /// Every partition row, in partition order.
    pub fn iter(&self) -> impl Iterator<Item = (PartitionId, &PartitionStats)> + '_ {
        self.rows.iter().map(|(id, row)| (*id, row))
    }

    /// Whether no partition has seen this origin.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The sum of every partition row.
    pub fn total(&self) -> PartitionStats {
        let mut total = PartitionStats::default();
        for (_, row) in &self.rows {
            total.add(row);
        }
        total
    }
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;

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
    }
}
