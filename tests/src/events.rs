//! A connection event listener that records everything, for assertions.

use std::error::Error;
use std::sync::{Arc, Mutex};

use pool::{
    CloseReason, ConnectionEventListener, ConnectionId, ConnectionInfo, OriginKey, PartitionId,
    ResendReason,
};
use tokio::sync::Notify;

/// One recorded event.
#[derive(Clone, Debug)]
pub enum Event {
    /// `connection_created`.
    Created(Box<ConnectionInfo>),
    /// `connection_reused`.
    Reused(ConnectionId),
    /// `connection_borrowed` by a partition.
    Borrowed(ConnectionId, PartitionId),
    /// `connection_closed`, with the error's text and its sources', joined with `: `.
    Closed(ConnectionId, CloseReason, Option<String>),
    /// `connection_failed`, with the error's text.
    Failed(OriginKey, PartitionId, String),
    /// `request_resent`: the connection that failed the request, why, and the re-send's number.
    Resent(ConnectionId, ResendReason, u32),
}

/// `builder` with a fresh [`EventLog`] listening, built: the pool, its default client and the
/// log. The setup most pooling tests start from.
pub fn observed(builder: pool::Builder) -> (pool::ConnectionPool, pool::Client, EventLog) {
    let events = EventLog::new();
    let pool = builder.event_listener(events.clone()).build().unwrap();
    let client = pool.client().unwrap();
    (pool, client, events)
}

/// Records every event; clones share the record. Install a clone with
/// `Builder::event_listener` and keep one to assert on.
#[derive(Clone, Default)]
pub struct EventLog {
    events: Arc<Mutex<Vec<Event>>>,
    changed: Arc<Notify>,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.events().iter()).finish()
    }
}

impl EventLog {
    /// A new, empty log.
    pub fn new() -> EventLog {
        EventLog::default()
    }

    fn push(&self, event: Event) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_waiters();
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// The connections created so far.
    pub fn created(&self) -> Vec<ConnectionInfo> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Created(info) => Some(*info),
                _ => None,
            })
            .collect()
    }

    /// The closes so far: (connection, reason).
    pub fn closed(&self) -> Vec<(ConnectionId, CloseReason)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Closed(id, reason, _) => Some((id, reason)),
                _ => None,
            })
            .collect()
    }

    /// How many closes had `reason`.
    pub fn closed_with(&self, reason: CloseReason) -> usize {
        self.closed().iter().filter(|(_, r)| *r == reason).count()
    }

    /// The reuses so far.
    pub fn reused(&self) -> Vec<ConnectionId> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Reused(id) => Some(id),
                _ => None,
            })
            .collect()
    }

    /// The borrows so far: (connection, borrowing partition).
    pub fn borrowed(&self) -> Vec<(ConnectionId, PartitionId)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Borrowed(id, p) => Some((id, p)),
                _ => None,
            })
            .collect()
    }

    /// The re-sends so far: the connection that failed each request, the reason, the number.
    pub fn resent(&self) -> Vec<(ConnectionId, ResendReason, u32)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Resent(id, reason, attempt) => Some((id, reason, attempt)),
                _ => None,
            })
            .collect()
    }

    /// The failed establishments so far (error text).
    pub fn failed(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Failed(_, _, text) => Some(text),
                _ => None,
            })
            .collect()
    }

    /// Each close recorded: its reason and its error's text (with its sources').
    pub fn closes(&self) -> Vec<(CloseReason, Option<String>)> {
        self.events()
            .into_iter()
            .filter_map(|event| match event {
                Event::Closed(_, reason, error) => Some((reason, error)),
                _ => None,
            })
            .collect()
    }

    /// Whether the one close so far was the protocol's and names a failed read whose error
    /// has `words` in it (what the transport met under the connection).
    pub fn closed_once_reading(&self, words: &str) -> bool {
        matches!(
            self.closes().as_slice(),
            [(CloseReason::ProtocolClosed, Some(said))]
                if said.starts_with("reading from the connection failed: ")
                    && said.contains(words)
        )
    }

    /// Waits until `condition` holds for the recorded events.
    pub async fn wait_until(&self, condition: impl Fn(&[Event]) -> bool) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if condition(&self.events.lock().unwrap()) {
                return;
            }
            notified.await;
        }
    }

    /// Waits until at least `n` connections have closed.
    pub async fn wait_for_closed(&self, n: usize) {
        self.wait_until(|events| {
            events
                .iter()
                .filter(|e| matches!(e, Event::Closed(..)))
                .count()
                >= n
        })
        .await;
    }
}

impl ConnectionEventListener for EventLog {
    fn request_resent(&self, info: &ConnectionInfo, reason: ResendReason, attempt: u32) {
        self.push(Event::Resent(info.id(), reason, attempt));
    }

    fn connection_created(&self, info: &ConnectionInfo) {
        self.push(Event::Created(Box::new(info.clone())));
    }

    fn connection_reused(&self, info: &ConnectionInfo) {
        self.push(Event::Reused(info.id()));
    }

    fn connection_borrowed(&self, info: &ConnectionInfo, borrower: PartitionId) {
        self.push(Event::Borrowed(info.id(), borrower));
    }

    fn connection_closed(
        &self,
        info: &ConnectionInfo,
        reason: CloseReason,
        error: Option<&(dyn Error + Send + Sync + 'static)>,
    ) {
        self.push(Event::Closed(
            info.id(),
            reason,
            error.map(|e| pool_core::close::with_sources(e)),
        ));
    }

    fn connection_failed(
        &self,
        origin: &OriginKey,
        partition: PartitionId,
        error: &(dyn Error + Send + Sync + 'static),
    ) {
        self.push(Event::Failed(origin.clone(), partition, error.to_string()));
    }
}
