//! The stream accounting of one generation: how many of the peer's concurrent streams are
//! taken, and what the peer's limit is.

use pool_core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The stream accounting of one generation, shared by its handles, its leases and its driver.
///
/// `taken` counts streams reserved by the cell or in use; the cell reserves under its lock, so
/// it never hands out more than `limit`, the peer's `SETTINGS_MAX_CONCURRENT_STREAMS` as h2
/// applies it (the driver copies it after every poll, so a SETTINGS change is seen at once).
///
/// h2 starts from `initial_max_send_streams` and cannot tell whether the peer's SETTINGS
/// arrived, so the driver trusts the copied limit once it differs from that initial value (the
/// peer announced another), or once a poll starts after a response was seen (a response
/// follows the peer's SETTINGS, and the copy after the poll that read it is done). Until
/// then reservations are not capped: h2 applies its initial limit meanwhile.
///
/// A generation opened next to others whose limit is known *assumes* theirs until its own
/// first response: the same server almost always announces the same limit, and a scale-out
/// connection that took every waiting request before learning it would see the excess
/// refused.
#[derive(Debug)]
pub(crate) struct Streams {
    taken: AtomicUsize,
    limit: AtomicUsize,
    known: AtomicBool,
    /// The limit assumed until `known` (`usize::MAX`: none).
    assumed: AtomicUsize,
    /// A response arrived on the connection.
    response_seen: AtomicBool,
    /// The limit h2 applies before the peer's SETTINGS.
    initial: usize,
}

impl Streams {
    /// The accounting of a connection whose h2 starts from `initial` streams.
    pub(crate) fn new(initial: usize) -> Streams {
        Streams {
            taken: AtomicUsize::new(0),
            limit: AtomicUsize::new(usize::MAX),
            known: AtomicBool::new(false),
            assumed: AtomicUsize::new(usize::MAX),
            response_seen: AtomicBool::new(false),
            initial,
        }
    }

    /// The limit in force: the peer's once known, else the assumed one, if any.
    pub(crate) fn limit(&self) -> Option<usize> {
        if self.known.load(Ordering::Acquire) {
            return Some(self.limit.load(Ordering::Acquire));
        }
        let assumed = self.assumed.load(Ordering::Acquire);
        (assumed != usize::MAX).then_some(assumed)
    }

    pub(crate) fn try_reserve(&self) -> bool {
        match self.limit() {
            None => {
                self.taken.fetch_add(1, Ordering::AcqRel);
                true
            }
            Some(limit) => self
                .taken
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                    (t < limit).then_some(t + 1)
                })
                .is_ok(),
        }
    }

    /// Releases one stream; returns whether the generation was at its limit (a waiting request
    /// may take the stream).
    pub(crate) fn release(&self) -> bool {
        let before = self.taken.fetch_sub(1, Ordering::AcqRel);
        self.limit().is_some_and(|limit| before >= limit)
    }

    pub(crate) fn is_full(&self) -> bool {
        self.limit()
            .is_some_and(|limit| self.taken.load(Ordering::Acquire) >= limit)
    }

    /// Streams reserved or in use.
    pub(crate) fn taken(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }

    /// Assumes `limit` until the peer's is known.
    pub(crate) fn assume(&self, limit: usize) {
        self.assumed.store(limit, Ordering::Release);
    }

    /// Whether a response arrived (read by the driver before it polls).
    pub(crate) fn response_seen(&self) -> bool {
        self.response_seen.load(Ordering::Acquire)
    }

    /// Records `limit`, h2's current one, after a driver poll that started when a response had
    /// (`seen`) or had not been seen. Returns whether the limit in force grew (streams may be
    /// free for waiting requests).
    pub(crate) fn observe(&self, limit: usize, seen: bool) -> bool {
        let before = self.limit();
        self.limit.store(limit, Ordering::Release);
        if !self.known.load(Ordering::Acquire) && (limit != self.initial || seen) {
            self.known.store(true, Ordering::Release);
        }
        match (before, self.limit()) {
            (Some(before), Some(after)) => after > before,
            (Some(_), None) => true,
            _ => false,
        }
    }

    /// A response arrived, so the peer's SETTINGS did before it.
    pub(crate) fn saw_response(&self) {
        self.response_seen.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_initial_limit_is_not_trusted_until_the_peer_announces_another_or_a_response_came() {
        let streams = Streams::new(100);
        assert!(!streams.observe(100, false));
        assert_eq!(streams.limit(), None, "h2's initial value, not the peer's");
        assert!(streams.try_reserve() && streams.try_reserve());
        // The peer's SETTINGS announce 10.
        assert!(!streams.observe(10, false));
        assert_eq!(streams.limit(), Some(10));
        let peer_said_100 = Streams::new(100);
        peer_said_100.saw_response();
        peer_said_100.observe(100, true);
        assert_eq!(
            peer_said_100.limit(),
            Some(100),
            "a response proves the SETTINGS"
        );
    }

    #[test]
    fn reservations_stop_at_the_limit_and_a_release_at_the_limit_says_so() {
        let streams = Streams::new(100);
        streams.observe(2, false);
        assert!(streams.try_reserve() && streams.try_reserve());
        assert!(!streams.try_reserve());
        assert!(streams.is_full());
        assert!(
            streams.release(),
            "it was at the limit: a waiter may take the stream"
        );
        assert!(!streams.release());
    }

    #[test]
    fn settings_that_raise_or_lower_the_limit_mid_connection_are_followed() {
        let streams = Streams::new(100);
        streams.observe(2, false);
        assert!(streams.try_reserve() && streams.try_reserve());
        assert!(streams.observe(4, false), "raised: streams are free");
        assert!(streams.try_reserve() && streams.try_reserve() && !streams.try_reserve());
        assert!(!streams.observe(1, false), "lowered");
        assert!(streams.is_full());
        assert!(
            streams.release(),
            "above the new limit, a release still says so"
        );
    }

    #[test]
    fn a_sibling_limit_is_assumed_until_the_own_is_known() {
        let streams = Streams::new(100);
        streams.assume(3);
        assert_eq!(streams.limit(), Some(3));
        streams.observe(8, false);
        assert_eq!(streams.limit(), Some(8));
    }
}
