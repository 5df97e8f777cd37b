//! The end of a run: the workers' records merged, the pool's facts added, and the renderings
//! of the result (text in [`text`], JSON in [`json`](mod@json), the per-second series as CSV in
//! [`super::timeline`]), all built from the same [`Summary`] so they always carry the same
//! numbers. The JSON schema (`poolcurl.load/1`) is documented key by key in
//! `docs/load-json.md`; a change to a key's meaning needs a new schema version.
//!
//! Definitions the renderings share:
//!
//! * `requests` = `successes` + `failures`: every request that ended. Requests cut off at the
//!   end of the run are `aborted` and counted nowhere else.
//! * Latency and time to first byte (the response head) are over requests that received a
//!   complete response, measured from their start (their scheduled time in open loop). With no
//!   such request there is no latency to show: the text says so, and the JSON's percentile
//!   objects have `samples: 0` (and zeros).
//! * `rps` = `requests` / `duration_s`; `duration_s` runs from the first request's start to the
//!   end of the last one. `success_rps` counts successes only; with no success the text shows
//!   no rate at all.
//! * `connections.opened` counts `connection_created` events: every connection that became
//!   usable. A TCP connection that ended before that (a failed TLS or HTTP handshake, or a
//!   losing HTTP/2 attempt counted in `redundant_handshakes`) is not in it.
//! * Requests per connection are over connections that served at least one response.

mod json;
#[cfg(test)]
mod tests;
mod text;

use std::time::Duration;

use hdrhistogram::Histogram;
use pool::{OriginKey, PoolCounters};
use serde_json::{Value, json};

use super::events::EventSnapshot;
use super::record::{Latencies, Record, Tally};
use super::sampler::{Held, SecondPeak};
use super::timeline::{self, SecondRow};
use super::volume::Volume;
use super::warmup::WarmUp;

/// The JSON schema identifier.
pub(crate) const SCHEMA: &str = "poolcurl.load/1";

/// How the run was configured, as the summary reports it.
#[derive(Debug, Clone)]
pub(crate) struct RunConfig {
    /// The URLs loaded, in round-robin order.
    pub(crate) urls: Vec<String>,
    /// `-c`.
    pub(crate) concurrency: u32,
    /// `--partitions`.
    pub(crate) partitions: usize,
    /// `-n` or `-z`.
    pub(crate) volume: Volume,
    /// `--rate`.
    pub(crate) rate: Option<f64>,
    /// `--ramp`.
    pub(crate) ramp: Option<Duration>,
    /// The protocol flag: `auto`, `http1.1`, `http2` or `http2-prior-knowledge`.
    pub(crate) protocol: &'static str,
    /// `--max-connections-per-host`.
    pub(crate) max_connections_per_host: Option<u64>,
    /// `--max-pending-per-host`.
    pub(crate) max_pending_per_host: Option<u64>,
    /// `--reuse-scope`.
    pub(crate) reuse_scope: &'static str,
    /// The effective idle timeout; `None` when disabled.
    pub(crate) idle_timeout: Option<Duration>,
    /// `--max-idle-per-host`.
    pub(crate) max_idle_per_host: Option<u64>,
    /// `--max-idle-connections`.
    pub(crate) max_idle_connections: Option<u64>,
    /// The effective connect timeout.
    pub(crate) connect_timeout: Duration,
    /// `--max-connection-lifetime`.
    pub(crate) max_connection_lifetime: Option<Duration>,
    /// `--pool-timeout`.
    pub(crate) pool_timeout: Option<Duration>,
    /// `-m`.
    pub(crate) max_time: Option<Duration>,
    /// `--interface`.
    pub(crate) interface: Option<String>,
    /// `--fail`.
    pub(crate) fail: bool,
    /// `--local`.
    pub(crate) local: bool,
}

/// The local origin's side of a `--local` run.
#[derive(Debug, Clone)]
pub(crate) struct LocalFacts {
    /// The origin URL the run loaded (scheme, address, port).
    pub(crate) origin: String,
    /// Connections the origin's listener had accepted when the run ended.
    pub(crate) accepted: u64,
}

/// Everything a summary is made of.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    /// The configuration.
    pub(crate) config: RunConfig,
    /// From the run's start to the end of its last request.
    pub(crate) duration: Duration,
    /// What each partition's workers saw, by partition index.
    pub(crate) partitions: Vec<PartitionResult>,
    /// The distinct origins of the URLs, by the origin index requests were tallied under.
    pub(crate) origins: Vec<OriginKey>,
    /// Connection events.
    pub(crate) events: EventSnapshot,
    /// The pool's counters.
    pub(crate) counters: PoolCounters,
    /// The sampled peak of admitted connections.
    pub(crate) peak_admitted: usize,
    /// The sampled peaks of each second.
    pub(crate) second_peaks: Vec<SecondPeak>,
    /// The warm-up, with `--preconnect`.
    pub(crate) warmup: Option<WarmUp>,
    /// Open-loop slots (`None` in closed loop).
    pub(crate) slots: Option<u64>,
    /// The local origin, with `--local`.
    pub(crate) local: Option<LocalFacts>,
    /// Per origin that has one, the per-connection request quota the pool learnt of its
    /// HTTP/2 server (origin, requests), at the end of the run.
    pub(crate) request_quotas: Vec<(String, u64)>,
    /// The origins whose HTTP/2 connections send one request body at a time (their server
    /// ended a connection asking for calm while uploads overlapped on it).
    pub(crate) uploads_one_at_a_time: Vec<String>,
    /// The origins whose new HTTP/2 connections open with a larger stream window (their
    /// server ended a connection asking for calm while no uploads overlapped on it).
    pub(crate) larger_stream_window: Vec<String>,
    /// The origins whose HTTP/2 server sends empty DATA frames, so that their connections take
    /// fewer streams and retire before h2's limit on those frames.
    pub(crate) sends_empty_data_frames: Vec<String>,
    /// The idle timeouts the pool learnt of origins' HTTP/1 servers.
    pub(crate) server_idle_timeouts: Vec<(String, Duration)>,
}

/// What one partition's workers saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartitionResult {
    /// The workers' counters, merged.
    pub(crate) record: Record,
    /// The partition's latency histograms.
    pub(crate) latencies: Latencies,
    /// The connections it held (admitted, of every origin), sampled.
    pub(crate) held: Held,
}

/// One origin's row: what its requests came to and the connections opened to it.
#[derive(Debug, Clone)]
struct OriginRow {
    origin: String,
    tally: Tally,
    connections: u64,
}

/// The result of a run. See the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    /// What it is made of.
    facts: Facts,
    /// Every partition's counters merged.
    total: Record,
    /// Every partition's histograms merged.
    latencies: Latencies,
}

/// Percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Percentiles {
    /// How many values the histogram holds; 0 means the rest are zeros that measure nothing.
    samples: u64,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    p9999: f64,
    max: f64,
    min: f64,
    mean: f64,
}

impl Percentiles {
    /// From a histogram of microseconds; all zero when it is empty.
    fn of(histogram: &Histogram<u64>) -> Percentiles {
        if histogram.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| us as f64 / 1_000.0;
        Percentiles {
            samples: histogram.len(),
            p50: ms(histogram.value_at_quantile(0.50)),
            p90: ms(histogram.value_at_quantile(0.90)),
            p99: ms(histogram.value_at_quantile(0.99)),
            p999: ms(histogram.value_at_quantile(0.999)),
            p9999: ms(histogram.value_at_quantile(0.9999)),
            max: ms(histogram.max()),
            min: ms(histogram.min()),
            mean: round3(histogram.mean() / 1_000.0),
        }
    }

    fn json(&self) -> Value {
        json!({
            "samples": self.samples,
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
            "p999": self.p999,
            "p9999": self.p9999,
            "max": self.max,
            "min": self.min,
            "mean": self.mean,
        })
    }
}

/// Rounds to three decimals (microseconds when the unit is milliseconds).
fn round3(value: f64) -> f64 {
    (value * 1_000.0).round() / 1_000.0
}

/// `count` per second of `seconds`, 0 for an empty run.
fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        round3(count as f64 / seconds)
    } else {
        0.0
    }
}

impl Summary {
    /// Merges the partitions' records.
    pub(crate) fn new(facts: Facts) -> Summary {
        let mut total = Record::default();
        let mut latencies = Latencies::default();
        for partition in &facts.partitions {
            total.merge(&partition.record);
            latencies.merge(&partition.latencies);
        }
        Summary {
            facts,
            total,
            latencies,
        }
    }

    /// Whether the run counts as a success: no request failed or was aborted.
    pub(crate) fn succeeded(&self) -> bool {
        self.total.failures() == 0 && self.total.aborted == 0
    }

    fn seconds(&self) -> f64 {
        self.facts.duration.as_secs_f64()
    }

    /// Connections that served at least one response.
    fn used_connections(&self) -> u64 {
        self.total.per_connection.len() as u64
    }

    /// Requests per connection that served: (mean, max).
    fn requests_per_connection(&self) -> (f64, u64) {
        let counts = &self.total.per_connection;
        let served: u64 = counts.values().sum();
        let max = counts.values().copied().max().unwrap_or(0);
        let mean = if counts.is_empty() {
            0.0
        } else {
            round3(served as f64 / counts.len() as f64)
        };
        (mean, max)
    }

    /// Open-loop slots no worker started: `(slots, unsent)`.
    fn schedule(&self) -> Option<(u64, u64)> {
        let slots = self.facts.slots?;
        let started = self.total.requests + self.total.aborted;
        Some((slots, slots.saturating_sub(started)))
    }

    /// The run second by second (see [`timeline`]).
    pub(crate) fn timeline(&self) -> Vec<SecondRow> {
        timeline::rows(
            self.facts.duration,
            &self.total.per_second,
            &self.latencies.per_second,
            &self.facts.second_peaks,
            &self.facts.events.per_second,
        )
    }

    /// One row per distinct origin of the URLs, in the order they first appear.
    fn origin_rows(&self) -> Vec<OriginRow> {
        self.facts
            .origins
            .iter()
            .enumerate()
            .map(|(index, origin)| OriginRow {
                origin: origin.to_string(),
                tally: self
                    .total
                    .per_origin
                    .get(index)
                    .copied()
                    .unwrap_or_default(),
                connections: self.facts.events.opened_for(origin),
            })
            .collect()
    }
}
