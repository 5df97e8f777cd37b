//! The text rendering of a [`Summary`]: the same facts as the JSON, for people. The pool's
//! section says in words what each figure means, since its JSON keys (`peak_admitted`,
//! `permit_wait_ms`, `redundant_handshakes`) are names only the pool's own documentation
//! explains.

use std::fmt::Write as _;

use super::{Percentiles, Summary, per_second};
use crate::load::record::ErrorClass;
use crate::load::volume::Volume;

/// Width of the labels of the `Summary` and `Pool` sections.
const LABEL: usize = 22;

impl Summary {
    /// The text rendering: the same facts as [`json`](Self::json), without the time series.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        self.text_run(&mut out);
        self.text_latency(&mut out);
        self.text_outcomes(&mut out);
        self.text_pool(&mut out);
        self.text_breakdowns(&mut out);
        out
    }

    /// What was loaded, how, and how much went through.
    fn text_run(&self, out: &mut String) {
        let facts = &self.facts;
        let total = &self.total;
        let config = &facts.config;
        let seconds = self.seconds();
        out.push_str("Summary\n");
        let more = match config.urls.len() {
            0 | 1 => String::new(),
            n => format!(" (+{} more, round-robin)", n - 1),
        };
        let first = config.urls.first().map_or("", String::as_str);
        field(out, "URL", format!("{first}{more}"));
        let volume = match config.volume {
            Volume::Requests(n) => format!("-n {n}"),
            Volume::Duration(d) => format!("-z {}s", d.as_secs_f64()),
        };
        let mode = match config.rate {
            Some(rate) => format!("open loop at {rate} req/s"),
            None => "closed loop".to_owned(),
        };
        let ramp = config
            .ramp
            .map(|r| format!(", ramp {}s", r.as_secs_f64()))
            .unwrap_or_default();
        field(
            out,
            "Load",
            format!(
                "{volume}, -c {}, {} partition(s), {mode}{ramp}, protocol {}",
                config.concurrency, config.partitions, config.protocol
            ),
        );
        if let Some(local) = &facts.local {
            field(
                out,
                "Local origin",
                format!("{} ({} connections accepted)", local.origin, local.accepted),
            );
        }
        field(
            out,
            "Requests",
            format!(
                "{} ({} succeeded, {} failed, {} aborted)",
                total.requests,
                total.successes,
                total.failures(),
                total.aborted
            ),
        );
        field(out, "Duration", format!("{seconds:.3} s"));
        let rate = if total.successes == 0 {
            // A rate of failures is not throughput: say so rather than print a number.
            "none: no request succeeded".to_owned()
        } else if total.failures() > 0 {
            format!(
                "{:.1} ({:.1} of them successful)",
                per_second(total.requests, seconds),
                per_second(total.successes, seconds)
            )
        } else {
            format!("{:.1}", per_second(total.requests, seconds))
        };
        field(out, "Requests/sec", rate);
        field(
            out,
            "Transfer",
            format!(
                "{} bytes ({}/s)",
                total.bytes,
                human_bytes(per_second(total.bytes, seconds))
            ),
        );
        if let Some((slots, unsent)) = self.schedule() {
            field(
                out,
                "Schedule",
                format!("{slots} slots, {unsent} not started"),
            );
        }
    }

    /// Latency percentiles, or why there are none.
    fn text_latency(&self, out: &mut String) {
        out.push('\n');
        if self.latencies.total.is_empty() {
            out.push_str(
                "Latency (ms)\n  none measured: no request received a complete response\n",
            );
            return;
        }
        let _ = writeln!(
            out,
            "Latency (ms)     {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean"
        );
        for (label, histogram) in [
            ("total", &self.latencies.total),
            ("first byte", &self.latencies.ttfb),
        ] {
            let p = Percentiles::of(histogram);
            let _ = writeln!(
                out,
                "  {label:<14} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                p.p50, p.p90, p.p99, p.p999, p.p9999, p.max, p.mean
            );
        }
    }

    /// Status codes and errors.
    fn text_outcomes(&self, out: &mut String) {
        let total = &self.total;
        out.push_str("\nStatus codes\n");
        if total.status.is_empty() {
            out.push_str("  none\n");
        }
        for (code, count) in &total.status {
            let _ = writeln!(out, "  {code}  {count}");
        }
        out.push_str("\nErrors\n");
        if total.failures() == 0 {
            out.push_str("  none\n");
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
            let _ = writeln!(out, "  {:<10} {count}{example}", class.as_str());
        }
    }

    /// What the pool did, each figure with what it means.
    fn text_pool(&self, out: &mut String) {
        let facts = &self.facts;
        let total = &self.total;
        let events = &facts.events;
        out.push_str("\nPool\n");
        field(
            out,
            "Connections opened",
            format!(
                "{} (h1 {}, h2 {}; {} served requests)",
                events.created,
                events.h1,
                events.h2,
                self.used_connections()
            ),
        );
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
        field(
            out,
            "Connections closed",
            format!("{}{reasons}", events.closed_total()),
        );
        for (reason, example) in &events.close_examples {
            let _ = writeln!(out, "    {reason}: e.g. {example}");
        }
        field(
            out,
            "Open at end",
            events
                .created
                .saturating_sub(events.closed_total())
                .to_string(),
        );
        field(
            out,
            "Failed to establish",
            format!(
                "{} (connect, TLS or handshake failures: no connection came of them)",
                events.failed
            ),
        );
        if let Some(warmup) = &facts.warmup {
            out.push_str(&warmup.text());
            out.push('\n');
        }
        let (mean, max) = self.requests_per_connection();
        field(
            out,
            "Requests/connection",
            format!("{mean:.1} mean, {max} max"),
        );
        field(
            out,
            "Reused",
            format!(
                "{} requests went on a connection that had served before \
                 ({} of them borrowed from another partition)",
                total.reused, total.borrowed
            ),
        );
        field(
            out,
            "Most connections",
            format!(
                "{} open at once; {} counting those still connecting (sampled every 50 ms)",
                events.peak_live, facts.peak_admitted
            ),
        );
        let wait = Percentiles::of(&self.latencies.wait);
        let waited = self.latencies.wait.len();
        // The wait is known of the requests that got a response; one that failed before its
        // head carries none, so "none waited" is claimed only when each got one.
        let answered: u64 = total.per_connection.values().sum();
        let wait_text = if waited == 0 && answered < total.requests {
            format!(
                "no request that got a response waited ({} failed before one: their waits \
                 are not known)",
                total.requests - answered
            )
        } else if waited == 0 {
            "no request waited: each found a connection free".to_owned()
        } else {
            format!(
                "{waited} requests waited for a connection (to open, come back, or be \
                 allowed by the limit); p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
                wait.p50, wait.p99, wait.max
            )
        };
        field(out, "Waited", wait_text);
        field(
            out,
            "Wasted TLS handshakes",
            format!(
                "{} (TLS connections closed unused because another one already \
                 carried the origin's HTTP/2)",
                facts.counters.redundant_handshakes
            ),
        );
        for (origin, quota) in &facts.request_quotas {
            field(
                out,
                "Request quota",
                format!(
                    "{quota} requests per connection to {origin}: its server ended \
                     connections after that many (HTTP/2 with GOAWAY, HTTP/1.1 by closing \
                     without Connection: close), so the pool retires each connection there \
                     (closed as request_quota)"
                ),
            );
        }
        for origin in &facts.uploads_one_at_a_time {
            field(
                out,
                "Uploads",
                format!(
                    "one request body at a time per HTTP/2 connection to {origin}: its server \
                     ended a connection with GOAWAY(ENHANCE_YOUR_CALM) while uploads overlapped \
                     on it"
                ),
            );
        }
        for origin in &facts.larger_stream_window {
            field(
                out,
                "Stream window",
                format!(
                    "32 MiB for new HTTP/2 connections to {origin} (fewer WINDOW_UPDATEs): its \
                     server ended a connection with GOAWAY(ENHANCE_YOUR_CALM) while no uploads \
                     overlapped on it"
                ),
            );
        }
        for origin in &facts.sends_empty_data_frames {
            field(
                out,
                "Empty frames",
                format!(
                    "at most 45 streams per HTTP/2 connection to {origin}, each retired before \
                     h2's limit of 100 empty DATA frames (closed as empty_data_frames): its \
                     server sends them"
                ),
            );
        }
        for (origin, timeout) in &facts.server_idle_timeouts {
            field(
                out,
                "Idle timeout",
                format!(
                    "{} ms at {origin}'s server, learnt from idle connections it closed after \
                     that long without saying so: idle connections there retire before it \
                     (closed as idle_timeout)",
                    timeout.as_millis()
                ),
            );
        }
        let by_reason: Vec<String> = facts
            .counters
            .resends
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(reason, count)| format!("{reason} {count}"))
            .collect();
        let by_reason = if by_reason.is_empty() {
            String::new()
        } else {
            format!("; {}", by_reason.join(", "))
        };
        field(
            out,
            "Re-sent by the pool",
            format!(
                "{} (requests the server provably never processed, and idempotent ones whose \
                 connection closed, or whose stream it reset asking for calm, before their \
                 response{by_reason})",
                facts.counters.transparent_retries
            ),
        );
    }

    /// Per partition, and per origin when there are several.
    fn text_breakdowns(&self, out: &mut String) {
        let facts = &self.facts;
        let events = &facts.events;
        out.push_str("\nPartitions\n");
        let _ = writeln!(
            out,
            "  {:>4} {:>10} {:>10} {:>10} {:>8} {:>8} {:>10} {:>10}",
            "id", "requests", "successes", "failures", "opened", "held", "reused", "borrowed"
        );
        for (id, partition) in facts.partitions.iter().enumerate() {
            let record = &partition.record;
            let _ = writeln!(
                out,
                "  {id:>4} {:>10} {:>10} {:>10} {:>8} {:>8.1} {:>10} {:>10}",
                record.requests,
                record.successes,
                record.failures(),
                events.by_partition.get(id).copied().unwrap_or(0),
                partition.held.mean,
                record.reused,
                record.borrowed
            );
        }
        out.push_str(
            "  (opened: connections the partition established; held: connections it owned, \
             mean over the run's samples; borrowed: requests served by another partition's \
             connection)\n",
        );
        let origins = self.origin_rows();
        if origins.len() < 2 {
            return;
        }
        out.push_str("\nOrigins\n");
        let width = origins.iter().map(|o| o.origin.len()).max().unwrap_or(6);
        let _ = writeln!(
            out,
            "  {:<width$} {:>10} {:>10} {:>10} {:>12}",
            "origin", "requests", "successes", "failures", "connections"
        );
        for row in origins {
            let _ = writeln!(
                out,
                "  {:<width$} {:>10} {:>10} {:>10} {:>12}",
                row.origin,
                row.tally.requests,
                row.tally.successes,
                row.tally.failures(),
                row.connections
            );
        }
    }
}

/// One `  Label                 value` line.
fn field(out: &mut String, label: &str, value: String) {
    let _ = writeln!(out, "  {label:<LABEL$}{value}");
}

/// Bytes per second, in binary units.
pub(super) fn human_bytes(bytes: f64) -> String {
    let mut value = bytes;
    let mut unit = "B";
    for next in ["KiB", "MiB", "GiB"] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}
