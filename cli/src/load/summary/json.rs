//! The JSON rendering of a [`Summary`] (schema [`SCHEMA`], documented in `docs/load-json.md`).

use serde_json::{Map, Value, json};

use super::{Percentiles, SCHEMA, Summary, per_second};
use crate::load::record::ErrorClass;
use crate::load::volume::Volume;
use crate::load::warmup::WarmUp;

impl Summary {
    /// The JSON rendering: the same facts as [`text`](Self::text), plus the time series.
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
                    "connections_held_mean": partition.held.mean,
                    "connections_held_end": partition.held.last,
                    "reused": record.reused,
                    "borrowed": record.borrowed,
                })
            })
            .collect();
        let origins: Vec<Value> = self
            .origin_rows()
            .into_iter()
            .map(|row| {
                json!({
                    "origin": row.origin,
                    "requests": row.tally.requests,
                    "successes": row.tally.successes,
                    "failures": row.tally.failures(),
                    "connections_opened": row.connections,
                })
            })
            .collect();
        let timeline: Vec<Value> = self.timeline().iter().map(|row| row.json()).collect();
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
                "ramp_s": config.ramp.map(|d| d.as_secs_f64()),
                "protocol": config.protocol,
                "bound": {
                    "max_connections_per_host": config.max_connections_per_host,
                    "max_pending_per_host": config.max_pending_per_host,
                },
                "reuse_scope": config.reuse_scope,
                "idle_timeout_s": config.idle_timeout.map(|d| d.as_secs_f64()),
                "max_idle_per_host": config.max_idle_per_host,
                "max_idle_connections": config.max_idle_connections,
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
            "success_rps": per_second(total.successes, seconds),
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
                "request_quotas": facts
                    .request_quotas
                    .iter()
                    .map(|(origin, quota)| (origin.clone(), json!(quota)))
                    .collect::<serde_json::Map<_, _>>(),
                "uploads_one_at_a_time": facts.uploads_one_at_a_time,
                "larger_stream_window": facts.larger_stream_window,
                "sends_empty_data_frames": facts.sends_empty_data_frames,
                "server_idle_timeouts_ms": facts
                    .server_idle_timeouts
                    .iter()
                    .map(|(origin, timeout)| (origin.clone(), json!(timeout.as_millis() as u64)))
                    .collect::<serde_json::Map<_, _>>(),
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
            "origins": origins,
            "timeline": timeline,
            "schedule": schedule,
            "local_origin": local,
            "warmup": facts.warmup.as_ref().map_or(Value::Null, WarmUp::json),
        })
    }
}
