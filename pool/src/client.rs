//! The handle requests go through.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use pool_core::sync::Arc;
use pool_core::{AsyncSleep, ConnectTimeout, PartitionId};

use crate::body::{Body, RequestBody};
use crate::cell::CellEntry;
use crate::error::Error;
use crate::pool::PoolInner;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A cheap handle for sending requests through one partition of a [`ConnectionPool`].
///
/// Cloning costs a few reference-count increments (the pool, the remembered cell, and the
/// client's sleep when it has one). Timeouts and the sleep that measures them are request
/// policy carried by the handle, never part of a connection's identity: clients with different
/// timeouts share the same connections and the same per-origin bound.
///
/// [`ConnectionPool`]: crate::ConnectionPool
#[derive(Clone)]
pub struct Client {
    pub(crate) pool: Arc<PoolInner>,
    partition: usize,
    /// The partition's identity, kept here: every request compares it with its connection's
    /// owner, and reading it through the pool is three dependent loads.
    partition_id: PartitionId,
    /// The connect timeout with this client's sleep, built when either is set.
    pub(crate) connect_timeout: Option<ConnectTimeout>,
    /// The sleep measuring this client's timeouts; `None`: the pool's.
    sleep: Option<std::sync::Arc<dyn AsyncSleep>>,
    pub(crate) read_timeout: Option<Duration>,
    pub(crate) pool_timeout: Option<Duration>,
    pub(crate) body_idle_timeout: Option<Duration>,
    first: FirstCell,
}

/// The cell of the first origin this handle sent a request to, keyed by the request URI's
/// scheme and authority exactly as written: a later request to that origin skips canonicalizing
/// it and looking it up in the partition's map. Set once and only read afterwards (one atomic
/// load, no lock, so a reuse hit still takes only its cell's lock); clones share it. The
/// remembered cell may be retired later (the partition drops cells with nothing in them): it
/// then answers every acquisition with `Retired`, and the request looks the origin up in the
/// map ([`Client::fresh_cell_for`]). The memory is not replaced, so requests of this handle to
/// that origin pay the retired cell's lock once each from then on; an origin whose cell was
/// dropped has usually gone (an upstream's old address), and a lock-free read of the flag
/// before every reuse hit would cost every other request instead. Requests to other origins
/// use the map. Clones share one memory (a clone made before the first request, say with
/// another timeout or sleep, still learns the cell), at one reference count per clone.
#[derive(Clone, Default)]
struct FirstCell(std::sync::Arc<std::sync::OnceLock<Remembered>>);

#[derive(Clone)]
struct Remembered {
    tls: bool,
    authority: http::uri::Authority,
    entry: Arc<CellEntry>,
}

impl FirstCell {
    fn get(&self, uri: &http::Uri) -> Option<Arc<CellEntry>> {
        let remembered = self.0.get()?;
        let tls = match uri.scheme_str()? {
            "https" => true,
            "http" => false,
            _ => return None,
        };
        // `Authority` compares case-insensitively, as origins do, byte by byte; the same
        // spelling as last time (the usual case) is one memory comparison first. A different
        // spelling of the same origin (an explicit default port) only misses the memory.
        let same = uri.authority().is_some_and(|authority| {
            authority.as_str() == remembered.authority.as_str()
                || *authority == remembered.authority
        });
        (remembered.tls == tls && same).then(|| remembered.entry.clone())
    }

    fn remember(&self, uri: &http::Uri, entry: &Arc<CellEntry>) {
        if let Some(authority) = uri.authority() {
            let _ = self.0.set(Remembered {
                tls: entry.origin.is_tls(),
                authority: authority.clone(),
                entry: entry.clone(),
            });
        }
    }
}

impl Client {
    pub(crate) fn new(pool: Arc<PoolInner>, partition: usize) -> Client {
        let (connect_timeout, read_timeout) = (pool.shared.connect_timeout, pool.read_timeout);
        let (pool_timeout, body_idle_timeout) = (pool.pool_timeout, pool.body_idle_timeout);
        let partition_id = pool.partitions[partition].runtime.id;
        Client {
            pool,
            partition,
            partition_id,
            connect_timeout: connect_timeout.map(|limit| ConnectTimeout::new(limit, None)),
            sleep: None,
            read_timeout,
            pool_timeout,
            body_idle_timeout,
            first: FirstCell::default(),
        }
    }

    /// The cell of the request's origin in this client's partition.
    pub(crate) fn cell_for(&self, uri: &http::Uri) -> Result<Arc<CellEntry>, Error> {
        if let Some(entry) = self.first.get(uri) {
            return Ok(entry);
        }
        self.fresh_cell_for(uri)
    }

    /// The cell for `uri`'s origin from the partition's map (never the one this client
    /// remembers, which may have been retired), remembered from now on.
    pub(crate) fn fresh_cell_for(&self, uri: &http::Uri) -> Result<Arc<CellEntry>, Error> {
        let entry = self.pool.partitions[self.partition].cell_for(uri, &self.pool.shared)?;
        self.first.remember(uri, &entry);
        Ok(entry)
    }

    /// The partition this client's connections are established in.
    pub fn partition(&self) -> PartitionId {
        self.partition_id
    }

    /// Sets the connect timeout for connections this client's requests establish: one deadline
    /// for resolution, TCP and TLS. `None` waits as long as the operating system does.
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Client {
        self.connect_timeout = timeout.map(|limit| ConnectTimeout::new(limit, self.sleep.clone()));
        self
    }

    /// Sets the sleep that measures this client's timeouts (connect, read, pool and body
    /// idle) instead of the pool's ([`Builder::sleep`](crate::Builder::sleep)). For a caller
    /// that runs on a timer of its own, such as an SDK operation's sleep or a simulated clock:
    /// a connect timeout then races the whole establishment (resolution, TCP, TLS) against
    /// this sleep. The pool's own policy (idle expiry, lifetimes, maintenance) keeps the
    /// pool's sleep.
    pub fn sleep(mut self, sleep: impl AsyncSleep) -> Client {
        let sleep: std::sync::Arc<dyn AsyncSleep> = std::sync::Arc::new(sleep);
        self.connect_timeout = self
            .connect_timeout
            .map(|timeout| ConnectTimeout::new(timeout.limit(), Some(sleep.clone())));
        self.sleep = Some(sleep);
        self
    }

    /// The sleep measuring this client's timeouts.
    pub(crate) fn timer(&self) -> &std::sync::Arc<dyn AsyncSleep> {
        self.sleep.as_ref().unwrap_or(&self.pool.shared.sleep)
    }

    /// Sets the read timeout: from the moment the request is first handed to a connection until
    /// the response head arrives, re-sends included. It does not cover waiting for a connection
    /// or reading the body.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Client {
        self.read_timeout = timeout;
        self
    }

    /// Sets the pool timeout: how long a request may wait, in all, for a connection or (for a
    /// bounded origin) a permit. It covers queueing only, not connecting (the connect timeout)
    /// or the exchange (the read timeout). When it elapses the request fails with
    /// [`Error::is_pool_timeout`] and withdraws cleanly: its place in the origin's demand
    /// order goes to the next request. With `max_pending_per_host`, the cap says how many may
    /// wait and this says how long. `None` waits as long as it takes.
    pub fn pool_timeout(mut self, timeout: Option<Duration>) -> Client {
        self.pool_timeout = timeout;
        self
    }

    /// Sets the body idle timeout: how long a response body may go without sending a frame.
    /// When a silence lasts that long the body fails with [`Error::is_body_idle_timeout`] (also
    /// `is_timeout()` and `is_body()`) and its connection retires
    /// ([`CloseReason::BodyIdleTimeout`](crate::CloseReason::BodyIdleTimeout): an HTTP/1
    /// connection closes, an HTTP/2 connection stops accepting and drains its other streams).
    /// Each frame restarts it, so a slow but steady body never fails; it is not a total
    /// deadline. `None` (the default) waits as long as the server takes.
    pub fn body_idle_timeout(mut self, timeout: Option<Duration>) -> Client {
        self.body_idle_timeout = timeout;
        self
    }

    /// Sends a request and returns the response once its head arrives.
    ///
    /// The URI must be absolute (`http://` or `https://`). For HTTP/1.1 the pool sends the
    /// origin form of the target and sets `Host` unless the request has one; a
    /// [`RequestTarget`](crate::RequestTarget) extension sends another target (`OPTIONS *`)
    /// while the URI still picks the connection. A request whose version is `HTTP/2.0` is only
    /// ever served by an HTTP/2 connection.
    ///
    /// The response body describes the connection that served it ([`Body::connection`]); with
    /// [`Builder::connection_handle_extension`] the [`ConnectionHandle`](crate::ConnectionHandle) is also a response
    /// extension.
    ///
    /// [`Builder::connection_handle_extension`]: crate::Builder::connection_handle_extension
    ///
    /// # Re-sends
    ///
    /// The pool sends a request again on its own only when the server provably did not process
    /// it: hyper handed it back unsent from a reused connection, an HTTP/2 `GOAWAY` covered its
    /// stream, the stream was refused (`REFUSED_STREAM`), or (for idempotent requests, which
    /// are safe to repeat) a reused connection closed or was reset before the response began.
    /// Only empty and single-chunk
    /// bodies are replayed; a streaming body is never buffered for it. Re-sends are bounded
    /// and share the first attempt's read timeout. [`Builder::retry_policy`] chooses; see
    /// [`RetryPolicy`] for the rules. A failure that was not re-sent but is safe to repeat says
    /// so with [`Error::is_retryable`].
    ///
    /// [`Builder::retry_policy`]: crate::Builder::retry_policy
    /// [`RetryPolicy`]: crate::RetryPolicy
    ///
    /// # Errors
    ///
    /// See [`Error`]'s predicates: an invalid URI, connect failures (resolve, TCP, TLS,
    /// certificate, timeout), read timeout, unsupported version, and failures while sending.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future is safe at any point. While waiting for a connection the request
    /// withdraws (an establishment it started continues for the next request); while
    /// exchanging, an HTTP/1 connection is retired and an HTTP/2 stream reset. A
    /// [`Progress`](crate::Progress) in the request's extensions says where it stood when it
    /// was dropped (waiting, a connection being made for it and its step or for another
    /// request, or exchanging): a
    /// request dropped before [`RequestStage::Exchange`](crate::RequestStage::Exchange) sent
    /// nothing.
    pub fn request<B>(
        &self,
        request: Request<B>,
    ) -> impl Future<Output = Result<Response<Body>, Error>> + Send + '_
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        // Not an `async fn`: the body is converted before the first poll, so the future is
        // `send`'s alone (no second state machine around it, nothing more to move).
        let (parts, body) = request.into_parts();
        self.send(Request::from_parts(parts, RequestBody::new(body)))
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("partition", &self.partition())
            .field(
                "connect_timeout",
                &self.connect_timeout.as_ref().map(ConnectTimeout::limit),
            )
            .field("read_timeout", &self.read_timeout)
            .field("pool_timeout", &self.pool_timeout)
            .field("body_idle_timeout", &self.body_idle_timeout)
            .finish()
    }
}
