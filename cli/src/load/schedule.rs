//! When each request starts: closed loop (as fast as responses come back) or open loop (on a
//! fixed schedule, `--rate`).
//!
//! ```text
//! closed loop, -n N   worker: take a ticket (one shared counter) ─ send ─ read body ─ again;
//!                     the run ends after N tickets
//! closed loop, -z D   worker: while now < start + D: send ─ read body ─ again
//! open loop, --rate R slot k is due at t_k = start + k / R; a worker takes the next slot (the
//!                     same counter), sleeps until t_k, sends, and measures latency from t_k
//!                     -n N: N slots; -z D: the slots before the deadline, and no slot is
//!                     started after the deadline
//! ```
//!
//! Open loop measures from the *scheduled* time, so when all `-c` workers are busy and slots
//! fall behind, the time a slot spent waiting for a free worker counts as latency (no
//! coordinated omission: a slow server cannot make the load generator slow down unnoticed).
//! Sleeps use tokio's timer, whose resolution is one millisecond: at rates above 1000/s several
//! slots share a tick, and each measured latency can include up to a millisecond of timer
//! lateness.
//!
//! The one piece of shared state touched per request is the slot counter (an atomic
//! `fetch_add`, for `-n` and `--rate`); a `-z` closed loop touches nothing shared but the stop
//! flag, which is only read.
//!
//! What this does not do: ramp-up, bursts, or rates that change during a run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::volume::Volume;

/// The request schedule of one run, shared by every worker.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// When the run started (t_0 of the open-loop schedule).
    start: Instant,
    /// `-n` or `-z`.
    volume: Volume,
    /// `--rate`, in requests per second.
    rate: Option<f64>,
    /// The next ticket or slot number; incremented by every worker taking one.
    next: AtomicU64,
    /// Set once (Ctrl-C) to start no more requests; read by every worker.
    stopped: AtomicBool,
}

/// Permission to start one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// In open loop, the time the request is due (the worker sleeps until then and measures
    /// latency from it); `None` in closed loop (start now).
    pub(crate) due: Option<Instant>,
}

impl Schedule {
    /// A schedule starting at `start`.
    pub(crate) fn new(start: Instant, volume: Volume, rate: Option<f64>) -> Schedule {
        Schedule {
            start,
            volume,
            rate,
            next: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        }
    }

    /// When the run started.
    pub(crate) fn start(&self) -> Instant {
        self.start
    }

    /// The `-z` deadline, if any.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.volume {
            Volume::Requests(_) => None,
            Volume::Duration(d) => Some(self.start + d),
        }
    }

    /// The number of open-loop slots: `-n`, or the slots due before the `-z` deadline.
    /// `None` in closed loop.
    pub(crate) fn slots(&self) -> Option<u64> {
        let rate = self.rate?;
        Some(match self.volume {
            Volume::Requests(n) => n,
            // Slots k with k / rate < d: ceil(d * rate).
            Volume::Duration(d) => (d.as_secs_f64() * rate).ceil() as u64,
        })
    }

    /// Starts no more requests; those in flight finish.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Whether [`stop`](Self::stop) was called.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Takes the next request, or `None` when the run has no more for anyone.
    pub(crate) fn take(&self) -> Option<Slot> {
        self.take_at(Instant::now())
    }

    /// [`take`](Self::take) with the current time given.
    fn take_at(&self, now: Instant) -> Option<Slot> {
        if self.is_stopped() {
            return None;
        }
        if let Some(deadline) = self.deadline() {
            if now >= deadline {
                return None;
            }
        }
        match (self.rate, self.volume) {
            (None, Volume::Duration(_)) => Some(Slot { due: None }),
            (None, Volume::Requests(n)) => {
                (self.next.fetch_add(1, Ordering::Relaxed) < n).then_some(Slot { due: None })
            }
            (Some(rate), _) => {
                let k = self.next.fetch_add(1, Ordering::Relaxed);
                if k >= self.slots().unwrap_or(0) {
                    return None;
                }
                let offset = Duration::try_from_secs_f64(k as f64 / rate).ok()?;
                Some(Slot {
                    due: Some(self.start + offset),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(schedule: &Schedule, now: Instant) -> Vec<Slot> {
        std::iter::from_fn(|| schedule.take_at(now))
            .take(1_000)
            .collect()
    }

    #[test]
    fn closed_loop_hands_out_exactly_n_tickets() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Requests(5), None);
        let slots = drain(&s, t0);
        assert_eq!(slots.len(), 5);
        assert!(slots.iter().all(|slot| slot.due.is_none()));
        assert_eq!(s.slots(), None);
    }

    #[test]
    fn closed_loop_with_a_duration_ends_at_the_deadline() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Duration(Duration::from_secs(2)), None);
        assert!(s.take_at(t0 + Duration::from_millis(1_999)).is_some());
        assert!(s.take_at(t0 + Duration::from_secs(2)).is_none());
        assert_eq!(s.deadline(), Some(t0 + Duration::from_secs(2)));
    }

    #[test]
    fn open_loop_slots_are_evenly_spaced_from_the_start() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Requests(4), Some(100.0));
        let due: Vec<Duration> = drain(&s, t0)
            .into_iter()
            .map(|slot| slot.due.unwrap() - t0)
            .collect();
        let ms = Duration::from_millis;
        assert_eq!(due, [ms(0), ms(10), ms(20), ms(30)]);
    }

    #[test]
    fn open_loop_with_a_duration_has_the_slots_before_the_deadline() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Duration(Duration::from_secs(1)), Some(10.0));
        assert_eq!(s.slots(), Some(10));
        assert_eq!(drain(&s, t0).len(), 10);
        // A worker that is behind does not start a slot after the deadline.
        let late = Schedule::new(t0, Volume::Duration(Duration::from_secs(1)), Some(10.0));
        assert!(late.take_at(t0 + Duration::from_secs(1)).is_none());
    }

    #[test]
    fn stop_ends_every_schedule() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Requests(10), Some(5.0));
        assert!(s.take_at(t0).is_some());
        s.stop();
        assert!(s.take_at(t0).is_none());
    }
}
