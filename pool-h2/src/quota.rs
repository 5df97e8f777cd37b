//! One generation's requests against its server's per-connection request quota, and what the
//! end of the connection tells its cell about that quota.
//!
//! The cell learns the quota (pool-core's `cell/quota.rs`) from what its connections report
//! when they end: how many requests the server processed on each, and whether the server's
//! graceful GOAWAY (`NO_ERROR`) cut off at least one more; one with an error code ends a
//! connection for what was sent on it, not for how many requests it carried, and teaches
//! nothing (`classify::graceful_go_away`). A generation published with a quota takes at most
//! that many reservations over its life and retires when it hands hyper the last of them
//! (`CloseReason::RequestQuota`), so no request is sent where the server would refuse it.
//!
//! Without a quota the only cost on the request path is one load per reservation; the counts
//! of unprocessed requests move only when a request was not processed.

use pool_core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const NONE: u64 = u64::MAX;

/// A generation's count of requests against its quota.
#[derive(Debug)]
pub(crate) struct RequestQuota {
    /// The most requests the generation carries (`NONE`: no quota). Set once, by the cell,
    /// before the generation takes its first reservation.
    limit: AtomicU64,
    /// Reservations not given back, over the generation's life (counted only under a quota).
    /// Reservations are taken under the cell's lock, so checking and counting do not race.
    reserved: AtomicU64,
    /// Requests dispatched here that the server provably did not process: handed back
    /// unsent, refused, or cut off by its GOAWAY.
    unprocessed: AtomicU64,
    /// The server's graceful GOAWAY cut off at least one request.
    cut: AtomicBool,
}

impl Default for RequestQuota {
    fn default() -> Self {
        RequestQuota {
            limit: AtomicU64::new(NONE),
            reserved: AtomicU64::new(0),
            unprocessed: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        }
    }
}

impl RequestQuota {
    /// The generation carries at most `limit` requests.
    pub(crate) fn set(&self, limit: u64) {
        self.limit.store(limit, Ordering::Release);
    }

    /// Whether the generation carries a quota.
    pub(crate) fn is_set(&self) -> bool {
        self.limit().is_some()
    }

    fn limit(&self) -> Option<u64> {
        let limit = self.limit.load(Ordering::Acquire);
        (limit != NONE).then_some(limit)
    }

    /// Counts a reservation, unless the quota is spent.
    pub(crate) fn try_reserve(&self) -> bool {
        let Some(limit) = self.limit() else {
            return true;
        };
        if self.reserved.load(Ordering::Acquire) >= limit {
            return false;
        }
        self.reserved.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// A reservation given back without being dispatched.
    pub(crate) fn unreserve(&self) {
        if self.limit().is_some() {
            self.reserved.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Every reservation the quota allows was taken.
    pub(crate) fn is_reserved_out(&self) -> bool {
        self.limit()
            .is_some_and(|limit| self.reserved.load(Ordering::Acquire) >= limit)
    }

    /// Whether `dispatched`, the generation's count of requests handed to hyper including the
    /// one just handed, is its last: the generation must retire now.
    pub(crate) fn spent_by(&self, dispatched: u64) -> bool {
        self.limit() == Some(dispatched)
    }

    /// Whether `dispatched` (as for [`spent_by`](Self::spent_by)) leaves one window of the quota:
    /// as many requests as `streams`, the peer's stream limit if known, can have in flight at
    /// once, or half the quota if that is less. Then the generation's successor should open
    /// now, to be ready when the generation retires. True once per generation (counts rise by
    /// one), and never for a quota of 1.
    pub(crate) fn successor_due(&self, dispatched: u64, streams: Option<usize>) -> bool {
        let Some(limit) = self.limit() else {
            return false;
        };
        let streams = streams.map_or(u64::MAX, |s| u64::try_from(s).unwrap_or(u64::MAX));
        let window = streams.min(limit / 2).max(1);
        dispatched > 0 && dispatched.checked_add(window) == Some(limit)
    }

    /// A request dispatched here was not processed by the server; `cut` when a graceful
    /// GOAWAY said so.
    pub(crate) fn not_processed(&self, cut: bool) {
        self.unprocessed.fetch_add(1, Ordering::AcqRel);
        if cut {
            self.cut.store(true, Ordering::Release);
        }
    }

    /// What the generation's end tells its cell, given its `dispatched` requests: how many the
    /// server processed, and whether its GOAWAY cut off any.
    pub(crate) fn ended(&self, dispatched: u64) -> (u64, bool) {
        let unprocessed = self.unprocessed.load(Ordering::Acquire);
        (
            dispatched.saturating_sub(unprocessed),
            self.cut.load(Ordering::Acquire),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_quota_every_reservation_is_allowed() {
        let q = RequestQuota::default();
        for _ in 0..1000 {
            assert!(q.try_reserve());
        }
        assert!(!q.is_reserved_out());
        assert!(!q.spent_by(1000));
    }

    #[test]
    fn a_quota_caps_reservations_over_the_generations_life() {
        let q = RequestQuota::default();
        q.set(3);
        assert!(q.try_reserve() && q.try_reserve() && q.try_reserve());
        assert!(q.is_reserved_out());
        assert!(!q.try_reserve(), "the fourth request must go elsewhere");
        // A reservation given back unused frees its place; a dispatched one never does.
        q.unreserve();
        assert!(!q.is_reserved_out());
        assert!(q.try_reserve());
        assert!(!q.spent_by(2));
        assert!(q.spent_by(3));
    }

    #[test]
    fn the_successor_is_due_one_window_before_the_quota_is_spent() {
        let q = RequestQuota::default();
        assert!(!q.successor_due(1, Some(1)), "no quota, no successor");
        q.set(1000);
        // nginx: 1,000 requests, 128 streams at once: due at 872.
        let due: Vec<u64> = (1..=1000)
            .filter(|&d| q.successor_due(d, Some(128)))
            .collect();
        assert_eq!(due, vec![872]);
        // A peer without a stream limit: half the quota.
        let due: Vec<u64> = (1..=1000).filter(|&d| q.successor_due(d, None)).collect();
        assert_eq!(due, vec![500]);
        // A quota below one round of streams: half of it.
        let q = RequestQuota::default();
        q.set(100);
        let due: Vec<u64> = (1..=100)
            .filter(|&d| q.successor_due(d, Some(128)))
            .collect();
        assert_eq!(due, vec![50]);
        let q = RequestQuota::default();
        q.set(1);
        assert!(!q.successor_due(1, None) && !q.successor_due(0, None));
    }

    #[test]
    fn the_end_reports_what_the_server_processed_and_whether_it_cut_any_off() {
        let q = RequestQuota::default();
        assert_eq!(q.ended(10), (10, false));
        q.not_processed(false);
        assert_eq!(
            q.ended(10),
            (9, false),
            "refused or unsent: not processed, no cut"
        );
        q.not_processed(true);
        q.not_processed(true);
        assert_eq!(q.ended(10), (7, true));
    }
}
