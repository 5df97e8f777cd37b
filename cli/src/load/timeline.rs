//! The run second by second: requests that ended in each second (successes, failures, bytes),
//! the latency of its complete responses, the peaks of connections and requests in flight
//! the sampler saw in it, and the connections created and closed in it (from the pool's
//! events, exact). The JSON summary carries it as `timeline`; `--output-format csv` prints it
//! alone, one row per second.
//!
//! Second `i` covers `[i, i + 1)` seconds from the run's start; the last one ends with the run
//! (its `window_s` is shorter than 1 when the run lasted a fraction of a second more), and `rps`
//! is `requests / window_s`. A request belongs to the second it *ended* in, a connection event
//! to the second it happened in; an event after the run's last second (a connection closing
//! between the last response and the summary) counts in the last one. The warm-up's
//! connections (`--preconnect`) were created before the run and are in no second.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use super::events::SecondEvents;
use super::record::Tally;
use super::sampler::SecondPeak;

/// One second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SecondRow {
    /// The end of the second, in seconds from the start (1, 2, ..., or the run's end).
    pub(crate) t_s: f64,
    /// How long the second is (1, except maybe the last).
    pub(crate) window_s: f64,
    /// Requests that ended in it.
    pub(crate) tally: Tally,
    /// Latency of its complete responses, in ms: p50, p90, p99, max; `None` without any.
    pub(crate) latency: Option<[f64; 4]>,
    /// The most admitted connections sampled in it.
    pub(crate) connections: usize,
    /// The most requests in flight sampled in it.
    pub(crate) in_flight: u64,
    /// Connections created and closed in it.
    pub(crate) events: SecondEvents,
}

impl SecondRow {
    /// Requests per second of the window.
    pub(crate) fn rps(&self) -> f64 {
        if self.window_s > 0.0 {
            (self.tally.requests as f64 / self.window_s * 1_000.0).round() / 1_000.0
        } else {
            0.0
        }
    }

    /// The JSON object of one second.
    pub(crate) fn json(&self) -> Value {
        let latency = self.latency.map_or(
            Value::Null,
            |[p50, p90, p99, max]| json!({"p50": p50, "p90": p90, "p99": p99, "max": max}),
        );
        json!({
            "t_s": self.t_s,
            "window_s": self.window_s,
            "requests": self.tally.requests,
            "successes": self.tally.successes,
            "failures": self.tally.failures(),
            "rps": self.rps(),
            "bytes": self.tally.bytes,
            "latency_ms": latency,
            "connections": self.connections,
            "in_flight": self.in_flight,
            "connections_opened": self.events.opened,
            "connections_closed": self.events.closed,
        })
    }
}

/// The rows of a run that lasted `duration`, from the per-second tallies, latency histograms
/// (microseconds), sampler peaks and connection events, each indexed by second.
pub(crate) fn rows(
    duration: Duration,
    tallies: &[Tally],
    latencies: &[Option<Histogram<u32>>],
    peaks: &[SecondPeak],
    events: &[SecondEvents],
) -> Vec<SecondRow> {
    let seconds = duration.as_secs_f64();
    let whole = seconds.ceil() as usize;
    let count = whole.max(tallies.len()).max(latencies.len());
    let mut rows: Vec<SecondRow> = (0..count)
        .map(|i| {
            let start = i as f64;
            let end = ((i + 1) as f64).min(seconds.max(start));
            let latency = latencies.get(i).and_then(Option::as_ref).and_then(|h| {
                let ms = |us: u64| us as f64 / 1_000.0;
                (!h.is_empty()).then(|| {
                    [
                        ms(h.value_at_quantile(0.50)),
                        ms(h.value_at_quantile(0.90)),
                        ms(h.value_at_quantile(0.99)),
                        ms(h.max()),
                    ]
                })
            });
            let peak = peaks.get(i).copied().unwrap_or_default();
            SecondRow {
                t_s: (end * 1e6).round() / 1e6,
                window_s: ((end - start) * 1e6).round() / 1e6,
                tally: tallies.get(i).copied().unwrap_or_default(),
                latency,
                connections: peak.connections,
                in_flight: peak.in_flight,
                events: events.get(i).copied().unwrap_or_default(),
            }
        })
        .collect();
    if let Some(last) = rows.last_mut() {
        for late in events.iter().skip(count) {
            last.events.opened += late.opened;
            last.events.closed += late.closed;
        }
    }
    rows
}

/// The header of [`csv`].
pub(crate) const CSV_HEADER: &str = "t_s,window_s,requests,successes,failures,rps,bytes,\
    latency_p50_ms,latency_p90_ms,latency_p99_ms,latency_max_ms,connections,in_flight,\
    connections_opened,connections_closed";

/// The rows as CSV: [`CSV_HEADER`], then one line per second; latency fields are empty for a
/// second without a complete response.
pub(crate) fn csv(rows: &[SecondRow]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for row in rows {
        let latency = row.latency.map_or_else(
            || ",,,".to_owned(),
            |[p50, p90, p99, max]| format!("{p50},{p90},{p99},{max}"),
        );
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{latency},{},{},{},{}",
            row.t_s,
            row.window_s,
            row.tally.requests,
            row.tally.successes,
            row.tally.failures(),
            row.rps(),
            row.tally.bytes,
            row.connections,
            row.in_flight,
            row.events.opened,
            row.events.closed
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_cover_the_run_and_the_last_one_is_partial() {
        let tallies = [
            Tally {
                requests: 10,
                successes: 9,
                bytes: 90,
            },
            Tally::default(),
            Tally {
                requests: 2,
                successes: 2,
                bytes: 20,
            },
        ];
        let mut h = Histogram::<u32>::new(2).unwrap();
        h.record(1_500).unwrap();
        let latencies = [Some(h), None, None];
        let peaks = [SecondPeak {
            connections: 4,
            in_flight: 8,
        }];
        let second = |opened, closed| SecondEvents { opened, closed };
        // The last entry is a close after the run's end: it counts in the last second.
        let events = [second(2, 0), second(0, 0), second(0, 1), second(0, 1)];
        let rows = rows(
            Duration::from_millis(2_500),
            &tallies,
            &latencies,
            &peaks,
            &events,
        );
        assert_eq!(rows.len(), 3);
        assert_eq!(
            (rows[0].t_s, rows[0].window_s, rows[0].rps()),
            (1.0, 1.0, 10.0)
        );
        assert_eq!(rows[0].tally.failures(), 1);
        assert_eq!(rows[0].connections, 4);
        assert_eq!(
            rows.iter().map(|r| r.events).collect::<Vec<_>>(),
            [second(2, 0), second(0, 0), second(0, 2)]
        );
        assert!(rows[0].latency.is_some() && rows[1].latency.is_none());
        assert_eq!(
            (rows[2].t_s, rows[2].window_s, rows[2].rps()),
            (2.5, 0.5, 4.0)
        );
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 4);
        assert!(
            lines[2].starts_with("2,1,0,0,0,0,0,,,,,0,0,0,0"),
            "{}",
            lines[2]
        );
        assert!(lines[3].ends_with(",0,2"), "{}", lines[3]);
        assert_eq!(
            lines[1].split(',').count(),
            CSV_HEADER.split(',').count(),
            "{}",
            lines[1]
        );
    }
}
