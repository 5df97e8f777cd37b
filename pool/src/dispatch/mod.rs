//! Dispatch: a request through its origin's cell to a connection and back with a response.
//!
//! ```text
//!  Client::request ─► cell_for(uri) ─► loop {
//!      CellEntry::acquire ─► Selected::H1(conn)  ─► h1::exchange ─┐
//!                         ─► Selected::H2(lease) ─► h2::exchange ─┤
//!      Exchange::Response ─► return;  Exchange::Resend(request) ◄─┘ (resend: only what
//!  }                                                                  hyper handed back unsent)
//! ```
//!
//! Each protocol's exchange lives in its own file (`h1`, `h2`); `resend` decides whether a
//! request that hyper handed back unsent goes round the loop again. This module holds the loop
//! and what both protocols share: reuse events, the read timeout, and attaching the connection
//! handle to the response.

mod h1;
mod h2;
mod resend;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response, Version};
use pool_core::connection::ConnectionRecord;
use pool_core::waiter::Requirement;

use crate::body::{Body, RequestBody};
use crate::cell::Selected;
use crate::client::Client;
use crate::connection::ConnectionHandle;
use crate::error::Error;

/// What came of one exchange on one connection.
enum Exchange {
    /// The response head arrived.
    Response(Response<Body>),
    /// The connection could not take the request and the request may go again (see
    /// `resend`).
    Resend(Request<RequestBody>),
}

impl Client {
    /// Sends `request` through this client's partition, re-sending it only as `resend` allows.
    pub(crate) async fn send(
        &self,
        mut request: Request<RequestBody>,
    ) -> Result<Response<Body>, Error> {
        let entry = self.cell_for(request.uri())?;
        let requirement = if request.version() == Version::HTTP_2 {
            Requirement::Http2
        } else {
            Requirement::Any
        };
        let mut waited = None;
        loop {
            let selected = entry
                .acquire(requirement, self.connect_timeout, &mut waited)
                .await?;
            let exchange = match selected {
                Selected::H1(conn) => h1::exchange(self, &entry, conn, request, waited).await?,
                Selected::H2(lease) => h2::exchange(self, &entry, lease, request, waited).await?,
            };
            match exchange {
                Exchange::Response(response) => return Ok(response),
                Exchange::Resend(unsent) => request = unsent,
            }
        }
    }

    /// Fires `connection_reused` (own partition) or `connection_borrowed` (another
    /// partition's connection, under bounded pressure) for a connection that served before.
    fn report_reuse(&self, record: &ConnectionRecord, reused: bool) {
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
    ) -> Exchange {
        let (mut parts, incoming) = response.into_parts();
        if self.pool.connection_extension {
            parts.extensions.insert(handle.clone());
        }
        Exchange::Response(Response::from_parts(parts, body(incoming, handle)))
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
