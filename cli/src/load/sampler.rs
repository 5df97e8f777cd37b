//! Periodic readings of the pool's gauges and the workers' counters: what the progress display
//! shows, and the peak of admitted connections for the summary.
//!
//! The driver samples every [`SAMPLE_EVERY`] whether or not progress is shown, and once more
//! at the end. A peak from samples can miss a spike shorter than the interval; the summary's
//! `peak_open` (from connection events) is exact.

use std::sync::atomic::Ordering;
use std::time::Duration;

use pool::{ConnectionPool, OriginKey, PartitionId};

use super::worker::PartitionGauges;

/// How often the driver samples.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// One partition's row of a sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PartitionSample {
    /// Requests in flight.
    pub(crate) in_flight: u64,
    /// Requests finished.
    pub(crate) completed: u64,
    /// Requests failed.
    pub(crate) failed: u64,
    /// Admitted connections of the run's origins owned by this partition.
    pub(crate) connections: usize,
    /// Requests of this partition waiting for a connection.
    pub(crate) waiting: usize,
}

/// One reading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sample {
    /// Per partition index.
    pub(crate) partitions: Vec<PartitionSample>,
    /// Admitted connections summed over the run's origins and partitions.
    pub(crate) admitted: usize,
}

impl Sample {
    /// Requests finished, all partitions.
    pub(crate) fn completed(&self) -> u64 {
        self.partitions.iter().map(|p| p.completed).sum()
    }

    /// Requests failed, all partitions.
    pub(crate) fn failed(&self) -> u64 {
        self.partitions.iter().map(|p| p.failed).sum()
    }
}

/// Takes samples and keeps the peak.
#[derive(Debug)]
pub(crate) struct Sampler {
    /// The distinct origins of the run's URLs.
    origins: Vec<OriginKey>,
    /// The partitions, by index.
    partitions: Vec<PartitionId>,
    /// The largest `admitted` seen.
    peak_admitted: usize,
}

impl Sampler {
    /// A sampler for these origins and partitions.
    pub(crate) fn new(mut origins: Vec<OriginKey>, partitions: Vec<PartitionId>) -> Sampler {
        origins.sort();
        origins.dedup();
        Sampler {
            origins,
            partitions,
            peak_admitted: 0,
        }
    }

    /// Reads the pool and the gauges now.
    pub(crate) fn sample(&mut self, pool: &ConnectionPool, gauges: &[PartitionGauges]) -> Sample {
        let mut partitions: Vec<PartitionSample> = gauges
            .iter()
            .map(|g| PartitionSample {
                in_flight: g.in_flight.load(Ordering::Relaxed),
                completed: g.completed.load(Ordering::Relaxed),
                failed: g.failed.load(Ordering::Relaxed),
                ..PartitionSample::default()
            })
            .collect();
        let mut admitted = 0;
        for origin in &self.origins {
            let stats = pool.stats(origin);
            admitted += stats.admitted();
            for (row, id) in partitions.iter_mut().zip(&self.partitions) {
                if let Some(stats) = stats.get(*id) {
                    row.connections += stats.admitted();
                    row.waiting += stats.waiting_requests;
                }
            }
        }
        self.peak_admitted = self.peak_admitted.max(admitted);
        Sample {
            partitions,
            admitted,
        }
    }

    /// The largest admitted count sampled so far.
    pub(crate) fn peak_admitted(&self) -> usize {
        self.peak_admitted
    }
}
