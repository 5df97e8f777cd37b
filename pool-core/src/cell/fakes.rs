//! Test fakes for the cell, shared by the cell's unit tests and the loom models: protocol types
//! that only carry a record, a fixed clock, and a rig that records launches instead of
//! performing them.

use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// An HTTP/2 generation: a record and a switch for whether it accepts streams.
#[derive(Clone)]
pub(crate) struct FakeH2 {
    pub(crate) record: Arc<ConnectionRecord>,
    pub(crate) accepting: std::sync::Arc<AtomicBool>,
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
}

impl CellTypes for Fake {
    type H1 = FakeH1;
    type H2 = FakeH2;
    type Error = &'static str;
}

/// A clock that always reads the same instant.
#[derive(Debug)]
pub(crate) struct FixedTime(pub(crate) Instant);

impl TimeSource for FixedTime {
    fn now(&self) -> Instant {
        self.0
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
    let log = launched.clone();
    let hooks = CellHooks {
        launch: std::sync::Arc::new(move |w, l, lease| log.lock().unwrap().push((w, l, lease))),
        arm_expiry: armed.map(|arm_log| {
            std::sync::Arc::new(move |at| arm_log.lock().unwrap().push(at)) as super::ArmExpiry
        }),
        time: std::sync::Arc::new(FixedTime(Instant::now())),
    };
    let bounded = admission.clone();
    let cell = Arc::new(Cell::new(
        mode,
        idle,
        Arc::new(Gauges::default()),
        hooks,
        admission,
    ));
    if let Some((admission, partition)) = bounded {
        admission.register(partition, cell.clone());
    }
    cell
}

/// A cell whose launches and expiry requests are recorded.
pub(crate) struct Rig {
    pub(crate) cell: Arc<Cell<Fake>>,
    pub(crate) launched: Launched,
    pub(crate) armed: std::sync::Arc<StdMutex<Vec<Instant>>>,
}

impl Rig {
    pub(crate) fn new(mode: EstablishMode) -> Rig {
        Rig::with(mode, Some(Duration::from_secs(90)), None)
    }

    pub(crate) fn with(
        mode: EstablishMode,
        idle: Option<Duration>,
        admission: Option<(CellAdmission<Fake>, usize)>,
    ) -> Rig {
        let launched = Launched::default();
        let armed: std::sync::Arc<StdMutex<Vec<Instant>>> = std::sync::Arc::default();
        let cell = recording_cell(mode, idle, admission, &launched, Some(armed.clone()));
        Rig {
            cell,
            launched,
            armed,
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
    }
}
