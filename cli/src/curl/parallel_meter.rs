//! `-Z`'s progress meter: one line for all the transfers, as curl 7.88's tool draws it
//! (`tool_progress.c`), instead of a meter per transfer.
//!
//! ```text
//! DL% UL%  Dled  Uled  Xfers  Live Total     Current  Left    Speed
//!  72 --   37.6M     0    10     4  0:00:05  0:00:03  0:00:02 11.2M
//! ```
//!
//! `DL%` is known once every transfer seen has announced its length; `Xfers` counts the
//! transfers started so far, `Live` those running; the speed is the higher of download and
//! upload over the last ten draws. The line is redrawn every half second while transfers run and
//! once more, with a line break, when they are all done. curl 7.88 draws it under `-s` too,
//! which later curls stopped doing; poolcurl draws it only where a transfer's own meter would
//! be drawn (not `-s`, not `--no-progress-meter`).
//!
//! [`Board`] computes the text from what the transfers report and the time it is given; the
//! functions below keep one board for the invocation (as curl's counters are the tool's own)
//! and write it to stderr.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::meter::{clock, size5};

/// How many draws the speed spans.
const SPEED_SAMPLES: usize = 10;

/// How often the line is redrawn while transfers run.
pub(crate) const REDRAW: Duration = Duration::from_millis(500);

/// What one transfer reported last.
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    dl_now: u64,
    /// 0 while unknown, as curl keeps it.
    dl_total: u64,
    ul_now: u64,
    ul_total: u64,
    /// Whether the totals were added to the board's (once each).
    dl_added: bool,
    ul_added: bool,
    running: bool,
    /// Whether a transfer took the slot (the first ones are made before they start).
    taken: bool,
}

/// The counters of all the transfers of a `-Z` run.
#[derive(Debug)]
pub(crate) struct Board {
    start: Instant,
    header_out: bool,
    /// When the last line was drawn.
    drawn_at: Option<Instant>,
    slots: Vec<Slot>,
    dl_total: u64,
    ul_total: u64,
    /// The bytes of the transfers that ended.
    dl_done: u64,
    ul_done: u64,
    /// Bytes down and up at each of the last draws, and when.
    speeds: [(u64, u64, Instant); SPEED_SAMPLES],
    speed_at: usize,
    speeds_wrapped: bool,
}

impl Board {
    /// A board for transfers that start at `start`, the first `starting` of them at once.
    ///
    /// Their slots are made here, so that the first line, drawn before any of them runs,
    /// counts them, as curl's counts the transfers it added before it draws; a failure one of
    /// them reports at once then follows the meter's first line, as in curl.
    pub(crate) fn new(start: Instant, starting: usize) -> Board {
        let mut board = Board {
            start,
            header_out: false,
            drawn_at: None,
            slots: Vec::new(),
            dl_total: 0,
            ul_total: 0,
            dl_done: 0,
            ul_done: 0,
            speeds: [(0, 0, start); SPEED_SAMPLES],
            speed_at: 0,
            speeds_wrapped: false,
        };
        board.slots = vec![
            Slot {
                running: true,
                ..Slot::default()
            };
            starting
        ];
        board
    }

    /// A transfer starts: its slot (one made for it up front, else a new one).
    pub(crate) fn join(&mut self) -> usize {
        if let Some(at) = self.slots.iter().position(|s| !s.taken) {
            self.slots[at].taken = true;
            return at;
        }
        self.slots.push(Slot {
            running: true,
            taken: true,
            ..Slot::default()
        });
        self.slots.len() - 1
    }

    /// What transfer `slot` has moved so far, and the lengths it knows (0: unknown).
    pub(crate) fn report(&mut self, slot: usize, down: (u64, u64), up: (u64, u64)) {
        if let Some(s) = self.slots.get_mut(slot) {
            (s.dl_now, s.dl_total) = down;
            (s.ul_now, s.ul_total) = up;
        }
    }

    /// Transfer `slot` ended: its bytes stay counted, its lengths added if they were not.
    pub(crate) fn leave(&mut self, slot: usize) {
        let Some(s) = self.slots.get_mut(slot).filter(|s| s.running) else {
            return;
        };
        s.running = false;
        self.dl_done += std::mem::take(&mut s.dl_now);
        self.ul_done += std::mem::take(&mut s.ul_now);
        if !s.dl_added {
            s.dl_added = true;
            self.dl_total += s.dl_total;
        }
        if !s.ul_added {
            s.ul_added = true;
            self.ul_total += s.ul_total;
        }
    }

    /// What to draw at `now`: the header first; the line when `last` or half a second (or
    /// more) after the one before, so that the run's half-second ticks each draw one.
    pub(crate) fn draw(&mut self, now: Instant, last: bool) -> Option<String> {
        let mut text = String::new();
        if !self.header_out {
            self.header_out = true;
            text.push_str("DL% UL%  Dled  Uled  Xfers  Live Total     Current  Left    Speed\n");
        }
        let due = self
            .drawn_at
            .is_none_or(|at| now.saturating_duration_since(at) >= REDRAW);
        if last || due {
            self.drawn_at = Some(now);
            text.push_str(&self.line(now, last));
        }
        (!text.is_empty()).then_some(text)
    }

    fn line(&mut self, now: Instant, last: bool) -> String {
        let (mut dl_now, mut ul_now) = (self.dl_done, self.ul_done);
        let (mut dl_known, mut ul_known) = (true, true);
        let mut running = 0u64;
        for s in self.slots.iter_mut().filter(|s| s.running) {
            dl_now += s.dl_now;
            ul_now += s.ul_now;
            if s.dl_total == 0 {
                dl_known = false;
            } else if !s.dl_added {
                s.dl_added = true;
                self.dl_total += s.dl_total;
            }
            if s.ul_total == 0 {
                ul_known = false;
            } else if !s.ul_added {
                s.ul_added = true;
                self.ul_total += s.ul_total;
            }
            running += 1;
        }
        let percent = |known: bool, now: u64, total: u64| match known && total > 0 {
            true => format!("{:>3}", now * 100 / total),
            false => "--".to_owned(),
        };
        let speed = self.speed(now, dl_now, ul_now);
        let (total, left) = match (dl_known, speed) {
            (true, speed) if speed > 0 => (
                self.dl_total / speed,
                self.dl_total.saturating_sub(dl_now) / speed,
            ),
            _ => (0, 0),
        };
        let spent = now.saturating_duration_since(self.start).as_secs();
        format!(
            "\r{:<3} {:<3} {} {} {:>5} {:>5}  {} {} {} {} {:>5}",
            percent(dl_known, dl_now, self.dl_total),
            percent(ul_known, ul_now, self.ul_total),
            size5(dl_now),
            size5(ul_now),
            self.slots.len(),
            running,
            clock(total),
            clock(spent),
            clock(left),
            size5(speed),
            if last { "\n" } else { "" },
        )
    }

    /// Takes this draw's sample: the higher of download and upload speed since the oldest
    /// sample kept (or the start).
    fn speed(&mut self, now: Instant, dl_now: u64, ul_now: u64) -> u64 {
        self.speeds[self.speed_at] = (dl_now, ul_now, now);
        self.speed_at += 1;
        if self.speed_at >= SPEED_SAMPLES {
            self.speeds_wrapped = true;
            self.speed_at = 0;
        }
        let (dl_then, ul_then, then) = match self.speeds_wrapped {
            true => self.speeds[self.speed_at],
            false => (0, 0, self.start),
        };
        let ms = now.saturating_duration_since(then).as_millis().max(1) as u64;
        let per_second = |bytes: u64| bytes.saturating_mul(1000) / ms;
        per_second(dl_now.saturating_sub(dl_then)).max(per_second(ul_now.saturating_sub(ul_then)))
    }
}

/// The invocation's board, while a `-Z` run draws one.
static BOARD: Mutex<Option<Board>> = Mutex::new(None);

fn board() -> MutexGuard<'static, Option<Board>> {
    BOARD
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A `-Z` run that draws the meter starts, with `starting` transfers at once: the header and
/// the first line are drawn.
pub(crate) fn begin(starting: usize) {
    *board() = Some(Board::new(Instant::now(), starting));
    draw(false);
}

/// A transfer of the run starts: its slot, if the run draws the meter.
pub(crate) fn join() -> Option<usize> {
    board().as_mut().map(Board::join)
}

/// What transfer `slot` has moved: `(received, length)` down and up, 0 for an unknown length.
pub(crate) fn report(slot: usize, down: (u64, u64), up: (u64, u64)) {
    if let Some(board) = board().as_mut() {
        board.report(slot, down, up);
    }
}

/// Transfer `slot` ended.
pub(crate) fn leave(slot: usize) {
    if let Some(board) = board().as_mut() {
        board.leave(slot);
    }
}

/// Draws the line if it is due (`last`: whatever the time, with its line break).
pub(crate) fn draw(last: bool) {
    let text = board().as_mut().and_then(|b| b.draw(Instant::now(), last));
    if let Some(text) = text {
        super::errout::write(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curl::meter::at;

    #[test]
    fn the_line_adds_up_the_transfers_and_ends_with_a_break() {
        let start = Instant::now();
        let mut board = Board::new(start, 2);
        let (a, b) = (board.join(), board.join());
        // A third transfer, after the two that started at once.
        assert_eq!(board.join(), 2);
        board.leave(2);
        let first = board.draw(start, false).unwrap();
        assert_eq!(
            first,
            "DL% UL%  Dled  Uled  Xfers  Live Total     Current  Left    Speed\n\
             \r--  --      0     0     3     2  --:--:-- --:--:-- --:--:--     0      "
        );
        // Not due again within half a second.
        board.report(a, (1_000_000, 4_000_000), (0, 0));
        assert_eq!(board.draw(at(start, 400), false), None);
        // Every length known: a percentage and estimates.
        board.report(b, (1_000_000, 4_000_000), (0, 0));
        let line = board.draw(at(start, 1000), false).unwrap();
        assert_eq!(
            line,
            "\r 25 --  1953k     0     3     2   0:00:04  0:00:01  0:00:03 1953k      "
        );
        board.report(a, (4_000_000, 4_000_000), (0, 0));
        board.leave(a);
        board.report(b, (4_000_000, 4_000_000), (0, 0));
        board.leave(b);
        let last = board.draw(at(start, 2000), true).unwrap();
        assert!(
            last.starts_with("\r100 --  7812k     0     3     0 "),
            "{last:?}"
        );
        assert!(last.ends_with("     \n"), "{last:?}");
    }

    #[test]
    fn an_unknown_length_leaves_the_percentage_out() {
        let start = Instant::now();
        let mut board = Board::new(start, 0);
        let a = board.join();
        board.report(a, (500, 0), (10, 10));
        let text = board.draw(at(start, 1), true).unwrap();
        assert!(
            text.ends_with(
                "\r--  100   500    10     1     1  --:--:-- --:--:-- --:--:--  488k     \n"
            ),
            "{text:?}"
        );
    }
}
