//! The transport's side of a connection's life: [`PhysicalLink`] counts a transport from the
//! connector's return until its I/O is dropped, and tells the connection's record when that
//! happens (the physical close, see the parent module).

use std::fmt;

use super::ConnectionRecord;
use crate::stats::{Gauge, Gauges};
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Arc, Mutex};

/// Tracks one transport from the connector's return until its I/O is dropped.
///
/// Created when the transport is wrapped (before any HTTP handshake), so `physically_live`
/// counts transports that are still handshaking, and those whose handshake failed until they are
/// dropped. The record attaches once the connection is installed; if the I/O is already gone by
/// then, the record learns it immediately.
pub struct PhysicalLink {
    /// Gauges of the owning cell (`physically_live`).
    gauges: Arc<Gauges>,
    /// Bytes read from the transport so far (after TLS), so an exchange can tell whether any
    /// byte of its response arrived before the connection failed.
    bytes_read: AtomicU64,
    /// The record to tell, once attached.
    record: Mutex<LinkState>,
}

enum LinkState {
    Unattached,
    /// Strong on purpose: the record must hear about the drop even after everyone else let go
    /// of it (an upgraded connection's I/O outlives every pool handle). The record never
    /// references its I/O, so this makes no cycle.
    Attached(Arc<ConnectionRecord>),
    Gone,
}

impl PhysicalLink {
    /// Counts a new live transport.
    pub fn new(gauges: Arc<Gauges>) -> Arc<PhysicalLink> {
        gauges.inc(Gauge::PhysicallyLive);
        Arc::new(PhysicalLink {
            gauges,
            bytes_read: AtomicU64::new(0),
            record: Mutex::new(LinkState::Unattached),
        })
    }

    /// Counts `n` bytes read from the transport (called by the I/O wrapper on every read; only
    /// the connection's driver reads, so the counter is written by one task).
    pub fn count_read(&self, n: usize) {
        // One writer, so a load and a store: no locked read-modify-write on every read.
        let read = self.bytes_read.load(Ordering::Relaxed);
        self.bytes_read.store(read + n as u64, Ordering::Relaxed);
    }

    /// Bytes read from the transport so far. An exchange notes it at dispatch and compares at
    /// failure: the driver that reads has finished with the exchange by the time the failure
    /// reaches the request (hyper reports it from the same poll), so equal counts mean no byte
    /// of the response arrived.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// Connects the installed record; physical close is reported to it from now on.
    pub fn attach(&self, record: &Arc<ConnectionRecord>) {
        let gone = {
            let mut state = self.record.lock();
            match *state {
                LinkState::Gone => true,
                _ => {
                    *state = LinkState::Attached(record.clone());
                    false
                }
            }
        };
        if gone {
            record.physical_close();
        }
    }

    /// The I/O was dropped (called once, by the I/O wrapper's `Drop`).
    pub fn gone(&self) {
        let previous = std::mem::replace(&mut *self.record.lock(), LinkState::Gone);
        if matches!(previous, LinkState::Gone) {
            return;
        }
        self.gauges.dec(Gauge::PhysicallyLive);
        if let LinkState::Attached(record) = previous {
            record.physical_close();
        }
    }
}

impl fmt::Debug for PhysicalLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &*self.record.lock() {
            LinkState::Unattached => "unattached",
            LinkState::Attached(_) => "attached",
            LinkState::Gone => "gone",
        };
        f.debug_struct("PhysicalLink")
            .field("state", &state)
            .finish()
    }
}
