//! The handle requests go through.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Version};
use pool_core::PartitionId;
use pool_core::sync::Arc;
use pool_core::waiter::Requirement;
use pool_h1::SendOutcome;
use pool_h2::H2SendOutcome;

use crate::body::{Body, RequestBody};
use crate::cell::{CellEntry, Selected};
use crate::connection::ConnectionHandle;
use crate::error::Error;
use crate::pool::PoolInner;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A cheap handle for sending requests through one partition of a [`ConnectionPool`].
///
/// Cloning costs one reference-count increment. Connect and read timeouts are request policy
/// carried by the handle, never part of a connection's identity: clients with different
/// timeouts share the same connections and the same per-origin bound.
///
/// [`ConnectionPool`]: crate::ConnectionPool
#[derive(Clone)]
pub struct Client {
    pool: Arc<PoolInner>,
    partition: usize,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    first: FirstCell,
}

/// The cell of the first origin this handle sent a request to, keyed by the request URI's
/// scheme and authority exactly as written: a later request to that origin skips canonicalizing
/// it and looking it up in the partition's map. Set once and only read afterwards (one atomic
/// load, no lock, so a reuse hit still takes only its cell's lock); clones share it. Cells are
/// never removed from a partition, so the remembered one stays the origin's cell. Requests to
/// other origins use the map.
#[derive(Clone, Default)]
struct FirstCell(std::sync::OnceLock<Remembered>);

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
        // `Authority` compares case-insensitively, as origins do; a different spelling of the
        // same origin (an explicit default port) only misses the memory.
        (remembered.tls == tls && uri.authority() == Some(&remembered.authority))
            .then(|| remembered.entry.clone())
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
        Client {
            pool,
            partition,
            connect_timeout,
            read_timeout,
            first: FirstCell::default(),
        }
    }

    /// The cell of the request's origin in this client's partition.
    fn cell_for(&self, uri: &http::Uri) -> Result<Arc<CellEntry>, Error> {
        if let Some(entry) = self.first.get(uri) {
            return Ok(entry);
        }
        let entry = self.pool.partitions[self.partition].cell_for(uri, &self.pool.shared)?;
        self.first.remember(uri, &entry);
        Ok(entry)
    }

    /// The partition this client's connections are established in.
    pub fn partition(&self) -> PartitionId {
        self.pool.partitions[self.partition].runtime.id
    }

    /// Sets the connect timeout for connections this client's requests establish: one deadline
    /// for resolution, TCP and TLS. `None` waits as long as the operating system does.
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Client {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the read timeout: from the moment the request is handed to a connection until the
    /// response head arrives. It does not cover waiting for a connection or reading the body.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Client {
        self.read_timeout = timeout;
        self
    }

    /// Sends a request and returns the response once its head arrives.
    ///
    /// The URI must be absolute (`http://` or `https://`). For HTTP/1.1 the pool sends the
    /// origin form of the target and sets `Host` unless the request has one; a request whose
    /// version is `HTTP/2.0` is only ever served by an HTTP/2 connection.
    ///
    /// The response body describes the connection that served it ([`Body::connection`]); with
    /// [`Builder::connection_handle_extension`] the [`ConnectionHandle`] is also a response
    /// extension.
    ///
    /// [`Builder::connection_handle_extension`]: crate::Builder::connection_handle_extension
    ///
    /// # Retries
    ///
    /// The only transparent retry: when hyper hands the request back *unsent* from a connection
    /// that had served requests before (it closed while idle), the pool retires that connection
    /// and sends the same request again. Requests are never cloned or replayed after hyper
    /// accepted them.
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
    /// exchanging, an HTTP/1 connection is retired and an HTTP/2 stream reset.
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

    async fn send(&self, mut request: Request<RequestBody>) -> Result<Response<Body>, Error> {
        let entry = self.cell_for(request.uri())?;
        let requirement = if request.version() == Version::HTTP_2 {
            Requirement::Http2
        } else {
            Requirement::Any
        };
        let mut waited = None;
        loop {
            match entry
                .acquire(requirement, self.connect_timeout, &mut waited)
                .await?
            {
                Selected::H1(conn) => {
                    let record = conn.record().clone();
                    let reused = record.requests_served() > 0;
                    self.report_reuse(&record, reused);
                    pool_h1::prepare_request(&mut request, &entry.host);
                    match self.with_read_timeout(conn.send(request)).await? {
                        SendOutcome::Response(response, guard) => {
                            let handle = ConnectionHandle::new(record, reused, waited);
                            return Ok(self.attach(response, handle, |incoming, handle| {
                                Body::h1(incoming, guard, handle)
                            }));
                        }
                        SendOutcome::Unsent {
                            request: mut unsent,
                            error,
                            reused,
                        } => {
                            if !reused {
                                return Err(Error::request(error));
                            }
                            tracing::debug!(connection = %record.info().id(), "stale connection; retrying");
                            self.pool.shared.count_retry();
                            pool_h1::restore_absolute_uri(&mut unsent, &entry.origin);
                            request = unsent;
                        }
                        SendOutcome::Failed(error) => return Err(Error::request(error)),
                    }
                }
                Selected::H2(lease) => {
                    let record = lease.record().clone();
                    let reused = record.requests_served() > 0;
                    self.report_reuse(&record, reused);
                    match self.with_read_timeout(lease.send(request)).await? {
                        H2SendOutcome::Response(response, guard) => {
                            let handle = ConnectionHandle::new(record, reused, waited);
                            return Ok(self.attach(response, handle, |incoming, handle| {
                                Body::h2(incoming, guard, handle)
                            }));
                        }
                        H2SendOutcome::Unsent {
                            request: unsent,
                            error,
                            reused,
                        } => {
                            // hyper's dispatcher for this generation is gone.
                            record.close(pool_core::CloseReason::ProtocolClosed, None);
                            entry.cell.retire_h2(&record);
                            if !reused {
                                return Err(Error::request(error));
                            }
                            tracing::debug!(connection = %record.info().id(), "stale HTTP/2 connection; retrying");
                            self.pool.shared.count_retry();
                            request = unsent;
                        }
                        H2SendOutcome::Failed {
                            error,
                            connection_level,
                        } => {
                            if connection_level {
                                record.close(pool_core::CloseReason::ProtocolClosed, None);
                                entry.cell.retire_h2(&record);
                            }
                            return Err(Error::request(error));
                        }
                    }
                }
            }
        }
    }

    /// Fires `connection_reused` (own partition) or `connection_borrowed` (another
    /// partition's connection, under bounded pressure) for a connection that served before.
    fn report_reuse(&self, record: &pool_core::connection::ConnectionRecord, reused: bool) {
        let me = self.partition();
        let borrowed = record.info().partition() != me;
        if !reused && !borrowed {
            return;
        }
        tracing::trace!(
            connection = record.info().id().as_u64(),
            borrowed,
            "connection reused"
        );
        if let Some(listener) = &self.pool.shared.listener {
            if borrowed {
                pool_core::events::notify("connection_borrowed", || {
                    listener.connection_borrowed(record.info(), me)
                });
            } else {
                pool_core::events::notify("connection_reused", || {
                    listener.connection_reused(record.info())
                });
            }
        }
    }

    /// Wraps the response body with its connection handle (and, if configured, attaches the
    /// handle as an extension too).
    fn attach(
        &self,
        response: Response<hyper::body::Incoming>,
        handle: ConnectionHandle,
        body: impl FnOnce(hyper::body::Incoming, ConnectionHandle) -> Body,
    ) -> Response<Body> {
        let (mut parts, incoming) = response.into_parts();
        if self.pool.connection_extension {
            parts.extensions.insert(handle.clone());
        }
        Response::from_parts(parts, body(incoming, handle))
    }

    /// Bounds `future` (one exchange, up to the response head) by the read timeout.
    fn with_read_timeout<F: Future>(&self, future: F) -> Deadline<F> {
        let sleep = self
            .read_timeout
            .map(|limit| (self.pool.shared.sleep.sleep(limit), limit));
        Deadline { future, sleep }
    }
}

pin_project_lite::pin_project! {
    /// A future raced against an optional sleep (the read timeout).
    struct Deadline<F> {
        #[pin]
        future: F,
        sleep: Option<(pool_core::Sleep, Duration)>,
    }
}

impl<F: Future> Future for Deadline<F> {
    type Output = Result<F::Output, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match this.sleep {
            Some((sleep, limit)) => match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(Error::read_timeout(*limit))),
                Poll::Pending => Poll::Pending,
            },
            None => Poll::Pending,
        }
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("partition", &self.partition())
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .finish()
    }
}

impl<B> tower_service::Service<Request<B>> for Client
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Error>> + Send + 'static>>;

    /// Always ready: the pool applies backpressure per origin when a request is sent.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let client = self.clone();
        Box::pin(async move { client.request(request).await })
    }
}
