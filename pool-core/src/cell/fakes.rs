//! Test fakes for the cell, shared by the cell's unit tests and the loom models: protocol types
//! that only carry a record, a fixed clock, and a rig that records launches instead of
//! performing them.

use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{Acquire, Cell, CellAdmission, CellHooks, CellPermit, CellTypes, CellWaiter};
use super::{EstablishMode, Launch, PooledH1, PooledH2};
use crate::connection::ConnectionRecord;
use crate::events::{ConnectionId, ConnectionInfo, Protocol};
use crate::origin::OriginKey;
use crate::partition::PartitionId;
use crate::stats::{Gauge, Gauges};
use crate::sync::Arc;
use crate::time::TimeSource;
use crate::waiter::Requirement;

/// The protocol types of the fakes.
pub(crate) struct Fake;

/// An HTTP/1 connection: a record and whether hyper would call it open.
pub(crate) struct FakeH1 {
    pub(crate) record: Arc<ConnectionRecord>,
    pub(crate) open: bool,
}

/// An HTTP/2 generation: a record, a switch for whether it accepts streams, and its streams.
#[derive(Clone)]
pub(crate) struct FakeH2 {
    pub(crate) record: Arc<ConnectionRecord>,
    pub(crate) accepting: std::sync::Arc<AtomicBool>,
    pub(crate) streams: std::sync::Arc<FakeStreams>,
}

/// The streams of a fake generation: how many are taken and the peer's limit (`usize::MAX`
/// until known).
#[derive(Debug)]
pub(crate) struct FakeStreams {
    pub(crate) taken: AtomicUsize,
    pub(crate) limit: AtomicUsize,
    /// The request quota its cell gave it (`u64::MAX`: none).
    pub(crate) quota: AtomicU64,
}

impl Default for FakeStreams {
    fn default() -> Self {
        FakeStreams {
            taken: AtomicUsize::new(0),
            limit: AtomicUsize::new(usize::MAX),
            quota: AtomicU64::new(u64::MAX),
        }
    }
}

impl FakeH2 {
    /// The peer's limit becomes known.
    pub(crate) fn set_limit(&self, limit: usize) {
        self.streams.limit.store(limit, Ordering::SeqCst);
    }

    /// Streams reserved or in use.
    pub(crate) fn taken(&self) -> usize {
        self.streams.taken.load(Ordering::SeqCst)
    }

    /// The request quota its cell gave it, if any.
    pub(crate) fn quota(&self) -> Option<u64> {
        let quota = self.streams.quota.load(Ordering::SeqCst);
        (quota != u64::MAX).then_some(quota)
    }

    /// A stream ends.
    pub(crate) fn end_stream(&self) {
        self.streams.taken.fetch_sub(1, Ordering::SeqCst);
    }
}

impl PooledH1 for FakeH1 {
    fn record(&self) -> &Arc<ConnectionRecord> {
        &self.record
    }
    fn is_open(&self) -> bool {
        self.open
    }
}

impl PooledH2 for FakeH2 {
    fn record(&self) -> &Arc<ConnectionRecord> {
        &self.record
    }
    fn is_accepting(&self) -> bool {
        self.accepting.load(Ordering::SeqCst) && !self.record.is_closed()
    }
    fn try_reserve(&self) -> bool {
        let limit = self.streams.limit.load(Ordering::SeqCst);
        self.streams
            .taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                (t < limit).then_some(t + 1)
            })
            .is_ok()
    }
    fn unreserve(&self) {
        self.end_stream();
    }
    fn unreserve_quietly(&self) {
        self.end_stream();
    }
    fn is_full(&self) -> bool {
        self.stream_limit()
            .is_some_and(|limit| self.taken() >= limit)
    }
    fn has_streams(&self) -> bool {
        self.taken() > 0
    }
    fn stream_limit(&self) -> Option<usize> {
        let limit = self.streams.limit.load(Ordering::SeqCst);
        (limit != usize::MAX).then_some(limit)
    }
    fn assume_stream_limit(&self, limit: usize) {
        let _ = self.streams.limit.compare_exchange(
            usize::MAX,
            limit,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
    fn limit_requests(&self, quota: u64) {
        self.streams.quota.store(quota, Ordering::SeqCst);
    }
}

impl CellTypes for Fake {
    type H1 = FakeH1;
    type H2 = FakeH2;
    type Error = &'static str;
}

/// A clock that reads the instant the test set (it starts at its creation).
#[derive(Debug)]
pub(crate) struct FixedTime(StdMutex<Instant>);

impl FixedTime {
    pub(crate) fn new() -> FixedTime {
        FixedTime(StdMutex::new(Instant::now()))
    }

    /// Moves the clock to `at`.
    pub(crate) fn set(&self, at: Instant) {
        *self.0.lock().unwrap() = at;
    }
}

impl TimeSource for FixedTime {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap()
    }
}

/// One recorded launch: the waiter, the kind, and the permit it was given.
pub(crate) type LaunchRecord = (Arc<CellWaiter<Fake>>, Launch, Option<CellPermit<Fake>>);
/// The launches of one or more cells, in order.
pub(crate) type Launched = std::sync::Arc<StdMutex<Vec<LaunchRecord>>>;

/// A cell whose launches are recorded (into `launched`) instead of performed.
pub(crate) fn recording_cell(
    mode: EstablishMode,
    idle: Option<Duration>,
    admission: Option<(CellAdmission<Fake>, usize)>,
    launched: &Launched,
    armed: Option<std::sync::Arc<StdMutex<Vec<Instant>>>>,
) -> Arc<Cell<Fake>> {
    recording_cell_with_clock(
        mode,
        idle,
        admission,
        launched,
        armed,
        std::sync::Arc::new(FixedTime::new()),
        usize::MAX,
    )
}

/// [`recording_cell`] reading `clock`, keeping at most `max_idle` idle connections.
pub(crate) fn recording_cell_with_clock(
    mode: EstablishMode,
    idle: Option<Duration>,
    admission: Option<(CellAdmission<Fake>, usize)>,
    launched: &Launched,
    armed: Option<std::sync::Arc<StdMutex<Vec<Instant>>>>,
    clock: std::sync::Arc<FixedTime>,
    max_idle: usize,
) -> Arc<Cell<Fake>> {
    let log = launched.clone();
    let hooks = CellHooks {
        launch: std::sync::Arc::new(move |w, l, lease| log.lock().unwrap().push((w, l, lease))),
        arm_expiry: armed.map(|arm_log| {
            std::sync::Arc::new(move |at| arm_log.lock().unwrap().push(at)) as super::ArmExpiry
        }),
        went_idle: None,
        time: clock,
    };
    let bounded = admission.clone();
    let cell = Arc::new(
        Cell::new(mode, idle, Arc::new(Gauges::default()), hooks, admission)
            .with_max_idle(max_idle),
    );
    if let Some((admission, partition)) = bounded {
        admission.register(partition, cell.clone());
    }
    cell
}

/// A bounded HTTP/1 cell whose launches are recorded, not yet registered with its admission
/// (as the pool's cell is between entering its partition's map and registering): its
/// requests may publish before the admission can deliver to it.
pub(crate) fn unregistered_cell(
    admission: &CellAdmission<Fake>,
    partition: usize,
    launched: &Launched,
) -> Arc<Cell<Fake>> {
    let log = launched.clone();
    let hooks = CellHooks {
        launch: std::sync::Arc::new(move |w, l, lease| log.lock().unwrap().push((w, l, lease))),
        arm_expiry: None,
        went_idle: None,
        time: std::sync::Arc::new(FixedTime::new()),
    };
    Arc::new(Cell::new(
        EstablishMode::Http1,
        Some(Duration::from_secs(90)),
        Arc::new(Gauges::default()),
        hooks,
        Some((admission.clone(), partition)),
    ))
}

/// A cell whose launches and expiry requests are recorded.
pub(crate) struct Rig {
    pub(crate) cell: Arc<Cell<Fake>>,
    pub(crate) launched: Launched,
    pub(crate) armed: std::sync::Arc<StdMutex<Vec<Instant>>>,
    /// The cell's clock (for the few transitions that read it).
    pub(crate) clock: std::sync::Arc<FixedTime>,
}

impl Rig {
    pub(crate) fn new(mode: EstablishMode) -> Rig {
        Rig::with(mode, Some(Duration::from_secs(90)), None)
    }

    /// [`Rig::new`], its cell learning the HTTP/2 request quota with `learner` (as the pool's
    /// cells of one origin in different partitions share theirs).
    pub(crate) fn sharing_quota(mode: EstablishMode, learner: Arc<super::QuotaLearner>) -> Rig {
        let Rig {
            cell,
            launched,
            armed,
            clock,
        } = Rig::new(mode);
        let Ok(cell) = Arc::try_unwrap(cell) else {
            panic!("nothing else holds a new cell yet")
        };
        Rig {
            cell: Arc::new(cell.with_request_quota_learner(learner)),
            launched,
            armed,
            clock,
        }
    }

    /// The cell's clock, read now.
    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }

    pub(crate) fn with(
        mode: EstablishMode,
        idle: Option<Duration>,
        admission: Option<(CellAdmission<Fake>, usize)>,
    ) -> Rig {
        Rig::keeping(mode, idle, admission, usize::MAX)
    }

    /// [`Rig::with`], keeping at most `max_idle` idle HTTP/1 connections.
    pub(crate) fn keeping(
        mode: EstablishMode,
        idle: Option<Duration>,
        admission: Option<(CellAdmission<Fake>, usize)>,
        max_idle: usize,
    ) -> Rig {
        let launched = Launched::default();
        let armed: std::sync::Arc<StdMutex<Vec<Instant>>> = std::sync::Arc::default();
        let clock = std::sync::Arc::new(FixedTime::new());
        let cell = recording_cell_with_clock(
            mode,
            idle,
            admission,
            &launched,
            Some(armed.clone()),
            clock.clone(),
            max_idle,
        );
        Rig {
            cell,
            launched,
            armed,
            clock,
        }
    }

    /// The launches so far, without their permits (those are dropped, i.e. returned).
    pub(crate) fn launches(&self) -> Vec<(Arc<CellWaiter<Fake>>, Launch)> {
        self.launched
            .lock()
            .unwrap()
            .drain(..)
            .map(|(w, l, _)| (w, l))
            .collect()
    }

    /// The launches so far, of which the first must be a flight: its identity.
    pub(crate) fn first_flight(&self) -> super::FlightId {
        match self.launches().first() {
            Some((_, Launch::Flight(id))) => *id,
            other => panic!("expected a flight first, got {other:?}"),
        }
    }

    /// The launches so far, keeping their permits.
    pub(crate) fn launches_with_permits(&self) -> Vec<LaunchRecord> {
        std::mem::take(&mut *self.launched.lock().unwrap())
    }

    pub(crate) fn wait(
        &self,
        requirement: Requirement,
        seq: u64,
        now: Instant,
    ) -> Arc<CellWaiter<Fake>> {
        wait(&self.cell, requirement, seq, now)
    }
}

/// A request that must miss in `cell`.
pub(crate) fn wait(
    cell: &Cell<Fake>,
    requirement: Requirement,
    seq: u64,
    now: Instant,
) -> Arc<CellWaiter<Fake>> {
    match cell.acquire(requirement, None, || seq, || now) {
        Acquire::Wait(w) => w,
        other => panic!("expected a miss, got {other:?}"),
    }
}

pub(crate) static IDS: AtomicU64 = AtomicU64::new(1);

/// The report of a connection established after every one before it, which ended after
/// `served` requests (`cut` when its server cut it off), as when each replaces the last.
pub(crate) fn ended(served: u64, cut: bool) -> super::Ended {
    let id = IDS.fetch_add(1, Ordering::Relaxed);
    super::Ended {
        served,
        cut,
        id,
        newest: id,
    }
}

/// A record of `cell`, installed with an optional permit. Connections the tests create out of
/// thin air still pass through `establishing`.
pub(crate) fn record_with_permit(
    cell: &Cell<Fake>,
    protocol: Protocol,
    permit: Option<CellPermit<Fake>>,
) -> Arc<ConnectionRecord> {
    record_retiring(cell, protocol, permit, None)
}

/// A record of `cell` that reaches its maximum lifetime at `retires_at`.
pub(crate) fn record_retiring(
    cell: &Cell<Fake>,
    protocol: Protocol,
    permit: Option<CellPermit<Fake>>,
    retires_at: Option<Instant>,
) -> Arc<ConnectionRecord> {
    let origin = OriginKey::from_uri(&"https://cell.test".parse().unwrap()).unwrap();
    let id = ConnectionId::from_u64(IDS.fetch_add(1, Ordering::Relaxed));
    let info = ConnectionInfo::new(id, origin, PartitionId::ANONYMOUS, protocol)
        .with_retirement(retires_at);
    if cell.gauges().get(Gauge::Establishing) == 0 {
        cell.gauges().inc(Gauge::Establishing);
    }
    ConnectionRecord::install(
        info,
        cell.gauges().clone(),
        None,
        permit.map(|p| Box::new(p) as Box<dyn crate::connection::Releasable>),
    )
}

/// A record of `cell`.
pub(crate) fn record(cell: &Cell<Fake>, protocol: Protocol) -> Arc<ConnectionRecord> {
    record_with_permit(cell, protocol, None)
}

/// An open HTTP/1 connection of `cell`, installed `ACTIVE`.
pub(crate) fn h1(cell: &Cell<Fake>) -> FakeH1 {
    FakeH1 {
        record: record(cell, Protocol::Http1),
        open: true,
    }
}

/// An accepting HTTP/2 generation of `cell`.
pub(crate) fn h2(cell: &Cell<Fake>) -> FakeH2 {
    FakeH2 {
        record: record(cell, Protocol::Http2),
        accepting: std::sync::Arc::new(AtomicBool::new(true)),
        streams: std::sync::Arc::default(),
    }
}
