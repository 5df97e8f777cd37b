//! What the server counts and keeps beyond the common counters: requests, client resets and
//! each connection's streams in flight.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::counters::{Log, lock};

use super::{H2Request, StreamReset};

/// Stream counts of one connection.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StreamCounts {
    /// Streams accepted.
    pub(super) accepted: usize,
    /// Streams the server is still working on.
    pub(super) in_flight: usize,
    /// The largest `in_flight` seen.
    pub(super) max_in_flight: usize,
}

/// What the H2 server records, beyond the common counters.
#[derive(Debug)]
pub(super) struct H2Records {
    /// Requests, in the order their bodies completed.
    pub(super) requests: Log<H2Request>,
    /// Streams the client reset while the server worked on them.
    pub(super) resets: Log<StreamReset>,
    /// Per connection id; grown by the connection task, changed by stream guards.
    pub(super) streams: Mutex<Vec<StreamCounts>>,
    /// Total streams accepted, for waiting.
    pub(super) total_streams: watch::Sender<usize>,
}

impl H2Records {
    pub(super) fn new(record_requests: bool) -> Self {
        Self {
            requests: if record_requests {
                Log::new()
            } else {
                Log::counting()
            },
            resets: Log::new(),
            streams: Mutex::new(Vec::new()),
            total_streams: watch::Sender::new(0),
        }
    }
}

/// Counts a stream as in flight until dropped.
#[derive(Debug)]
pub(super) struct InFlight {
    pub(super) records: Arc<H2Records>,
    pub(super) conn_id: u64,
}

impl InFlight {
    pub(super) fn new(records: Arc<H2Records>, conn_id: u64) -> Self {
        {
            let mut streams = lock(&records.streams);
            let idx = conn_id as usize;
            if streams.len() <= idx {
                streams.resize(idx + 1, StreamCounts::default());
            }
            let c = &mut streams[idx];
            c.accepted += 1;
            c.in_flight += 1;
            c.max_in_flight = c.max_in_flight.max(c.in_flight);
        }
        records.total_streams.send_modify(|n| *n += 1);
        Self { records, conn_id }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(c) = lock(&self.records.streams).get_mut(self.conn_id as usize) {
            c.in_flight -= 1;
        }
    }
}
