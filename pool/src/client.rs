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
use crate::cell::Selected;
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
}

impl Client {
    pub(crate) fn new(pool: Arc<PoolInner>, partition: usize) -> Client {
        let (connect_timeout, read_timeout) = (pool.shared.connect_timeout, pool.read_timeout);
        Client {
            pool,
            partition,
            connect_timeout,
            read_timeout,
        }
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
    /// The response carries a [`ConnectionHandle`] extension describing the connection.
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
    pub async fn request<B>(&self, request: Request<B>) -> Result<Response<Body>, Error>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let (parts, body) = request.into_parts();
        self.send(Request::from_parts(parts, RequestBody::new(body)))
            .await
    }

    async fn send(&self, mut request: Request<RequestBody>) -> Result<Response<Body>, Error> {
        let partition = &self.pool.partitions[self.partition];
        let entry = partition.cell_for(request.uri(), &self.pool.shared)?;
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
                            let response = response.map(|incoming| Body::h1(incoming, guard));
                            return Ok(attach(
                                response,
                                ConnectionHandle::new(record, reused, waited),
                            ));
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
                            let response = response.map(|incoming| Body::h2(incoming, guard));
                            return Ok(attach(
                                response,
                                ConnectionHandle::new(record, reused, waited),
                            ));
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

    /// Bounds `future` (one exchange, up to the response head) by the read timeout.
    async fn with_read_timeout<F: Future>(&self, future: F) -> Result<F::Output, Error> {
        match self.read_timeout {
            None => Ok(future.await),
            Some(limit) => {
                let sleep = self.pool.shared.sleep.sleep(limit);
                Deadline {
                    future,
                    sleep,
                    limit,
                }
                .await
            }
        }
    }
}

fn attach(mut response: Response<Body>, handle: ConnectionHandle) -> Response<Body> {
    response.extensions_mut().insert(handle);
    response
}

pin_project_lite::pin_project! {
    /// A future raced against a sleep.
    struct Deadline<F> {
        #[pin]
        future: F,
        sleep: pool_core::Sleep,
        limit: Duration,
    }
}

impl<F: Future> Future for Deadline<F> {
    type Output = Result<F::Output, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match this.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Error::read_timeout(*this.limit))),
            Poll::Pending => Poll::Pending,
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
