//! The guard that keeps one HTTP/2 stream counted, against the peer's limit and in the
//! gauges, from its lease until its response body ends (or the pool gives up on it).

use std::fmt;

use pool_core::CloseReason;
use pool_core::connection::ConnectionRecord;
use pool_core::stats::Gauge;
use pool_core::sync::Arc;

use crate::generation::GenerationHandle;

/// Keeps one stream counted (in `h2_active_streams`, or `h2_abandoned_streams` once
/// [`abandon`](Self::abandon)ed, and against the peer's limit) until it is dropped or
/// [`release`](Self::release)d.
pub struct StreamGuard {
    pub(crate) generation: Option<Arc<GenerationHandle>>,
    /// [`abandon`](Self::abandon)ed.
    abandoned: std::sync::atomic::AtomicBool,
}

impl StreamGuard {
    pub(crate) fn new(generation: Arc<GenerationHandle>) -> StreamGuard {
        StreamGuard {
            generation: Some(generation),
            abandoned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The record of the generation the stream belongs to.
    pub fn record(&self) -> Option<&Arc<ConnectionRecord>> {
        self.generation.as_ref().map(|g| &g.record)
    }

    /// The pool gave up on the stream while hyper still holds it open: its response is over
    /// and its request body was aborted, but hyper drops the body only once the peer grants
    /// window. The stream stays counted (h2 counts it against the peer's limit) but no longer
    /// keeps the connection in use: a connection with nothing else left is closed as unused,
    /// and ended once no stream can be taken on it (see `kill.rs`).
    pub fn abandon(&self) {
        let Some(generation) = &self.generation else {
            return;
        };
        if self
            .abandoned
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        generation
            .record
            .gauges()
            .transfer(Gauge::H2ActiveStreams, Gauge::H2AbandonedStreams);
        generation.streams.abandon();
        if !generation.streams.in_use() && generation.streams.is_full() {
            // Nothing left to serve and no room to serve anything: retire it now, so a request
            // waiting for a stream (or, bounded, for the permit) gets a new connection rather
            // than waiting for the idle timeout. A stream that ends meanwhile is reserved again
            // only by a request the retirement then drains, as after any close.
            generation.record.close(CloseReason::StreamsAbandoned, None);
            generation.home.retire(&generation.record);
        }
        generation.end_if_abandoned();
    }

    /// The stream finished: stop counting it.
    pub fn release(&mut self) {
        if let Some(generation) = self.generation.take() {
            if *self.abandoned.get_mut() {
                generation.record.gauges().dec(Gauge::H2AbandonedStreams);
                generation.streams.forget_abandoned();
            } else {
                generation.record.gauges().dec(Gauge::H2ActiveStreams);
            }
            generation.release();
        }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.release();
    }
}

impl fmt::Debug for StreamGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamGuard")
            .field("active", &self.generation.is_some())
            .finish()
    }
}
