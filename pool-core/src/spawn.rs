//! Where a partition's connection work runs.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// A boxed unit future, as submitted to a [`DriverSpawner`].
pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Runs futures on a partition's runtime: establishment (connector, TLS, ALPN, handshake),
/// connection drivers, every task hyper spawns for a connection, and the partition's
/// maintenance.
///
/// A spawner that cannot run a future (its runtime has shut down) must drop it; the pool puts
/// a guard in every future it submits, so a dropped future fails whoever waited on it instead
/// of leaving them hanging.
pub trait DriverSpawner: fmt::Debug + Send + Sync + 'static {
    /// Runs `future` to completion on this spawner's runtime, or drops it.
    fn spawn(&self, future: BoxFuture);
}
