//! Medians, ratios and the markdown / JSON output.

use serde_json::{Value, json};

use crate::contenders::Sample;

/// One contender's samples over the rounds of a scenario.
#[derive(Debug)]
pub(crate) struct Measured {
    pub(crate) name: &'static str,
    pub(crate) samples: Vec<Sample>,
}

impl Measured {
    pub(crate) fn new(name: &'static str) -> Measured {
        Measured {
            name,
            samples: Vec::new(),
        }
    }

    fn rps(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::rps).collect()
    }
}

/// A scenario's contenders; the first is "pool" (or the baseline of a scaling comparison).
#[derive(Debug)]
pub(crate) struct Scenario {
    pub(crate) title: String,
    pub(crate) measured: Vec<Measured>,
}

/// Median, min and max of a series.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

pub(crate) fn spread(values: &[f64]) -> Spread {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    Spread {
        median,
        min: sorted[0],
        max: sorted[n - 1],
    }
}

fn median_u64(values: impl Iterator<Item = u64>) -> u64 {
    let v: Vec<f64> = values.map(|x| x as f64).collect();
    spread(&v).median as u64
}

impl Scenario {
    pub(crate) fn new(title: String, measured: Vec<Measured>) -> Scenario {
        Scenario { title, measured }
    }

    /// `first / other` per round, for every other contender.
    pub(crate) fn ratios(&self) -> Vec<(String, Spread)> {
        let Some(first) = self.measured.first() else {
            return Vec::new();
        };
        self.measured[1..]
            .iter()
            .map(|other| {
                let per_round: Vec<f64> = first
                    .rps()
                    .iter()
                    .zip(other.rps())
                    .map(|(a, b)| a / b)
                    .collect();
                (
                    format!("{} / {}", first.name, other.name),
                    spread(&per_round),
                )
            })
            .collect()
    }

    pub(crate) fn markdown(&self) -> String {
        let mut out = format!(
            "\n### {}\n\n| contender | req/s (median) | p50 µs | p99 µs |\n|---|---:|---:|---:|\n",
            self.title
        );
        for m in &self.measured {
            let rps = spread(&m.rps());
            out += &format!(
                "| {} | {:.0} | {} | {} |\n",
                m.name,
                rps.median,
                median_u64(m.samples.iter().map(Sample::p50_us)),
                median_u64(m.samples.iter().map(Sample::p99_us)),
            );
        }
        for (label, r) in self.ratios() {
            out += &format!(
                "\nratio {label}: **{:.3}** (min {:.3}, max {:.3})\n",
                r.median, r.min, r.max
            );
        }
        out
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "scenario": self.title,
            "contenders": self.measured.iter().map(|m| json!({
                "name": m.name,
                "rps": m.rps(),
                "rps_median": spread(&m.rps()).median,
                "p50_us_median": median_u64(m.samples.iter().map(Sample::p50_us)),
                "p99_us_median": median_u64(m.samples.iter().map(Sample::p99_us)),
            })).collect::<Vec<_>>(),
            "ratios": self.ratios().into_iter().map(|(label, r)| json!({
                "ratio": label, "median": r.median, "min": r.min, "max": r.max,
            })).collect::<Vec<_>>(),
        })
    }
}
