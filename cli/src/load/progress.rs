//! The live display on stderr: one overall bar (requests for `-n`, time for `-z`) with the
//! request rate, and one line per partition with its requests in flight, its admitted
//! connections and its requests waiting for a connection.
//!
//! It is drawn only when stderr is a terminal and `--no-progress` is not given; otherwise
//! nothing is created at all. It is cleared before the summary is printed on stdout.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::sampler::Sample;
use super::volume::Volume;

/// The progress display of one run.
#[derive(Debug)]
pub(crate) struct Progress {
    /// Owns the lines.
    multi: MultiProgress,
    /// The overall bar.
    overall: ProgressBar,
    /// One line per partition.
    partitions: Vec<ProgressBar>,
    /// What the overall bar measures.
    volume: Volume,
    /// When the run started.
    start: Instant,
    /// A note appended to the overall line (stopping, aborting).
    note: Option<&'static str>,
}

impl Progress {
    /// The display, or `None` when it should not be shown.
    pub(crate) fn new(
        volume: Volume,
        partitions: usize,
        start: Instant,
        disabled: bool,
    ) -> Option<Progress> {
        if disabled || !std::io::stderr().is_terminal() {
            return None;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let (length, template) = match volume {
            Volume::Requests(n) => (
                n,
                "{spinner:.green} {elapsed_precise} [{bar:40.cyan/blue}] {pos}/{len} {msg}",
            ),
            Volume::Duration(d) => (
                u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
                "{spinner:.green} {elapsed_precise} [{bar:40.cyan/blue}] {msg}",
            ),
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let overall = multi.add(ProgressBar::new(length).with_style(style));
        let line = ProgressStyle::with_template("  {prefix:.bold} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let partitions = (0..partitions)
            .map(|i| {
                multi.add(
                    ProgressBar::new_spinner()
                        .with_style(line.clone())
                        .with_prefix(format!("partition {i}")),
                )
            })
            .collect();
        Some(Progress {
            multi,
            overall,
            partitions,
            volume,
            start,
            note: None,
        })
    }

    /// Shows a sample.
    pub(crate) fn update(&self, sample: &Sample) {
        let elapsed = self.start.elapsed();
        let completed = sample.completed();
        let rate = if elapsed.as_secs_f64() > 0.0 {
            completed as f64 / elapsed.as_secs_f64()
        } else {
            0.0
        };
        let note = self.note.map(|n| format!(" · {n}")).unwrap_or_default();
        match self.volume {
            Volume::Requests(_) => {
                self.overall.set_position(completed);
                self.overall.set_message(format!(
                    "{rate:.0} req/s · {} failed{note}",
                    sample.failed()
                ));
            }
            Volume::Duration(_) => {
                let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
                self.overall
                    .set_position(ms.min(self.overall.length().unwrap_or(ms)));
                self.overall.set_message(format!(
                    "{completed} requests · {rate:.0} req/s · {} failed{note}",
                    sample.failed()
                ));
            }
        }
        for (bar, row) in self.partitions.iter().zip(&sample.partitions) {
            bar.set_message(format!(
                "in flight {:>5} · connections {:>5} · waiting {:>5} · done {}",
                row.in_flight, row.connections, row.waiting, row.completed
            ));
        }
    }

    /// Appends a note to the overall line from now on.
    pub(crate) fn note(&mut self, note: &'static str) {
        self.note = Some(note);
    }

    /// Removes the display from the terminal.
    pub(crate) fn finish(self) {
        self.overall.finish_and_clear();
        for bar in &self.partitions {
            bar.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}
