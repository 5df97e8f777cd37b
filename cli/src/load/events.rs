//! The pool's lifecycle events, counted: connections created (by protocol, by owner
//! partition and by origin), closed (by reason), failed establishments, the most
//! connections alive at once, and the connections created and closed in each second of the
//! run (the timeline's `connections_opened` and `connections_closed`).
//!
//! Events are rare next to requests (one per connection, not per request), so plain atomics
//! shared by every partition are cheap here. Reuse is *not* counted from events: the
//! `connection_reused` callback fires per request, and the response's
//! [`pool::ConnectionHandle`] already tells each worker, without shared writes.

use std::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use pool::{
    CloseReason, ConnectionEventListener, ConnectionInfo, OriginKey, PartitionId, Protocol,
};

/// Event counters, written by the listener on whichever partition thread raised the event and
/// read by the summary.
#[derive(Debug)]
pub(crate) struct EventCounts {
    /// `connection_created` events.
    created: AtomicU64,
    /// Created connections speaking HTTP/1.1.
    h1: AtomicU64,
    /// Created connections speaking HTTP/2.
    h2: AtomicU64,
    /// Created connections per owner partition index.
    by_partition: Box<[AtomicU64]>,
    /// Created connections per origin (a handful of origins; locked once per connection).
    by_origin: Mutex<Vec<(OriginKey, u64)>>,
    /// `connection_closed` events per reason, indexed like [`CloseReason::ALL`].
    closed: [AtomicU64; CloseReason::ALL.len()],
    /// `connection_closed` events with a reason this build does not know.
    closed_other: AtomicU64,
    /// The first error behind a close, per reason (like `closed`, plus one slot for unknown
    /// reasons). Locked only when a connection closes with an error, and by the snapshot.
    close_examples: Mutex<[Option<String>; CloseReason::ALL.len() + 1]>,
    /// `connection_failed` events: establishments that produced no connection.
    failed: AtomicU64,
    /// Created minus closed, right now.
    live: AtomicU64,
    /// The largest `live` value seen.
    peak_live: AtomicU64,
    /// When the run started ([`EventCounts::start_run`]); events before it (the warm-up's)
    /// belong to no second.
    run_start: OnceLock<Instant>,
    /// Connections created and closed in each second of the run, by the time of the event.
    per_second: Mutex<Vec<SecondEvents>>,
}

/// The connections created and closed within one second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SecondEvents {
    /// `connection_created` events in it.
    pub(crate) opened: u64,
    /// `connection_closed` events in it.
    pub(crate) closed: u64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EventSnapshot {
    /// Connections created.
    pub(crate) created: u64,
    /// Of those, HTTP/1.1.
    pub(crate) h1: u64,
    /// Of those, HTTP/2.
    pub(crate) h2: u64,
    /// Connections created per partition index.
    pub(crate) by_partition: Vec<u64>,
    /// Connections created per origin, in the order origins first had one.
    pub(crate) by_origin: Vec<(OriginKey, u64)>,
    /// Closes per reason, in [`CloseReason::ALL`] order.
    pub(crate) closed: Vec<(CloseReason, u64)>,
    /// Closes with an unknown reason.
    pub(crate) closed_other: u64,
    /// The first error message behind a close, per reason that had one (`"other"` for
    /// unknown reasons).
    pub(crate) close_examples: Vec<(&'static str, String)>,
    /// Failed establishments.
    pub(crate) failed: u64,
    /// The most connections alive (created, not yet closed) at once.
    pub(crate) peak_live: u64,
    /// Connections created and closed in each second of the run, indexed by second.
    pub(crate) per_second: Vec<SecondEvents>,
}

impl EventSnapshot {
    /// Every close, whatever the reason.
    pub(crate) fn closed_total(&self) -> u64 {
        self.closed.iter().map(|(_, n)| n).sum::<u64>() + self.closed_other
    }

    /// Connections created for `origin`.
    pub(crate) fn opened_for(&self, origin: &OriginKey) -> u64 {
        self.by_origin
            .iter()
            .find(|(key, _)| key == origin)
            .map_or(0, |(_, n)| *n)
    }
}

impl EventCounts {
    /// Counters for a pool with `partitions` explicit partitions.
    pub(crate) fn new(partitions: usize) -> Arc<EventCounts> {
        Arc::new(EventCounts {
            created: AtomicU64::new(0),
            h1: AtomicU64::new(0),
            h2: AtomicU64::new(0),
            by_partition: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
            by_origin: Mutex::new(Vec::new()),
            closed: Default::default(),
            closed_other: AtomicU64::new(0),
            close_examples: Mutex::new(Default::default()),
            failed: AtomicU64::new(0),
            live: AtomicU64::new(0),
            peak_live: AtomicU64::new(0),
            run_start: OnceLock::new(),
            per_second: Mutex::new(Vec::new()),
        })
    }

    /// The run starts now (`start`): from here on, each event also counts in the second of
    /// the run it happened in. Only the first call counts.
    pub(crate) fn start_run(&self, start: Instant) {
        let _ = self.run_start.set(start);
    }

    /// The per-second counts, locked. Each event holds the lock while it counts (totals and
    /// second alike) and the snapshot while it reads, so a snapshot's seconds add up to its
    /// totals. Once per connection event, like `by_origin`'s lock.
    fn seconds(&self) -> MutexGuard<'_, Vec<SecondEvents>> {
        self.per_second
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one event that happened at `now` in its second of the run (`seconds`, locked),
    /// if the run started.
    fn count_in_second(
        &self,
        seconds: &mut Vec<SecondEvents>,
        now: Instant,
        count: impl FnOnce(&mut SecondEvents),
    ) {
        let Some(start) = self.run_start.get() else {
            return;
        };
        let elapsed = now.saturating_duration_since(*start);
        let second = usize::try_from(elapsed.as_secs()).unwrap_or(usize::MAX);
        if seconds.len() <= second {
            seconds.resize(second.saturating_add(1), SecondEvents::default());
        }
        if let Some(slot) = seconds.get_mut(second) {
            count(slot);
        }
    }

    /// The listener to install in the pool.
    pub(crate) fn listener(self: &Arc<Self>) -> Listener {
        Listener(self.clone())
    }

    /// Reads every counter: the counts of created and closed connections agree with each
    /// other and with the seconds (read under the lock every event counts under); the
    /// establishments that failed may be a little ahead or behind.
    pub(crate) fn snapshot(&self) -> EventSnapshot {
        let seconds = self.seconds();
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        EventSnapshot {
            created: read(&self.created),
            h1: read(&self.h1),
            h2: read(&self.h2),
            by_partition: self.by_partition.iter().map(read).collect(),
            by_origin: self
                .by_origin
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            closed: CloseReason::ALL
                .iter()
                .zip(&self.closed)
                .map(|(reason, n)| (*reason, read(n)))
                .collect(),
            closed_other: read(&self.closed_other),
            close_examples: self
                .close_examples
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .enumerate()
                .filter_map(|(i, example)| {
                    let name = CloseReason::ALL.get(i).map_or("other", |r| r.as_str());
                    example.clone().map(|e| (name, e))
                })
                .collect(),
            failed: read(&self.failed),
            peak_live: read(&self.peak_live),
            per_second: seconds.clone(),
        }
    }

    fn created(&self, info: &ConnectionInfo) {
        let mut seconds = self.seconds();
        self.created.fetch_add(1, Ordering::Relaxed);
        match info.protocol() {
            Protocol::Http1 => &self.h1,
            Protocol::Http2 => &self.h2,
        }
        .fetch_add(1, Ordering::Relaxed);
        if let Some(slot) = partition_index(info.partition()).and_then(|i| self.by_partition.get(i))
        {
            slot.fetch_add(1, Ordering::Relaxed);
        }
        let live = self.live.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_live.fetch_max(live, Ordering::Relaxed);
        let mut by_origin = self
            .by_origin
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match by_origin.iter_mut().find(|(key, _)| key == info.origin()) {
            Some((_, count)) => *count += 1,
            None => by_origin.push((info.origin().clone(), 1)),
        }
        drop(by_origin);
        self.count_in_second(&mut seconds, Instant::now(), |s| s.opened += 1);
    }

    fn closed(&self, reason: CloseReason, error: Option<&(dyn Error + Send + Sync + 'static)>) {
        let mut seconds = self.seconds();
        let index = CloseReason::ALL.iter().position(|r| *r == reason);
        match index {
            Some(i) => &self.closed[i],
            None => &self.closed_other,
        }
        .fetch_add(1, Ordering::Relaxed);
        if let Some(error) = error {
            let mut examples = self
                .close_examples
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let slot = &mut examples[index.unwrap_or(CloseReason::ALL.len())];
            if slot.is_none() {
                *slot = Some(chain(error));
            }
        }
        // The pool closes every created connection exactly once, after creating it.
        let _ = self
            .live
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        self.count_in_second(&mut seconds, Instant::now(), |s| s.closed += 1);
    }
}

/// An error and its sources, joined with `: ` (a source already at the end of the text is
/// not repeated).
pub(crate) fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        let part = source.to_string();
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        next = source.source();
    }
    text
}

/// The index of an explicit partition.
fn partition_index(id: PartitionId) -> Option<usize> {
    id.index().and_then(|i| usize::try_from(i).ok())
}

/// The [`ConnectionEventListener`] feeding an [`EventCounts`].
#[derive(Debug, Clone)]
pub(crate) struct Listener(Arc<EventCounts>);

impl ConnectionEventListener for Listener {
    fn connection_created(&self, info: &ConnectionInfo) {
        self.0.created(info);
    }

    fn connection_closed(
        &self,
        _info: &ConnectionInfo,
        reason: CloseReason,
        error: Option<&(dyn Error + Send + Sync + 'static)>,
    ) {
        self.0.closed(reason, error);
    }

    fn connection_failed(
        &self,
        _origin: &OriginKey,
        _partition: PartitionId,
        _error: &(dyn Error + Send + Sync + 'static),
    ) {
        self.0.failed.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pool::ConnectionId;
    use std::time::Duration;

    fn info(id: u64, partition: u32, protocol: Protocol) -> ConnectionInfo {
        let origin = OriginKey::from_uri(&"http://a.test/".parse().unwrap()).unwrap();
        ConnectionInfo::new(
            ConnectionId::from_u64(id),
            origin,
            PartitionId::from_index(partition),
            protocol,
        )
    }

    #[test]
    fn counts_by_protocol_partition_and_reason() {
        let counts = EventCounts::new(2);
        let listener = counts.listener();
        listener.connection_created(&info(1, 0, Protocol::Http1));
        listener.connection_created(&info(2, 1, Protocol::Http2));
        listener.connection_created(&info(3, 1, Protocol::Http1));
        let eof = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "peer went away");
        listener.connection_closed(
            &info(1, 0, Protocol::Http1),
            CloseReason::ProtocolClosed,
            Some(&eof),
        );
        listener.connection_closed(
            &info(2, 1, Protocol::Http2),
            CloseReason::ProtocolClosed,
            Some(&std::io::Error::other("only the first example is kept")),
        );
        listener.connection_created(&info(4, 0, Protocol::Http1));
        let snapshot = counts.snapshot();
        assert_eq!((snapshot.created, snapshot.h1, snapshot.h2), (4, 3, 1));
        assert_eq!(snapshot.by_partition, [2, 2]);
        let origin = OriginKey::from_uri(&"http://a.test/".parse().unwrap()).unwrap();
        assert_eq!(snapshot.opened_for(&origin), 4);
        assert_eq!(snapshot.closed_total(), 2);
        assert!(snapshot.closed.contains(&(CloseReason::ProtocolClosed, 2)));
        assert_eq!(snapshot.closed.len(), CloseReason::ALL.len());
        assert_eq!(
            snapshot.peak_live, 3,
            "4 created, but #1 and #2 closed before #4"
        );
        assert_eq!(
            snapshot.close_examples,
            [("protocol_closed", "peer went away".to_owned())]
        );
        assert!(
            snapshot.per_second.is_empty(),
            "events before the run's start belong to no second"
        );
    }

    #[test]
    fn events_after_the_start_count_in_their_second_of_the_run() {
        let counts = EventCounts::new(1);
        let listener = counts.listener();
        listener.connection_created(&info(1, 0, Protocol::Http2));
        let start = Instant::now();
        counts.start_run(start);
        counts.start_run(start + Duration::from_secs(9));
        let at = |ms| start + Duration::from_millis(ms);
        let mut seconds = counts.seconds();
        counts.count_in_second(&mut seconds, at(2_999), |s| s.closed += 1);
        counts.count_in_second(&mut seconds, at(2_000), |s| s.opened += 1);
        counts.count_in_second(&mut seconds, at(400), |s| s.opened += 1);
        drop(seconds);
        let per_second = counts.snapshot().per_second;
        assert_eq!(
            per_second,
            [
                SecondEvents {
                    opened: 1,
                    closed: 0
                },
                SecondEvents::default(),
                SecondEvents {
                    opened: 1,
                    closed: 1
                },
            ],
            "the warm-up's creation is in no second; the first start stands"
        );
        // The listener counts in the second it is called in, whichever that is.
        listener.connection_closed(
            &info(1, 0, Protocol::Http2),
            CloseReason::ProtocolClosed,
            None,
        );
        let closed: u64 = counts.snapshot().per_second.iter().map(|s| s.closed).sum();
        assert_eq!(closed, 2);
    }
}
