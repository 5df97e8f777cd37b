//! The transport's side of a connection's life: [`PhysicalLink`] counts a transport from the
//! connector's return until its I/O is dropped, and tells the connection's record when that
//! happens (the physical close, see the parent module).

use std::error::Error;
use std::fmt;
use std::io;
use std::sync::OnceLock;

use super::{ConnectionRecord, EndWitness};
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
    /// The first read or write error of the transport (see [`TransportEnd`]).
    end: std::sync::Arc<TransportEnd>,
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
            end: std::sync::Arc::default(),
        })
    }

    /// Reading from (`reading`) or writing to the transport failed with `error` (called by the
    /// I/O wrapper; the first failure is kept).
    #[cold]
    pub fn failed(&self, reading: bool, error: &io::Error) {
        self.end.failed(reading, error);
    }

    /// The transport reached its end of stream: the peer closed the connection (called by the
    /// I/O wrapper when a read with room in its buffer returns nothing).
    #[cold]
    pub fn ended(&self) {
        self.end
            .ended
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// What the transport's first failure says, as a witness for the connection's record:
    /// an HTTP/1 connection's (see [`TransportEnd`]).
    pub fn end_witness(&self) -> std::sync::Arc<dyn EndWitness> {
        self.end.clone()
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

/// How a transport ended, as the cause of its connection's close: its first read or write
/// error, or else its end of stream.
///
/// hyper's HTTP/1 client hands a transport error to the request in flight and then ends its
/// connection future without one, so the driver, which closes the record first, had nothing to
/// say and the request's own close came too late to be heard: a connection reset or timed out
/// (`ETIMEDOUT` from keepalive or `TCP_USER_TIMEOUT`) under a request closed as
/// `protocol_closed` and nothing more. The I/O wrapper notes the failure here as it returns it,
/// and an HTTP/1 record asks at its close ([`EndWitness`]). An end of stream is no error (a
/// server closing an idle connection is how HTTP/1 connections normally end), so it is only the
/// word a close falls back on ([`EndWitness::quiet_end`]): without it a server that closed in
/// the middle of a response, which hyper also ends its connection future on without an error,
/// left the close with nothing to say. (An HTTP/2 record has its frame reader as witness, which
/// notes the same failures and more.)
#[derive(Debug, Default)]
pub struct TransportEnd {
    failed: OnceLock<TransportFailed>,
    ended: std::sync::atomic::AtomicBool,
}

impl TransportEnd {
    fn failed(&self, reading: bool, error: &io::Error) {
        if self.failed.get().is_some() {
            return;
        }
        let direction = if reading {
            "reading from"
        } else {
            "writing to"
        };
        let _ = self.failed.set(TransportFailed(format!(
            "{direction} the connection failed: {error}"
        )));
    }
}

impl EndWitness for TransportEnd {
    fn cause(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.failed
            .get()
            .map(|failed| failed as &(dyn Error + Send + Sync + 'static))
    }

    fn quiet_end(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.ended
            .load(std::sync::atomic::Ordering::Relaxed)
            .then_some(&PeerClosed as &(dyn Error + Send + Sync + 'static))
    }
}

/// The peer closed the connection (its end of stream), as a close event carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerClosed;

impl fmt::Display for PeerClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the server closed the connection")
    }
}

impl Error for PeerClosed {}

/// A transport's read or write failure, as a close event carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportFailed(String);

impl fmt::Display for TransportFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for TransportFailed {}

#[cfg(all(test, not(pool_loom)))]
mod tests {
    use super::*;
    use crate::stats::Gauges;

    #[test]
    fn the_first_transport_failure_is_the_witness_word_and_an_end_of_stream_its_quiet_one() {
        let link = PhysicalLink::new(Arc::new(Gauges::default()));
        let witness = link.end_witness();
        assert!(witness.cause().is_none(), "nothing failed yet");
        assert!(witness.quiet_end().is_none(), "nothing ended yet");
        link.ended();
        assert_eq!(
            witness.quiet_end().map(ToString::to_string).as_deref(),
            Some("the server closed the connection")
        );
        assert!(witness.cause().is_none(), "an end of stream is no failure");
        link.failed(
            false,
            &io::Error::new(io::ErrorKind::BrokenPipe, "Broken pipe"),
        );
        link.failed(
            true,
            &io::Error::new(io::ErrorKind::TimedOut, "Connection timed out"),
        );
        assert_eq!(
            witness.cause().map(ToString::to_string).as_deref(),
            Some("writing to the connection failed: Broken pipe")
        );
        link.gone();
    }
}
