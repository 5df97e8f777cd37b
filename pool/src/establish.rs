//! Establishment: from a launch decision to an installed connection, on the owner partition.
//!
//! ```text
//!  launch (request's task) ──submit unpolled──► owner partition runtime:
//!     connect (resolve, TCP, TLS/ALPN)            ConnectError      ─► cell.fail
//!     wrap I/O (physically_live += 1)
//!     Auto mode: cell.converge(ALPN) ─► Join: drop the transport unhandshaken
//!                                     ─► Http1 (the cell launches the flight's other waiters)
//!                                     ─► LeadFlight
//!     HTTP/1 handshake ─► record (connection_created) ─► driver task ─► cell.install_h1
//!     HTTP/2 handshake ─► record (connection_created) ─► driver task ─► cell.publish_h2
//! ```
//!
//! The submitted future carries a [`LaunchGuard`]: if the spawner drops it unpolled or half way
//! (its runtime shut down), the guard fails the waiting request and every request that depended
//! on the flight, and returns the `establishing` count. Once submitted, an establishment belongs
//! to the pool, not to the request that launched it: if that request goes away, the connection
//! still gets established and serves the next waiter or the idle set.
//!
//! A connection's driver runs on the same runtime. Its completion closes the record
//! (`ProtocolClosed`, with hyper's error as the source); being dropped before completion, which
//! only happens when the runtime shuts down, closes it as `OwnerRuntimeShutdown`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use pin_project_lite::pin_project;
use pool_core::admission::CapacityLease;
use pool_core::cell::{Converge, EstablishMode, FlightId, Launch};
use pool_core::connection::{ConnectionRecord, PhysicalLink, Releasable};
use pool_core::sync::Arc;
use pool_core::{CloseReason, ConnectionInfo, ConnectionTimings, Protocol, TlsDetails};
use pool_h1::{H1Connection, H1Home, ParkingSpot};
use pool_h2::{H2Generation, PartitionExecutor, PoolTimer};
use pool_tls::{ConnectTarget, Connected, Negotiated, TokioIo};
use tracing::Instrument;

use crate::body::RequestBody;
use crate::cell::{CellEntry, PoolTypes, Waiter};
use crate::error::Error;
use crate::io::TrackedIo;
use crate::protocol::alpn_for;

impl CellEntry {
    /// Submits an establishment for `waiter` to the owner partition; `lease` is its permit
    /// when the origin is bounded.
    pub(crate) fn launch(
        self: &Arc<Self>,
        waiter: Arc<Waiter>,
        launch: Launch,
        lease: Option<CapacityLease<PoolTypes>>,
    ) {
        let connect_timeout = waiter.connect_timeout();
        let span =
            tracing::debug_span!("establish", origin = %self.origin, partition = %self.runtime.id);
        let guard = LaunchGuard {
            entry: self.clone(),
            waiter,
            launch,
            lease,
            armed: true,
        };
        self.runtime
            .spawn(Box::pin(establish(guard, connect_timeout).instrument(span)));
    }
}

/// Owns one launch until a cell transition takes over its waiter and `establishing` count.
struct LaunchGuard {
    entry: Arc<CellEntry>,
    waiter: Arc<Waiter>,
    launch: Launch,
    /// The permit of a bounded origin, until the connection's record takes it. Dropped with
    /// the guard (a failed, joined or abandoned establishment), it returns to admission.
    lease: Option<CapacityLease<PoolTypes>>,
    /// Cleared once a cell transition (install, publish, join) accounted for the launch.
    armed: bool,
}

impl LaunchGuard {
    fn disarm(&mut self) {
        self.armed = false;
    }

    /// Reports the failure and fails whoever waited on this launch.
    fn fail(&mut self, error: Error) {
        self.armed = false;
        tracing::debug!(origin = %self.entry.origin, partition = %self.entry.runtime.id, %error, "establishment failed");
        if let Some(listener) = &self.entry.shared.listener {
            pool_core::events::notify("connection_failed", || {
                listener.connection_failed(&self.entry.origin, self.entry.runtime.id, &error)
            });
        }
        self.entry.cell.fail(self.launch, &self.waiter, error);
    }
}

impl Drop for LaunchGuard {
    fn drop(&mut self) {
        if self.armed {
            self.fail(Error::canceled(
                "the owner partition dropped the connection's establishment (runtime shut down?)",
            ));
        }
    }
}

async fn establish(mut guard: LaunchGuard, connect_timeout: Option<Duration>) {
    if let Err(error) = establish_inner(&mut guard, connect_timeout).await {
        guard.fail(error);
    }
}

async fn establish_inner(
    guard: &mut LaunchGuard,
    connect_timeout: Option<Duration>,
) -> Result<(), Error> {
    let entry = guard.entry.clone();
    let shared = &entry.shared;
    let start = shared.time.now();
    let mode = entry.mode();
    let target = ConnectTarget {
        origin: entry.origin.clone(),
        alpn: alpn_for(mode),
        interface: entry.runtime.interface.clone(),
        connect_timeout,
    };
    let (io, connected) = shared
        .connector
        .connect(target)
        .await
        .map_err(Error::connect)?;
    let link = PhysicalLink::new(entry.cell.gauges().clone());
    let io = TrackedIo::new(io, link.clone());
    let protocol = negotiated(mode, &connected)?;
    if mode == EstablishMode::Auto {
        match entry.cell.converge(guard.launch, &guard.waiter, protocol) {
            Converge::Join => {
                // Another generation or flight serves this waiter; the transport closes here,
                // before any handshake, converge returned the `establishing` count, and the
                // permit (if any) goes back as the guard drops.
                guard.disarm();
                if connected.is_tls() {
                    shared.count_redundant_handshake();
                }
                return Ok(());
            }
            // The cell launched attempts for the flight's other waiters, if it was a flight.
            Converge::Http1 => {}
            Converge::LeadFlight(flight) => guard.launch = Launch::Flight(flight),
        }
    }
    let conn = Established {
        io,
        link,
        meta: EstablishedMeta { connected, start },
    };
    match protocol {
        Protocol::Http1 => handshake_h1(guard, conn).await,
        Protocol::Http2 => handshake_h2(guard, conn).await,
    }
}

/// A transport ready for its HTTP handshake.
struct Established {
    io: TrackedIo,
    link: Arc<PhysicalLink>,
    meta: EstablishedMeta,
}

/// What describes a transport, kept after its I/O moves into the handshake.
struct EstablishedMeta {
    connected: Connected,
    start: Instant,
}

/// The protocol a new transport speaks, given the cell's mode and the ALPN result.
fn negotiated(mode: EstablishMode, connected: &Connected) -> Result<Protocol, Error> {
    match (mode, connected.alpn) {
        (EstablishMode::Http1, _) => Ok(Protocol::Http1),
        (EstablishMode::Http2, _) if !connected.is_tls() => Ok(Protocol::Http2),
        (EstablishMode::Http2, Some(Negotiated::Http2)) => Ok(Protocol::Http2),
        (EstablishMode::Http2, _) => Err(Error::unsupported_version(
            "HTTP/2 is required and the server did not negotiate h2 over ALPN",
        )),
        (EstablishMode::Auto, Some(Negotiated::Http2)) => Ok(Protocol::Http2),
        (EstablishMode::Auto, _) => Ok(Protocol::Http1),
    }
}

fn connection_info(
    entry: &CellEntry,
    protocol: Protocol,
    conn: &EstablishedMeta,
) -> ConnectionInfo {
    let shared = &entry.shared;
    let timings = ConnectionTimings {
        resolve: conn.connected.timings.resolve,
        connect: conn.connected.timings.connect,
        tls: conn.connected.timings.tls,
        handshake: shared.time.now().saturating_duration_since(conn.start),
    };
    let alpn = conn.connected.alpn.map(|n| match n {
        Negotiated::Http1 => "http/1.1",
        Negotiated::Http2 => "h2",
    });
    let tls = conn.connected.tls.as_ref().map(|t| TlsDetails {
        version: t.version,
        cipher_suite: t.cipher_suite,
        alpn,
    });
    ConnectionInfo::new(
        shared.next_connection_id(),
        entry.origin.clone(),
        entry.runtime.id,
        protocol,
    )
    .with_addrs(
        Some(conn.connected.local_addr),
        Some(conn.connected.remote_addr),
    )
    .with_tls(tls)
    .with_timings(timings)
}

async fn handshake_h1(guard: &mut LaunchGuard, conn: Established) -> Result<(), Error> {
    let entry = guard.entry.clone();
    let shared = &entry.shared;
    let Established { io, link, meta } = conn;
    let (sender, driver) = shared
        .h1
        .handshake::<_, RequestBody>(TokioIo::new(io))
        .await
        .map_err(Error::handshake)?;
    let info = connection_info(&entry, Protocol::Http1, &meta);
    let permit = guard
        .lease
        .take()
        .map(|lease| Box::new(lease) as Box<dyn Releasable>);
    let record = ConnectionRecord::install(
        info,
        entry.cell.gauges().clone(),
        shared.listener.clone(),
        permit,
    );
    link.attach(&record);
    let spot = Arc::new(ParkingSpot::default());
    let driver = Driver::new(driver.with_upgrades(), record.clone(), None).parking(spot.clone());
    entry.runtime.spawn(Box::pin(driver));
    let home: Arc<dyn H1Home<RequestBody>> = entry.clone();
    let h1 = H1Connection::new(sender, record.clone(), home, spot);
    guard.disarm();
    let handover = Handover {
        entry: entry.clone(),
        waiter: guard.waiter.clone(),
        item: Some(Item::H1(h1)),
    };
    record.announce();
    drop(handover);
    Ok(())
}

async fn handshake_h2(guard: &mut LaunchGuard, conn: Established) -> Result<(), Error> {
    let entry = guard.entry.clone();
    let shared = &entry.shared;
    let Launch::Flight(flight) = guard.launch else {
        // Every HTTP/2 establishment runs as the cell's flight (a miss in an HTTP/2 cell
        // starts one, and an attempt that negotiates h2 converges into one).
        return Err(Error::canceled(
            "an HTTP/2 establishment ran outside a flight",
        ));
    };
    let mut builder = hyper::client::conn::http2::Builder::new(PartitionExecutor::new(
        entry.runtime.spawner.clone(),
    ));
    builder.timer(PoolTimer::new(shared.time.clone(), shared.sleep.clone()));
    shared.h2.apply(&mut builder);
    let Established { io, link, meta } = conn;
    let (sender, driver) = builder
        .handshake::<_, RequestBody>(TokioIo::new(io))
        .await
        .map_err(Error::handshake)?;
    let info = connection_info(&entry, Protocol::Http2, &meta);
    let permit = guard
        .lease
        .take()
        .map(|lease| Box::new(lease) as Box<dyn Releasable>);
    let record = ConnectionRecord::install(
        info,
        entry.cell.gauges().clone(),
        shared.listener.clone(),
        permit,
    );
    link.attach(&record);
    // The driver must not hold a sender: hyper shuts an HTTP/2 connection down gracefully once
    // the last sender is gone (after the cell dropped the generation and every lease ended).
    entry.runtime.spawn(Box::pin(Driver::new(
        driver,
        record.clone(),
        Some(entry.clone()),
    )));
    let generation = H2Generation::new(sender, record.clone());
    guard.disarm();
    let handover = Handover {
        entry: entry.clone(),
        waiter: guard.waiter.clone(),
        item: Some(Item::H2(generation, flight)),
    };
    record.announce();
    drop(handover);
    Ok(())
}

/// Makes a new connection visible to requests when dropped: after `connection_created` has
/// fired, or while a panicking listener unwinds the establishment task, so the waiting request
/// is served either way.
struct Handover {
    entry: Arc<CellEntry>,
    waiter: Arc<Waiter>,
    item: Option<Item>,
}

enum Item {
    H1(H1Connection<RequestBody>),
    H2(H2Generation<RequestBody>, FlightId),
}

impl Drop for Handover {
    fn drop(&mut self) {
        let now = self.entry.shared.time.now();
        match self.item.take() {
            Some(Item::H1(conn)) => {
                self.entry.cell.install_h1(conn, &self.waiter, now);
            }
            Some(Item::H2(generation, flight)) => {
                self.entry.cell.publish_h2(generation, flight, now)
            }
            None => {}
        }
    }
}

pin_project! {
    /// Drives one connection's hyper future on its owner partition and reports how it ended.
    struct Driver<F> {
        // `None` once the hyper future completed and was dropped.
        #[pin]
        conn: Option<F>,
        // Taken when the connection ends; still present at drop means the runtime dropped us.
        record: Option<Arc<ConnectionRecord>>,
        // Set for HTTP/2: the cell to retire the generation from.
        entry: Option<Arc<CellEntry>>,
        // Set for HTTP/1: where a finished exchange waits for hyper's readiness.
        spot: Option<Arc<ParkingSpot<RequestBody>>>,
    }

    impl<F> PinnedDrop for Driver<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(spot) = this.spot.take() {
                spot.clear();
            }
            if let Some(record) = this.record.take() {
                // Closed before the hyper future (and its I/O) is dropped, so this reason wins
                // over the physical close that follows.
                record.close(CloseReason::OwnerRuntimeShutdown, None);
                if let Some(entry) = this.entry.take() {
                    entry.cell.retire_h2(&record);
                }
            }
        }
    }
}

impl<F> Driver<F> {
    fn new(conn: F, record: Arc<ConnectionRecord>, entry: Option<Arc<CellEntry>>) -> Self {
        Driver {
            conn: Some(conn),
            record: Some(record),
            entry,
            spot: None,
        }
    }

    fn parking(mut self, spot: Arc<ParkingSpot<RequestBody>>) -> Self {
        self.spot = Some(spot);
        self
    }
}

impl<F> Future for Driver<F>
where
    F: Future<Output = hyper::Result<()>>,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        let Some(conn) = this.conn.as_mut().as_pin_mut() else {
            return Poll::Ready(());
        };
        let polled = conn.poll(cx);
        if let Some(spot) = this.spot.as_ref() {
            // After hyper's poll, which is what makes a finished exchange's sender ready.
            spot.poll_parked(cx);
        }
        let result = ready!(polled);
        if let Some(spot) = this.spot.take() {
            spot.clear();
        }
        let Some(record) = this.record.take() else {
            return Poll::Ready(());
        };
        if let Err(error) = result {
            record.close(CloseReason::ProtocolClosed, Some(Box::new(error)));
        }
        // Dropping hyper's future drops the transport, which closes the record as
        // `ProtocolClosed`, unless an HTTP/1 upgrade took the transport: then the I/O lives
        // on in the caller's hands and the connection ended by being upgraded.
        this.conn.set(None);
        if !record.is_physically_closed() {
            record.close(CloseReason::Upgraded, None);
        }
        if let Some(entry) = this.entry.take() {
            entry.cell.retire_h2(&record);
        }
        Poll::Ready(())
    }
}
