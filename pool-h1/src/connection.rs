//! The sender with its record, and dispatch.

use std::fmt;
use std::future::Future;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::client::conn::http1::SendRequest;
use pool_core::CloseReason;
use pool_core::cell::PooledH1;
use pool_core::connection::{ConnectionRecord, PhysicalLink};
use pool_core::sync::Arc;

use crate::early::FirstUse;
use crate::exchange::ExchangeGuard;
use crate::parking::ParkingSpot;
use crate::raw_names::NamesSlot;
use crate::request::ForwardProxy;
use crate::request_names::RequestHeaderNames;
use crate::sending::Sending;

/// Where a finished HTTP/1 connection goes home to, implemented by the assembled pool.
pub trait H1Home<B>: Send + Sync + 'static {
    /// The exchange finished and the sender is ready: hand the connection back to its cell.
    fn release(&self, conn: H1Connection<B>);

    /// A connection probing its server's learnt request quota was answered `served` times,
    /// more than the quota: the server keeps connections longer than that (see pool-core's
    /// `cell/quota.rs`).
    fn served_past_request_quota(&self, served: u64);

    /// The server closed this connection (`record`'s) while it sat idle in its cell, after it
    /// had served: how long it stayed idle may teach the cell the server's idle timeout (see
    /// pool-core's `cell/idle_lesson.rs`). Called by the driver as it ends, before the record
    /// closes.
    fn closed_while_idle(&self, record: &ConnectionRecord);
}

/// An HTTP/1 connection as the pool holds it: the exclusive sender, the lifecycle record, and
/// what stays the same for the connection's life behind one pointer.
///
/// Every request moves the connection several times (out of the idle set, into the exchange
/// guard, inside the response body and the response), so it is kept to hyper's sender and two
/// pointers (40 bytes); the fixed part is read through its pointer a few times per request.
pub struct H1Connection<B> {
    sender: SendRequest<B>,
    record: Arc<ConnectionRecord>,
    fixed: Arc<Fixed<B>>,
}

/// The parts of an [`H1Connection`] that do not change while it lives: the home it returns to,
/// the spot where it waits for its driver when hyper is not yet ready, the transport's link
/// (whose read count tells whether a response had begun), the forward proxy it goes through,
/// if any, and where the transport leaves each response head's names, when the pool records
/// them.
pub(crate) struct Fixed<B> {
    pub(crate) home: Arc<dyn H1Home<B>>,
    pub(crate) spot: Arc<ParkingSpot<B>>,
    pub(crate) link: Arc<PhysicalLink>,
    pub(crate) forward: Option<ForwardProxy>,
    pub(crate) names: Option<std::sync::Arc<NamesSlot>>,
    /// What the transport and the cell tell each other about the first use (see `early`).
    pub(crate) first_use: std::sync::Arc<FirstUse>,
}

/// What came of [`H1Connection::send`].
pub enum SendOutcome<B> {
    /// The response head arrived; the guard holds the connection until the body ends.
    Response(Response<Incoming>, ExchangeGuard<B>),
    /// hyper handed the request back without sending it (the connection closed before it
    /// could). The connection has been retired. `reused` says whether the connection had
    /// served a request before this one: only then may the request be retried transparently.
    Unsent {
        /// The original request, untouched by the wire.
        request: Request<B>,
        /// Why hyper could not send it.
        error: hyper::Error,
        /// Whether the connection had served a request before.
        reused: bool,
    },
    /// The request was accepted and then failed; the connection has been retired.
    Failed {
        /// The failure.
        error: hyper::Error,
        /// Whether the connection had served a request before this one.
        reused: bool,
        /// Whether the connection closed or reset before any byte of the response arrived
        /// (hyper's incomplete message or an I/O reset, with the transport's read count
        /// unchanged since dispatch). On a reused connection this is the keep-alive race: the
        /// server closed an idle connection while the request was on its way.
        before_response: bool,
    },
}

impl<B> H1Connection<B> {
    /// The connection's lifecycle record.
    pub fn record(&self) -> &Arc<ConnectionRecord> {
        &self.record
    }
}

impl<B: 'static> H1Connection<B> {
    /// Wraps a handshaken sender. The spot in `fixed` must be polled by the connection's
    /// driver (see [`ParkingSpot::poll_parked`]); its `names` is where the transport leaves the
    /// header names of each response head, when the pool records them (see
    /// [`RawHeaderNames`](crate::RawHeaderNames)).
    pub(crate) fn new(
        sender: SendRequest<B>,
        record: Arc<ConnectionRecord>,
        fixed: Fixed<B>,
    ) -> Self {
        H1Connection {
            sender,
            record,
            fixed: Arc::new(fixed),
        }
    }

    /// Shapes `request` for this connection: origin-form with `Host` for an origin server
    /// ([`prepare_request`](crate::prepare_request)), absolute-form with the proxy's
    /// credentials for a forward proxy ([`prepare_proxied_request`](crate::prepare_proxied_request)).
    pub fn prepare(&self, request: &mut Request<B>, host: &http::HeaderValue) {
        match &self.fixed.forward {
            None => crate::prepare_request(request, host),
            Some(proxy) => crate::prepare_proxied_request(request, host, proxy),
        }
    }

    pub(crate) fn sender_mut(&mut self) -> &mut SendRequest<B> {
        &mut self.sender
    }

    pub(crate) fn spot(&self) -> &Arc<ParkingSpot<B>> {
        &self.fixed.spot
    }

    /// This connection, probing its server's request quota, went past it after `served`.
    #[cold]
    pub(crate) fn served_past_request_quota(&self, served: u64) {
        self.fixed.home.served_past_request_quota(served);
    }

    /// Hands the connection to its home.
    pub(crate) fn go_home(self) {
        let fixed = self.fixed.clone();
        fixed.home.release(self);
    }
}

impl<B> H1Connection<B>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// Dispatches `request` (already shaped by [`prepare_request`](crate::prepare_request)) on this connection.
    ///
    /// The dispatch is counted on the record before hyper receives the request, so the
    /// connection counts as reused from the second request on.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after hyper accepted the request drops the connection with it: the
    /// record closes as [`CloseReason::RequestCanceled`] (the peer did nothing wrong), and
    /// hyper, seeing the dispatch cancelled, closes the transport. Nothing is returned to the
    /// idle set.
    ///
    /// The request is handed to hyper when this is called, not when the future is first
    /// polled, so the future holds the connection and hyper's response future, not the request.
    pub fn send(mut self, request: Request<B>) -> impl Future<Output = SendOutcome<B>> + Send {
        let reused = self.record.record_dispatch();
        let read_mark = self.fixed.link.bytes_read();
        let request_closes = crate::exchange::asks_to_close(request.headers());
        if let Some(slot) = &self.fixed.names {
            // For the transport's next write of a head (`request_names`); cloned, so that a
            // request hyper hands back still carries it.
            slot.request
                .put(request.extensions().get::<RequestHeaderNames>().cloned());
        }
        let response = self.sender.try_send_request(request);
        Sending {
            response,
            conn: Some(self),
            reused,
            request_closes,
            read_mark,
        }
    }

    pub(crate) fn outcome(
        self,
        response: Result<Response<Incoming>, hyper::client::conn::TrySendError<Request<B>>>,
        reused: bool,
        read_mark: u64,
        request_closes: bool,
    ) -> SendOutcome<B> {
        match response {
            Ok(mut response) => {
                if let Some(names) = self.fixed.names.as_ref().and_then(|slot| slot.take()) {
                    response.extensions_mut().insert(names);
                }
                let guard = ExchangeGuard::new(self, &response, request_closes);
                SendOutcome::Response(response, guard)
            }
            Err(err) => self.failed(err, reused, read_mark),
        }
    }

    /// hyper did not answer with a response: the connection retires. Cold, and kept out of
    /// [`outcome`](Self::outcome), so the code every exchange runs stays short.
    #[cold]
    #[inline(never)]
    fn failed(
        self,
        mut err: hyper::client::conn::TrySendError<Request<B>>,
        reused: bool,
        read_mark: u64,
    ) -> SendOutcome<B> {
        let unsent = err.take_message();
        if let Some(slot) = &self.fixed.names {
            // Nothing of this request may respell a later write.
            slot.request.put(None);
        }
        let error = err.into_error();
        match unsent {
            Some(request) => {
                self.record
                    .close(CloseReason::ProtocolClosed, Some(Box::new(StaleConnection)));
                SendOutcome::Unsent {
                    request,
                    error,
                    reused,
                }
            }
            None => {
                let before_response =
                    self.fixed.link.bytes_read() == read_mark && closed_or_reset(&error);
                self.record.close(
                    CloseReason::IncompleteH1Exchange,
                    Some(Box::new(ExchangeFailed(pool_core::close::with_sources(
                        &error,
                    )))),
                );
                SendOutcome::Failed {
                    error,
                    reused,
                    before_response,
                }
            }
        }
    }
}

/// Whether `error` says the connection closed or was reset (as opposed to a malformed
/// response, a timeout or a cancellation).
fn closed_or_reset(error: &hyper::Error) -> bool {
    if error.is_incomplete_message() {
        return true;
    }
    let mut source = std::error::Error::source(error);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return pool_core::close::is_closed_or_reset(io);
        }
        source = err.source();
    }
    false
}

/// The close reason's source when hyper returned a request unsent.
#[derive(Debug)]
struct StaleConnection;

impl fmt::Display for StaleConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("connection closed before the request could be sent")
    }
}

impl std::error::Error for StaleConnection {}

/// The close reason's source when an exchange failed after hyper accepted the request.
#[derive(Debug)]
struct ExchangeFailed(String);

impl fmt::Display for ExchangeFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "exchange failed: {}", self.0)
    }
}

impl std::error::Error for ExchangeFailed {}

impl<B> fmt::Debug for SendOutcome<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendOutcome::Response(response, guard) => f
                .debug_tuple("Response")
                .field(&response.status())
                .field(guard)
                .finish(),
            SendOutcome::Unsent { error, reused, .. } => f
                .debug_struct("Unsent")
                .field("error", error)
                .field("reused", reused)
                .finish(),
            SendOutcome::Failed {
                error,
                reused,
                before_response,
            } => f
                .debug_struct("Failed")
                .field("error", error)
                .field("reused", reused)
                .field("before_response", before_response)
                .finish(),
        }
    }
}

impl<B: Send + 'static> PooledH1 for H1Connection<B> {
    fn record(&self) -> &Arc<ConnectionRecord> {
        &self.record
    }

    fn is_open(&self) -> bool {
        !self.sender.is_closed()
    }

    fn went_idle_unused(&self) {
        self.fixed.first_use.went_idle_unused();
    }
}

impl<B> fmt::Debug for H1Connection<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("H1Connection")
            .field("record", &self.record)
            .finish()
    }
}
