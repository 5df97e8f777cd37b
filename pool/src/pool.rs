//! The pool: a fixed set of partitions, each with its own map of origin cells.

use std::fmt;
use std::time::Duration;

use hashbrown::HashMap;
use http::Uri;
use pool_core::sync::atomic::{AtomicUsize, Ordering};
use pool_core::sync::{Arc, RwLock};
use pool_core::{CloseReason, OriginKey, OriginLookup, OriginStats, PartitionId};
use pool_tls::TlsConnector;

use crate::builder::Builder;
use crate::cell::CellEntry;
use crate::client::Client;
use crate::error::Error;
use crate::partition::PartitionRuntime;
use crate::retry::RetryPolicy;
use crate::shared::{Joined, PoolCounters, Shared};

/// One (origin, partition) cell's gauges, for the metrics export.
#[cfg(feature = "metrics")]
pub(crate) struct Reading {
    pub(crate) origin: OriginKey,
    pub(crate) partition: PartitionId,
    pub(crate) row: pool_core::PartitionStats,
    pub(crate) peaks: pool_core::Peaks,
}

/// What [`ConnectionPool::stats`] accepts as an origin: an [`OriginKey`], a [`Uri`] (its scheme
/// and authority), or text that parses as one (`"https://example.com"`, a path ignored).
pub trait ToOrigin {
    /// The origin, or `None` when this names none the pool could serve.
    fn to_origin(&self) -> Option<OriginKey>;
}

impl ToOrigin for OriginKey {
    fn to_origin(&self) -> Option<OriginKey> {
        Some(self.clone())
    }
}

impl ToOrigin for Uri {
    fn to_origin(&self) -> Option<OriginKey> {
        OriginKey::from_uri(self).ok()
    }
}

impl ToOrigin for str {
    fn to_origin(&self) -> Option<OriginKey> {
        self.parse::<Uri>().ok()?.to_origin()
    }
}

impl ToOrigin for String {
    fn to_origin(&self) -> Option<OriginKey> {
        self.as_str().to_origin()
    }
}

/// An HTTP/1.1 + HTTP/2 connection pool.
///
/// Build one with [`ConnectionPool::builder`], then send requests through a [`Client`] bound to
/// one of its partitions ([`client`](Self::client) or [`client_for`](Self::client_for)).
/// Cloning the pool is cheap; all clones and clients share the same connections.
///
/// # Drop behavior
///
/// When the last `ConnectionPool` and `Client` handle is dropped, idle connections close
/// ([`CloseReason::PoolDropped`]), the partitions' maintenance tasks end, and connections that
/// are still serving a response close when it finishes instead of returning to an idle set.
#[derive(Clone)]
pub struct ConnectionPool {
    inner: Arc<PoolInner>,
}

/// How many cells a partition holds before creating another first drops its unused ones (see
/// [`PartitionState::sweep_if_grown`]).
const SWEEP_FLOOR: usize = 64;

/// One partition's origin cells. Partitions are the outer level so the structure that grows
/// with origins is partition-local: a reuse hit reads only its own partition's map.
///
/// The map does not only grow. A cell with nothing in it (no connection in any state, no
/// waiting request) is dropped once the partition has met enough new origins
/// ([`sweep_if_grown`](Self::sweep_if_grown)); the origin gets a new cell if it is asked for
/// again. A bounded origin's admission is forgotten too once its cells in every partition are
/// gone. Forward routes keep their cells.
pub(crate) struct PartitionState {
    pub(crate) runtime: Arc<PartitionRuntime>,
    /// This partition's position in the pool (its index in every origin's admission).
    index: usize,
    /// Each origin's cell. Origins that share a forward route (see `forward`) map to the
    /// route's one cell.
    cells: RwLock<HashMap<OriginKey, Arc<CellEntry>>>,
    /// The cell of each forward route, by its proxy; empty unless the pool shares them.
    routes: RwLock<HashMap<OriginKey, Arc<CellEntry>>>,
    /// The number of cells past which creating one first drops the unused ones.
    sweep_at: AtomicUsize,
}

impl PartitionState {
    pub(crate) fn new(runtime: Arc<PartitionRuntime>, index: usize) -> PartitionState {
        PartitionState {
            runtime,
            index,
            cells: RwLock::new(HashMap::new()),
            routes: RwLock::new(HashMap::new()),
            sweep_at: AtomicUsize::new(SWEEP_FLOOR),
        }
    }

    /// The cell of `uri`'s origin, created on first use. The lookup is borrowed: a request for a
    /// known origin allocates nothing here.
    pub(crate) fn cell_for(
        &self,
        uri: &Uri,
        shared: &Arc<Shared>,
    ) -> Result<Arc<CellEntry>, Error> {
        let lookup = OriginLookup::from_uri(uri).map_err(Error::invalid_uri)?;
        if let Some(entry) = self.cells.read().get(&lookup) {
            // A retired cell is about to leave the map: the origin gets a new one.
            if !entry.cell.is_retired() {
                return Ok(entry.clone());
            }
        }
        let key = lookup.to_key();
        if let Some(route) = shared.forward_route(&key) {
            let entry = self.route_cell(key.clone(), route, shared);
            // Every origin of a route maps to the route's one cell, so any two racing
            // inserts for `key` insert the same entry.
            return Ok(self.cells.write().entry(key).or_insert(entry).clone());
        }
        // Looked up before taking the map's lock: never two pool locks at once.
        let joined = shared.admission_for(&key);
        Ok(self.create(&self.cells, key.clone(), key, joined, false, shared))
    }

    /// The cell of the forward route `route`, created (for `origin`, which then names its
    /// connections) on first use.
    fn route_cell(
        &self,
        origin: OriginKey,
        route: OriginKey,
        shared: &Arc<Shared>,
    ) -> Arc<CellEntry> {
        if let Some(entry) = self.routes.read().get(&route) {
            return entry.clone();
        }
        let joined = shared.admission_for_route(&route);
        self.create(&self.routes, route, origin, joined, true, shared)
    }

    /// Makes a cell for `origin` (of a forward route if `shares_route`), with the admission
    /// `joined` if the pool bounds its origins, and publishes it in `map` under `key`. The
    /// membership keeps the admission from being forgotten until the new cell has joined it.
    fn create(
        &self,
        map: &RwLock<HashMap<OriginKey, Arc<CellEntry>>>,
        key: OriginKey,
        origin: OriginKey,
        joined: Option<Joined>,
        shares_route: bool,
        shared: &Arc<Shared>,
    ) -> Arc<CellEntry> {
        let admission = joined.as_ref().map(|joined| joined.admission().clone());
        let lessons = shared.lessons.lessons_for(&key, shares_route);
        let created = CellEntry::new(
            origin,
            self.runtime.clone(),
            shared.clone(),
            self.index,
            admission.clone(),
            lessons,
            shares_route,
        );
        drop(joined);
        self.publish(map, key, created, admission)
    }

    /// Puts `created` in `map` under `key` unless a racing request put one there first, and
    /// registers the cell that won with its admission; returns that cell.
    fn publish(
        &self,
        map: &RwLock<HashMap<OriginKey, Arc<CellEntry>>>,
        key: OriginKey,
        created: Arc<CellEntry>,
        admission: Option<pool_core::cell::CellAdmission<crate::cell::PoolTypes>>,
    ) -> Arc<CellEntry> {
        let (entry, inserted) = match map.write().entry(key) {
            hashbrown::hash_map::Entry::Occupied(mut existing)
                if existing.get().cell.is_retired() =>
            {
                existing.insert(created.clone());
                (created, true)
            }
            hashbrown::hash_map::Entry::Occupied(existing) => (existing.get().clone(), false),
            hashbrown::hash_map::Entry::Vacant(vacant) => (vacant.insert(created).clone(), true),
        };
        if let (true, Some(admission)) = (inserted, admission) {
            admission.register(self.index, entry.cell.clone());
        }
        if inserted && !entry.shares_route {
            self.sweep_if_grown(&entry);
        }
        entry
    }

    /// Drops the partition's unused cells once it holds more than `sweep_at`, then sets
    /// `sweep_at` to twice the cells left (at least [`SWEEP_FLOOR`]), so a sweep's work is paid
    /// for by the cells created since the last one. `created`, the cell a request is about to
    /// use, stays.
    ///
    /// Each cell decides under its own lock whether it is unused and, if so, retires
    /// (`pool_core`'s `retire` module): a request that looked it up before then finds it
    /// retired and looks the origin up again. Only then is it taken out of the map, under the
    /// map's lock and not the cell's (never two pool locks at once), and only if the map still
    /// holds that very cell.
    fn sweep_if_grown(&self, created: &Arc<CellEntry>) {
        let candidates: Vec<(OriginKey, Arc<CellEntry>)> = {
            let cells = self.cells.read();
            if cells.len() <= self.sweep_at.load(Ordering::Relaxed) {
                return;
            }
            cells
                .iter()
                .filter(|(_, entry)| !entry.shares_route && !Arc::ptr_eq(entry, created))
                .map(|(key, entry)| (key.clone(), entry.clone()))
                .collect()
        };
        let retired: Vec<(OriginKey, Arc<CellEntry>)> = candidates
            .into_iter()
            .filter(|(_, entry)| entry.cell.retire_if_unused())
            .collect();
        let mut cells = self.cells.write();
        for (key, entry) in &retired {
            if cells.get(key).is_some_and(|held| Arc::ptr_eq(held, entry)) {
                cells.remove(key);
                #[cfg(feature = "metrics")]
                if entry.shared.metrics {
                    crate::metrics::cell_dropped(key, self.runtime.id);
                }
            }
        }
        self.sweep_at
            .store((cells.len() * 2).max(SWEEP_FLOOR), Ordering::Relaxed);
        drop(cells);
        // A bounded origin whose cells have all retired, in every partition, is forgotten
        // with its admission (after the map's lock: never two pool locks at once).
        for (key, entry) in &retired {
            if let Some(admission) = entry.cell.admission() {
                entry.shared.forget_admission_if_unused(key, admission);
            }
        }
    }

    fn cell(&self, origin: &OriginKey) -> Option<Arc<CellEntry>> {
        self.cells.read().get(origin).cloned()
    }

    /// Every cell once (a forward route's cell is in the map under each of its origins).
    fn entries(&self) -> Vec<Arc<CellEntry>> {
        let mut entries: Vec<Arc<CellEntry>> = self
            .cells
            .read()
            .values()
            .filter(|entry| !entry.shares_route)
            .cloned()
            .collect();
        entries.extend(self.routes.read().values().cloned());
        entries
    }

    /// The origins this partition has seen.
    fn origins(&self) -> Vec<OriginKey> {
        self.cells.read().keys().cloned().collect()
    }
}

/// Everything a pool owns; dropped with the last handle.
pub(crate) struct PoolInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) partitions: Vec<PartitionState>,
    /// Whether the partitions were declared (`Builder::partitions`) rather than the implicit
    /// anonymous one.
    pub(crate) explicit: bool,
    /// The default read timeout of new clients.
    pub(crate) read_timeout: Option<Duration>,
    /// The default pool timeout of new clients.
    pub(crate) pool_timeout: Option<Duration>,
    /// The default body idle timeout of new clients.
    pub(crate) body_idle_timeout: Option<Duration>,
    /// How long an HTTP/1 request with `Expect: 100-continue` holds its body back; `None`:
    /// the body goes at once.
    pub(crate) expect_continue: Option<Duration>,
    /// Whether an HTTP/1 request body goes on after a response of 300 or above came first.
    pub(crate) keep_sending_on_error: bool,
    /// Whether responses also carry their connection handle as an extension.
    pub(crate) connection_extension: bool,
    /// Which requests are sent again on their own.
    pub(crate) retry: RetryPolicy,
    /// The default connector's TLS configuration, for [`ConnectionPool::preflight`].
    pub(crate) tls: Option<TlsConnector>,
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        // Every partition and cell is closed even if a listener panics on one of them; the
        // first panic is re-raised at the end, unwinding the task that dropped the pool.
        let mut panic = None;
        for partition in &self.partitions {
            partition.runtime.close();
            for entry in partition.entries() {
                let closed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    entry.cell.close_idle(CloseReason::PoolDropped);
                }));
                if let Err(payload) = closed {
                    panic.get_or_insert(payload);
                }
            }
        }
        // Cells and admissions refer to each other; break the cycle.
        for admission in self.shared.admissions() {
            admission.detach();
        }
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
    }
}

/// Why [`ConnectionPool::client`] or [`ConnectionPool::client_for`] could not make a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientBuildError {
    message: String,
}

impl fmt::Display for ClientBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClientBuildError {}

impl ConnectionPool {
    /// Starts configuring a pool.
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) fn from_inner(inner: PoolInner) -> ConnectionPool {
        ConnectionPool {
            inner: Arc::new(inner),
        }
    }

    /// A client for the anonymous partition of a pool built without explicit partitions.
    ///
    /// # Errors
    ///
    /// When the pool was built with explicit partitions: use [`client_for`](Self::client_for).
    pub fn client(&self) -> Result<Client, ClientBuildError> {
        if self.inner.explicit {
            return Err(ClientBuildError {
                message: "this pool has explicit partitions; choose one with client_for(id)".into(),
            });
        }
        Ok(Client::new(self.inner.clone(), 0))
    }

    /// A client for the explicit partition `id`.
    ///
    /// # Errors
    ///
    /// When the pool has no partition with this identity.
    pub fn client_for(&self, id: PartitionId) -> Result<Client, ClientBuildError> {
        match self
            .inner
            .partitions
            .iter()
            .position(|p| p.runtime.id == id)
        {
            Some(index) => Ok(Client::new(self.inner.clone(), index)),
            None => Err(ClientBuildError {
                message: format!("this pool has no partition {id}"),
            }),
        }
    }

    /// The identities of the pool's partitions, in declaration order.
    pub fn partitions(&self) -> Vec<PartitionId> {
        self.inner.partitions.iter().map(|p| p.runtime.id).collect()
    }

    /// The gauges of `origin` in every partition that holds a cell for it: an [`OriginKey`], a
    /// [`Uri`] or a `&str` such as `"https://example.com"` (a path is ignored). An origin no
    /// partition holds a cell for (never seen, or its cells were dropped while they had
    /// nothing in them), or text that names no origin, has empty stats
    /// ([`OriginStats::is_empty`]).
    ///
    /// Reads are relaxed and not an atomic snapshot; see [`OriginStats`].
    pub fn stats<O: ToOrigin + ?Sized>(&self, origin: &O) -> OriginStats {
        let shared = &self.inner.shared;
        let limit = shared.bound.as_ref().map(|b| b.limit);
        let Some(origin) = origin.to_origin() else {
            return OriginStats::new(limit, Vec::new()).with_available_permits(limit);
        };
        let cells: Vec<(PartitionId, Arc<CellEntry>)> = self
            .inner
            .partitions
            .iter()
            .filter_map(|p| p.cell(&origin).map(|entry| (p.runtime.id, entry)))
            .collect();
        let rows = cells
            .iter()
            .map(|(id, entry)| (*id, entry.cell.gauges().snapshot()))
            .collect();
        let peaks = cells.iter().map(|(_, entry)| entry.cell.gauges().peaks());
        // A forward route's cells hold their route's admission, not the origin's.
        let available = shared.bound.as_ref().and_then(|_| {
            let route = cells.first().filter(|(_, entry)| entry.shares_route);
            match route {
                Some((_, entry)) => entry.cell.admission().map(|a| a.available()),
                None => shared.existing_admission(&origin).map(|a| a.available()),
            }
        });
        let quotas = cells
            .iter()
            .filter_map(|(_, entry)| entry.cell.request_quota());
        let learnt = |lesson: fn(&pool_h2::CalmHint) -> bool| {
            cells.iter().any(|(_, entry)| lesson(&entry.calm))
        };
        OriginStats::new(limit, rows)
            .with_peaks(peaks)
            .with_request_quotas(quotas)
            .with_uploads_one_at_a_time(learnt(pool_h2::CalmHint::uploads_one_at_a_time))
            .with_larger_stream_window(learnt(pool_h2::CalmHint::larger_stream_window))
            .with_sends_empty_data_frames(learnt(pool_h2::CalmHint::sends_empty_data))
            .with_server_idle_timeouts(
                cells
                    .iter()
                    .filter_map(|(_, entry)| entry.cell.server_idle_timeout()),
            )
            .with_available_permits(available.or(limit))
    }

    /// Starts the peaks ([`OriginStats::peak_admitted`], [`OriginStats::peak_waiting`]) of
    /// every origin in every partition again from the current values.
    pub fn reset_peaks(&self) {
        for partition in &self.inner.partitions {
            for entry in partition.entries() {
                entry.cell.gauges().reset_peaks();
            }
        }
    }

    /// Every (origin, partition) cell's gauges and peaks, for the metrics export.
    #[cfg(feature = "metrics")]
    pub(crate) fn readings(&self) -> Vec<Reading> {
        self.inner
            .partitions
            .iter()
            .flat_map(|p| {
                p.entries().into_iter().map(|entry| Reading {
                    origin: entry.origin.clone(),
                    partition: p.runtime.id,
                    row: entry.cell.gauges().snapshot(),
                    peaks: entry.cell.gauges().peaks(),
                })
            })
            .collect()
    }

    /// Closes every idle connection of every origin in every partition, as Go's
    /// `Transport.CloseIdleConnections` does: idle HTTP/1 connections, and HTTP/2 connections
    /// without a stream in flight. Connections serving a request are not interrupted: an
    /// HTTP/1 one goes idle when its exchange ends, as any does, and an HTTP/2 one with streams
    /// goes on accepting. Each closes with [`CloseReason::CallerClosedIdle`] and gives back its
    /// permit on a bounded origin; the next request to the origin opens a new connection.
    ///
    /// For after something the connections depend on changed (the upstream's addresses, its
    /// certificate, a network interface), or before a quiet period, so that no socket stays
    /// open for nothing.
    pub fn close_idle_connections(&self) {
        for partition in &self.inner.partitions {
            for entry in partition.entries() {
                entry.cell.close_unused();
            }
        }
    }

    /// [`close_idle_connections`](Self::close_idle_connections) for one origin only (in every
    /// partition): an [`OriginKey`], a [`Uri`] or a `&str` as for [`stats`](Self::stats). An
    /// origin the pool shares a forward proxy's connections for
    /// ([`Builder::share_forward_proxy_connections`](crate::Builder::share_forward_proxy_connections))
    /// closes the idle connections of that route, which its other origins use too. An origin no
    /// partition has seen has nothing to close.
    pub fn close_idle_connections_to<O: ToOrigin + ?Sized>(&self, origin: &O) {
        let Some(origin) = origin.to_origin() else {
            return;
        };
        for partition in &self.inner.partitions {
            if let Some(entry) = partition.cell(&origin) {
                entry.cell.close_unused();
            }
        }
    }

    /// Pool-wide counters of rare events (redundant handshakes, transparent retries).
    pub fn counters(&self) -> PoolCounters {
        self.inner.shared.counters()
    }

    /// Every origin a partition holds a cell for, sorted: every origin seen, except those
    /// whose cells were dropped while they had nothing in them (see the partition's sweep).
    pub fn origins(&self) -> Vec<OriginKey> {
        let mut origins: Vec<OriginKey> = self
            .inner
            .partitions
            .iter()
            .flat_map(|p| p.origins())
            .collect();
        origins.sort();
        origins.dedup();
        origins
    }

    /// Loads what the default TLS configuration needs (the platform's trust roots) now rather
    /// than at the first `https` connection. Idempotent; opens no socket. Does nothing for a
    /// pool with a custom connector.
    ///
    /// # Errors
    ///
    /// When the TLS configuration cannot be built.
    pub fn preflight(&self) -> Result<(), pool_tls::TlsConfigError> {
        match &self.inner.tls {
            Some(tls) => tls.preflight(),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for ConnectionPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionPool")
            .field("partitions", &self.partitions())
            .field("shared", &self.inner.shared)
            .finish()
    }
}
