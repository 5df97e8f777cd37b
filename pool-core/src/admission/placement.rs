//! Placement: which partitions of a bounded origin hold its permits, and who goes first for a
//! connection that finished an exchange.
//!
//! # The rule
//!
//! Every partition with a claim on the origin (it holds a permit or has a ticket) has a *share*
//! of the `N` permits: `N / k` for `k` claimants, rounded down (`floor`) or up (`ceil`). The
//! goal is that each partition with steady demand holds its share and serves its own requests
//! over its own connections, so a request stays on the runtime that made it:
//!
//! * **Local first.** A returning connection serves its own partition's oldest waiting request.
//!   Strict origin-wide first-come order is gone: under it, almost every return served (or
//!   closed for) an older waiter of another partition, so with `P` busy partitions about
//!   `(P - 1) / P` of all requests crossed runtimes, or reconnected when the reuse scope forbade
//!   crossing.
//! * **Capacity moves when an imbalance persists.** A partition holding more than `ceil`
//!   closes a returning connection (a reclaim) when a peer holding less than `floor` has had
//!   unmet demand without a break for at least the *tolerance*; the permit goes to the oldest
//!   ticket of a partition below `floor`. At most one reclaim is in transit per origin, and the
//!   gap between `floor` and `ceil` is the hysteresis: two partitions with equal demand never
//!   trade permits back and forth.
//! * **Nobody starves.** A peer holding no permit at all whose oldest request arrived before
//!   this partition's oldest gets the connection at once: borrowed when the reuse scope lets
//!   it use the connection, otherwise through a reclaim. This is the answer to a first burst
//!   and to more partitions than permits (`N < k`), where shares round down to zero.
//! * **Spare connections are lent, not closed.** A connection with nobody waiting in its own
//!   partition, or an idle one a miss finds, serves a waiting request of a partition that may
//!   use it (a borrow: no request waits beside an idle connection it may use). It closes for a
//!   partition that may not use it only when that partition is owed capacity as above, or
//!   when it has been idle for longer than the tolerance (it is spare). A partition's
//!   connections that are idle only between two of its own requests are therefore not
//!   closed, which is what made the `partition` reuse scope reconnect every few requests.
//!
//! The tolerance (default [`DEFAULT_TOLERANCE`]) bounds how long an imbalance is tolerated
//! before a reconnect corrects it: a reclaim costs a handshake, so a burst shorter than the
//! tolerance is served by borrowing and by the starvation rule instead.
//!
//! # What this gives up
//!
//! Strict fairness across partitions: a request of a partition with many waiting requests may
//! wait longer than a newer request of a partition with few. Within a partition the order
//! stays first come, first served. The trade is deliberate: a light partition keeps its share
//! instead of queueing behind a heavy one, and requests stay on their runtime.

use std::time::{Duration, Instant};

use super::order::DemandOrder;
use super::{Admission, DeliveryId, Member};

/// How long a partition's unmet demand must last before capacity moves to it, by default.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_millis(20);

/// Who goes first for a connection that finished an exchange: see [`Admission::precedence`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precedence {
    /// The cell's own oldest waiting request takes the connection.
    Local,
    /// A partition holding no permit waits with an older request and may use the connection;
    /// its ticket is fenced for the delivery.
    Borrow(usize, DeliveryId),
    /// The connection should close so its permit moves to a partition below its share (or one
    /// holding none that may not use the connection).
    Reclaim,
}

/// The fair share of permits per claimant, rounded both ways.
#[derive(Clone, Copy, Debug)]
struct Shares {
    floor: usize,
    ceil: usize,
}

impl<C: Member> Admission<C> {
    /// The placement tolerance this admission was built with.
    pub fn tolerance(&self) -> Duration {
        self.shared.tolerance
    }

    /// Shares over the partitions that hold a permit or have a ticket.
    fn shares(&self, order: &DemandOrder) -> Shares {
        let limit = self.shared.limit;
        let claimants = (0..self.shared.groups.len())
            .filter(|&p| self.held(p) > 0 || order.has_ticket(p))
            .count()
            .max(1);
        Shares {
            floor: limit / claimants,
            ceil: limit.div_ceil(claimants),
        }
    }

    /// Whether partition `p`'s unmet demand has lasted at least the tolerance.
    fn persisted(&self, order: &DemandOrder, p: usize, now: Instant) -> bool {
        order
            .demand_since(p)
            .is_some_and(|since| now.saturating_duration_since(since) >= self.shared.tolerance)
    }

    /// Whether `source`'s capacity should move to `claimant`, given the current `shares`: the
    /// claimant holds nothing and waits, or it holds less than its share while `source` holds
    /// more, and that has lasted the tolerance.
    fn owes(
        &self,
        order: &DemandOrder,
        shares: Shares,
        (source, claimant): (usize, usize),
        now: Instant,
    ) -> bool {
        let held = self.held(claimant);
        if held == 0 {
            return true;
        }
        held < shares.floor
            && self.held(source) > shares.ceil
            && self.persisted(order, claimant, now)
    }

    /// The ticket a free permit goes to: the oldest of a partition below its share, or else
    /// the oldest. Called with the state locked.
    pub(super) fn delivery_target(&self, order: &DemandOrder) -> Option<(u64, usize)> {
        let oldest = order.oldest()?;
        let shares = self.shares(order);
        Some(
            order
                .active()
                .find(|&(_, p)| self.held(p) < shares.floor)
                .unwrap_or(oldest),
        )
    }

    /// Whether a connection of `source` that finished an exchange certainly stays local,
    /// decided without the lock (the steady-state fast path): `source` holds no more than its
    /// share could be with every partition claiming (`ceil(N / P)`, the smallest the share can
    /// be), so it owes nobody, and every peer with a cell holds a permit, so nobody starves.
    /// The counts are read without the lock, so a change made a moment ago may be missed; the
    /// next return sees it.
    pub fn keeps_local(&self, source: usize) -> bool {
        let partitions = self.shared.groups.len();
        if self.held(source) > self.shared.limit.div_ceil(partitions) {
            return false;
        }
        (0..partitions).all(|q| q == source || !self.is_registered(q) || self.held(q) > 0)
    }

    /// Who goes first for a connection of `source` that finished an exchange while `source`'s
    /// own oldest waiting request arrived at `local_head` (see the module docs):
    ///
    /// 1. A peer below its share for at least the tolerance, while `source` is above it: the
    ///    connection closes so the permit moves ([`Precedence::Reclaim`]), unless a permit is
    ///    already on its way (one reclaim at a time).
    /// 2. A peer holding nothing with a request older than `local_head`: a borrow when it may
    ///    use the connection (its ticket is fenced), a reclaim otherwise.
    /// 3. Otherwise [`Precedence::Local`].
    pub fn precedence(&self, source: usize, local_head: u64, now: Instant) -> Precedence {
        let groups = &self.shared.groups;
        let mut state = self.shared.state.lock();
        let shares = self.shares(&state.order);
        let rich = self.held(source) > shares.ceil;
        let mut starving = None;
        let mut short = false;
        for (head, q) in state.order.active() {
            if q == source || !self.is_registered(q) {
                continue;
            }
            let held = self.held(q);
            if rich && held < shares.floor && self.persisted(&state.order, q, now) {
                short = true;
                break;
            }
            if held == 0 && head < local_head && starving.is_none() {
                starving = Some((head, q));
            }
        }
        let permit_coming = state.ledger.permit_coming();
        if short && !permit_coming {
            state.ledger.reclaim_started();
            return Precedence::Reclaim;
        }
        let Some((head, q)) = starving else {
            return Precedence::Local;
        };
        if groups[q] == groups[source] {
            let id = state.order.fence(head, q);
            self.update_hints(&state);
            return Precedence::Borrow(q, id);
        }
        if permit_coming {
            // A free permit, or one a reclaim already set moving, reaches a partition below its
            // share first: closing another connection for it would only churn.
            return Precedence::Local;
        }
        state.ledger.reclaim_started();
        Precedence::Reclaim
    }

    /// Claims the oldest ticket of `source`'s group other than `source`'s own, for a
    /// connection of `source` that nobody in `source` waits for (a borrow: the connection
    /// would otherwise idle while an eligible request waits). The ticket is fenced until the
    /// receiving cell acks.
    pub fn claim_ticket_in_group(&self, source: usize) -> Option<(usize, DeliveryId)> {
        let groups = &self.shared.groups;
        let group = groups[source];
        let mut state = self.shared.state.lock();
        let (head, partition) = state
            .order
            .active()
            .find(|&(_, p)| p != source && groups[p] == group && self.is_registered(p))?;
        let id = state.order.fence(head, partition);
        self.update_hints(&state);
        Some((partition, id))
    }

    /// Whether a connection of `source` that nobody in `source` waits for, and no peer could
    /// borrow, should close so its permit moves to a waiting partition that is owed capacity
    /// (see [`precedence`](Self::precedence)); counts the reclaim as in transit when it says so.
    pub fn should_release(&self, source: usize, now: Instant) -> bool {
        self.release_for(source, now, |_| true)
    }

    /// [`should_release`](Self::should_release), counting only partitions outside `source`'s
    /// eligibility group: for an HTTP/2 generation, which serves any number of its group's
    /// requests at once (they borrow its streams), so closing it for one of them only costs a
    /// handshake.
    pub fn should_release_across_groups(&self, source: usize, now: Instant) -> bool {
        let groups = &self.shared.groups;
        self.release_for(source, now, |q| groups[q] != groups[source])
    }

    fn release_for(&self, source: usize, now: Instant, counts: impl Fn(usize) -> bool) -> bool {
        let mut state = self.shared.state.lock();
        if state.ledger.permit_coming() {
            return false;
        }
        let shares = self.shares(&state.order);
        let owed = state.order.active().any(|(_, q)| {
            q != source
                && counts(q)
                && self.is_registered(q)
                && self.owes(&state.order, shares, (source, q), now)
        });
        if owed {
            state.ledger.reclaim_started();
        }
        owed
    }

    /// A reclaim [`should_release`](Self::should_release) counted found nothing to close (the
    /// connection closed on its own meanwhile, and its permit, already returned, settled
    /// nothing): it is no longer in transit. Otherwise a permit would count as coming for
    /// ever, and no capacity would move again.
    pub fn reclaim_abandoned(&self) {
        let mut state = self.shared.state.lock();
        state.ledger.reclaim_abandoned();
    }

    /// Whether `claimant`, on a miss with no permit free, may close an idle connection of
    /// `owner` that has been idle for less than the tolerance (a longer-idle one is spare and
    /// always may be).
    pub fn may_reclaim_from(&self, claimant: usize, owner: usize, now: Instant) -> bool {
        let state = self.shared.state.lock();
        let shares = self.shares(&state.order);
        self.owes(&state.order, shares, (owner, claimant), now)
    }
}
