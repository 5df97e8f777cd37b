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
//! Ramp-up (`--ramp T`) starts gently:
//!
//! ```text
//! closed loop   worker w of c starts at start + T * w / c, so the requests in flight rise
//!               from 1 to c over T (then each worker loops as above)
//! open loop     the rate rises linearly from 0 to R over T: slot k is due at
//!               sqrt(2 T k / R) while k < R T / 2 (the slots of the ramp), then at
//!               T + (k - R T / 2) / R
//! ```
//!
//! The ramp is part of the run: `-z` counts from the start, ramp included, and so do the
//! per-second series and the request rate.
//!
//! What this does not do: bursts, several stages, or rates that change after the ramp.

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
    /// `--ramp`: how long load takes to reach `-c` (closed loop) or `--rate` (open loop).
    ramp: Option<Duration>,
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
    pub(crate) fn new(
        start: Instant,
        volume: Volume,
        rate: Option<f64>,
        ramp: Option<Duration>,
    ) -> Schedule {
        Schedule {
            start,
            volume,
            rate,
            ramp: ramp.filter(|r| !r.is_zero()),
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
            // Slots k due before d: ceil of the slots scheduled in [0, d).
            Volume::Duration(d) => self.scheduled_before(d.as_secs_f64(), rate).ceil() as u64,
        })
    }

    /// How many open-loop slots fall in the first `t` seconds (a real number: the integral of
    /// the rate, which rises linearly over the ramp).
    fn scheduled_before(&self, t: f64, rate: f64) -> f64 {
        match self.ramp.map(|r| r.as_secs_f64()) {
            None => t * rate,
            Some(ramp) if t <= ramp => rate * t * t / (2.0 * ramp),
            Some(ramp) => rate * ramp / 2.0 + rate * (t - ramp),
        }
    }

    /// When open-loop slot `k` is due, in seconds from the start (the inverse of
    /// [`scheduled_before`](Self::scheduled_before)).
    fn due_offset(&self, k: u64, rate: f64) -> f64 {
        let k = k as f64;
        match self.ramp.map(|r| r.as_secs_f64()) {
            None => k / rate,
            Some(ramp) if k < rate * ramp / 2.0 => (2.0 * ramp * k / rate).sqrt(),
            Some(ramp) => ramp + (k - rate * ramp / 2.0) / rate,
        }
    }

    /// When closed-loop worker `index` of `concurrency` sends its first request: spread over
    /// the ramp, or at once without one (and always at once in open loop, where the slots
    /// carry the ramp).
    pub(crate) fn worker_start(&self, index: usize, concurrency: usize) -> Option<Instant> {
        let ramp = self.ramp.filter(|_| self.rate.is_none())?;
        let share = index as f64 / concurrency.max(1) as f64;
        Some(self.start + ramp.mul_f64(share))
    }

    /// Starts no more requests; those in flight finish.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Whether [`stop`](Self::stop) was called.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Takes the next request at `now` (the caller's clock read, which it reuses as a closed
    /// loop request's start), or `None` when the run has no more for anyone.
    pub(crate) fn take_at(&self, now: Instant) -> Option<Slot> {
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
                let offset = Duration::try_from_secs_f64(self.due_offset(k, rate)).ok()?;
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
        let s = Schedule::new(t0, Volume::Requests(5), None, None);
        let slots = drain(&s, t0);
        assert_eq!(slots.len(), 5);
        assert!(slots.iter().all(|slot| slot.due.is_none()));
        assert_eq!(s.slots(), None);
    }

    #[test]
    fn closed_loop_with_a_duration_ends_at_the_deadline() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Duration(Duration::from_secs(2)), None, None);
        assert!(s.take_at(t0 + Duration::from_millis(1_999)).is_some());
        assert!(s.take_at(t0 + Duration::from_secs(2)).is_none());
        assert_eq!(s.deadline(), Some(t0 + Duration::from_secs(2)));
    }

    #[test]
    fn open_loop_slots_are_evenly_spaced_from_the_start() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Requests(4), Some(100.0), None);
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
        let s = Schedule::new(
            t0,
            Volume::Duration(Duration::from_secs(1)),
            Some(10.0),
            None,
        );
        assert_eq!(s.slots(), Some(10));
        assert_eq!(drain(&s, t0).len(), 10);
        // A worker that is behind does not start a slot after the deadline.
        let late = Schedule::new(
            t0,
            Volume::Duration(Duration::from_secs(1)),
            Some(10.0),
            None,
        );
        assert!(late.take_at(t0 + Duration::from_secs(1)).is_none());
    }

    #[test]
    fn an_open_loop_ramp_rises_linearly_to_the_rate() {
        let t0 = Instant::now();
        let ramp = Some(Duration::from_secs(2));
        // 10/s reached after 2 s: 10 slots in the ramp, then 10 per second.
        let s = Schedule::new(
            t0,
            Volume::Duration(Duration::from_secs(3)),
            Some(10.0),
            ramp,
        );
        assert_eq!(s.slots(), Some(20));
        let due: Vec<f64> = drain(&s, t0)
            .into_iter()
            .map(|slot| (slot.due.unwrap() - t0).as_secs_f64())
            .collect();
        assert_eq!(due.len(), 20);
        let in_first_second = due.iter().filter(|t| **t < 1.0).count();
        let in_second_second = due.iter().filter(|t| (1.0..2.0).contains(*t)).count();
        let after = due.iter().filter(|t| **t >= 2.0).count();
        // The rate rises from 0 to 10: 2.5 slots in the first second, 7.5 in the next.
        assert_eq!((in_first_second, in_second_second, after), (3, 7, 10));
        assert!(due.windows(2).all(|w| w[0] <= w[1]), "{due:?}");
        assert!(
            (due[10] - 2.0).abs() < 1e-9,
            "the first slot at full rate: {due:?}"
        );
    }

    #[test]
    fn a_closed_loop_ramp_spreads_the_workers_starts() {
        let t0 = Instant::now();
        let ramp = Some(Duration::from_secs(4));
        let s = Schedule::new(t0, Volume::Requests(100), None, ramp);
        let starts: Vec<Duration> = (0..4).map(|w| s.worker_start(w, 4).unwrap() - t0).collect();
        let secs = Duration::from_secs;
        assert_eq!(starts, [secs(0), secs(1), secs(2), secs(3)]);
        let open = Schedule::new(t0, Volume::Requests(100), Some(5.0), ramp);
        assert_eq!(
            open.worker_start(3, 4),
            None,
            "open loop ramps its slots instead"
        );
        let none = Schedule::new(t0, Volume::Requests(100), None, None);
        assert_eq!(none.worker_start(3, 4), None);
    }

    #[test]
    fn stop_ends_every_schedule() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, Volume::Requests(10), Some(5.0), None);
        assert!(s.take_at(t0).is_some());
        s.stop();
        assert!(s.take_at(t0).is_none());
    }
}
