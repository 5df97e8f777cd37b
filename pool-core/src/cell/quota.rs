//! Learning a server's per-connection request quota from the connections it cut off.
//!
//! Many servers serve a fixed number of requests on one connection and then end it with
//! `GOAWAY`: nginx's `keepalive_requests` (1,000 by default), HAProxy's `max-total-streams`,
//! Envoy's `max_requests_per_connection`. Streams the client opened after the server's count
//! ran out are refused (the GOAWAY's last stream id is below them) and the pool sends them
//! again on a new connection: against stock nginx at 128 streams in flight, one request in
//! eight was sent twice, and a request re-sent into the middle of the next connection's life
//! can meet the next cut too, until its re-send budget is spent.
//!
//! A learner that hears of two connections in a row cut off after the *same* number of
//! requests, the second established after the first cut, takes that number as the server's
//! quota: each generation a cell publishes
//! afterwards carries at most that many requests and then retires
//! (`CloseReason::RequestQuota`), so the next
//! requests go to a new connection before the server would refuse them. A graceful restart
//! also cuts connections off, but after whatever count each had reached, so two such cuts
//! rarely agree; one cut that disagrees with the quota changes nothing. Rarely is not never:
//! connections that shared the load evenly are cut by the same restart at the same count
//! (seen against lighttpd's graceful restarts over HTTP/2, both at 42,672, and against
//! nginx's reloads over HTTP/1.1 at 32 connections, which taught 874 and cost 5-17% more
//! handshakes). So a cut agrees only if its connection was established after the cut it
//! agrees with was heard of ([`Ended::newest`]): a server's quota cuts the connection that
//! replaced the last one cut at the same count again, while siblings cut by one event all
//! lived before it. Should two events still agree, the cell keeps to that count until a
//! probe carries more: at most [`FIRST_PROBE_AFTER`] connections retire at it first, each
//! after carrying that many requests, and no request fails for it.
//!
//! The quota is checked again from time to time: a generation published with a quota known
//! goes without it (a probe) once [`FIRST_PROBE_AFTER`] others went with it, and each probe
//! the server cuts off at the quota again doubles that interval, up to [`LAST_PROBE_AFTER`]
//! (a probe costs the requests its cut refuses, sent again). If a probe carries more requests
//! than the quota (the server's quota grew, or it came from a coincidence), the quota is
//! forgotten, and two agreeing cuts teach the new one.
//!
//! A generation one window short of its quota asks the cell for its successor ahead
//! ([`Cell::h2_successor_wanted`](super::Cell::h2_successor_wanted)), so requests after the
//! quota do not wait for a handshake.
//!
//! One learner serves an origin's cells in every partition (the owner hands each the same
//! one, [`Cell::with_request_quota_learner`](super::Cell::with_request_quota_learner)): the
//! quota is a fact about the server, so two cuts that agree teach it to every partition at
//! once, and one probe checks it for all of them, where a learner per cell made each of N
//! partitions pay its own two cuts and its own probes (against stock nginx at 128 streams in
//! flight over 4 partitions, 2.5 times the re-sends). "Two in a row" then counts the origin's
//! connections in the order they end, whichever partition they belong to. A cell built
//! without one has a learner of its own.
//!
//! # HTTP/1
//!
//! An HTTP/1 server with a quota normally says so: its last response carries `Connection:
//! close`, and the pool retires the connection with it. Some close without saying so after a
//! fixed count (tinyproxy 1.11 closes every client connection after one response), and the
//! next request the pool sends on the connection, often before the close arrives, is read
//! and met with the close: the pool re-sends it if it is safe to repeat and fails it if not
//! (through tinyproxy, 40% of a run of POSTs sent one at a time failed). Such a close on a
//! reused connection with nothing of the response read is an HTTP/1 cut
//! ([`Cell::connection_ended`]), after the requests the connection had answered, and feeds
//! the same learner: two in a row at the same count teach the quota, each new HTTP/1
//! connection keeps to it (its record retires it with the response that spends it,
//! `ConnectionRecord::check_request_quota`), and one in [`FIRST_PROBE_AFTER`] at first, then
//! fewer, goes without it as a probe. A probe answered past the quota makes the learner
//! forget it ([`Cell::h1_served_past_quota`]); one cut at the quota again confirms it. A probe
//! costs what the unannounced close cost every connection before: the request after the
//! quota, re-sent or (not safe to repeat) failed. A keep-alive timeout that closes a
//! connection just as a request goes out is a cut too, after whatever count; two in a row
//! rarely agree, and a probe forgets a quota learnt that way.
//!
//! What this does not do: look at HTTP/1 connections the server closed while they were idle
//! (nothing was lost; a keep-alive timeout does that after any count).

use super::{Cell, CellTypes};
use crate::connection::ConnectionRecord;
use crate::sync::atomic::{AtomicU64, Ordering};

/// Generations published with a newly learnt quota before the first probe goes without it.
pub(super) const FIRST_PROBE_AFTER: u64 = 16;
/// The most generations published with the quota between two probes.
pub(super) const LAST_PROBE_AFTER: u64 = 1024;

/// What is known of one server's per-connection request quota, shared by the cells of its
/// origin (see the module docs).
///
/// Lock-free: connections report when their last handle goes, which may be under their cell's
/// lock (a generation pruned from the cell) or not, and the cells of every partition report
/// to the same learner. Reports are rare (one per connection) and
/// order-insensitive but for "two in a row": two that race each count as the other's
/// predecessor, which is what they are.
#[derive(Debug)]
pub struct QuotaLearner {
    /// The quota in force (`NONE`: none).
    learned: AtomicU64,
    /// How many requests the last connection cut off by its server had carried (`NONE`: none
    /// since the quota was last forgotten).
    last_cut: AtomicU64,
    /// The newest connection (by [`Ended::id`]) when that cut was heard of: only a connection
    /// established after it can agree with it.
    cut_newest: AtomicU64,
    /// Generations published with the quota since it was learnt, or since the last probe.
    published: AtomicU64,
    /// How many go with it before the next probe.
    probe_after: AtomicU64,
}

const NONE: u64 = u64::MAX;

/// A connection that ended, as its learner hears of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The requests its server processed.
    pub served: u64,
    /// The server cut it off: an HTTP/2 GOAWAY refused at least one more request, or an
    /// HTTP/1 server closed it while the next request was on its way.
    pub cut: bool,
    /// The connection's id ([`ConnectionId`](crate::ConnectionId)), which grows with the order
    /// connections are established in.
    pub id: u64,
    /// The largest connection id given out so far: a cut confirms the one before it only if
    /// its connection was established after that one was heard of.
    pub newest: u64,
}

/// What a new connection does with a learnt quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Keep {
    pub(super) quota: u64,
    /// It goes without the quota, to check it.
    pub(super) probe: bool,
}

impl Default for QuotaLearner {
    fn default() -> Self {
        QuotaLearner {
            learned: AtomicU64::new(NONE),
            last_cut: AtomicU64::new(NONE),
            cut_newest: AtomicU64::new(0),
            published: AtomicU64::new(0),
            probe_after: AtomicU64::new(FIRST_PROBE_AFTER),
        }
    }
}

impl QuotaLearner {
    /// The quota for a generation being published now: `None` without one, or for a probe.
    pub(super) fn for_new_generation(&self) -> Option<u64> {
        self.for_new_connection()
            .filter(|k| !k.probe)
            .map(|k| k.quota)
    }

    /// What a connection published now keeps to: `None` while no quota is known.
    pub(super) fn for_new_connection(&self) -> Option<Keep> {
        let quota = self.learned()?;
        let published = self.published.fetch_add(1, Ordering::AcqRel);
        if published < self.probe_after.load(Ordering::Acquire) {
            return Some(Keep {
                quota,
                probe: false,
            });
        }
        self.published.store(0, Ordering::Release);
        Some(Keep { quota, probe: true })
    }

    /// A connection ended (see [`Ended`]). Returns the quota if this learnt it.
    pub(super) fn connection_ended(&self, ended: Ended) -> Option<u64> {
        let Ended {
            served,
            cut,
            id,
            newest,
        } = ended;
        if self.learned().is_some_and(|quota| served > quota) {
            // A probe carried more than the quota: it is not the server's (any more).
            self.learned.store(NONE, Ordering::Release);
            self.last_cut.store(NONE, Ordering::Release);
        }
        if !cut || served == 0 || served == NONE {
            return None;
        }
        if self.learned() == Some(served) {
            // Only a probe is cut off: it confirmed the quota, so the next one can wait longer.
            let after = self.probe_after.load(Ordering::Acquire);
            self.probe_after
                .store((after * 2).min(LAST_PROBE_AFTER), Ordering::Release);
            return None;
        }
        if self.last_cut.load(Ordering::Acquire) != served {
            // A cut at a new count: the one the next must agree with. (Two reports racing
            // here may pair one's count with the other's watermark: at worst a later lesson.)
            self.cut_newest.store(newest, Ordering::Release);
            self.last_cut.store(served, Ordering::Release);
            return None;
        }
        if id <= self.cut_newest.load(Ordering::Acquire) {
            // A connection that already lived at the last cut, cut at the same count: most
            // likely by the same event (a restart cutting siblings that shared the load
            // evenly). It confirms nothing, and the last cut stays the one to agree with.
            return None;
        }
        self.learned.store(served, Ordering::Release);
        self.published.store(0, Ordering::Release);
        self.probe_after.store(FIRST_PROBE_AFTER, Ordering::Release);
        Some(served)
    }

    /// The quota in force.
    pub(super) fn learned(&self) -> Option<u64> {
        let quota = self.learned.load(Ordering::Acquire);
        (quota != NONE).then_some(quota)
    }
}

impl<T: CellTypes> Cell<T> {
    /// A new HTTP/1 connection of this cell keeps to the learnt quota, if any (or probes it).
    pub(super) fn keep_h1_to_quota(&self, record: &ConnectionRecord) {
        if let Some(keep) = self.request_quota.for_new_connection() {
            record.keep_to_request_quota(keep.quota, keep.probe);
        }
    }

    /// A connection of this cell ended, or was cut off, having carried `ended.served`
    /// requests its server processed. An HTTP/2 generation reports when nothing refers to it
    /// any more (`ended.cut` when the server's GOAWAY refused at least one more); an HTTP/1
    /// connection reports only a cut: its server closed it without saying so (no
    /// `Connection: close`) while the next request was on its way (`ClosedBeforeResponse` on
    /// a reused connection). Two cuts in a row at the same count, the second on a connection
    /// established after the first was heard of, teach the quota, which the cell's new
    /// connections keep to.
    ///
    /// Takes no lock: a generation's last handle may go under the cell's own.
    pub fn connection_ended(&self, ended: Ended) {
        if let Some(quota) = self.request_quota.connection_ended(ended) {
            tracing::debug!(
                quota,
                "the server cut two connections off after the same number of requests: \
                 new connections carry at most that many"
            );
        }
    }

    /// A probe (an HTTP/1 connection published without the learnt quota, to check it) was
    /// answered `served` times, more than the quota: the cell forgets it.
    pub fn h1_served_past_quota(&self, served: u64) {
        // Not a cut: which connection it was does not matter.
        self.connection_ended(Ended {
            served,
            cut: false,
            id: 0,
            newest: 0,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::fakes::IDS;
    use super::*;

    impl QuotaLearner {
        /// A report of a connection established after every one reported before it.
        fn ended(&self, served: u64, cut: bool) -> Option<u64> {
            self.connection_ended(super::super::fakes::ended(served, cut))
        }
    }

    #[test]
    fn siblings_cut_by_one_event_at_the_same_count_teach_nothing() {
        let q = QuotaLearner::default();
        // Three connections that lived side by side, cut at once after the same count.
        let ids = [
            IDS.fetch_add(1, Ordering::Relaxed),
            IDS.fetch_add(1, Ordering::Relaxed),
        ];
        let newest = IDS.fetch_add(1, Ordering::Relaxed);
        for id in [newest, ids[0], ids[1]] {
            let sibling = Ended {
                served: 637,
                cut: true,
                id,
                newest,
            };
            assert_eq!(q.connection_ended(sibling), None);
        }
        assert_eq!(q.learned(), None);
        // A connection established after them, cut at that count again, agrees.
        assert_eq!(q.ended(637, true), Some(637));
    }

    #[test]
    fn two_connections_cut_at_the_same_count_teach_the_quota() {
        let q = QuotaLearner::default();
        assert_eq!(q.ended(100, true), None);
        assert_eq!(q.for_new_generation(), None);
        assert_eq!(q.ended(100, true), Some(100));
        assert_eq!(q.learned(), Some(100));
        assert_eq!(q.for_new_generation(), Some(100));
        // Seen again: nothing new to learn.
        assert_eq!(q.ended(100, true), None);
        assert_eq!(q.learned(), Some(100));
    }

    #[test]
    fn cuts_at_different_counts_teach_nothing() {
        let q = QuotaLearner::default();
        for served in [37, 112, 5, 900] {
            assert_eq!(q.ended(served, true), None);
        }
        assert_eq!(q.learned(), None);
        // Connections that ended without a cut say nothing either.
        q.ended(37, false);
        q.ended(37, false);
        assert_eq!(q.learned(), None);
    }

    #[test]
    fn nothing_served_teaches_nothing() {
        let q = QuotaLearner::default();
        q.ended(0, true);
        q.ended(0, true);
        assert_eq!(q.learned(), None);
    }

    #[test]
    fn a_restart_between_two_cuts_of_a_learnt_quota_keeps_it() {
        let q = QuotaLearner::default();
        q.ended(100, true);
        q.ended(100, true);
        // A graceful restart cuts one connection off at another count.
        assert_eq!(q.ended(41, true), None);
        assert_eq!(q.learned(), Some(100));
        // Two agreeing cuts at a new count replace it (the server's quota was lowered).
        assert_eq!(q.ended(50, true), None);
        assert_eq!(q.ended(50, true), Some(50));
    }

    /// The generations (counted from 1) that went without the quota among the next `n`.
    fn probes(q: &QuotaLearner, n: u64, confirm: bool) -> Vec<u64> {
        (1..=n)
            .filter(|_| {
                let probe = q.for_new_generation().is_none();
                if probe && confirm {
                    // The server cuts the probe off at the quota.
                    assert_eq!(q.ended(100, true), None);
                }
                probe
            })
            .collect()
    }

    #[test]
    fn a_probe_goes_without_the_quota_after_sixteen_generations_went_with_it() {
        let q = QuotaLearner::default();
        q.ended(100, true);
        q.ended(100, true);
        assert_eq!(probes(&q, 2 * FIRST_PROBE_AFTER + 2, false), vec![17, 34]);
        assert_eq!(q.learned(), Some(100));
    }

    #[test]
    fn each_probe_cut_off_at_the_quota_doubles_the_wait_for_the_next() {
        let q = QuotaLearner::default();
        q.ended(100, true);
        q.ended(100, true);
        let at = probes(&q, 3000, true);
        let gaps: Vec<_> = std::iter::once(at[0])
            .chain(at.windows(2).map(|w| w[1] - w[0]))
            .collect();
        assert_eq!(gaps[..7], [17, 33, 65, 129, 257, 513, 1025]);
        assert!(gaps[7..].iter().all(|&gap| gap == LAST_PROBE_AFTER + 1));
        assert_eq!(q.learned(), Some(100));
        // A quota learnt anew starts over.
        q.ended(50, true);
        q.ended(50, true);
        assert_eq!(probes(&q, FIRST_PROBE_AFTER + 1, false), vec![17]);
    }

    #[test]
    fn a_probe_that_goes_past_the_quota_uncut_forgets_it() {
        let q = QuotaLearner::default();
        q.ended(100, true);
        q.ended(100, true);
        // Generations that carried the quota, or fewer, confirm nothing and deny nothing.
        q.ended(100, false);
        q.ended(3, false);
        assert_eq!(q.learned(), Some(100));
        q.ended(101, false);
        assert_eq!(q.learned(), None);
        assert_eq!(q.for_new_generation(), None);
        // And it takes two agreeing cuts to learn one again.
        assert_eq!(q.ended(100, true), None);
        assert_eq!(q.ended(100, true), Some(100));
    }

    #[test]
    fn a_probe_cut_off_later_than_the_quota_starts_learning_the_new_one() {
        let q = QuotaLearner::default();
        q.ended(100, true);
        q.ended(100, true);
        // The server now serves 1,000 per connection: the probe is cut there.
        assert_eq!(q.ended(1000, true), None);
        assert_eq!(q.learned(), None);
        assert_eq!(q.ended(1000, true), Some(1000));
    }
}
