//! Establishment: from a launch decision to an installed connection, on the owner partition.
//!
//! ```text
//!  launch (request's task) ──submit unpolled──► owner partition runtime:
//!     transport::connect (resolve, TCP, TLS/ALPN)   ConnectError      ─► cell.fail
//!     wrap I/O (physically_live += 1)
//!     Auto mode: cell.converge(ALPN) ─► Join: drop the transport unhandshaken
//!                                     ─► Http1 (the cell launches the flight's other waiters)
//!                                     ─► LeadFlight
//!     pool_h1::handshake ─► record (connection_created) ─► driver task ─► cell.install_h1
//!     pool_h2::handshake ─► record (connection_created) ─► driver task ─► cell.publish_h2
//! ```
//!
//! This module owns placement and the order of the steps; the transport is `transport`'s, and
//! each protocol's handshake and driver belong to its crate (`pool-h1`, `pool-h2`). Both
//! protocols end the same way: the record is installed with the launch's permit, the driver is
//! spawned on the partition, and a [`Handover`] makes the connection visible to requests.
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

mod transport;

use pool_core::cell::{CellPermit, Converge, EstablishMode, FlightId, Launch};
use pool_core::connection::{ConnectionRecord, Releasable};
use pool_core::sync::Arc;
use pool_core::{ConnectTimeout, Protocol};
use pool_h1::{H1Connection, H1Home};
use pool_h2::{H2Generation, H2Home, PoolTimer};
use pool_tls::TokioIo;
use tracing::Instrument;

use crate::body::RequestBody;
use crate::cell::{CellEntry, PoolTypes, Waiter};
use crate::error::Error;
use transport::{Established, EstablishedMeta, connection_info, negotiated};

impl CellEntry {
    /// Submits an establishment for `waiter` to the owner partition; `lease` is its permit
    /// when the origin is bounded.
    pub(crate) fn launch(
        self: &Arc<Self>,
        waiter: Arc<Waiter>,
        launch: Launch,
        lease: Option<CellPermit<PoolTypes>>,
    ) {
        let connect_timeout = waiter.connect_timeout().cloned();
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
    lease: Option<CellPermit<PoolTypes>>,
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

    /// Installs the record of a connection whose handshake just succeeded: it takes the
    /// launch's permit and learns when its transport goes.
    fn install_record(
        &mut self,
        protocol: Protocol,
        meta: &EstablishedMeta,
        link: &pool_core::connection::PhysicalLink,
    ) -> Arc<ConnectionRecord> {
        let entry = &self.entry;
        let reason = entry
            .cell
            .launch_reason(self.launch)
            .unwrap_or_else(|| self.waiter.open_reason());
        let info = connection_info(entry, protocol, meta, reason);
        let permit = self
            .lease
            .take()
            .map(|lease| Box::new(lease) as Box<dyn Releasable>);
        let record = ConnectionRecord::install(
            info,
            entry.cell.gauges().clone(),
            entry.shared.listener.clone(),
            permit,
        );
        link.attach(&record);
        record
    }

    /// The connection is installed and its driver runs: announce it (`connection_created`),
    /// then make it visible to requests.
    fn hand_over(&mut self, record: &ConnectionRecord, item: Item) {
        self.disarm();
        let handover = Handover {
            entry: self.entry.clone(),
            waiter: self.waiter.clone(),
            item: Some(item),
        };
        record.announce();
        drop(handover);
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

async fn establish(mut guard: LaunchGuard, connect_timeout: Option<ConnectTimeout>) {
    if let Err(error) = establish_inner(&mut guard, connect_timeout).await {
        guard.fail(error);
    }
}

async fn establish_inner(
    guard: &mut LaunchGuard,
    connect_timeout: Option<ConnectTimeout>,
) -> Result<(), Error> {
    let entry = guard.entry.clone();
    let mode = entry.mode();
    let progress = guard.waiter.progress().cloned();
    let established = transport::connect(&entry, connect_timeout, progress).await?;
    let protocol = negotiated(mode, &established.meta)?;
    if mode == EstablishMode::Auto {
        match entry.cell.converge(guard.launch, &guard.waiter, protocol) {
            Converge::Join => {
                // Another generation or flight serves this waiter; the transport closes here,
                // before any handshake, converge returned the `establishing` count, and the
                // permit (if any) goes back as the guard drops.
                guard.disarm();
                if established.meta.is_tls() {
                    entry.shared.count_redundant_handshake();
                }
                return Ok(());
            }
            // The cell launched attempts for the flight's other waiters, if it was a flight.
            Converge::Http1 => {}
            Converge::LeadFlight(flight) => guard.launch = Launch::Flight(flight),
        }
    }
    match protocol {
        Protocol::Http1 => establish_h1(guard, established).await,
        Protocol::Http2 => establish_h2(guard, established).await,
    }
}

async fn establish_h1(guard: &mut LaunchGuard, established: Established) -> Result<(), Error> {
    let entry = guard.entry.clone();
    let Established { io, link, meta } = established;
    let handshaken = pool_h1::handshake::<_, RequestBody>(&entry.shared.h1, TokioIo::new(io))
        .await
        .map_err(Error::handshake)?;
    let record = guard.install_record(Protocol::Http1, &meta, &link);
    let home: Arc<dyn H1Home<RequestBody>> = entry.clone();
    let (conn, driver) = handshaken.install(record.clone(), home, link, meta.forward_proxy());
    entry.runtime.spawn(Box::pin(driver));
    guard.hand_over(&record, Item::H1(conn));
    Ok(())
}

async fn establish_h2(guard: &mut LaunchGuard, established: Established) -> Result<(), Error> {
    let entry = guard.entry.clone();
    let shared = &entry.shared;
    let Launch::Flight(flight) = guard.launch else {
        // Every HTTP/2 establishment runs as the cell's flight (a miss in an HTTP/2 cell
        // starts one, and an attempt that negotiates h2 converges into one).
        return Err(Error::canceled(
            "an HTTP/2 establishment ran outside a flight",
        ));
    };
    let Established { io, link, meta } = established;
    // Under hyper's adapter, where what the server sent can be read without a copy.
    let (io, frames) = pool_h2::watch_frames(io);
    let handshaken = pool_h2::handshake::<_, RequestBody>(
        entry.runtime.spawner.clone(),
        PoolTimer::new(shared.time.clone(), shared.sleep.clone()),
        &shared.h2,
        &entry.calm,
        TokioIo::new(io),
        frames,
    )
    .await
    .map_err(Error::handshake)?;
    let record = guard.install_record(Protocol::Http2, &meta, &link);
    let home: Arc<dyn H2Home> = entry.clone();
    let (generation, driver) = handshaken.install(record.clone(), home);
    entry.runtime.spawn(Box::pin(driver));
    guard.hand_over(&record, Item::H2(generation, flight));
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

impl H2Home for CellEntry {
    fn retire(&self, record: &Arc<ConnectionRecord>) {
        self.cell.retire_h2(record);
    }

    fn stream_freed(&self, _record: &Arc<ConnectionRecord>) {
        self.cell.h2_stream_freed();
    }

    fn stream_ended(&self, record: &Arc<ConnectionRecord>) {
        self.cell.h2_stream_ended(record);
    }

    fn successor_wanted(&self, record: &Arc<ConnectionRecord>) {
        self.cell.h2_successor_wanted(record);
    }

    fn connection_ended(&self, record: &Arc<ConnectionRecord>, served: u64, cut: bool) {
        self.cell
            .connection_ended(self.shared.ended(record, served, cut));
    }

    fn calm(&self) -> Arc<pool_h2::CalmHint> {
        self.calm.clone()
    }
}
