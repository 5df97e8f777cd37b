//! Partitions: placement scopes that own the connections they create.
//!
//! Each partition runs its connections' work (connector, TLS, handshake, driver, every task
//! hyper spawns, idle maintenance) through its [`DriverSpawner`], usually a tokio runtime of its
//! own, optionally bound to a network interface. A request may be polled on any runtime: a new
//! connection's establishment is submitted, unpolled, to the owner partition, so a socket is
//! always registered with the reactor of the runtime that drives it.

use std::fmt;
use std::sync::OnceLock;

use pool_core::sync::Arc;
use pool_core::sync::atomic::{AtomicBool, Ordering};
use pool_core::{BoxFuture, DriverSpawner, PartitionId};
use tokio::runtime::Handle;

use crate::maintenance::Maintenance;

/// An explicit partition of a pool: an identity, where its connections run, and optionally the
/// network interface its sockets bind to.
#[derive(Clone)]
pub struct Partition {
    pub(crate) id: PartitionId,
    pub(crate) spawner: Arc<dyn DriverSpawner>,
    pub(crate) interface: Option<Arc<str>>,
}

impl Partition {
    /// A partition whose connections run through `spawner`.
    ///
    /// The runtime behind `spawner` must keep running for as long as the pool is used: the
    /// partition's connection drivers live there, and with a reuse scope wider than
    /// [`ConnectionReuseScope::Partition`] other partitions dispatch through them too. A
    /// current-thread runtime only drives its tasks inside `block_on`; a thread that leaves
    /// `block_on` while a peer partition borrows one of its connections stalls that peer's
    /// request until the runtime runs again.
    ///
    /// [`ConnectionReuseScope::Partition`]: crate::ConnectionReuseScope::Partition
    pub fn new(id: PartitionId, spawner: impl DriverSpawner) -> Partition {
        Partition {
            id,
            spawner: Arc::new(spawner),
            interface: None,
        }
    }

    /// Binds every socket of this partition to the named network interface (`SO_BINDTODEVICE`
    /// on Linux). A missing interface, or a platform or privilege that does not allow binding,
    /// is reported as a connect error when a connection is established, not when the pool is
    /// built.
    pub fn interface(mut self, name: impl Into<Arc<str>>) -> Partition {
        self.interface = Some(name.into());
        self
    }

    /// The partition's identity.
    pub fn id(&self) -> PartitionId {
        self.id
    }
}

impl fmt::Debug for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Partition")
            .field("id", &self.id)
            .field("spawner", &self.spawner)
            .field("interface", &self.interface)
            .finish()
    }
}

/// A [`DriverSpawner`] over a tokio runtime.
#[derive(Clone, Debug)]
pub struct TokioDriverSpawner {
    handle: Handle,
}

impl TokioDriverSpawner {
    /// Spawns onto the runtime this is called from.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (like `tokio::runtime::Handle::current`).
    pub fn current() -> TokioDriverSpawner {
        TokioDriverSpawner {
            handle: Handle::current(),
        }
    }

    /// Spawns onto the runtime of `handle`.
    pub fn from_handle(handle: Handle) -> TokioDriverSpawner {
        TokioDriverSpawner { handle }
    }
}

impl DriverSpawner for TokioDriverSpawner {
    fn spawn(&self, future: BoxFuture) {
        // After the runtime shuts down, tokio drops the future instead of running it; the
        // pool's guards inside the future turn that into an error for whoever waited.
        drop(self.handle.spawn(future));
    }
}

/// The anonymous partition's spawner: the runtime current at the first establishment.
#[derive(Debug, Default)]
pub(crate) struct CapturingSpawner {
    handle: OnceLock<Handle>,
}

impl DriverSpawner for CapturingSpawner {
    fn spawn(&self, future: BoxFuture) {
        let handle = match self.handle.get() {
            Some(handle) => handle,
            None => match Handle::try_current() {
                Ok(current) => self.handle.get_or_init(|| current),
                // No runtime to run it on: dropping the future fails its waiter.
                Err(_) => return,
            },
        };
        drop(handle.spawn(future));
    }
}

/// What connections of one partition share: placement, maintenance, and whether the pool is
/// still alive. Held by every cell of the partition (never by the pool's cell maps' owner in
/// the other direction), so connections can reach their partition without keeping the pool
/// alive.
pub(crate) struct PartitionRuntime {
    pub(crate) id: PartitionId,
    pub(crate) interface: Option<Arc<str>>,
    pub(crate) spawner: Arc<dyn DriverSpawner>,
    pub(crate) maintenance: Maintenance,
    /// Set when the last pool handle drops: returning connections close instead of idling.
    closed: AtomicBool,
}

impl PartitionRuntime {
    pub(crate) fn new(
        id: PartitionId,
        interface: Option<Arc<str>>,
        spawner: Arc<dyn DriverSpawner>,
    ) -> Self {
        PartitionRuntime {
            id,
            interface,
            spawner,
            maintenance: Maintenance::default(),
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn spawn(&self, future: BoxFuture) {
        self.spawner.spawn(future);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.maintenance.shutdown();
    }
}

impl fmt::Debug for PartitionRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionRuntime")
            .field("id", &self.id)
            .field("interface", &self.interface)
            .field("closed", &self.is_closed())
            .finish()
    }
}
