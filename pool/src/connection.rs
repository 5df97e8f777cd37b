//! The handle every response carries to the connection that served it.

use std::fmt;
use std::time::Duration;

use pool_core::connection::ConnectionRecord;
use pool_core::sync::Arc;
use pool_core::{ConnectionId, ConnectionInfo, Protocol};

/// The connection that served a response: `response.body().connection()` on every response,
/// and `response.extensions().get::<pool::ConnectionHandle>()` when the pool was built with
/// [`Builder::connection_handle_extension`](crate::Builder::connection_handle_extension).
///
/// It describes the connection ([`info`](Self::info)), says whether this response reused it,
/// and can [`poison`](Self::poison) it.
#[derive(Clone)]
pub struct ConnectionHandle {
    record: Arc<ConnectionRecord>,
    reused: bool,
    waited: Option<Duration>,
}

impl ConnectionHandle {
    /// Why the connection closed, once it has.
    pub(crate) fn close_reason(&self) -> Option<pool_core::CloseReason> {
        self.record.close_reason()
    }

    pub(crate) fn new(
        record: Arc<ConnectionRecord>,
        reused: bool,
        waited: Option<Duration>,
    ) -> Self {
        ConnectionHandle {
            record,
            reused,
            waited,
        }
    }

    /// The connection's description: identity, origin, owner partition, protocol, addresses,
    /// TLS details and establishment timings.
    pub fn info(&self) -> &ConnectionInfo {
        self.record.info()
    }

    /// The connection's record.
    pub(crate) fn record(&self) -> &Arc<ConnectionRecord> {
        &self.record
    }

    /// The connection's identity (shorthand for `info().id()`).
    pub fn id(&self) -> ConnectionId {
        self.record.info().id()
    }

    /// The connection's protocol.
    pub fn protocol(&self) -> Protocol {
        self.record.info().protocol()
    }

    /// How long the request waited in the pool for a connection: for an establishment, a
    /// connection to come back, or a permit of a bounded origin. `None` when a connection was
    /// available at once (a reuse hit).
    pub fn wait_time(&self) -> Option<Duration> {
        self.waited
    }

    /// Whether the connection had served another request before this one.
    pub fn is_reused(&self) -> bool {
        self.reused
    }

    /// Marks the connection never to be reused. Its current work finishes; then it closes with
    /// [`CloseReason::Poisoned`](pool_core::CloseReason::Poisoned). An HTTP/2 connection stops
    /// accepting new streams at once.
    pub fn poison(&self) {
        self.record.poison();
    }

    /// Whether the connection was poisoned.
    pub fn is_poisoned(&self) -> bool {
        self.record.is_poisoned()
    }
}

impl fmt::Debug for ConnectionHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionHandle")
            .field("info", self.info())
            .field("reused", &self.reused)
            .field("waited", &self.waited)
            .finish()
    }
}
