//! `-#` / `--progress-bar`: the bar curl's tool draws instead of the meter, as curl 7.88 draws
//! it (`tool_cb_prg.c`).
//!
//! ```text
//! ########################################                                  55.6%
//! ```
//!
//! With a known length, the bar and the percentage are redrawn in place (`\r`) when the count
//! moved, at most ten times a second except at 100%. Without one, a `-=O=-` flies to and fro
//! with four `#` on a sine, also at most ten times a second, and nothing at all for a transfer
//! quicker than that. The width is `COLUMNS` (21 to 9999), else the terminal's (from standard
//! input, as curl asks), else 79, the bar itself seven columns less. A resumed download (`-C`)
//! counts from its offset. The line ends once the transfer is done, after its error message if
//! it failed, and not between `--retry` attempts.
//!
//! This module computes what to draw from the counts and the time it is given;
//! [`super::progress::Progress`] writes it.

use std::time::{Duration, Instant};

/// The widest line drawn.
const MAX_WIDTH: usize = 256;

/// How soon after a draw the next may come (curl's 10 Hz), except at 100%.
const REDRAW: Duration = Duration::from_millis(100);

/// The state of one transfer's bar.
#[derive(Debug)]
pub(crate) struct Bar {
    /// The line's width in columns.
    width: usize,
    /// Bytes counted before this transfer (`-C`'s offset).
    initial: u64,
    /// How many times the count was looked at (a line break ends the bar if any).
    calls: u64,
    /// The count at the last look, and when it was drawn.
    prev: u64,
    drawn_at: Option<Instant>,
    /// Where the flying `-=O=-` is, which way it goes, and the sine's phase.
    pos: usize,
    forward: bool,
    tick: usize,
}

impl Bar {
    /// A bar `width` columns wide (the line's, the percentage included).
    pub(crate) fn new(width: usize) -> Bar {
        Bar {
            width: width.clamp(21, MAX_WIDTH),
            initial: 0,
            calls: 0,
            prev: 0,
            drawn_at: None,
            pos: 0,
            forward: true,
            tick: 150,
        }
    }

    /// The width curl would use: `COLUMNS` if it says 21 to 9999, else the terminal's, else 79.
    pub(crate) fn width_here() -> usize {
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|text| text.parse::<usize>().ok())
            .filter(|n| (21..10_000).contains(n));
        let terminal = || {
            rustix::termios::tcgetwinsize(std::io::stdin())
                .ok()
                .map(|size| usize::from(size.ws_col))
                .filter(|cols| *cols > 20)
        };
        columns.or_else(terminal).unwrap_or(79)
    }

    /// Counts from `offset` bytes already there (a resumed download).
    pub(crate) fn resume_from(&mut self, offset: u64) {
        self.initial = offset;
    }

    /// Whether the bar was looked at (then a line break ends it).
    pub(crate) fn started(&self) -> bool {
        self.calls > 0
    }

    /// The count is `done` of `total` (`None`: unknown) at `now`: what to draw, if anything.
    pub(crate) fn update(&mut self, done: u64, total: Option<u64>, now: Instant) -> Option<String> {
        let total = total.filter(|t| *t > 0).map(|t| t + self.initial);
        let point = done + self.initial;
        let since = self.drawn_at.map(|at| now.saturating_duration_since(at));
        let mut text = None;
        if self.calls > 0 {
            let soon = since.is_some_and(|since| since < REDRAW);
            match total {
                Some(total) if point == self.prev || (soon && point < total) => return None,
                Some(_) => {}
                None if soon => return None,
                None => text = Some(self.fly(point != self.prev)),
            }
        }
        self.calls += 1;
        if let Some(total) = total.filter(|_| point != self.prev) {
            let total = total.max(point);
            let fraction = point as f64 / total as f64;
            let bar = self.width - 7;
            let hashes = ((bar as f64 * fraction) as usize).min(MAX_WIDTH);
            text = Some(format!(
                "\r{:<bar$} {:>5.1}%",
                "#".repeat(hashes),
                fraction * 100.0
            ));
        }
        self.prev = point;
        self.drawn_at = Some(now);
        text
    }

    /// One frame of the flying `-=O=-` (a length not known), moving on if the count `moved`.
    fn fly(&mut self, moved: bool) -> String {
        let mut line = vec![b' '; self.width - 1];
        line[self.pos..self.pos + 5].copy_from_slice(b"-=O=-");
        let check = self.width - 2;
        for k in [0, 5, 10, 15] {
            let at = sine((self.tick + k) % 200) / (1_000_000 / check);
            if let Some(byte) = line.get_mut(at) {
                *byte = b'#';
            }
        }
        self.tick = (self.tick + 2) % 200;
        if moved {
            let last = self.width - 6;
            match self.forward {
                true if self.pos + 1 >= last => (self.pos, self.forward) = (last, false),
                true => self.pos += 1,
                false if self.pos == 0 => self.forward = true,
                false => self.pos -= 1,
            }
        }
        line.push(b'\r');
        String::from_utf8_lossy(&line).into_owned()
    }
}

/// curl's sine table: `sin(i / 200 * 2 * 3.1415) * 500000 + 500000` for `i` from 1 to 200,
/// at `index` (0 to 199).
// curl's table was made with 3.1415 for pi; the same figure gives the same table.
#[allow(clippy::approx_constant)]
fn sine(index: usize) -> usize {
    let i = (index + 1) as f64;
    ((i / 200.0 * 2.0 * 3.1415).sin() * 500_000.0 + 500_000.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curl::meter::at;

    #[test]
    fn a_known_length_draws_at_ten_hertz_and_always_at_the_end() {
        let start = Instant::now();
        let mut bar = Bar::new(79);
        // The first look draws nothing yet (nothing moved) but starts the bar.
        assert_eq!(bar.update(0, Some(1000), start), None);
        assert!(bar.started());
        let half = bar.update(500, Some(1000), at(start, 150)).unwrap();
        assert_eq!(half, format!("\r{:<72}  50.0%", "#".repeat(36)));
        // Too soon for 75%, not for 100%.
        assert_eq!(bar.update(750, Some(1000), at(start, 200)), None);
        let full = bar.update(1000, Some(1000), at(start, 210)).unwrap();
        assert_eq!(full, format!("\r{} 100.0%", "#".repeat(72)));
    }

    #[test]
    fn an_unknown_length_flies_and_a_quick_one_draws_nothing() {
        let start = Instant::now();
        let mut bar = Bar::new(30);
        assert_eq!(bar.update(0, None, start), None);
        assert_eq!(bar.update(10, None, at(start, 50)), None);
        let frame = bar.update(20, None, at(start, 150)).unwrap();
        // The line's width less one, then a return; the sine's `#`s over the flyer.
        assert_eq!(frame.len(), 30);
        assert!(frame.ends_with('\r') && frame.contains('#'), "{frame:?}");
        assert!(frame.contains("=-"), "{frame:?}");
    }

    #[test]
    fn a_resumed_download_counts_from_its_offset() {
        let start = Instant::now();
        let mut bar = Bar::new(27);
        bar.resume_from(50);
        bar.update(0, Some(50), start);
        let line = bar.update(25, Some(50), at(start, 100)).unwrap();
        assert_eq!(line, format!("\r{:<20}  75.0%", "#".repeat(15)));
    }

    #[test]
    fn the_sine_is_curls_table() {
        // A few entries of curl's table.
        assert_eq!(sine(0), 515_704);
        assert_eq!(sine(49), 999_999);
        assert_eq!((sine(148), sine(149), sine(150)), (248, 0, 244));
        assert_eq!(sine(199), 499_907);
    }
}
