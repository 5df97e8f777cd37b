//! The end of a run: the workers' records merged, the pool's facts added, and both renderings
//! of the result, text and JSON, built from the same [`Summary`] so they always carry the same
//! numbers. The JSON schema (`poolcurl.load/1`) is documented key by key in
//! `docs/load-json.md`; a change to a key's meaning needs a new schema version.
//!
//! Definitions the renderings share:
//!
//! * `requests` = `successes` + `failures`: every request that ended. Requests cut off at the
//!   end of the run are `aborted` and counted nowhere else.
//! * Latency and time to first byte (the response head) are over requests that received a
//!   complete response, measured from their start (their scheduled time in open loop).
//! * `rps` = `requests` / `duration_s`; `duration_s` runs from the first request's start to the
//!   end of the last one.
//! * `connections.opened` counts `connection_created` events: every connection that became
//!   usable. A TCP connection that ended before that (a failed TLS or HTTP handshake, or a
//!   losing HTTP/2 attempt counted in `redundant_handshakes`) is not in it.
//! * Requests per connection are over connections that served at least one response.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use pool::PoolCounters;
use serde_json::{Map, Value, json};

use super::events::EventSnapshot;
use super::record::{ErrorClass, Latencies, Record};
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
    /// Connection events.
    pub(crate) events: EventSnapshot,
    /// The pool's counters.
    pub(crate) counters: PoolCounters,
    /// The sampled peak of admitted connections.
    pub(crate) peak_admitted: usize,
    /// The warm-up, with `--preconnect`.
    pub(crate) warmup: Option<WarmUp>,
    /// Open-loop slots (`None` in closed loop).
    pub(crate) slots: Option<u64>,
    /// The local origin, with `--local`.
    pub(crate) local: Option<LocalFacts>,
}

/// What one partition's workers saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartitionResult {
    /// The workers' counters, merged.
    pub(crate) record: Record,
    /// The partition's latency histograms.
    pub(crate) latencies: Latencies,
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
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
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
            p50: ms(histogram.value_at_quantile(0.50)),
            p90: ms(histogram.value_at_quantile(0.90)),
            p99: ms(histogram.value_at_quantile(0.99)),
            p999: ms(histogram.value_at_quantile(0.999)),
            max: ms(histogram.max()),
            min: ms(histogram.min()),
            mean: round3(histogram.mean() / 1_000.0),
        }
    }

    fn json(&self) -> Value {
        json!({
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
            "p999": self.p999,
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

    /// The JSON rendering (schema [`SCHEMA`]).
    pub(crate) fn json(&self) -> Value {
        let facts = &self.facts;
        let total = &self.total;
        let config = &facts.config;
        let events = &facts.events;
        let seconds = self.seconds();

        let mut status = Map::new();
        for (code, count) in &total.status {
            status.insert(code.to_string(), json!(count));
        }
        let mut errors = Map::new();
        let mut examples = Map::new();
        for class in ErrorClass::ALL {
            errors.insert(class.as_str().to_owned(), json!(total.errors_of(class)));
            if let Some(example) = total.example_of(class) {
                examples.insert(class.as_str().to_owned(), json!(example));
            }
        }
        let mut closed = Map::new();
        for (reason, count) in &events.closed {
            closed.insert(reason.as_str().to_owned(), json!(count));
        }
        closed.insert("other".to_owned(), json!(events.closed_other));
        let mut close_examples = Map::new();
        for (reason, example) in &events.close_examples {
            close_examples.insert((*reason).to_owned(), json!(example));
        }
        let (per_conn_mean, per_conn_max) = self.requests_per_connection();
        let wait = Percentiles::of(&self.latencies.wait);
        let partitions: Vec<Value> = facts
            .partitions
            .iter()
            .enumerate()
            .map(|(id, partition)| {
                let record = &partition.record;
                json!({
                    "id": id,
                    "requests": record.requests,
                    "successes": record.successes,
                    "failures": record.failures(),
                    "aborted": record.aborted,
                    "connections_opened": events.by_partition.get(id).copied().unwrap_or(0),
                    "reused": record.reused,
                    "borrowed": record.borrowed,
                })
            })
            .collect();
        let (n, z) = match config.volume {
            Volume::Requests(n) => (json!(n), Value::Null),
            Volume::Duration(d) => (Value::Null, json!(d.as_secs_f64())),
        };
        let schedule = match self.schedule() {
            Some((slots, unsent)) => json!({"mode": "open", "slots": slots, "unsent": unsent}),
            None => json!({"mode": "closed", "slots": null, "unsent": null}),
        };
        let local = match &facts.local {
            Some(local) => json!({"origin": local.origin, "accepted": local.accepted}),
            None => Value::Null,
        };
        json!({
            "schema": SCHEMA,
            "config": {
                "urls": config.urls,
                "c": config.concurrency,
                "partitions": config.partitions,
                "n": n,
                "z_s": z,
                "rate": config.rate,
                "protocol": config.protocol,
                "bound": {
                    "max_connections_per_host": config.max_connections_per_host,
                    "max_pending_per_host": config.max_pending_per_host,
                },
                "reuse_scope": config.reuse_scope,
                "idle_timeout_s": config.idle_timeout.map(|d| d.as_secs_f64()),
                "connect_timeout_s": config.connect_timeout.as_secs_f64(),
                "max_connection_lifetime_s": config.max_connection_lifetime.map(|d| d.as_secs_f64()),
                "pool_timeout_s": config.pool_timeout.map(|d| d.as_secs_f64()),
                "max_time_s": config.max_time.map(|d| d.as_secs_f64()),
                "interface": config.interface,
                "fail": config.fail,
                "local": config.local,
            },
            "requests": total.requests,
            "successes": total.successes,
            "failures": total.failures(),
            "aborted": total.aborted,
            "duration_s": (seconds * 1e6).round() / 1e6,
            "rps": per_second(total.requests, seconds),
            "bytes": total.bytes,
            "bytes_per_s": per_second(total.bytes, seconds),
            "latency_ms": Percentiles::of(&self.latencies.total).json(),
            "ttfb_ms": Percentiles::of(&self.latencies.ttfb).json(),
            "status": status,
            "errors": errors,
            "error_examples": examples,
            "connections": {
                "opened": events.created,
                "used": self.used_connections(),
                "h1": events.h1,
                "h2": events.h2,
                "closed": closed,
                "closed_total": events.closed_total(),
                "close_examples": close_examples,
                "open_at_end": events.created.saturating_sub(events.closed_total()),
                "failed": events.failed,
                "reused_requests": total.reused,
                "borrowed_requests": total.borrowed,
                "requests_per_connection": {"mean": per_conn_mean, "max": per_conn_max},
                "peak_admitted": facts.peak_admitted,
                "peak_open": events.peak_live,
                "redundant_handshakes": facts.counters.redundant_handshakes,
                "retries": facts.counters.transparent_retries,
                "resends": facts
                    .counters
                    .resends
                    .iter()
                    .map(|(reason, count)| (reason.as_str().to_owned(), json!(count)))
                    .collect::<serde_json::Map<_, _>>(),
            },
            "permit_wait_ms": {
                "waited": self.latencies.wait.len(),
                "p50": wait.p50,
                "p99": wait.p99,
                "max": wait.max,
            },
            "partitions": partitions,
            "schedule": schedule,
            "local_origin": local,
            "warmup": facts.warmup.as_ref().map_or(Value::Null, WarmUp::json),
        })
    }

    /// The text rendering: the same facts as [`json`](Self::json), for people.
    pub(crate) fn text(&self) -> String {
        let facts = &self.facts;
        let total = &self.total;
        let config = &facts.config;
        let events = &facts.events;
        let seconds = self.seconds();
        let mut out = String::new();
        // Writing to a String cannot fail.
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };

        line("Summary".into());
        let more = match config.urls.len() {
            0 | 1 => String::new(),
            n => format!(" (+{} more, round-robin)", n - 1),
        };
        line(format!(
            "  URL                   {}{more}",
            config.urls.first().map_or("", String::as_str)
        ));
        let volume = match config.volume {
            Volume::Requests(n) => format!("-n {n}"),
            Volume::Duration(d) => format!("-z {}s", d.as_secs_f64()),
        };
        let mode = match config.rate {
            Some(rate) => format!("open loop at {rate} req/s"),
            None => "closed loop".to_owned(),
        };
        line(format!(
            "  Load                  {volume}, -c {}, {} partition(s), {mode}, protocol {}",
            config.concurrency, config.partitions, config.protocol
        ));
        if let Some(local) = &facts.local {
            line(format!(
                "  Local origin          {} ({} connections accepted)",
                local.origin, local.accepted
            ));
        }
        line(format!(
            "  Requests              {} ({} succeeded, {} failed, {} aborted)",
            total.requests,
            total.successes,
            total.failures(),
            total.aborted
        ));
        line(format!("  Duration              {seconds:.3} s"));
        line(format!(
            "  Requests/sec          {:.1}",
            per_second(total.requests, seconds)
        ));
        line(format!(
            "  Transfer              {} bytes ({}/s)",
            total.bytes,
            human_bytes(per_second(total.bytes, seconds))
        ));
        if let Some((slots, unsent)) = self.schedule() {
            line(format!(
                "  Schedule              {slots} slots, {unsent} not started"
            ));
        }

        line(String::new());
        line(format!(
            "Latency (ms)     {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "p50", "p90", "p99", "p99.9", "max", "mean"
        ));
        for (label, histogram) in [
            ("total", &self.latencies.total),
            ("first byte", &self.latencies.ttfb),
        ] {
            let p = Percentiles::of(histogram);
            line(format!(
                "  {label:<14} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                p.p50, p.p90, p.p99, p.p999, p.max, p.mean
            ));
        }

        line(String::new());
        line("Status codes".into());
        if total.status.is_empty() {
            line("  none".into());
        }
        for (code, count) in &total.status {
            line(format!("  {code}  {count}"));
        }

        line(String::new());
        line("Errors".into());
        if total.failures() == 0 {
            line("  none".into());
        }
        for class in ErrorClass::ALL {
            let count = total.errors_of(class);
            if count == 0 {
                continue;
            }
            let example = total
                .example_of(class)
                .map(|e| format!("  e.g. {e}"))
                .unwrap_or_default();
            line(format!("  {:<10} {count}{example}", class.as_str()));
        }

        line(String::new());
        line("Pool".into());
        line(format!(
            "  Connections opened    {} (h1 {}, h2 {}; {} served requests)",
            events.created,
            events.h1,
            events.h2,
            self.used_connections()
        ));
        let mut reasons: Vec<String> = events
            .closed
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(reason, n)| format!("{reason} {n}"))
            .collect();
        if events.closed_other > 0 {
            reasons.push(format!("other {}", events.closed_other));
        }
        let reasons = if reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", reasons.join(", "))
        };
        line(format!(
            "  Connections closed    {}{reasons}",
            events.closed_total()
        ));
        for (reason, example) in &events.close_examples {
            line(format!("    {reason}: e.g. {example}"));
        }
        line(format!(
            "  Open at end           {}",
            events.created.saturating_sub(events.closed_total())
        ));
        line(format!("  Failed to establish   {}", events.failed));
        if let Some(warmup) = &facts.warmup {
            line(warmup.text());
        }
        let (mean, max) = self.requests_per_connection();
        line(format!("  Requests/connection   {mean:.1} mean, {max} max"));
        line(format!(
            "  Reused requests       {} (borrowed from another partition: {})",
            total.reused, total.borrowed
        ));
        line(format!(
            "  Peak admitted         {} (peak open {})",
            facts.peak_admitted, events.peak_live
        ));
        let wait = Percentiles::of(&self.latencies.wait);
        line(format!(
            "  Permit wait           {} requests waited; p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            self.latencies.wait.len(),
            wait.p50,
            wait.p99,
            wait.max
        ));
        line(format!(
            "  Redundant handshakes  {}",
            facts.counters.redundant_handshakes
        ));
        let by_reason: Vec<String> = facts
            .counters
            .resends
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(reason, count)| format!("{reason} {count}"))
            .collect();
        line(format!(
            "  Transparent re-sends  {}{}",
            facts.counters.transparent_retries,
            if by_reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", by_reason.join(", "))
            }
        ));

        line(String::new());
        line("Partitions".into());
        line(format!(
            "  {:>4} {:>10} {:>10} {:>10} {:>12} {:>10} {:>10}",
            "id", "requests", "successes", "failures", "connections", "reused", "borrowed"
        ));
        for (id, partition) in facts.partitions.iter().enumerate() {
            let record = &partition.record;
            line(format!(
                "  {id:>4} {:>10} {:>10} {:>10} {:>12} {:>10} {:>10}",
                record.requests,
                record.successes,
                record.failures(),
                events.by_partition.get(id).copied().unwrap_or(0),
                record.reused,
                record.borrowed
            ));
        }
        out
    }
}

/// Bytes per second, in binary units.
fn human_bytes(bytes: f64) -> String {
    let mut value = bytes;
    let mut unit = "B";
    for next in ["KiB", "MiB", "GiB"] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    let mut text = String::new();
    let _ = write!(text, "{value:.1} {unit}");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::record::{Completed, Served};

    fn facts() -> Facts {
        let mut p0 = PartitionResult::default();
        let mut p1 = PartitionResult::default();
        for i in 0..100u64 {
            let partition = if i % 2 == 0 { &mut p0 } else { &mut p1 };
            let record = &mut partition.record;
            record.completed(
                &Completed {
                    status: if i < 90 { 200 } else { 404 },
                    bytes: 100,
                    ttfb: Duration::from_micros(500 + i * 10),
                    total: Duration::from_micros(1_000 + i * 20),
                    served: Some(Served {
                        connection: i % 4,
                        reused: i >= 4,
                        borrowed: false,
                        waited: (i < 4).then(|| Duration::from_micros(300)),
                    }),
                },
                false,
            );
            record.flush_into(&mut partition.latencies);
        }
        p1.record
            .failed(ErrorClass::Saturated, || "origin saturated".into());
        let events = EventSnapshot {
            created: 4,
            h1: 4,
            h2: 0,
            by_partition: vec![2, 2],
            closed: pool::CloseReason::ALL.iter().map(|r| (*r, 0)).collect(),
            closed_other: 0,
            close_examples: Vec::new(),
            failed: 0,
            peak_live: 4,
        };
        Facts {
            config: RunConfig {
                urls: vec!["http://127.0.0.1:1/".into()],
                concurrency: 4,
                partitions: 2,
                volume: Volume::Requests(101),
                rate: None,
                protocol: "auto",
                max_connections_per_host: None,
                max_pending_per_host: None,
                reuse_scope: "interface",
                idle_timeout: Some(pool::DEFAULT_IDLE_TIMEOUT),
                connect_timeout: Duration::from_secs(10),
                max_connection_lifetime: None,
                pool_timeout: None,
                max_time: None,
                interface: None,
                fail: false,
                local: false,
            },
            duration: Duration::from_millis(500),
            partitions: vec![p0, p1],
            events,
            counters: PoolCounters::default(),
            peak_admitted: 4,
            warmup: None,
            slots: None,
            local: None,
        }
    }

    #[test]
    fn json_has_the_documented_keys_and_consistent_numbers() {
        let summary = Summary::new(facts());
        let json = summary.json();
        assert_eq!(json["schema"], SCHEMA);
        assert_eq!(json["requests"], 101);
        assert_eq!(json["successes"], 100);
        assert_eq!(json["failures"], 1);
        assert_eq!(json["rps"], 202.0);
        assert_eq!(json["status"]["404"], 10);
        assert_eq!(json["errors"]["saturated"], 1);
        assert_eq!(
            json["errors"].as_object().unwrap().len(),
            ErrorClass::ALL.len()
        );
        assert_eq!(
            json["connections"]["closed"].as_object().unwrap().len(),
            pool::CloseReason::ALL.len() + 1
        );
        assert_eq!(json["connections"]["requests_per_connection"]["max"], 25);
        assert_eq!(json["connections"]["used"], 4);
        assert_eq!(json["permit_wait_ms"]["waited"], 4);
        assert_eq!(json["partitions"].as_array().unwrap().len(), 2);
        assert_eq!(json["partitions"][1]["requests"], 51);
        let latency = &json["latency_ms"];
        let p = |k: &str| latency[k].as_f64().unwrap();
        assert!(p("min") <= p("p50") && p("p50") <= p("p90") && p("p90") <= p("p99"));
        assert!(p("p99") <= p("p999") && p("p999") <= p("max"));
        assert!(!summary.succeeded());
    }

    #[test]
    fn text_carries_the_same_numbers() {
        let summary = Summary::new(facts());
        let text = summary.text();
        assert!(text.contains("Requests              101 (100 succeeded, 1 failed, 0 aborted)"));
        assert!(text.contains("Connections opened    4 (h1 4, h2 0; 4 served requests)"));
        assert!(text.contains("saturated  1  e.g. origin saturated"));
        assert!(text.contains("Requests/sec          202.0"));
        assert!(text.contains("  404  10"));
    }

    #[test]
    fn bytes_are_shown_in_binary_units() {
        assert_eq!(human_bytes(10.0), "10.0 B");
        assert_eq!(human_bytes(2048.0), "2.0 KiB");
        assert_eq!(human_bytes(3.0 * 1024.0 * 1024.0), "3.0 MiB");
    }
}
