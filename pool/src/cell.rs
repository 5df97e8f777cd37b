//! One origin in one partition, as the assembled pool holds it: pool-core's [`Cell`] typed over
//! hyper's connections, plus what establishment and returning connections need.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::HeaderValue;
use pool_core::cell::CellAdmission;
use pool_core::cell::{Acquire, Cell, CellHooks, CellTypes, CellWaiter, EstablishMode, Grant};
use pool_core::connection::ConnectionRecord;
use pool_core::sync::{Arc, Weak};
use pool_core::waiter::Requirement;
use pool_core::{Gauges, OpenReason, OriginKey, Progress};
use pool_h1::{H1Connection, H1Home};
use pool_h2::{H2Generation, StreamLease};

use crate::body::RequestBody;
use crate::client::Client;
use crate::dispatch::deadline::RequestDeadline;
use crate::error::Error;
use crate::idle_cap::IdleHome;
use crate::lesson_book::Lessons;
use crate::partition::PartitionRuntime;
use crate::shared::Shared;

/// The protocol types of the pool's cells.
pub(crate) struct PoolTypes;

impl CellTypes for PoolTypes {
    type H1 = H1Connection<RequestBody>;
    type H2 = H2Generation<RequestBody>;
    type Error = Error;
}

pub(crate) type Waiter = CellWaiter<PoolTypes>;

/// A connection selected for one request.
pub(crate) enum Selected {
    H1(H1Connection<RequestBody>),
    H2(StreamLease<RequestBody>),
}

/// What a request asks of its cell when it looks for a connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wanted<'a> {
    /// Recorded by a connection established for it (a warm-up's are
    /// [`OpenReason::Preconnect`]).
    pub(crate) reason: OpenReason,
    /// The protocol it needs.
    pub(crate) requirement: Requirement,
    /// The place in line of a request being sent again, taken when it first came
    /// ([`Shared::place_in_line`]): it waits with that number, ahead of the requests that came
    /// after it. A first attempt (`None`) takes a new one.
    pub(crate) arrival: Option<u64>,
    /// The request's progress, when its caller follows it (a `pool::Progress` extension): an
    /// establishment launched for it notes its steps there.
    pub(crate) progress: Option<&'a Progress>,
}

/// The cell of one (partition, origin) with everything its connections need to reach home.
pub(crate) struct CellEntry {
    pub(crate) cell: Arc<Cell<PoolTypes>>,
    pub(crate) origin: OriginKey,
    /// The `Host` value for HTTP/1 requests, computed once.
    pub(crate) host: HeaderValue,
    /// Whether other origins share this cell, `origin` being the one that created it (a
    /// forward route, see `forward`): each request then carries its own origin's `Host`.
    pub(crate) shares_route: bool,
    pub(crate) runtime: Arc<PartitionRuntime>,
    pub(crate) shared: Arc<Shared>,
    /// What the HTTP/2 connections of the origin's cells learnt from its server asking for
    /// calm: the stream cap a new connection starts from, whether request bodies go one at a
    /// time, and the rest of `pool_h2::CalmHint`; shared with the origin's cells in the other
    /// partitions (`lesson_book`).
    pub(crate) calm: Arc<pool_h2::CalmHint>,
}

impl CellEntry {
    /// A new cell for `origin` in the partition at `index`; `admission` for a bounded origin,
    /// `lessons` the learners its origin's cells share (see `lesson_book`).
    /// The caller registers the cell with the admission once it is published in the partition.
    pub(crate) fn new(
        origin: OriginKey,
        runtime: Arc<PartitionRuntime>,
        shared: Arc<Shared>,
        index: usize,
        admission: Option<CellAdmission<PoolTypes>>,
        lessons: Lessons,
        shares_route: bool,
    ) -> Arc<CellEntry> {
        let mode = shared.protocol.mode_for(&origin);
        let host = HeaderValue::from_str(&origin.authority())
            .expect("an origin's authority is a valid header value");
        Arc::new_cyclic(|weak: &Weak<CellEntry>| {
            let arm = {
                let (weak, runtime, shared) = (weak.clone(), runtime.clone(), shared.clone());
                std::sync::Arc::new(move |at| {
                    runtime.maintenance.schedule(
                        &runtime,
                        weak.clone(),
                        at,
                        &shared.time,
                        &shared.sleep,
                    );
                }) as pool_core::cell::ArmExpiry
            };
            let launch = {
                let weak = weak.clone();
                std::sync::Arc::new(move |waiter: Arc<Waiter>, launch, lease| {
                    // The cell outlives every launch it decides (its entry is in the pool's map
                    // while the pool lives); after the pool is gone, a launch is moot and the
                    // permit simply returns.
                    if let Some(entry) = weak.upgrade() {
                        entry.launch(waiter, launch, lease);
                    }
                }) as pool_core::cell::LaunchHook<PoolTypes>
            };
            // Told of each connection going idle when the pool caps its idle connections.
            let went_idle = shared.idle_cap.as_ref().map(|cap| {
                let cap = cap.clone();
                let home: Weak<dyn IdleHome> = weak.clone();
                std::sync::Arc::new(move |record: &Arc<ConnectionRecord>| {
                    cap.went_idle(home.clone(), record)
                }) as pool_core::cell::WentIdle
            });
            let gauges = shared
                .idle_cap
                .as_ref()
                .map_or_else(Gauges::default, |cap| cap.gauges());
            let hooks = CellHooks {
                launch,
                arm_expiry: Some(arm),
                went_idle,
                time: shared.time.clone(),
            };
            let bound = admission.map(|admission| (admission, index));
            let cell = Arc::new(
                Cell::new(mode, shared.idle_timeout, Arc::new(gauges), hooks, bound)
                    .with_h2_connection_cap(shared.h2_connections)
                    .with_max_idle(shared.max_idle)
                    .with_request_quota_learner(lessons.quota)
                    .with_idle_timeout_learner(lessons.idle),
            );
            let calm = lessons.calm;
            CellEntry {
                cell,
                origin,
                host,
                shares_route,
                runtime,
                shared,
                calm,
            }
        })
    }

    /// Finds a connection for one request: a reuse hit, or a wait on the cell's queue while an
    /// establishment (started here or by an earlier request), a returning connection or a
    /// permit serves it.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while it waits withdraws the waiter; anything already handed to it
    /// goes back to the cell (a connection to the next waiter or the idle set, a permit to the
    /// origin's next ticket).
    ///
    /// `wanted` says what the request asks for: the open reason a connection established for
    /// it records, the protocol it needs, and its place in line. `client` supplies the connect
    /// timeout an establishment launched for it uses, and the sleep that measures its
    /// timeouts.
    ///
    /// Adds the time spent waiting (if the request had to wait) to `waited`. `queue` bounds the
    /// waiting (the pool timeout); when it elapses the waiter is withdrawn as if the request
    /// had been dropped.
    ///
    /// `entry` is the cell the caller looked up. If that cell was retired meanwhile (it had
    /// nothing in it, and its partition dropped it, see `PartitionState::sweep_if_grown`), the
    /// origin of `uri` is looked up again ([`Client::fresh_cell_for`]) and `entry` is the new
    /// cell from then on, for the rest of the caller's request too.
    pub(crate) async fn acquire(
        entry: &mut Arc<CellEntry>,
        uri: &http::Uri,
        wanted: Wanted<'_>,
        client: &Client,
        queue: &mut RequestDeadline,
        waited: &mut Option<Duration>,
    ) -> Result<Selected, Error> {
        let Wanted {
            reason,
            requirement,
            arrival,
            progress,
        } = wanted;
        loop {
            let this = &*entry;
            let shared = &this.shared;
            let acquired = this.cell.acquire_for(
                reason,
                requirement,
                (client.connect_timeout.as_ref(), progress),
                || arrival.unwrap_or_else(|| shared.next_seq()),
                || shared.time.now(),
            );
            let grant = match acquired {
                Acquire::H1(conn) => return Ok(Selected::H1(conn)),
                Acquire::H2(generation) => match generation.lease() {
                    Some(lease) => return Ok(Selected::H2(lease)),
                    // Closed between the cell's check and the lease: look again.
                    None => continue,
                },
                Acquire::Unsupported => {
                    return Err(Error::unsupported_version(
                        "this origin is served over HTTP/1.1 only",
                    ));
                }
                Acquire::Saturated => {
                    let cap = this
                        .cell
                        .admission()
                        .and_then(|a| a.pending_cap())
                        .unwrap_or(0);
                    return Err(Error::saturated(cap));
                }
                Acquire::Retired => {
                    *entry = client.fresh_cell_for(uri)?;
                    continue;
                }
                Acquire::Wait(waiter) => {
                    let since = shared.time.now();
                    let wait = WaitGrant {
                        entry: this,
                        waiter: Some(waiter),
                    };
                    // On the pool timeout the `WaitGrant` drops here, which withdraws the
                    // waiter (and returns anything granted meanwhile) like a dropped request.
                    let grant = queue.bound(&**client.timer(), wait).await;
                    let spent = shared.time.now().saturating_duration_since(since);
                    *waited = Some(waited.unwrap_or_default() + spent);
                    grant?
                }
            };
            match grant {
                Grant::H1(conn) => return Ok(Selected::H1(conn)),
                Grant::H2(generation) => {
                    let lease = generation.lease();
                    // This waiter's activation is done either way: let the next one in.
                    this.cell.activation_done();
                    if let Some(lease) = lease {
                        return Ok(Selected::H2(lease));
                    }
                }
                Grant::BorrowedH2(generation) => {
                    if let Some(lease) = generation.lease() {
                        return Ok(Selected::H2(lease));
                    }
                }
                Grant::Failed(error) => return Err(error),
                Grant::Unsupported => {
                    return Err(Error::unsupported_version(
                        "the request requires HTTP/2 and the origin negotiated HTTP/1.1",
                    ));
                }
            }
        }
    }

    /// The cell's establishment mode.
    pub(crate) fn mode(&self) -> EstablishMode {
        self.cell.mode()
    }
}

impl H1Home<RequestBody> for CellEntry {
    fn release(&self, conn: H1Connection<RequestBody>) {
        if self.runtime.is_closed() {
            conn.record()
                .close(pool_core::CloseReason::PoolDropped, None);
            return;
        }
        self.cell.release_h1(conn, self.shared.time.now());
    }

    fn served_past_request_quota(&self, served: u64) {
        self.cell.h1_served_past_quota(served);
    }

    fn closed_while_idle(&self, record: &ConnectionRecord) {
        self.cell
            .h1_closed_while_idle(record, self.shared.time.now());
    }
}

impl fmt::Debug for CellEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CellEntry")
            .field("origin", &self.origin)
            .field("partition", &self.runtime.id)
            .field("cell", &self.cell)
            .finish()
    }
}

/// Waits for a waiter's grant; withdraws the waiter if dropped first.
struct WaitGrant<'a> {
    entry: &'a Arc<CellEntry>,
    waiter: Option<Arc<Waiter>>,
}

impl Future for WaitGrant<'_> {
    type Output = Grant<PoolTypes>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Grant<PoolTypes>> {
        let waiter = self.waiter.as_ref().expect("polled after completion");
        match waiter.poll_take(cx) {
            Poll::Ready(grant) => {
                self.waiter = None;
                Poll::Ready(grant)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for WaitGrant<'_> {
    fn drop(&mut self) {
        if let Some(waiter) = self.waiter.take() {
            self.entry
                .cell
                .cancel(&waiter, self.entry.shared.time.now());
        }
    }
}
