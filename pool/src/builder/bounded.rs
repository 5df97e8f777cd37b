//! The builder's bounded-origin settings: the bound, the pending cap, the reuse scope and the
//! placement tolerance, and their validation.

use std::time::Duration;

use pool_core::{ConnectionReuseScope, EligibilityGroup, PartitionId};

use super::{BuildError, Builder};
use crate::partition::Partition;
use crate::shared::BoundConfig;

impl Builder {
    /// Bounds each origin (scheme, host, port) to at most `limit` admitted connections across
    /// all partitions: establishing, idle and active HTTP/1 connections plus accepting HTTP/2
    /// ones. Requests beyond it wait in arrival order for a connection to come back or a permit
    /// to free up (see the crate docs on borrow and reclaim). Unset, origins are unbounded and
    /// no admission machinery exists. `0` is rejected by [`build`](Self::build).
    ///
    /// The bound counts admitted connections, not sockets: a connection that stopped accepting
    /// work releases its permit before its socket is gone (an HTTP/2 connection draining, an
    /// upgraded connection).
    pub fn max_connections_per_host(mut self, limit: usize) -> Self {
        self.max_connections_per_host = Some(limit);
        self
    }

    /// At most `pending` requests of one bounded origin may wait for a connection; the next one
    /// fails at once with an error for which [`Error::is_saturated`] holds, touching no
    /// connection. Requires [`max_connections_per_host`](Self::max_connections_per_host).
    ///
    /// [`Error::is_saturated`]: crate::Error::is_saturated
    pub fn max_pending_per_host(mut self, pending: usize) -> Self {
        self.max_pending_per_host = Some(pending);
        self
    }

    /// Which partitions may dispatch through another partition's connections (default:
    /// partitions bound to the same network interface). See [`ConnectionReuseScope`].
    pub fn connection_reuse_scope(mut self, scope: ConnectionReuseScope) -> Self {
        self.reuse_scope = scope;
        self
    }

    /// How long a partition's unmet demand must last before a bounded origin's capacity moves
    /// to it (default [`DEFAULT_TOLERANCE`](pool_core::admission::DEFAULT_TOLERANCE), 20 ms).
    ///
    /// Each partition with a claim on a bounded origin has a share of its permits (the bound
    /// divided among the partitions that hold or want connections). A returning connection
    /// serves its own partition's oldest request first, so requests stay on the runtime that
    /// made them; a partition holding more than its share closes a returning connection (a
    /// reclaim, so the permit moves) only once a partition below its share has waited this
    /// long without a break. An idle connection becomes spare, and may be reclaimed by any
    /// waiting partition, after the same time. Shorter imbalances are served by borrowing
    /// idle connections and by the rule that a partition holding nothing gets the next
    /// connection when its request is older. Zero moves capacity at the first return after
    /// an imbalance appears; a longer tolerance trades fairness for fewer reconnects.
    pub fn placement_tolerance(mut self, tolerance: Duration) -> Self {
        self.placement_tolerance = tolerance;
        self
    }

    pub(super) fn validate_bound(
        &self,
        partitions: Option<&[Partition]>,
    ) -> Result<Option<BoundConfig>, BuildError> {
        let Some(limit) = self.max_connections_per_host else {
            if let Some(pending) = self.max_pending_per_host {
                return Err(BuildError::new(
                    "max_pending_per_host",
                    pending,
                    "only bounded origins have a pending queue; set max_connections_per_host too",
                ));
            }
            return Ok(None);
        };
        if limit == 0 {
            return Err(BuildError::new(
                "max_connections_per_host",
                0,
                "must be at least 1",
            ));
        }
        // Partitions with equal eligibility groups share a group index.
        let groups_of: Vec<EligibilityGroup> = match partitions {
            None => vec![EligibilityGroup::of(
                self.reuse_scope,
                PartitionId::ANONYMOUS,
                None,
            )],
            Some(partitions) => partitions
                .iter()
                .map(|p| EligibilityGroup::of(self.reuse_scope, p.id, p.interface.as_ref()))
                .collect(),
        };
        let groups = groups_of
            .iter()
            .map(|g| groups_of.iter().position(|other| other == g).unwrap_or(0))
            .collect();
        Ok(Some(BoundConfig {
            limit,
            pending: self.max_pending_per_host,
            groups,
            tolerance: self.placement_tolerance,
        }))
    }
}
