//! Dispatch: a request through its origin's cell to a connection and back with a response.
//!
//! ```text
//!  Client::request ─► cell_for(uri) ─► keep a replay copy if the policy and body allow ─► loop {
//!      CellEntry::acquire ─► Selected::H1(conn)  ─► h1::exchange ─┐
//!                         ─► Selected::H2(lease) ─► h2::exchange ─┤
//!      Exchange::Response ─► return;   Exchange::Again ─► resend ◄┘ (the request again, or
//!  }                                                                   the error to fail with)
//! ```
//!
//! Each protocol's exchange lives in its own file (`h1`, `h2`), as a `start` that hands the
//! request over and a `finish` that reads the outcome, so the loop is the request's only state
//! machine; `resend` decides whether a request the server did not process goes round the loop
//! again, and how long it waits first (a request going round again keeps the place in line it
//! took when it came: `CellEntry::acquire`'s `arrival`); `deadline` is the read timeout all
//! attempts of one request share; `expect` holds an HTTP/1 request body back for `100
//! Continue`, and `gated` stops one the server refused before it was all sent. This module
//! holds the loop and what both protocols share: reuse events and attaching the connection
//! handle to the response.

pub(crate) mod deadline;
pub(crate) mod expect;
pub(crate) mod gated;
mod h1;
mod h2;
mod resend;

use std::future::Future;

use http::{Request, Response, Version};
use pool_core::connection::ConnectionRecord;
use pool_core::waiter::Requirement;
use pool_core::{OpenReason, Progress};

use crate::body::{Body, RequestBody};
use crate::cell::{CellEntry, Selected, Wanted};
use crate::client::Client;
use crate::connection::ConnectionHandle;
use crate::error::Error;
use deadline::RequestDeadline;
use resend::{Again, ReplayCopy, Resends};

/// What came of one exchange on one connection.
// The response, the common case, is moved rather than boxed (a box would be an allocation per
// request); the rare re-send is boxed instead, which is the size difference clippy sees.
#[allow(clippy::large_enum_variant)]
enum Exchange {
    /// The response head arrived.
    Response(Response<Body>),
    /// The connection could not serve the request, and the server did not process it (see
    /// `resend`). Boxed: it holds a whole request, and every exchange that succeeds moves an
    /// `Exchange` (then a `Result` of one) twice, which at `Again`'s size took `memcpy`'s
    /// path for copies over 256 bytes.
    Again(Box<Again>),
}

impl Client {
    /// Sends `request` through this client's partition, sending it again only as `resend`
    /// allows.
    ///
    /// An `async` block rather than an `async fn`: a function keeps its parameter and the
    /// local it is moved into as two slots of the future, and the request is 264 bytes that
    /// every caller moves with the future.
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn send(
        &self,
        mut request: Request<RequestBody>,
    ) -> impl Future<Output = Result<Response<Body>, Error>> + Send + '_ {
        async move {
            let mut entry = self.cell_for(request.uri())?;
            let requirement = if request.version() == Version::HTTP_2 {
                Requirement::Http2
            } else {
                Requirement::Any
            };
            let policy = self.pool.retry;
            let mut resends = Resends {
                policy,
                copy: ReplayCopy::keep(&request, &policy),
                idempotent: resend::is_idempotent(&request),
                done: 0,
                counted: 0,
                uncounted_calm: 0,
                client: self,
            };
            let mut deadline = RequestDeadline::read(self.read_timeout);
            let mut queue = RequestDeadline::pool(self.pool_timeout);
            let mut waited = None;
            // The request's place in line, for its re-sends (one relaxed load of a counter that
            // only misses write).
            let arrival = self.pool.shared.place_in_line();
            // The caller's view of how far the request got (a relaxed store at each stage),
            // when it follows the request. Set to waiting once: a re-send stays at `Exchange`,
            // as its first attempt went out (see `pool_core::progress`).
            let progress = request.extensions().get::<Progress>().cloned();
            if let Some(progress) = &progress {
                progress.waiting();
            }
            loop {
                let selected = CellEntry::acquire(
                    &mut entry,
                    request.uri(),
                    Wanted {
                        reason: OpenReason::Request,
                        requirement,
                        arrival: (resends.done > 0).then_some(arrival),
                        progress: progress.as_ref(),
                    },
                    self,
                    &mut queue,
                    &mut waited,
                )
                .await?;
                if let Some(progress) = &progress {
                    progress.exchange();
                }
                let sleep = &**self.timer();
                let exchange = match selected {
                    Selected::H1(conn) => {
                        let (served, gate, sent) = h1::start(self, &entry, conn, request, waited);
                        // Pinned where it lies: the deadline then holds a pointer, and the
                        // exchange's future is not moved again into the deadline's and the
                        // await's slots (two copies of its 328 bytes per request).
                        let sent = std::pin::pin!(sent);
                        match deadline.bound(sleep, sent).await {
                            Ok(outcome) => h1::finish(self, &entry, served, gate, outcome),
                            Err(timeout) => Err(served.fail(timeout)),
                        }
                    }
                    Selected::H2(lease) => {
                        let (served, gate, sent) = h2::start(self, lease, request, waited);
                        let sent = std::pin::pin!(sent);
                        match deadline.bound(sleep, sent).await {
                            Ok(outcome) => h2::finish(self, &entry, served, gate, outcome),
                            Err(timeout) => Err(served.fail(timeout)),
                        }
                    }
                }?;
                match exchange {
                    Exchange::Response(response) => return Ok(response),
                    Exchange::Again(again) => {
                        let (next, wait) = resends.next(*again)?;
                        request = next;
                        if let Some(wait) = wait {
                            // The request lost a connection before: the server may be in the
                            // middle of a restart, which a re-send at once would meet again.
                            deadline.bound(sleep, sleep.sleep(wait)).await?;
                        }
                    }
                }
            }
        }
    }

    /// A request is about to be dispatched on the connection of `record`: notes whether it is
    /// a reuse and reports it.
    fn dispatching(
        &self,
        record: &pool_core::sync::Arc<ConnectionRecord>,
        waited: Option<std::time::Duration>,
    ) -> Served {
        let reused = record.requests_served() > 0;
        self.report_reuse(record, reused);
        #[cfg(feature = "metrics")]
        if let (true, Some(waited)) = (self.pool.shared.metrics, waited) {
            crate::metrics::waited(record.info().origin(), self.partition(), waited);
        }
        Served {
            record: record.clone(),
            reused,
            waited,
        }
    }

    /// Fires `connection_reused` (own partition) or `connection_borrowed` (another
    /// partition's connection, under bounded pressure) for a connection that served before.
    fn report_reuse(&self, record: &ConnectionRecord, reused: bool) {
        let me = self.partition();
        let borrowed = record.partition() != me;
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

    /// Wraps the response body with the handle of the connection that served it (and, if
    /// configured, attaches the handle as an extension too).
    fn respond(
        &self,
        response: Response<hyper::body::Incoming>,
        served: Served,
        body: impl FnOnce(hyper::body::Incoming, ConnectionHandle) -> Body,
    ) -> Exchange {
        let Served {
            record,
            reused,
            waited,
        } = served;
        let handle = ConnectionHandle::new(record, reused, waited);
        let (mut parts, incoming) = response.into_parts();
        if self.pool.connection_extension {
            parts.extensions.insert(handle.clone());
        }
        let mut body = body(incoming, handle);
        if let Some(timeout) = self.body_idle_timeout {
            body = body.with_idle_timeout(timeout, self.timer().clone());
        }
        Exchange::Response(Response::from_parts(parts, body))
    }
}

/// The connection an exchange ran on, for the response's handle (or the error's).
struct Served {
    record: pool_core::sync::Arc<ConnectionRecord>,
    reused: bool,
    waited: Option<std::time::Duration>,
}

impl Served {
    /// The exchange on this connection ended without a response, with proof `reason` that the
    /// request may go again; `request` is set when hyper handed it back. Cold, as `fail` is:
    /// the request's own code stays short for the exchanges that succeed.
    #[cold]
    #[inline(never)]
    fn again(
        self,
        reason: pool_core::ResendReason,
        error: hyper::Error,
        request: Option<Request<RequestBody>>,
    ) -> Exchange {
        let served_before = self.reused;
        Exchange::Again(Box::new(Again {
            reason,
            error,
            served: self,
            request,
            served_before,
            cap_lowered: false,
        }))
    }

    /// As [`again`](Self::again), for an HTTP/2 connection lost under the request before its
    /// response began (`closed_before_response`); `heard`: the server had sent something on
    /// the connection, so it had begun to serve it (see [`Again::served_before`]).
    #[cold]
    #[inline(never)]
    fn again_h2_lost(self, error: hyper::Error, heard: bool) -> Exchange {
        Exchange::Again(Box::new(Again {
            reason: pool_core::ResendReason::ClosedBeforeResponse,
            error,
            served: self,
            request: None,
            served_before: heard,
            cap_lowered: false,
        }))
    }

    /// As [`again`](Self::again), for an HTTP/2 stream the server reset with
    /// `ENHANCE_YOUR_CALM` before its response (`enhance_your_calm`): the reset shows the
    /// server serving the connection, and the request is repeated only if it is idempotent.
    /// `cap_lowered`: the refusal lowered the connection's stream cap (see
    /// [`Again::cap_lowered`]).
    #[cold]
    #[inline(never)]
    fn again_calmer(self, error: hyper::Error, cap_lowered: bool) -> Exchange {
        Exchange::Again(Box::new(Again {
            reason: pool_core::ResendReason::EnhanceYourCalm,
            error,
            served: self,
            request: None,
            served_before: true,
            cap_lowered,
        }))
    }

    /// The exchange on this connection failed with `error`: the error names the connection.
    #[cold]
    #[inline(never)]
    fn fail(self, error: Error) -> Error {
        error.on(ConnectionHandle::new(self.record, self.reused, self.waited))
    }
}
