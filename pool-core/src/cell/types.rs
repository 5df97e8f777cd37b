//! The types of the cell's API: what the assembled pool supplies (the protocol types and the
//! hooks) and what the cell's transitions answer.

use std::fmt;
use std::time::Instant;

use super::Cell;
use crate::admission::CapacityLease;
use crate::connection::ConnectionRecord;
use crate::sync::Arc;
use crate::time::TimeSource;
use crate::waiter::Waiter;

/// How many waiters a publication activates before the activated ones let the next in.
pub const ACTIVATION_TURN: usize = 8;

/// The protocol types a cell holds, supplied by the assembled pool.
pub trait CellTypes: Send + Sync + Sized + 'static {
    /// A checked-out or idle HTTP/1 connection (the sender plus its record).
    type H1: PooledH1;
    /// A handle to an accepting HTTP/2 generation; cloning it is cheap.
    type H2: PooledH2;
    /// Why an establishment failed; cloned to every waiter that depended on it.
    type Error: Clone + Send + 'static;
}

/// What the cell needs to know about an HTTP/1 connection.
pub trait PooledH1: Send + 'static {
    /// Its lifecycle record.
    fn record(&self) -> &Arc<ConnectionRecord>;
    /// Whether the protocol layer still takes requests: hyper's `!is_closed()`, not its
    /// `is_ready()`. A connection only goes idle once hyper was ready for another request, and
    /// stays ready while idle until it closes; a fresh connection whose driver has not run yet
    /// is not "ready" but takes its first request (hyper buffers one), so readiness would
    /// wrongly retire it.
    fn is_open(&self) -> bool;
    /// It enters the idle set without having served a request (the cell calls this under its
    /// lock). A transport that holds back what the server sent before the first request, and
    /// the server's close after it, as that request's answer lets the close end the
    /// connection from now on: no request is about to take it.
    fn went_idle_unused(&self) {}
}

/// What the cell needs to know about an HTTP/2 generation: whether it accepts streams, and
/// how many of the peer's concurrent streams (`SETTINGS_MAX_CONCURRENT_STREAMS`) are taken.
///
/// The cell reserves a stream (under its lock) for every request it sends to a generation,
/// before the request leases it; a reservation that will not be leased is given back with
/// [`unreserve`](Self::unreserve). Until the peer's limit is known a generation takes any
/// number of streams (h2 applies its own initial limit meanwhile).
pub trait PooledH2: Clone + Send + Sync + 'static {
    /// Its lifecycle record.
    fn record(&self) -> &Arc<ConnectionRecord>;
    /// Whether it still accepts new streams.
    fn is_accepting(&self) -> bool;
    /// Reserves one stream if the peer's limit allows another (or is not known yet) and the
    /// generation takes streams now (see [`is_full`](Self::is_full)).
    fn try_reserve(&self) -> bool;
    /// Gives back a reservation that will not be leased. A generation that was at its limit
    /// then tells its cell a stream is free, so this is never called under a cell lock.
    fn unreserve(&self);
    /// Gives back a reservation without telling anyone: for the cell, under its lock, when no
    /// request waits for the stream.
    fn unreserve_quietly(&self);
    /// Whether the peer's limit is known (or assumed) and every stream it allows is taken, or
    /// the generation takes no stream for now (`pool-h2`: its request quota is reserved out,
    /// or an upload waits for the connection's upload permit). A generation that takes streams
    /// again tells its cell through [`Cell::h2_stream_freed`](super::Cell::h2_stream_freed).
    fn is_full(&self) -> bool;
    /// Whether any stream is in use: reserved for a request, or in flight and not abandoned
    /// (a stream the pool gave up on but the protocol still holds open does not keep the
    /// generation in use; see `pool-h2`'s `kill` module).
    fn has_streams(&self) -> bool;
    /// The stream limit in force: the peer's, once a response proved its SETTINGS arrived, or
    /// the one assumed until then.
    fn stream_limit(&self) -> Option<usize>;
    /// Until its own limit is known, assume `limit` (that of a sibling generation of the same
    /// origin).
    fn assume_stream_limit(&self, limit: usize);
    /// Carry at most `quota` requests over its life, then retire: the per-connection request
    /// quota its cell learnt of the server (see `quota.rs`). Called once, before the
    /// generation takes its first request.
    fn limit_requests(&self, quota: u64);
}

/// What a waiting request receives.
pub enum Grant<T: CellTypes> {
    /// Dispatch on this HTTP/1 connection (already committed `ACTIVE`). It may belong to
    /// another partition (a borrow); its record says which.
    H1(T::H1),
    /// Take a stream lease on this cell's generation (a stream is reserved for it), then call
    /// [`Cell::activation_done`].
    H2(T::H2),
    /// Take a stream lease on another partition's generation (a borrow under bounded
    /// pressure; a stream is reserved for it); no activation bookkeeping follows.
    BorrowedH2(T::H2),
    /// The establishment this request waited on failed.
    Failed(T::Error),
    /// The request requires HTTP/2 and the origin negotiated HTTP/1.1.
    Unsupported,
}

impl<T: CellTypes> fmt::Debug for Grant<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Grant::H1(_) => "Grant::H1",
            Grant::H2(_) => "Grant::H2",
            Grant::BorrowedH2(_) => "Grant::BorrowedH2",
            Grant::Failed(_) => "Grant::Failed",
            Grant::Unsupported => "Grant::Unsupported",
        })
    }
}

/// A waiter of a cell.
pub type CellWaiter<T> = Waiter<Grant<T>>;

/// How a cell establishes connections, fixed by the pool's protocol policy and the origin's
/// scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EstablishMode {
    /// Only HTTP/1.1 (cleartext without prior knowledge, or an HTTP/1-only policy).
    Http1,
    /// Only HTTP/2 (h2c with prior knowledge, or an HTTP/2-only policy over TLS).
    Http2,
    /// ALPN decides per connection (TLS offering `h2` and `http/1.1`).
    Auto,
}

/// Identity of one flight of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlightId(u64);

impl FlightId {
    /// The flight identity after `last` (each cell numbers its flights from zero).
    pub(super) fn next(counter: &mut u64) -> FlightId {
        let id = FlightId(*counter);
        *counter += 1;
        id
    }
}

/// An establishment to start (on the owner partition) for a waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// An independent attempt.
    Attempt,
    /// The cell's single flight.
    Flight(FlightId),
}

/// Starts an establishment for a waiter; called with no lock held. The lease is the permit of
/// a bounded origin (`None` for an unbounded one); the establishment owns it from here on.
pub type LaunchHook<T> = std::sync::Arc<
    dyn Fn(Arc<CellWaiter<T>>, Launch, Option<CapacityLease<Cell<T>>>) + Send + Sync,
>;

/// Called (with no lock held) when a cell with no pending expiry gains a deadline: the
/// partition's maintenance must run [`Cell::expire`] no later than the given instant.
pub type ArmExpiry = std::sync::Arc<dyn Fn(Instant) + Send + Sync>;

/// Called (with no lock held) each time an HTTP/1 connection enters a cell's idle set after an
/// exchange or an establishment, with its record: the pool's idle cap (`max_idle_connections`)
/// keeps the order in which connections went idle. Not called for a connection that was
/// already idle and is put back (a permit delivery that found nobody to serve).
pub type WentIdle = std::sync::Arc<dyn Fn(&Arc<ConnectionRecord>) + Send + Sync>;

/// What a cell is wired to, supplied by the assembled pool.
pub struct CellHooks<T: CellTypes> {
    /// Starts establishments.
    pub launch: LaunchHook<T>,
    /// Schedules expiry sweeps.
    pub arm_expiry: Option<ArmExpiry>,
    /// Hears of connections going idle, if the pool caps its idle connections.
    pub went_idle: Option<WentIdle>,
    /// The pool's clock (for idle deadlines of connections the cell handles on its own).
    pub time: std::sync::Arc<dyn TimeSource>,
}

impl<T: CellTypes> fmt::Debug for CellHooks<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CellHooks")
            .field("arm_expiry", &self.arm_expiry.is_some())
            .field("went_idle", &self.went_idle.is_some())
            .field("time", &self.hooks_time())
            .finish()
    }
}

impl<T: CellTypes> CellHooks<T> {
    fn hooks_time(&self) -> &dyn TimeSource {
        &*self.time
    }
}

/// The outcome of [`Cell::acquire`].
pub enum Acquire<T: CellTypes> {
    /// A reuse hit on an idle HTTP/1 connection, committed `ACTIVE`.
    H1(T::H1),
    /// A reuse hit on an accepting generation, with a stream reserved for the request.
    H2(T::H2),
    /// The request requires HTTP/2 and this cell only establishes HTTP/1.1.
    Unsupported,
    /// The origin's pending-request cap is reached: fail without waiting.
    Saturated,
    /// A miss: wait on `waiter` (whatever establishment it needs has been started or
    /// requested already).
    Wait(Arc<CellWaiter<T>>),
    /// The cell was retired (it had nothing in it, see [`Cell::retire_if_unused`]): look the
    /// origin up again.
    ///
    /// [`Cell::retire_if_unused`]: super::Cell::retire_if_unused
    Retired,
}

impl<T: CellTypes> fmt::Debug for Acquire<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Acquire::H1(_) => f.write_str("Acquire::H1"),
            Acquire::H2(_) => f.write_str("Acquire::H2"),
            Acquire::Unsupported => f.write_str("Acquire::Unsupported"),
            Acquire::Saturated => f.write_str("Acquire::Saturated"),
            Acquire::Wait(waiter) => f.debug_tuple("Acquire::Wait").field(waiter).finish(),
            Acquire::Retired => f.write_str("Acquire::Retired"),
        }
    }
}

/// The outcome of [`Cell::converge`].
#[derive(Debug, PartialEq, Eq)]
pub enum Converge {
    /// Run the HTTP/1 handshake.
    Http1,
    /// Run the HTTP/2 handshake as this flight, then [`Cell::publish_h2`].
    LeadFlight(FlightId),
    /// Another generation or flight serves the launcher: close this transport unhandshaken
    /// (and drop its permit, if any).
    Join,
}

/// What happened to a released HTTP/1 connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    /// A waiting request took it (possibly in another partition: a borrow).
    Delivered,
    /// It entered the idle set.
    Idle,
    /// It was closed instead (poisoned, closed while returning, or reclaimed).
    Closed,
}
