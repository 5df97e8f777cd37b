//! Maximum connection lifetime: when a new connection retires, with jitter.
//!
//! A connection created at `t` retires at `t + max − j`, where `j` is drawn for each connection
//! uniformly from `[0, jitter]`. Without jitter a fleet of pools started together (or a burst
//! of connections opened together) would reconnect in step, every `max`; with it their
//! retirements spread over a window of `jitter`. Retirement only ever comes early, never late,
//! so `max` stays an upper bound on a connection's age (plus, for HTTP/2, the replacement's
//! handshake: see the cell's expiry).
//!
//! What retirement does is the cell's business: an HTTP/1 connection retires at its next
//! return or while idle, an HTTP/2 generation is renewed first. This module only computes the
//! instant, once, when the connection is created; the instant is part of its
//! [`ConnectionInfo`](pool_core::ConnectionInfo) (`retires_at`).

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use pool_core::ConnectionId;

/// The pool's lifetime policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lifetime {
    pub(crate) max: Duration,
    pub(crate) jitter: Duration,
}

impl Lifetime {
    /// The default jitter: a tenth of the lifetime.
    pub(crate) fn with_default_jitter(max: Duration) -> Lifetime {
        Lifetime {
            max,
            jitter: max / 10,
        }
    }

    /// When connection `id`, created at `created`, retires.
    pub(crate) fn retires_at(&self, id: ConnectionId, created: Instant) -> Instant {
        created + self.max - self.draw(id)
    }

    /// A uniform draw from `[0, jitter]`: the connection id hashed with a per-process random
    /// key (std's `RandomState`), so neither two connections nor two processes line up.
    fn draw(&self, id: ConnectionId) -> Duration {
        let jitter = self.jitter.min(self.max);
        if jitter.is_zero() {
            return Duration::ZERO;
        }
        let mut hasher = std::hash::RandomState::new().build_hasher();
        hasher.write_u64(id.as_u64());
        let fraction = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
        jitter.mul_f64(fraction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retirement_spreads_within_the_jitter_and_never_exceeds_the_lifetime() {
        let lifetime = Lifetime {
            max: Duration::from_secs(60),
            jitter: Duration::from_secs(6),
        };
        let t0 = Instant::now();
        let at: Vec<Instant> = (1..=32)
            .map(|id| lifetime.retires_at(ConnectionId::from_u64(id), t0))
            .collect();
        for a in &at {
            assert!(*a <= t0 + Duration::from_secs(60));
            assert!(*a >= t0 + Duration::from_secs(54));
        }
        let earliest = at.iter().min().unwrap();
        let latest = at.iter().max().unwrap();
        assert!(
            *latest - *earliest > Duration::from_secs(3),
            "32 connections created together retire over more than half the window"
        );
    }

    #[test]
    fn zero_jitter_retires_exactly_at_the_lifetime() {
        let lifetime = Lifetime {
            max: Duration::from_secs(5),
            jitter: Duration::ZERO,
        };
        let t0 = Instant::now();
        assert_eq!(
            lifetime.retires_at(ConnectionId::from_u64(7), t0),
            t0 + Duration::from_secs(5)
        );
        assert_eq!(
            Lifetime::with_default_jitter(Duration::from_secs(50)).jitter,
            Duration::from_secs(5)
        );
    }
}
