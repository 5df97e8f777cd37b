//! What every partition and connection of one pool shares: policy, connector, time, listener.

use std::fmt;
use std::time::Duration;

use hashbrown::HashMap;
use pool_core::cell::{CellAdmission, CellMembership, Ended};
use pool_core::connection::ConnectionRecord;
use pool_core::sync::OwnLine;
use pool_core::sync::atomic::{AtomicU64, Ordering};
use pool_core::sync::{Arc, Mutex};
use pool_core::{
    AsyncSleep, ConnectionEventListener, ConnectionId, OriginKey, ResendReason, TimeSource,
};
use pool_h2::H2Settings;
use pool_tls::Connect;

use crate::cell::PoolTypes;
use crate::forward::ForwardSharing;
use crate::idle_cap::IdleCap;
use crate::lesson_book::LessonBook;
use crate::lifetime::Lifetime;
use crate::protocol::ProtocolPolicy;

/// A joined admission: see [`Shared::admission_for`].
pub(crate) type Joined = CellMembership<PoolTypes>;

/// The per-origin bound, when `max_connections_per_host` is set.
#[derive(Clone, Debug)]
pub(crate) struct BoundConfig {
    pub(crate) limit: usize,
    pub(crate) pending: Option<usize>,
    /// Partition index → eligibility group index under the reuse scope.
    pub(crate) groups: Vec<usize>,
    /// How long unmet demand must last before capacity moves (`placement_tolerance`).
    pub(crate) tolerance: Duration,
}

/// Connection identities are unique per process, so events of several pools never collide.
static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// Immutable pool settings plus the two pool-wide counters.
pub(crate) struct Shared {
    pub(crate) connector: Arc<dyn Connect>,
    pub(crate) protocol: ProtocolPolicy,
    pub(crate) h1: pool_h1::H1Settings,
    pub(crate) h2: H2Settings,
    pub(crate) listener: Option<Arc<dyn ConnectionEventListener>>,
    pub(crate) time: Arc<dyn TimeSource>,
    pub(crate) sleep: Arc<dyn AsyncSleep>,
    pub(crate) idle_timeout: Option<Duration>,
    /// Idle HTTP/1 connections each cell keeps at most.
    pub(crate) max_idle: usize,
    /// The pool-wide cap on idle HTTP/1 connections, if one was set.
    pub(crate) idle_cap: Option<Arc<IdleCap>>,
    /// The maximum connection lifetime, if any.
    pub(crate) lifetime: Option<Lifetime>,
    /// HTTP/2 connections per (partition, origin) of an unbounded origin.
    pub(crate) h2_connections: usize,
    /// The connect timeout for establishments no request asked for (replacements after GOAWAY).
    pub(crate) connect_timeout: Option<Duration>,
    /// The per-origin bound; `None` builds no admission machinery at all.
    pub(crate) bound: Option<BoundConfig>,
    /// The admission of every bounded origin seen so far (looked up only when a partition
    /// creates its cell for an origin, never on the request path).
    admissions: Mutex<HashMap<OriginKey, CellAdmission<PoolTypes>>>,
    /// The admission of every bounded forward route seen so far, by its proxy (see `forward`).
    route_admissions: Mutex<HashMap<OriginKey, CellAdmission<PoolTypes>>>,
    /// Which origins share a forward proxy's cells; `None` unless the pool shares them.
    forward: Option<ForwardSharing>,
    /// Each origin's (and forward route's) learners (its request quota, its idle timeout),
    /// shared by its cells in every partition (looked up only when a partition makes a cell).
    pub(crate) lessons: LessonBook,
    /// Arrival order of waiting requests; touched only on a miss. On a cache line of its own:
    /// on a busy bounded origin nearly every request waits, from every partition's thread, and
    /// the fields read on each request (the time source, the sleep) must not move with it.
    seq: OwnLine<AtomicU64>,
    /// TLS handshakes whose transport lost the ALPN convergence (another generation or flight
    /// already served its request) and closed unused.
    redundant_handshakes: AtomicU64,
    /// Requests sent again, by [`ResendReason`] (indexed by its position in `ALL`).
    resends: [AtomicU64; ResendReason::ALL.len()],
    /// Whether requests that waited are published through the `metrics` facade.
    #[cfg(feature = "metrics")]
    pub(crate) metrics: bool,
}

/// Pool-wide counters of rare events, for insight into what the pool did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolCounters {
    /// TLS handshakes that ended as losing HTTP/2 attempts: another attempt had already
    /// established (or was establishing) the cell's generation, so this transport closed
    /// without an HTTP handshake. Zero when single-flight establishment works as designed for
    /// a cold burst.
    pub redundant_handshakes: u64,
    /// Transparent re-sends of every reason: requests the server provably did not process,
    /// sent again (the sum of [`resends`](Self::resends)).
    pub transparent_retries: u64,
    /// Transparent re-sends by reason.
    pub resends: ResendCounts,
}

/// Transparent re-sends, counted by [`ResendReason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResendCounts {
    counts: [u64; ResendReason::ALL.len()],
}

impl ResendCounts {
    /// Re-sends for `reason`.
    pub fn get(&self, reason: ResendReason) -> u64 {
        self.counts[reason_index(reason)]
    }

    /// Every reason with its count, in [`ResendReason::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (ResendReason, u64)> + '_ {
        ResendReason::ALL.into_iter().zip(self.counts)
    }

    /// Re-sends of every reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

fn reason_index(reason: ResendReason) -> usize {
    ResendReason::ALL
        .iter()
        .position(|r| *r == reason)
        .expect("ALL lists every reason")
}

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        connector: Arc<dyn Connect>,
        protocol: ProtocolPolicy,
        h1: pool_h1::H1Settings,
        h2: H2Settings,
        listener: Option<Arc<dyn ConnectionEventListener>>,
        time: Arc<dyn TimeSource>,
        sleep: Arc<dyn AsyncSleep>,
        idle_timeout: Option<Duration>,
        lifetime: Option<Lifetime>,
        connect_timeout: Option<Duration>,
        bound: Option<BoundConfig>,
    ) -> Shared {
        let h2_connections = h2
            .max_connections
            .unwrap_or(pool_core::cell::DEFAULT_H2_CONNECTIONS);
        Shared {
            connector,
            protocol,
            h1,
            h2,
            listener,
            time,
            sleep,
            idle_timeout,
            max_idle: usize::MAX,
            idle_cap: None,
            lifetime,
            h2_connections,
            connect_timeout,
            bound,
            admissions: Mutex::new(HashMap::new()),
            route_admissions: Mutex::new(HashMap::new()),
            forward: None,
            lessons: LessonBook::default(),
            seq: OwnLine::default(),
            redundant_handshakes: AtomicU64::new(0),
            resends: Default::default(),
            #[cfg(feature = "metrics")]
            metrics: false,
        }
    }

    /// Lets the origins forwarded to one proxy share its cells (see `forward`).
    pub(crate) fn with_forward_sharing(mut self, forward: Option<ForwardSharing>) -> Shared {
        self.forward = forward;
        self
    }

    /// The forward route `origin` shares with other origins, when the pool shares them.
    pub(crate) fn forward_route(&self, origin: &OriginKey) -> Option<OriginKey> {
        self.forward
            .as_ref()?
            .route(origin, self.protocol.mode_for(origin))
    }

    /// Keeps at most `max` idle HTTP/1 connections per cell.
    pub(crate) fn with_max_idle(mut self, max: usize) -> Shared {
        self.max_idle = max;
        self
    }

    /// Keeps at most `max` idle HTTP/1 connections in the whole pool, when set.
    pub(crate) fn with_idle_cap(mut self, max: Option<usize>) -> Shared {
        self.idle_cap = max.map(|max| Arc::new(IdleCap::new(max)));
        self
    }

    /// Publishes waits through the `metrics` facade when `enabled`.
    #[cfg(feature = "metrics")]
    pub(crate) fn with_metrics(mut self, enabled: bool) -> Shared {
        self.metrics = enabled;
        self
    }

    pub(crate) fn count_redundant_handshake(&self) {
        self.redundant_handshakes.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_resend(&self, reason: ResendReason) {
        self.resends[reason_index(reason)].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn counters(&self) -> PoolCounters {
        let mut resends = ResendCounts::default();
        for (count, atomic) in resends.counts.iter_mut().zip(&self.resends) {
            *count = atomic.load(Ordering::Relaxed);
        }
        PoolCounters {
            redundant_handshakes: self.redundant_handshakes.load(Ordering::Relaxed),
            transparent_retries: resends.total(),
            resends,
        }
    }

    /// The admission of `origin`, created on first use, if the pool bounds its origins, with a
    /// membership that keeps it from being forgotten (see
    /// [`forget_admission_if_unused`](Self::forget_admission_if_unused)) until the caller's
    /// cell, which joins it too, exists.
    pub(crate) fn admission_for(&self, origin: &OriginKey) -> Option<Joined> {
        self.admission_in(&self.admissions, origin)
    }

    /// The admission of the forward route `route` (see `forward`), created on first use, if
    /// the pool bounds its origins. Kept apart from the origins' own: a route is keyed by its
    /// proxy, which may also be an origin of its own.
    pub(crate) fn admission_for_route(&self, route: &OriginKey) -> Option<Joined> {
        self.admission_in(&self.route_admissions, route)
    }

    /// The admission of `key` in `map`, created on first use, if the pool bounds its origins.
    /// Joined under the map's lock, which is where it would be forgotten.
    fn admission_in(
        &self,
        map: &Mutex<HashMap<OriginKey, CellAdmission<PoolTypes>>>,
        key: &OriginKey,
    ) -> Option<Joined> {
        let bound = self.bound.as_ref()?;
        let mut admissions = map.lock();
        let admission = admissions.entry(key.clone()).or_insert_with(|| {
            CellAdmission::with_tolerance(
                bound.limit,
                bound.pending,
                bound.groups.clone(),
                bound.tolerance,
            )
        });
        Some(admission.join())
    }

    /// Forgets `origin`'s admission if it is still `admission` and no member is left: every
    /// cell made for it retired or was dropped, and no lookup is about to make one (a lookup
    /// joins under the same lock). The next request to the origin makes a new one. Detached
    /// here: a retired cell may still hold the handle, but nothing reaches it through the
    /// pool any more.
    pub(crate) fn forget_admission_if_unused(
        &self,
        origin: &OriginKey,
        admission: &CellAdmission<PoolTypes>,
    ) {
        let forgotten = {
            let mut admissions = self.admissions.lock();
            match admissions.get(origin) {
                Some(held) if held.same(admission) && held.members() == 0 => {
                    admissions.remove(origin)
                }
                _ => None,
            }
        };
        if let Some(forgotten) = forgotten {
            forgotten.detach();
            #[cfg(feature = "metrics")]
            if self.metrics {
                crate::metrics::admission_forgotten(origin, forgotten.limit());
            }
        }
    }

    /// The admission of `origin` if one was created.
    pub(crate) fn existing_admission(
        &self,
        origin: &OriginKey,
    ) -> Option<CellAdmission<PoolTypes>> {
        self.admissions.lock().get(origin).cloned()
    }

    /// Every admission, the routes' included (for teardown).
    pub(crate) fn admissions(&self) -> Vec<CellAdmission<PoolTypes>> {
        let mut all: Vec<_> = self.admissions.lock().values().cloned().collect();
        all.extend(self.route_admissions.lock().values().cloned());
        all
    }

    /// A request's place in line, kept for its re-sends (see `CellEntry::acquire`): the
    /// number of the last waiter before it came, without taking a number. Every waiter that
    /// comes later gets a higher one, and a waiter with the same number (the one before) stays
    /// ahead of it.
    pub(crate) fn place_in_line(&self) -> u64 {
        self.seq.0.load(Ordering::Relaxed).saturating_sub(1)
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.0.fetch_add(1, Ordering::Relaxed)
    }

    /// What a cell's request-quota learner hears of the connection of `record`, which
    /// carried `served` requests its server processed (`cut`: the server cut it off). The
    /// newest id is the largest given out so far: ids grow with the order connections finish
    /// their handshakes in.
    pub(crate) fn ended(&self, record: &ConnectionRecord, served: u64, cut: bool) -> Ended {
        Ended {
            served,
            cut,
            id: record.info().id().as_u64(),
            newest: NEXT_CONNECTION_ID.load(Ordering::Relaxed) - 1,
        }
    }

    pub(crate) fn next_connection_id(&self) -> ConnectionId {
        ConnectionId::from_u64(NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed))
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("protocol", &self.protocol)
            .field("idle_timeout", &self.idle_timeout)
            .field("h2", &self.h2)
            .field("bound", &self.bound)
            .field("bounded_origins", &self.admissions.lock().len())
            .field("idle_cap", &self.idle_cap)
            .finish_non_exhaustive()
    }
}
