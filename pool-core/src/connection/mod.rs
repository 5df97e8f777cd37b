//! The lifecycle of one connection: dispatch commits, logical close and physical close.
//!
//! ```text
//!               checkin()                       close(reason)   (first trigger wins)
//!   ACTIVE ◄──────────────────► IDLE   ──────────────────────►  CLOSED
//!  (H1 checked out,  checkout()  (H1 only)                      (no new work; permit released;
//!   H2 accepting)                                                 draining while the I/O lives)
//!
//!   independently:  transport I/O dropped  ──►  GONE   (physical close; implies a logical close)
//! ```
//!
//! *Logical close* removes the connection from reuse, releases its capacity permit, records a
//! [`CloseReason`] and fires `connection_closed` exactly once. *Physical close* is when the
//! transport's I/O is dropped; it follows logical close by an unbounded interval (an HTTP/2
//! connection drains its accepted streams, an upgraded HTTP/1 connection lives as long as the
//! caller keeps the upgraded I/O). Between the two the connection counts as draining.
//!
//! All transitions are compare-and-swap on one state word, and every gauge change is computed
//! from the (old, new) pair of the transition that won. That is what makes a close racing a
//! checkout, or a logical close racing the I/O drop, account exactly once: whichever
//! transition lands first is the one the other observes.
//!
//! A transition counts its increments *before* its compare-and-swap and its decrements after
//! it (taking a speculative increment back if it lost). A racing transition that decrements
//! the same gauge does so only after it observed this one's new state, so it always finds the
//! unit counted, and no gauge ever reads below zero. Found by a stress run: a logical close
//! and the I/O drop that followed it on another thread decremented `h1_draining` before the
//! close had counted it (the debug build's underflow check fired; a release build showed a
//! wrapped-around gauge for a moment). `loom_close_races_the_io_drop` covers it.
//!
//! What this module does not do: decide who gets the connection (the cell), or talk to the
//! transport (the protocol crates hold the sender and driver; they report here).

use std::error::Error;
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::close::CloseReason;
use crate::events::{ConnectionEventListener, ConnectionInfo, Protocol};
use crate::partition::PartitionId;
use crate::stats::{Gauge, Gauges};
use crate::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use crate::sync::{Arc, Mutex};

mod link;

pub use link::{PeerClosed, PhysicalLink, TransportEnd, TransportFailed};

/// A boxed error, as carried by close events.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// The most margin an idle limit keeps before the server's own close.
const SERVER_CLOSE_MARGIN: Duration = Duration::from_secs(1);

/// How long an HTTP/1 connection may stay idle when its server closes idle connections after
/// `server`: a margin earlier, a second or half of `server` when that is shorter (a 5 s
/// server keeps a connection idle for 4 s, a 1 s server for 0.5 s), so that the pool retires
/// it before a request could meet the server's close. Used for a server's `Keep-Alive:
/// timeout` and for the idle timeout the pool learns from a server that closes without
/// saying (see `cell/idle_lesson.rs`).
pub fn idle_limit_before(server: Duration) -> Duration {
    server - SERVER_CLOSE_MARGIN.min(server / 2)
}

/// Something that must be released when the connection closes logically: a capacity permit.
pub trait Releasable: Send + Sync + 'static {}
impl<T: Send + Sync + 'static> Releasable for T {}

const PHASE_MASK: u8 = 0b0011;
const ACTIVE: u8 = 0;
const IDLE: u8 = 1;
const CLOSED: u8 = 2;
/// The transport's I/O has been dropped.
const GONE: u8 = 0b0100;
/// The user asked that the connection never be reused.
const POISONED: u8 = 0b1000;

/// Shared record of one established connection.
///
/// `repr(C)`, the fields a reuse hit reads or writes first. An HTTP/1 exchange touches
/// `state`, `served`, `request_quota`, the idle stamp, `gauges`, the owner partition, the
/// end of the lifetime and (its driver) the parking flag; in Rust's own order they lay after
/// and inside the 448-byte `info`, on six cache lines with the `Arc`'s counts, and with 256
/// connections in turn each record is cold by its next request, so each line was a miss.
/// First, they fit in the two lines after the counts. `partition` and `retires_at` repeat `info`'s for that reason (`info` never
/// changes). See docs/BENCHMARKS.md, "The connection record's hot fields".
#[repr(C)]
pub struct ConnectionRecord {
    /// Phase bits, `GONE` and `POISONED`; changed only by CAS.
    state: AtomicU8,
    /// The reason of the winning close, readable after it (index into `CloseReason::ALL`).
    reason: AtomicU8,
    /// pool-h1's parking flag (see [`h1_parked`](Self::h1_parked)).
    h1_parked: AtomicBool,
    /// Requests dispatched so far; a connection with `served > 0` counts as reused.
    served: AtomicU64,
    /// An HTTP/1 connection's part in its server's request quota (`NO_QUOTA`: none; the
    /// quota; or `PROBE` plus the quota a probe goes past). See
    /// [`check_request_quota`](Self::check_request_quota).
    request_quota: AtomicU64,
    /// When the connection last went idle, in milliseconds after `idle_base` (see
    /// [`went_idle_at`](Self::went_idle_at)).
    idle_since_ms: AtomicU64,
    /// Gauges of the owning (partition, origin) cell.
    gauges: Arc<Gauges>,
    /// `info.partition()`, read by every dispatch (a borrowed connection?).
    partition: PartitionId,
    /// `info.retires_at()`, read by every HTTP/1 return.
    retires_at: Option<Instant>,
    /// The instant `idle_since_ms` counts from: the first time the connection went idle.
    idle_base: OnceLock<Instant>,
    /// How long the connection may stay idle before the server closes it, in milliseconds
    /// (`NO_IDLE_LIMIT`: the server never said; see [`set_idle_limit`](Self::set_idle_limit)).
    idle_limit_ms: AtomicU64,
    /// Lifecycle listener, if the pool has one.
    listener: Option<Arc<dyn ConnectionEventListener>>,
    /// The capacity permit this connection holds (bounded origins), released at logical close.
    permit: Mutex<Option<Box<dyn Releasable>>>,
    /// What read the peer's last words, asked at a protocol close for the cause (see
    /// [`EndWitness`]). A `std` Arc: a diagnostic, outside the loom models.
    witness: OnceLock<std::sync::Arc<dyn EndWitness>>,
    /// Fixed description, attached to responses and events.
    info: ConnectionInfo,
}

/// Whatever reads a connection's transport below the protocol and so learns first why the
/// peer ended it: pool-h2's frame reader sees a `GOAWAY` and its error code, or the stream
/// ending in the middle of a frame, before h2 acts on either. The record asks it at a close
/// for [`CloseReason::ProtocolClosed`], so the close event says why even when the transport's
/// drop or a failed request closed the record before the protocol's driver, which knows the
/// error too, ended (an HTTP/2 driver usually ends last). Its word goes before the close's
/// own error: the same server act then reads the same whichever path closed the record
/// first (the driver's error words a `GOAWAY` as h2 renders it, the witness as the frame
/// said it). Without a word from it, the close's own error stands. An HTTP/1 record's witness
/// is its transport's link ([`TransportEnd`]): hyper's HTTP/1 client ends its connection
/// future without the transport's error when a request was in flight (the request gets it).
pub trait EndWitness: Send + Sync + 'static {
    /// Why the peer ended the connection, if it ended it with an error (`None` before the
    /// end, and after a graceful one).
    fn cause(&self) -> Option<&(dyn Error + Send + Sync + 'static)>;

    /// How the peer ended the connection when it ended it without an error (an HTTP/1
    /// server's end of stream): the word a protocol close falls back on when neither the
    /// witness heard an error nor the close brings one of its own. `None` by default.
    fn quiet_end(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        None
    }
}

/// What an HTTP/1 response means for the server's request quota (see
/// [`ConnectionRecord::check_request_quota`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaCheck {
    /// Nothing: the connection goes on as the response says.
    Within,
    /// The connection carried its quota: it retires with this response
    /// ([`CloseReason::RequestQuota`]).
    Spent,
    /// The connection is a probe and has now carried this many, more than the quota: the
    /// server's quota is not (or no longer) what was learnt.
    PastProbe(u64),
}

const NO_REASON: u8 = u8::MAX;
const NO_IDLE_LIMIT: u64 = u64::MAX;
const NO_QUOTA: u64 = u64::MAX;
/// Marks a probe's quota in `request_quota`.
const PROBE: u64 = 1 << 63;

impl ConnectionRecord {
    /// Installs a new connection in the `ACTIVE` phase: moves one unit of `establishing` to the
    /// protocol's admitted gauge (`h1_active` or `h2_accepting`). The caller then
    /// [`announce`](Self::announce)s it before making it visible to requests.
    pub fn install(
        info: ConnectionInfo,
        gauges: Arc<Gauges>,
        listener: Option<Arc<dyn ConnectionEventListener>>,
        permit: Option<Box<dyn Releasable>>,
    ) -> Arc<ConnectionRecord> {
        let record = Arc::new(ConnectionRecord {
            partition: info.partition(),
            retires_at: info.retires_at(),
            info,
            gauges,
            listener,
            state: AtomicU8::new(ACTIVE),
            served: AtomicU64::new(0),
            reason: AtomicU8::new(NO_REASON),
            h1_parked: AtomicBool::new(false),
            idle_limit_ms: AtomicU64::new(NO_IDLE_LIMIT),
            idle_since_ms: AtomicU64::new(0),
            idle_base: OnceLock::new(),
            permit: Mutex::new(permit),
            request_quota: AtomicU64::new(NO_QUOTA),
            witness: OnceLock::new(),
        });
        record
            .gauges
            .transfer(Gauge::Establishing, record.phase_gauge(ACTIVE));
        record
    }

    /// The partition whose cell owns the connection (`info().partition()`, kept beside the
    /// fields every request touches).
    #[inline]
    pub fn partition(&self) -> PartitionId {
        self.partition
    }

    /// Whether this HTTP/1 connection waits in its parking spot for hyper to be ready for
    /// another request: the flag of pool-h1's parking protocol, which that crate's `Spot`
    /// sets and clears. Kept here rather than in the spot because the connection's driver
    /// reads it after every poll: beside the fields an exchange touches it costs no cache line
    /// of its own, where in the spot it was a miss per request with hundreds of connections in
    /// turn (docs/BENCHMARKS.md, "The connection record's hot fields").
    #[inline]
    pub fn h1_parked(&self) -> &AtomicBool {
        &self.h1_parked
    }

    /// When the connection reaches its maximum lifetime (`info().retires_at()`, kept beside
    /// the fields every request touches).
    #[inline]
    pub fn retires_at(&self) -> Option<Instant> {
        self.retires_at
    }

    /// Whether the connection has reached its maximum lifetime at `now`
    /// (`info().is_past_lifetime(now)`, kept beside the fields every request touches).
    #[inline]
    pub fn is_past_lifetime(&self, now: Instant) -> bool {
        self.retires_at.is_some_and(|at| at <= now)
    }

    /// Fires `connection_created`. Call after [`install`](Self::install), before the connection
    /// can serve a request, with no pool lock held.
    pub fn announce(&self) {
        tracing::debug!(
            connection = self.info.id().as_u64(),
            origin = %self.info.origin(),
            partition = %self.info.partition(),
            protocol = ?self.info.protocol(),
            remote = ?self.info.remote_addr(),
            "connection created"
        );
        if let Some(listener) = &self.listener {
            crate::events::notify("connection_created", || {
                listener.connection_created(&self.info)
            });
        }
    }

    /// The connection's description.
    pub fn info(&self) -> &ConnectionInfo {
        &self.info
    }

    /// The gauges of the owning cell.
    pub fn gauges(&self) -> &Arc<Gauges> {
        &self.gauges
    }

    /// The pool's lifecycle listener, if any.
    pub fn listener(&self) -> Option<&Arc<dyn ConnectionEventListener>> {
        self.listener.as_ref()
    }

    fn phase_gauge(&self, phase: u8) -> Gauge {
        match (self.info.protocol(), phase) {
            (Protocol::Http1, IDLE) => Gauge::H1Idle,
            (Protocol::Http1, _) => Gauge::H1Active,
            (Protocol::Http2, _) => Gauge::H2Accepting,
        }
    }

    fn draining_gauge(&self) -> Gauge {
        match self.info.protocol() {
            Protocol::Http1 => Gauge::H1Draining,
            Protocol::Http2 => Gauge::H2Draining,
        }
    }

    fn is_draining(state: u8) -> bool {
        state & PHASE_MASK == CLOSED && state & GONE == 0
    }

    /// Applies `f` to the state until a CAS succeeds; returns `(old, new)`, or `None` when `f`
    /// declines the transition.
    fn transition(&self, mut f: impl FnMut(u8) -> Option<u8>) -> Option<(u8, u8)> {
        let mut old = self.state.load(Ordering::Acquire);
        loop {
            let new = f(old)?;
            match self
                .state
                .compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some((old, new)),
                Err(actual) => old = actual,
            }
        }
    }

    /// Commits a dispatch from the idle set: `IDLE -> ACTIVE`. Fails when the connection closed
    /// while idle (the caller drops its stale handle and looks for another).
    ///
    /// # Concurrency
    ///
    /// Races with [`close`](Self::close) (idle expiry, the driver ending, reclaim): exactly one
    /// of the two wins, so a closed connection never receives a request and a checked-out one is
    /// never counted idle.
    pub fn checkout(&self) -> bool {
        self.move_phase(Gauge::H1Idle, Gauge::H1Active, |s| {
            (s & PHASE_MASK == IDLE).then_some((s & !PHASE_MASK) | ACTIVE)
        })
    }

    /// Returns a checked-out HTTP/1 connection to the idle phase: `ACTIVE -> IDLE`. Fails when it
    /// closed (or was poisoned) meanwhile.
    pub fn checkin(&self) -> bool {
        self.move_phase(Gauge::H1Active, Gauge::H1Idle, |s| {
            (s & PHASE_MASK == ACTIVE && s & POISONED == 0).then_some((s & !PHASE_MASK) | IDLE)
        })
    }

    /// Moves an HTTP/1 connection between two phases with the transition `f`, and its unit from
    /// gauge `from` to `to`: counted in `to` first, so a close that wins right after this
    /// transition finds it there (see the module docs); then out of `from`, or out of `to`
    /// again if the transition lost.
    fn move_phase(&self, from: Gauge, to: Gauge, f: impl FnMut(u8) -> Option<u8>) -> bool {
        self.gauges.arrive(to);
        let won = self.transition(f).is_some();
        self.gauges.dec(if won { from } else { to });
        won
    }

    /// Counts one dispatch and reports whether the connection had served a request before.
    pub fn record_dispatch(&self) -> bool {
        self.count_dispatch() > 1
    }

    /// Counts one dispatch and returns how many the connection has carried, this one included.
    pub fn count_dispatch(&self) -> u64 {
        self.served.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Requests dispatched on this connection so far.
    pub fn requests_served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Records how long this connection may stay idle before the server closes it (an HTTP/1
    /// response's `Keep-Alive: timeout`, less a margin), so that its cell retires it first
    /// instead of sending a request into the server's close.
    pub fn set_idle_limit(&self, limit: Duration) {
        let ms = u64::try_from(limit.as_millis()).unwrap_or(NO_IDLE_LIMIT - 1);
        self.idle_limit_ms.store(ms, Ordering::Relaxed);
    }

    /// The limit [`set_idle_limit`](Self::set_idle_limit) recorded, if any.
    pub fn idle_limit(&self) -> Option<Duration> {
        match self.idle_limit_ms.load(Ordering::Relaxed) {
            NO_IDLE_LIMIT => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// Notes that this HTTP/1 connection goes into its cell's idle set at `now` (under the
    /// cell's lock, before [`checkin`](Self::checkin), whose compare-and-swap publishes it), so
    /// that a close by its server while it is idle says how long the server kept it
    /// ([`idle_for`](Self::idle_for)).
    pub fn went_idle_at(&self, now: Instant) {
        let base = *self.idle_base.get_or_init(|| now);
        let ms = now.saturating_duration_since(base).as_millis();
        self.idle_since_ms
            .store(u64::try_from(ms).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// How long the connection has been idle at `now`, counted from the last
    /// [`went_idle_at`](Self::went_idle_at) (to the millisecond); `None` if it never went idle.
    pub fn idle_for(&self, now: Instant) -> Option<Duration> {
        let base = *self.idle_base.get()?;
        let since = base + Duration::from_millis(self.idle_since_ms.load(Ordering::Relaxed));
        Some(now.saturating_duration_since(since))
    }

    /// Keeps this HTTP/1 connection to the server's learnt request quota: the response to
    /// request number `quota` retires it. With `probe`, it goes past the quota instead, and
    /// says so when it does (see `cell/quota.rs`). Set before it serves.
    pub fn keep_to_request_quota(&self, quota: u64, probe: bool) {
        let word = if probe { PROBE | quota } else { quota };
        self.request_quota.store(word, Ordering::Relaxed);
    }

    /// What the response to this connection's request number `served` means for the
    /// server's request quota. One load when the connection has none.
    #[inline]
    pub fn check_request_quota(&self, served: u64) -> QuotaCheck {
        match self.request_quota.load(Ordering::Relaxed) {
            NO_QUOTA => QuotaCheck::Within,
            word => quota_check(word, served),
        }
    }

    /// Whether it was logically closed.
    pub fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & PHASE_MASK == CLOSED
    }

    /// Whether it is in the idle phase.
    pub fn is_idle(&self) -> bool {
        self.state.load(Ordering::Acquire) & PHASE_MASK == IDLE
    }

    /// Whether it was poisoned.
    pub fn is_poisoned(&self) -> bool {
        self.state.load(Ordering::Acquire) & POISONED != 0
    }

    /// Whether it takes no further work: logically closed, or poisoned (it closes once its
    /// current work ends). One read of the state word.
    pub fn is_retiring(&self) -> bool {
        let state = self.state.load(Ordering::Acquire);
        state & PHASE_MASK == CLOSED || state & POISONED != 0
    }

    /// Whether its transport's I/O is gone.
    pub fn is_physically_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & GONE != 0
    }

    /// The reason of the close that won, once closed.
    pub fn close_reason(&self) -> Option<CloseReason> {
        CloseReason::ALL
            .get(self.reason.load(Ordering::Acquire) as usize)
            .copied()
    }

    /// Marks the connection never to be reused. An idle HTTP/1 connection or an HTTP/2
    /// generation closes at once (in-flight streams finish); a checked-out HTTP/1 connection
    /// finishes its exchange and closes instead of returning.
    pub fn poison(&self) {
        self.transition(|s| (s & POISONED == 0).then_some(s | POISONED));
        let close_now = match self.info.protocol() {
            Protocol::Http1 => self.is_idle(),
            Protocol::Http2 => true,
        };
        if close_now {
            self.close(CloseReason::Poisoned, None);
        }
    }

    /// Sets what reads the peer's last words on this connection (see [`EndWitness`]); only
    /// the first call counts.
    pub fn set_end_witness(&self, witness: std::sync::Arc<dyn EndWitness>) {
        let _ = self.witness.set(witness);
    }

    /// The connection's driver (hyper's connection future) completed, with `error` if it
    /// failed; `drop_driver` drops it.
    ///
    /// An HTTP/1 driver owns its transport, so dropping it drops the I/O, unless an upgrade
    /// (`101`) took the transport: then the I/O lives on in the caller's hands and the
    /// connection ended by being upgraded. An HTTP/2 connection cannot be upgraded, and hyper
    /// may still hold its I/O in a task of its own for a moment after the driver ends, so for
    /// it the end of the driver is the protocol's close, whatever the I/O does next.
    pub fn driver_completed(&self, error: Option<BoxError>, drop_driver: impl FnOnce()) {
        if error.is_some() || self.info.protocol() == Protocol::Http2 {
            self.close(CloseReason::ProtocolClosed, error);
        }
        drop_driver();
        if !self.is_physically_closed() {
            self.close(CloseReason::Upgraded, None);
        }
    }

    /// The connection's driver was dropped before it completed, which only happens when its
    /// owner runtime shuts down. Closes the record before the driver's I/O is dropped, so this
    /// reason wins over the physical close that follows.
    pub fn driver_dropped(&self) {
        self.close(CloseReason::OwnerRuntimeShutdown, None);
    }

    /// Logically closes the connection. The first call wins and returns `true`: it updates the
    /// gauges, releases the permit, then fires `connection_closed`. Later calls do nothing.
    ///
    /// Call without holding a pool lock: the listener runs here.
    pub fn close(&self, reason: CloseReason, error: Option<BoxError>) -> bool {
        debug_assert!(
            !crate::sync::holds_pool_lock(),
            "close() called under a pool lock"
        );
        // Counted draining first: the I/O drop that follows this close (on any thread)
        // decrements it. Taken back below if the I/O was already gone or another close won.
        let draining = self.draining_gauge();
        self.gauges.inc(draining);
        let Some((old, new)) =
            self.transition(|s| (s & PHASE_MASK != CLOSED).then_some((s & !PHASE_MASK) | CLOSED))
        else {
            self.gauges.dec(draining);
            return false;
        };
        if !Self::is_draining(new) {
            self.gauges.dec(draining);
        }
        let reason_index = CloseReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0) as u8;
        self.reason.store(reason_index, Ordering::Release);
        self.gauges.dec(self.phase_gauge(old & PHASE_MASK));
        // Which close releases the permit: an HTTP/2 connection releases it now, so a
        // replacement can open while this one drains its accepted streams; an upgraded HTTP/1
        // connection too, since its I/O now lives as long as the caller wants. Any other HTTP/1
        // connection keeps it until its socket is gone, which follows within one poll of its
        // driver: the peer then never counts more connections than the bound.
        if self.info.protocol() == Protocol::Http2
            || reason == CloseReason::Upgraded
            || new & GONE != 0
        {
            let permit = self.permit.lock().take();
            drop(permit);
        }
        // On a close the protocol made, the peer's own word first, its quiet end last (see
        // `EndWitness`).
        let witness = match reason {
            CloseReason::ProtocolClosed => self.witness.get(),
            _ => None,
        };
        let error_ref = witness
            .and_then(|w| w.cause())
            .or(error
                .as_deref()
                .map(|e| e as &(dyn Error + Send + Sync + 'static)))
            .or_else(|| witness.and_then(|w| w.quiet_end()));
        tracing::debug!(
            connection = self.info.id().as_u64(),
            origin = %self.info.origin(),
            partition = %self.info.partition(),
            %reason,
            error = error_ref.map(tracing::field::display),
            "connection closed"
        );
        if let Some(listener) = &self.listener {
            crate::events::notify("connection_closed", || {
                listener.connection_closed(&self.info, reason, error_ref)
            });
        }
        true
    }

    /// The transport's I/O was dropped. Ends draining; if nothing closed the connection
    /// logically yet, closes it as [`CloseReason::ProtocolClosed`].
    fn physical_close(&self) {
        let Some((old, new)) = self.transition(|s| (s & GONE == 0).then_some(s | GONE)) else {
            return;
        };
        if Self::is_draining(old) && !Self::is_draining(new) {
            self.gauges.dec(self.draining_gauge());
        }
        if old & PHASE_MASK != CLOSED {
            self.close(CloseReason::ProtocolClosed, None);
        }
        let permit = self.permit.lock().take();
        drop(permit);
    }
}

/// [`ConnectionRecord::check_request_quota`] for a connection with a quota or a probe.
#[cold]
fn quota_check(word: u64, served: u64) -> QuotaCheck {
    let quota = word & !PROBE;
    match word & PROBE != 0 {
        false if served >= quota => QuotaCheck::Spent,
        true if served == quota + 1 => QuotaCheck::PastProbe(served),
        _ => QuotaCheck::Within,
    }
}

impl fmt::Debug for ConnectionRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Ordering::Relaxed);
        let phase = match s & PHASE_MASK {
            ACTIVE => "active",
            IDLE => "idle",
            _ => "closed",
        };
        f.debug_struct("ConnectionRecord")
            .field("id", &self.info.id())
            .field("origin", self.info.origin())
            .field("protocol", &self.info.protocol())
            .field("phase", &phase)
            .field("gone", &(s & GONE != 0))
            .field("poisoned", &(s & POISONED != 0))
            .finish()
    }
}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;
    use crate::events::ConnectionId;
    use crate::origin::OriginKey;
    use crate::partition::PartitionId;
    use crate::stats::PartitionStats;
    use std::sync::atomic::AtomicUsize;

    #[derive(Default)]
    struct Counting {
        created: AtomicUsize,
        closed: std::sync::Mutex<Vec<CloseReason>>,
        /// The error text each close carried.
        errors: std::sync::Mutex<Vec<Option<String>>>,
    }

    impl ConnectionEventListener for Counting {
        fn connection_created(&self, _: &ConnectionInfo) {
            self.created.fetch_add(1, Ordering::SeqCst);
        }
        fn connection_closed(
            &self,
            _: &ConnectionInfo,
            reason: CloseReason,
            error: Option<&(dyn Error + Send + Sync)>,
        ) {
            self.closed.lock().unwrap().push(reason);
            self.errors
                .lock()
                .unwrap()
                .push(error.map(ToString::to_string));
        }
    }

    /// A permit that counts its release (its drop).
    struct Permit(Arc<AtomicUsize>);

    impl Drop for Permit {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A witness that heard the peer end the connection with this error.
    struct Heard(std::io::Error);

    impl EndWitness for Heard {
        fn cause(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
            Some(&self.0)
        }
    }

    /// A witness that heard nothing.
    struct Silent;

    impl EndWitness for Silent {
        fn cause(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
            None
        }
    }

    /// A witness that saw the peer end the connection without an error.
    struct Quiet;

    impl EndWitness for Quiet {
        fn cause(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
            None
        }

        fn quiet_end(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
            Some(&super::PeerClosed)
        }
    }

    #[test]
    fn a_quiet_end_is_the_word_of_a_protocol_close_with_nothing_else_to_say() {
        let (_, bare, _link, record) = setup(Protocol::Http1);
        record.set_end_witness(std::sync::Arc::new(Quiet));
        record.close(CloseReason::ProtocolClosed, None);
        let (_, own, _link, record) = setup(Protocol::Http1);
        record.set_end_witness(std::sync::Arc::new(Quiet));
        record.close(
            CloseReason::ProtocolClosed,
            Some(Box::new(std::io::Error::other("the exchange's error"))),
        );
        let (_, pools, _link, record) = setup(Protocol::Http1);
        record.set_end_witness(std::sync::Arc::new(Quiet));
        record.close(CloseReason::IdleTimeout, None);
        let errors = |l: &Counting| l.errors.lock().unwrap().clone();
        assert_eq!(
            errors(&bare),
            [Some("the server closed the connection".to_owned())]
        );
        assert_eq!(errors(&own), [Some("the exchange's error".to_owned())]);
        assert_eq!(errors(&pools), [None]);
    }

    #[test]
    fn a_protocol_close_carries_what_the_witness_heard() {
        let heard = || std::sync::Arc::new(Heard(std::io::Error::other("the peer's last word")));
        // A protocol close with nothing of its own: the witness's word.
        let (_, listener, _link, record) = setup(Protocol::Http2);
        record.set_end_witness(heard());
        assert!(record.close(CloseReason::ProtocolClosed, None));
        // The witness's word before the close's own error; the close's own without a word
        // (a witness that heard nothing yet); a close the pool made: never the witness's.
        let (_, own, _link, record) = setup(Protocol::Http2);
        record.set_end_witness(heard());
        record.close(
            CloseReason::ProtocolClosed,
            Some(Box::new(std::io::Error::other("the driver's error"))),
        );
        let (_, silent, _link, record) = setup(Protocol::Http2);
        record.set_end_witness(std::sync::Arc::new(Silent));
        record.close(
            CloseReason::ProtocolClosed,
            Some(Box::new(std::io::Error::other("the driver's error"))),
        );
        let (_, pools, _link, record) = setup(Protocol::Http2);
        record.set_end_witness(heard());
        record.close(CloseReason::IdleTimeout, None);
        let errors = |l: &Counting| l.errors.lock().unwrap().clone();
        assert_eq!(errors(&listener), [Some("the peer's last word".to_owned())]);
        assert_eq!(errors(&own), [Some("the peer's last word".to_owned())]);
        assert_eq!(errors(&silent), [Some("the driver's error".to_owned())]);
        assert_eq!(errors(&pools), [None]);
    }

    fn setup(
        protocol: Protocol,
    ) -> (
        Arc<Gauges>,
        Arc<Counting>,
        Arc<PhysicalLink>,
        Arc<ConnectionRecord>,
    ) {
        let gauges = Arc::new(Gauges::default());
        let listener = Arc::new(Counting::default());
        gauges.inc(Gauge::Establishing);
        let link = PhysicalLink::new(gauges.clone());
        let origin = OriginKey::from_uri(&"http://a.test".parse().unwrap()).unwrap();
        let info = ConnectionInfo::new(
            ConnectionId::from_u64(1),
            origin,
            PartitionId::ANONYMOUS,
            protocol,
        );
        let record = ConnectionRecord::install(info, gauges.clone(), Some(listener.clone()), None);
        record.announce();
        link.attach(&record);
        (gauges, listener, link, record)
    }

    #[test]
    fn h1_lifecycle_accounts_each_phase() {
        let (gauges, listener, link, record) = setup(Protocol::Http1);
        assert_eq!(listener.created.load(Ordering::SeqCst), 1);
        let s = gauges.snapshot();
        assert_eq!((s.establishing, s.h1_active, s.physically_live), (0, 1, 1));
        assert!(record.checkin());
        assert_eq!(gauges.snapshot().h1_idle, 1);
        assert!(record.checkout());
        assert!(!record.checkout(), "already active");
        assert!(record.close(CloseReason::IncompleteH1Exchange, None));
        assert!(
            !record.close(CloseReason::IdleTimeout, None),
            "first close wins"
        );
        assert_eq!(
            record.close_reason(),
            Some(CloseReason::IncompleteH1Exchange)
        );
        let s = gauges.snapshot();
        assert_eq!((s.h1_active, s.h1_draining, s.physically_live), (0, 1, 1));
        link.gone();
        link.gone();
        assert_eq!(gauges.snapshot(), PartitionStats::default());
        assert_eq!(
            *listener.closed.lock().unwrap(),
            vec![CloseReason::IncompleteH1Exchange]
        );
    }

    #[test]
    fn an_http2_driver_that_ends_before_its_io_is_dropped_is_not_an_upgrade() {
        let (gauges, listener, link, record) = setup(Protocol::Http2);
        // hyper's connection task still holds the I/O when the driver completes.
        record.driver_completed(None, || {});
        assert_eq!(record.close_reason(), Some(CloseReason::ProtocolClosed));
        link.gone();
        assert_eq!(gauges.snapshot(), PartitionStats::default());
        assert_eq!(
            *listener.closed.lock().unwrap(),
            vec![CloseReason::ProtocolClosed]
        );
        let (_, _, link, record) = setup(Protocol::Http1);
        record.driver_completed(None, || {});
        assert_eq!(
            record.close_reason(),
            Some(CloseReason::Upgraded),
            "an HTTP/1 driver that ends with its I/O alive handed it to an upgrade"
        );
        link.gone();
    }

    #[test]
    fn io_drop_before_logical_close_closes_as_protocol_closed() {
        let (gauges, listener, link, record) = setup(Protocol::Http1);
        assert!(record.checkin());
        link.gone();
        assert!(record.is_closed());
        assert!(
            !record.checkout(),
            "a closed idle connection cannot be checked out"
        );
        assert_eq!(gauges.snapshot(), PartitionStats::default());
        assert_eq!(
            *listener.closed.lock().unwrap(),
            vec![CloseReason::ProtocolClosed]
        );
    }

    #[test]
    fn io_gone_before_attach_is_reported_at_attach() {
        let gauges = Arc::new(Gauges::default());
        gauges.inc(Gauge::Establishing);
        let link = PhysicalLink::new(gauges.clone());
        link.gone();
        let origin = OriginKey::from_uri(&"http://a.test".parse().unwrap()).unwrap();
        let info = ConnectionInfo::new(
            ConnectionId::from_u64(2),
            origin,
            PartitionId::ANONYMOUS,
            Protocol::Http2,
        );
        let record = ConnectionRecord::install(info, gauges.clone(), None, None);
        link.attach(&record);
        assert_eq!(record.close_reason(), Some(CloseReason::ProtocolClosed));
        assert_eq!(gauges.snapshot(), PartitionStats::default());
    }

    #[test]
    fn poison_closes_idle_at_once_and_active_at_return() {
        let (_, listener, _link, record) = setup(Protocol::Http1);
        assert!(!record.is_retiring());
        record.poison();
        assert!(!record.is_closed(), "an active exchange finishes first");
        assert!(record.is_retiring(), "poisoned: it takes no further work");
        assert!(!record.checkin(), "a poisoned connection is never reused");
        assert!(record.close(CloseReason::Poisoned, None));
        assert!(record.is_retiring());
        assert_eq!(
            *listener.closed.lock().unwrap(),
            vec![CloseReason::Poisoned]
        );

        let (_, listener, _link, record) = setup(Protocol::Http1);
        assert!(record.checkin());
        record.poison();
        assert_eq!(record.close_reason(), Some(CloseReason::Poisoned));
        assert_eq!(
            *listener.closed.lock().unwrap(),
            vec![CloseReason::Poisoned]
        );
    }

    #[test]
    fn h2_poison_drains_immediately() {
        let (gauges, _, link, record) = setup(Protocol::Http2);
        assert_eq!(gauges.snapshot().h2_accepting, 1);
        record.poison();
        let s = gauges.snapshot();
        assert_eq!((s.h2_accepting, s.h2_draining), (0, 1));
        link.gone();
        assert_eq!(gauges.snapshot(), PartitionStats::default());
    }

    #[test]
    fn an_h1_permit_is_released_when_the_socket_is_gone() {
        let released = Arc::new(AtomicUsize::new(0));
        let gauges = Arc::new(Gauges::default());
        gauges.inc(Gauge::Establishing);
        let link = PhysicalLink::new(gauges.clone());
        let origin = OriginKey::from_uri(&"http://a.test".parse().unwrap()).unwrap();
        let info = ConnectionInfo::new(
            ConnectionId::from_u64(4),
            origin,
            PartitionId::ANONYMOUS,
            Protocol::Http1,
        );
        let record =
            ConnectionRecord::install(info, gauges, None, Some(Box::new(Permit(released.clone()))));
        link.attach(&record);
        record.close(CloseReason::IncompleteH1Exchange, None);
        assert_eq!(
            released.load(Ordering::SeqCst),
            0,
            "held while the socket lives"
        );
        link.gone();
        assert_eq!(released.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_permit_is_released_at_logical_close() {
        let released = Arc::new(AtomicUsize::new(0));
        let gauges = Arc::new(Gauges::default());
        gauges.inc(Gauge::Establishing);
        let origin = OriginKey::from_uri(&"http://a.test".parse().unwrap()).unwrap();
        let info = ConnectionInfo::new(
            ConnectionId::from_u64(3),
            origin,
            PartitionId::ANONYMOUS,
            Protocol::Http2,
        );
        let record =
            ConnectionRecord::install(info, gauges, None, Some(Box::new(Permit(released.clone()))));
        assert_eq!(released.load(Ordering::SeqCst), 0);
        record.close(CloseReason::IdleTimeout, None);
        assert_eq!(
            released.load(Ordering::SeqCst),
            1,
            "an HTTP/2 permit is released before the socket is gone"
        );
    }
}
