//! Periodic readings of the pool's gauges and the workers' counters: what the progress display
//! shows, the peak of admitted connections for the summary, and the per-second peaks of
//! connections and requests in flight for the time series.
//!
//! The driver samples every [`SAMPLE_EVERY`] whether or not progress is shown, and once more
//! at the end. A peak from samples can miss a spike shorter than the interval; the summary's
//! `peak_open` (from connection events) is exact.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

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

/// The largest readings within one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SecondPeak {
    /// Admitted connections (summed over origins and partitions).
    pub(crate) connections: usize,
    /// Requests in flight (all partitions).
    pub(crate) in_flight: u64,
}

/// Takes samples and keeps the peaks.
#[derive(Debug)]
pub(crate) struct Sampler {
    /// When the run started (second 0 of the series).
    start: Instant,
    /// The peaks of each second that had a sample.
    per_second: Vec<SecondPeak>,
    /// The distinct origins of the run's URLs.
    origins: Vec<OriginKey>,
    /// The partitions, by index.
    partitions: Vec<PartitionId>,
    /// The largest `admitted` seen.
    peak_admitted: usize,
    /// Per partition, the sum over samples of the connections it held (admitted), for the
    /// mean: how the origins' permits were spread across partitions.
    held_sum: Vec<u64>,
    /// Per partition, the connections it held at the latest sample.
    held_last: Vec<usize>,
    /// Samples taken.
    samples: u64,
}

/// The connections one partition held over the run, from the samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Held {
    /// The mean over samples.
    pub(crate) mean: f64,
    /// At the last sample.
    pub(crate) last: usize,
}

impl Sampler {
    /// A sampler for these origins and partitions, of a run that started at `start`.
    pub(crate) fn new(
        mut origins: Vec<OriginKey>,
        partitions: Vec<PartitionId>,
        start: Instant,
    ) -> Sampler {
        origins.sort();
        origins.dedup();
        Sampler {
            start,
            per_second: Vec::new(),
            held_sum: vec![0; partitions.len()],
            held_last: vec![0; partitions.len()],
            origins,
            partitions,
            peak_admitted: 0,
            samples: 0,
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
        self.samples += 1;
        for ((sum, last), row) in self
            .held_sum
            .iter_mut()
            .zip(&mut self.held_last)
            .zip(&partitions)
        {
            *sum += row.connections as u64;
            *last = row.connections;
        }
        let second = usize::try_from(self.start.elapsed().as_secs()).unwrap_or(usize::MAX);
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, SecondPeak::default());
        }
        let peak = &mut self.per_second[second];
        peak.connections = peak.connections.max(admitted);
        let in_flight = partitions.iter().map(|p| p.in_flight).sum();
        peak.in_flight = peak.in_flight.max(in_flight);
        Sample {
            partitions,
            admitted,
        }
    }

    /// Per partition, the connections it held: the mean over the samples so far, and at the
    /// latest one.
    pub(crate) fn held(&self) -> Vec<Held> {
        self.held_sum
            .iter()
            .zip(&self.held_last)
            .map(|(sum, last)| Held {
                mean: *sum as f64 / self.samples.max(1) as f64,
                last: *last,
            })
            .collect()
    }

    /// The largest admitted count sampled so far.
    pub(crate) fn peak_admitted(&self) -> usize {
        self.peak_admitted
    }

    /// The peaks of each second so far (a second without a sample reads as zero).
    pub(crate) fn per_second(&self) -> &[SecondPeak] {
        &self.per_second
    }
}
