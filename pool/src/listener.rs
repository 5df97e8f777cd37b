//! A ready-made event listener that counts, and (feature `metrics`) the pair of the user's
//! listener and the metrics listener.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use pool_core::{
    CloseReason, ConnectionEventListener, ConnectionInfo, EventError, OriginKey, PartitionId,
    Protocol, ResendReason,
};

/// A [`ConnectionEventListener`] that counts every lifecycle event the pool reports:
/// connections opened (by protocol), reused, borrowed, closed (by [`CloseReason`]), failed
/// establishments and re-sends (by [`ResendReason`]). Hand the pool an `Arc` of it and keep a
/// clone to read:
///
/// ```
/// use std::sync::Arc;
///
/// let counts = Arc::new(pool::CountingListener::new());
/// let pool = pool::ConnectionPool::builder()
///     .event_listener(counts.clone())
///     .build()?;
/// # drop(pool);
/// assert_eq!(counts.opened(), 0);
/// # Ok::<(), pool::BuildError>(())
/// ```
///
/// Counting is a relaxed atomic add per event; reads are relaxed and not a snapshot of all
/// counters at one instant. It keeps no per-origin or per-partition breakdown (write a
/// listener for that, or use the `metrics` feature, which labels by origin and partition).
#[derive(Default)]
pub struct CountingListener {
    opened: [AtomicU64; 2],
    reused: AtomicU64,
    borrowed: AtomicU64,
    closed: [AtomicU64; CloseReason::ALL.len()],
    failed: AtomicU64,
    resent: [AtomicU64; ResendReason::ALL.len()],
}

fn protocol_index(protocol: Protocol) -> usize {
    match protocol {
        Protocol::Http1 => 0,
        Protocol::Http2 => 1,
    }
}

fn close_index(reason: CloseReason) -> usize {
    CloseReason::ALL
        .iter()
        .position(|r| *r == reason)
        .expect("ALL lists every close reason")
}

fn resend_index(reason: ResendReason) -> usize {
    ResendReason::ALL
        .iter()
        .position(|r| *r == reason)
        .expect("ALL lists every resend reason")
}

fn load(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl CountingListener {
    /// A listener with every count at zero.
    pub fn new() -> CountingListener {
        CountingListener::default()
    }

    /// Connections established, both protocols.
    pub fn opened(&self) -> u64 {
        self.opened.iter().map(load).sum()
    }

    /// Connections established that speak `protocol`.
    pub fn opened_with(&self, protocol: Protocol) -> u64 {
        load(&self.opened[protocol_index(protocol)])
    }

    /// Requests dispatched on a connection of their own partition that had served before.
    pub fn reused(&self) -> u64 {
        load(&self.reused)
    }

    /// Requests dispatched on another partition's connection.
    pub fn borrowed(&self) -> u64 {
        load(&self.borrowed)
    }

    /// Connections closed, every reason.
    pub fn closed(&self) -> u64 {
        self.closed.iter().map(load).sum()
    }

    /// Connections closed for `reason`.
    pub fn closed_for(&self, reason: CloseReason) -> u64 {
        load(&self.closed[close_index(reason)])
    }

    /// Connections opened and not closed yet (they may still be draining).
    pub fn open(&self) -> u64 {
        self.opened().saturating_sub(self.closed())
    }

    /// Establishments that produced no connection.
    pub fn failed(&self) -> u64 {
        load(&self.failed)
    }

    /// Requests the pool sent again, every reason.
    pub fn resent(&self) -> u64 {
        self.resent.iter().map(load).sum()
    }

    /// Requests the pool sent again for `reason`.
    pub fn resent_for(&self, reason: ResendReason) -> u64 {
        load(&self.resent[resend_index(reason)])
    }
}

impl ConnectionEventListener for CountingListener {
    fn connection_created(&self, info: &ConnectionInfo) {
        bump(&self.opened[protocol_index(info.protocol())]);
    }

    fn connection_reused(&self, _info: &ConnectionInfo) {
        bump(&self.reused);
    }

    fn connection_borrowed(&self, _info: &ConnectionInfo, _borrower: PartitionId) {
        bump(&self.borrowed);
    }

    fn connection_closed(
        &self,
        _info: &ConnectionInfo,
        reason: CloseReason,
        _error: Option<&EventError>,
    ) {
        bump(&self.closed[close_index(reason)]);
    }

    fn request_resent(&self, _info: &ConnectionInfo, reason: ResendReason, _attempt: u32) {
        bump(&self.resent[resend_index(reason)]);
    }

    fn connection_failed(&self, _origin: &OriginKey, _partition: PartitionId, _error: &EventError) {
        bump(&self.failed);
    }
}

impl fmt::Debug for CountingListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingListener")
            .field("opened", &self.opened())
            .field("reused", &self.reused())
            .field("borrowed", &self.borrowed())
            .field("closed", &self.closed())
            .field("failed", &self.failed())
            .field("resent", &self.resent())
            .finish()
    }
}

/// The pool's listener with the metrics listener beside it, when metrics are on.
#[cfg(feature = "metrics")]
pub(crate) fn with_metrics(
    listener: Option<pool_core::sync::Arc<dyn ConnectionEventListener>>,
    metrics: bool,
) -> Option<pool_core::sync::Arc<dyn ConnectionEventListener>> {
    use crate::metrics::MetricsListener;
    if !metrics {
        return listener;
    }
    Some(match listener {
        None => pool_core::sync::Arc::new(MetricsListener),
        Some(user) => pool_core::sync::Arc::new(Both(user, MetricsListener)),
    })
}

/// Two listeners, each told every event: the user's first.
#[cfg(feature = "metrics")]
struct Both<A: ?Sized>(pool_core::sync::Arc<A>, crate::metrics::MetricsListener);

#[cfg(feature = "metrics")]
impl<A: ConnectionEventListener + ?Sized> ConnectionEventListener for Both<A> {
    fn connection_created(&self, info: &ConnectionInfo) {
        self.0.connection_created(info);
        self.1.connection_created(info);
    }

    fn connection_reused(&self, info: &ConnectionInfo) {
        self.0.connection_reused(info);
        self.1.connection_reused(info);
    }

    fn connection_borrowed(&self, info: &ConnectionInfo, borrower: PartitionId) {
        self.0.connection_borrowed(info, borrower);
        self.1.connection_borrowed(info, borrower);
    }

    fn connection_closed(
        &self,
        info: &ConnectionInfo,
        reason: CloseReason,
        error: Option<&EventError>,
    ) {
        self.0.connection_closed(info, reason, error);
        self.1.connection_closed(info, reason, error);
    }

    fn request_resent(&self, info: &ConnectionInfo, reason: ResendReason, attempt: u32) {
        self.0.request_resent(info, reason, attempt);
        self.1.request_resent(info, reason, attempt);
    }

    fn connection_failed(&self, origin: &OriginKey, partition: PartitionId, error: &EventError) {
        self.0.connection_failed(origin, partition, error);
        self.1.connection_failed(origin, partition, error);
    }
}
