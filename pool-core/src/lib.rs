//! Connection-pool coordination without I/O.
//!
//! Everything that decides *who gets which connection* lives here, written so that it can be
//! model-checked: synchronous methods under small locks, wakers stored in slots, and work that
//! needs I/O (dialing, handshakes) returned to the caller to perform after the lock is released.
//! This crate opens no socket, spawns no task and never reads the system clock: time comes in
//! as an argument, or (for the few cell transitions that have no caller-supplied instant) from
//! the [`TimeSource`] the pool injects into each cell.
//!
//! * [`origin`]: canonical [`OriginKey`]s and their allocation-free lookup.
//! * [`partition`]: [`PartitionId`], [`ConnectionReuseScope`] and eligibility groups.
//! * [`admission`]: the permit ledger, demand order, permit delivery and the pending cap of a
//!   bounded origin.
//! * [`cell`]: one origin in one partition: the waiter queues, idle HTTP/1 connections and
//!   attempts, the HTTP/2 flight and generation gate, and (bounded) borrow, reclaim and permits.
//! * [`waiter`]: the exactly-once hand-over of a grant to a waiting request.
//! * [`progress`]: a request's stage (waiting, a connection being made for it, its exchange),
//!   readable by its caller while it runs.
//! * [`connection`]: a connection's lifecycle (dispatch commit, logical and physical close).
//! * [`stats`], [`events`], [`close`], [`time`]: gauges, lifecycle events, close reasons, and the
//!   time inputs.
//! * [`spawn`]: the [`DriverSpawner`] a partition's connection work runs on.
//! * [`sync`]: the `std`/`loom` facade every lock comes from.
//! * [`target`]: [`RequestTarget`], a request's target on the wire in place of its URI's, and
//!   [`OmitHost`], an HTTP/1 request sent without the `Host` the pool adds.
//!
//! What it does not do: speak HTTP (`pool-h1`, `pool-h2`), establish transports (`pool-tls`),
//! or assemble the pool users depend on (`pool`).
//!
//! # Standalone use
//!
//! None: this crate is an internal building block of the `pool` crate, and its API follows what
//! `pool`, `pool-h1` and `pool-h2` need from one change to the next. Depend on `pool`, which
//! re-exports the types users meet (`OriginKey`, `PartitionId`, `ConnectionInfo`, `CloseReason`,
//! the gauges and the listener trait).

pub mod admission;
pub mod cell;
pub mod close;
pub mod connection;
pub mod events;
pub mod origin;
pub mod partition;
pub mod progress;
pub mod spawn;
pub mod stats;
pub mod sync;
pub mod target;
pub mod time;
pub mod waiter;

#[cfg(all(test, pool_loom))]
mod loom_models;

pub use close::CloseReason;
pub use events::{
    CertificateCheck, ConnectionEventListener, ConnectionId, ConnectionInfo, ConnectionTimings,
    EventError, OpenReason, Protocol, ProxyRoute, ResendReason, TlsDetails,
};
pub use origin::{HostKind, InvalidOrigin, OriginKey, OriginLookup, Scheme};
pub use partition::{ConnectionReuseScope, EligibilityGroup, PartitionId};
pub use progress::{ConnectStep, Progress, RequestStage};
pub use spawn::{BoxFuture, DriverSpawner};
pub use stats::{Gauge, Gauges, OriginStats, PartitionStats, Peaks};
pub use target::{OmitHost, RequestTarget};
pub use time::{AsyncSleep, ConnectTimeout, Sleep, TimeSource};
