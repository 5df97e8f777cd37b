//! Request and response bodies.
//!
//! [`RequestBody`] is the one body type every pooled connection is typed over. Common bodies
//! (`Empty`, `Full`, `String`, `Vec<u8>`, `Bytes`, and `RequestBody` itself) are converted
//! without boxing; anything else is boxed once.
//!
//! [`Body`] is the response body. Besides the bytes it carries the [`ConnectionHandle`] of the
//! connection that served it, and the connection's exchange: an HTTP/1 connection goes home
//! only when this body reaches its end, and an HTTP/2 stream stays counted until the body ends
//! or is dropped (dropping it early resets the stream with `RST_STREAM(CANCEL)`; an HTTP/1
//! connection is retired instead).

use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use pool_core::sync::Arc;
use pool_core::{AsyncSleep, CloseReason, Sleep};
use pool_h1::{BodyGate, ExchangeGuard};
use pool_h2::StreamGuard;

use crate::connection::ConnectionHandle;
use crate::error::Error;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
type BoxBody = Pin<Box<dyn HttpBody<Data = Bytes, Error = BoxError> + Send + 'static>>;

/// A request body as the pool sends it.
pub struct RequestBody {
    kind: ReqKind,
}

/// Two variants, so that `Stream` fits in the niche of `Bytes` and the body takes four words:
/// a request is moved several times on its way to hyper, and at 256 bytes `Request<RequestBody>`
/// stays within the size that `memcpy` copies without a loop.
enum ReqKind {
    /// The whole body; empty for no body, and emptied once its bytes were handed out.
    Full(Bytes),
    Stream(BoxBody),
}

impl RequestBody {
    /// An empty body.
    pub fn empty() -> RequestBody {
        RequestBody {
            kind: ReqKind::Full(Bytes::new()),
        }
    }

    /// A body of exactly these bytes.
    pub fn full(bytes: impl Into<Bytes>) -> RequestBody {
        RequestBody {
            kind: ReqKind::Full(bytes.into()),
        }
    }

    /// Converts any body, avoiding a box for the common concrete types.
    pub fn new<B>(body: B) -> RequestBody
    where
        B: HttpBody<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let mut slot = Some(body);
        let any = &mut slot as &mut dyn Any;
        if let Some(body) = any.downcast_mut::<Option<RequestBody>>() {
            return body.take().expect("slot is filled");
        }
        if any.is::<Option<Empty<Bytes>>>() {
            return RequestBody::empty();
        }
        if let Some(body) = any.downcast_mut::<Option<Full<Bytes>>>() {
            return RequestBody::from_full(body.take().expect("slot is filled"));
        }
        if let Some(body) = any.downcast_mut::<Option<String>>() {
            return RequestBody::full(body.take().expect("slot is filled"));
        }
        if let Some(body) = any.downcast_mut::<Option<Bytes>>() {
            return RequestBody::full(body.take().expect("slot is filled"));
        }
        let body = slot.take().expect("slot is filled");
        RequestBody {
            kind: ReqKind::Stream(Box::pin(body.map_err(Into::into))),
        }
    }

    /// A second body with the same bytes, if this body can be sent again without buffering:
    /// an empty body or one held as a single chunk (cloning `Bytes` shares them). A streaming
    /// body cannot. Taken before the body is sent: a single chunk already handed out leaves an
    /// empty body behind.
    pub(crate) fn try_clone(&self) -> Option<RequestBody> {
        match &self.kind {
            ReqKind::Full(bytes) => Some(RequestBody {
                kind: ReqKind::Full(bytes.clone()),
            }),
            ReqKind::Stream(_) => None,
        }
    }

    /// `Full` has no accessor for its bytes, but yields them on its first poll without ever
    /// being pending.
    fn from_full(mut full: Full<Bytes>) -> RequestBody {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match Pin::new(&mut full).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(bytes) => RequestBody::full(bytes),
                Err(_) => RequestBody::empty(),
            },
            _ => RequestBody::empty(),
        }
    }
}

impl Default for RequestBody {
    fn default() -> Self {
        RequestBody::empty()
    }
}

impl From<Bytes> for RequestBody {
    fn from(bytes: Bytes) -> Self {
        RequestBody::full(bytes)
    }
}

impl From<String> for RequestBody {
    fn from(s: String) -> Self {
        RequestBody::full(s)
    }
}

impl From<Vec<u8>> for RequestBody {
    fn from(v: Vec<u8>) -> Self {
        RequestBody::full(v)
    }
}

impl From<&'static str> for RequestBody {
    fn from(s: &'static str) -> Self {
        RequestBody::full(Bytes::from_static(s.as_bytes()))
    }
}

impl HttpBody for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.kind {
            ReqKind::Full(bytes) if bytes.is_empty() => Poll::Ready(None),
            ReqKind::Full(bytes) => Poll::Ready(Some(Ok(Frame::data(std::mem::take(bytes))))),
            ReqKind::Stream(body) => body.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            ReqKind::Full(bytes) => bytes.is_empty(),
            ReqKind::Stream(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            ReqKind::Full(bytes) => SizeHint::with_exact(bytes.len() as u64),
            ReqKind::Stream(body) => body.size_hint(),
        }
    }
}

impl fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ReqKind::Full(bytes) if bytes.is_empty() => f.write_str("RequestBody::Empty"),
            ReqKind::Full(bytes) => write!(f, "RequestBody::Full({} bytes)", bytes.len()),
            ReqKind::Stream(_) => f.write_str("RequestBody::Stream"),
        }
    }
}

/// What a response body holds on to while it is read.
enum Exchange {
    /// Nothing: the exchange ended, and `closed` says whether it ended the connection's use.
    Done { closed: bool },
    /// An HTTP/1 connection, returned or retired when the body ends or drops.
    H1(ExchangeGuard<RequestBody>),
    /// An HTTP/2 stream, uncounted when the body ends or drops; with the gate of a request
    /// body this response stopped, aborted then (hyper resets the stream). Both are held for
    /// what their drops do.
    H2 {
        _stream: StreamHold,
        _stopped: Option<StoppedBody>,
    },
}

/// How a response body holds its HTTP/2 stream's guard: alone, or with the request body's
/// gate, which keeps it until hyper lets go of the request body. The stream is uncounted
/// when both are done, as h2 closes it only then.
pub(crate) enum StreamHold {
    /// The response body alone (no request body outlives the head).
    Own { _guard: StreamGuard },
    /// Shared with the request body's gate.
    Shared { _guard: Arc<StreamGuard> },
}

/// The gate of a request body that an HTTP/2 response stopped, and the body's stream. Dropped
/// with the response's exchange (read, failed or dropped), it aborts the body, which ends with
/// an error on which hyper resets the stream; the gate keeps the stream counted until then (see
/// [`StreamHold::Shared`]). hyper looks at the body only when the peer grants the stream
/// window, so if hyper still holds the body after the abort the stream is abandoned: counted,
/// but no longer keeping the connection in use (see [`pool_h2::StreamGuard::abandon`]).
pub(crate) struct StoppedBody {
    gate: Arc<BodyGate>,
    stream: Arc<StreamGuard>,
}

impl StoppedBody {
    pub(crate) fn new(gate: Arc<BodyGate>, stream: Arc<StreamGuard>) -> StoppedBody {
        StoppedBody { gate, stream }
    }
}

impl Drop for StoppedBody {
    fn drop(&mut self) {
        self.gate.abort();
        // Usually the body is still held here only because hyper waits for window it may never
        // get. If hyper was about to drop it anyway, the stream is released right after and
        // the abandonment with it.
        if !self.gate.is_body_dropped() {
            self.stream.abandon();
        }
    }
}

/// A response body from the pool.
///
/// # Drop behavior
///
/// Dropping the body before its end retires an HTTP/1 connection (its framing can no longer be
/// trusted) and resets an HTTP/2 stream; reading it to the end returns an HTTP/1 connection
/// for reuse.
pub struct Body {
    inner: Incoming,
    exchange: Exchange,
    connection: ConnectionHandle,
    /// The body idle timeout, when the client sets one. Boxed: the body is moved with every
    /// response, and most clients set none.
    idle: Option<Box<IdleTimer>>,
}

/// The body idle timeout: a timer started when the body is polled and has nothing, stopped by
/// the next frame. It bounds each silence, not the whole body.
struct IdleTimer {
    timeout: Duration,
    sleep: Arc<dyn AsyncSleep>,
    /// Running while the body waits for its next frame.
    timer: Option<Sleep>,
}

impl IdleTimer {
    /// Whether the silence that this poll found has lasted the timeout (starting the timer
    /// when the silence begins).
    fn elapsed(&mut self, cx: &mut Context<'_>) -> bool {
        let timer = self
            .timer
            .get_or_insert_with(|| self.sleep.sleep(self.timeout));
        timer.as_mut().poll(cx).is_ready()
    }
}

impl Body {
    pub(crate) fn h1(
        inner: Incoming,
        guard: ExchangeGuard<RequestBody>,
        connection: ConnectionHandle,
    ) -> Body {
        let mut body = Body {
            inner,
            exchange: Exchange::H1(guard),
            connection,
            idle: None,
        };
        // A response without a body (HEAD, 204, 304, Content-Length: 0) ends with its head.
        if body.inner.is_end_stream() {
            body.end();
        }
        body
    }

    pub(crate) fn h2(
        inner: Incoming,
        guard: StreamHold,
        stopped: Option<StoppedBody>,
        connection: ConnectionHandle,
    ) -> Body {
        let mut body = Body {
            inner,
            exchange: Exchange::H2 {
                _stream: guard,
                _stopped: stopped,
            },
            connection,
            idle: None,
        };
        if body.inner.is_end_stream() {
            body.end();
        }
        body
    }

    /// Fails the body when it sends nothing for `timeout` (see
    /// [`Client::body_idle_timeout`](crate::Client::body_idle_timeout)).
    pub(crate) fn with_idle_timeout(
        mut self,
        timeout: Duration,
        sleep: Arc<dyn AsyncSleep>,
    ) -> Body {
        if !matches!(self.exchange, Exchange::Done { .. }) {
            self.idle = Some(Box::new(IdleTimer {
                timeout,
                sleep,
                timer: None,
            }));
        }
        self
    }

    /// The connection that served this response: `response.body().connection()`, before the
    /// body is consumed or mapped (clone the handle to keep it longer).
    pub fn connection(&self) -> &ConnectionHandle {
        &self.connection
    }

    /// Whether the connection's use ends with this exchange, as Go's `Response.Close` says:
    /// `true` when the pool closes it instead of offering it to another request.
    ///
    /// Before the body's end this is what the pool will do once the body is read to its end,
    /// as far as it is known now: an HTTP/1 request or response that closes the connection
    /// (`Connection: close` on either, or a response of HTTP/1.0 without `keep-alive`, as
    /// hyper decides), a `101`, a request body the
    /// pool refused or stopped ([`BodyStopped`](crate::BodyStopped)), a poisoned connection, or
    /// one the pool already closed (an HTTP/2 connection closes for new streams once the pool
    /// learns of the server's `GOAWAY`). Dropping the body before its end retires an HTTP/1
    /// connection whatever this says. After the end (or a failure) it is what the pool did
    /// then. A connection that goes home can still close later, as any idle connection can.
    pub fn closes_connection(&self) -> bool {
        match &self.exchange {
            Exchange::Done { closed } => *closed,
            Exchange::H1(guard) => guard.closes(),
            Exchange::H2 { .. } => self.connection.record().is_retiring(),
        }
    }

    /// The message ended: the connection goes home or the stream is uncounted.
    fn end(&mut self) {
        let closes = self.closes_connection();
        match std::mem::replace(&mut self.exchange, Exchange::Done { closed: closes }) {
            Exchange::Done { .. } => {}
            Exchange::H1(mut guard) => guard.end_of_body(),
            Exchange::H2 { .. } => {}
        }
        // A return that found hyper closing retired the connection just now.
        if !closes && self.connection.record().is_closed() {
            self.exchange = Exchange::Done { closed: true };
        }
    }

    /// The body failed mid-way: retire an HTTP/1 connection (dropping its guard unfinished
    /// does exactly that) and uncount an HTTP/2 stream.
    fn fail(&mut self) {
        drop(std::mem::replace(
            &mut self.exchange,
            Exchange::Done { closed: true },
        ));
        let closed = self.connection.record().is_retiring();
        self.exchange = Exchange::Done { closed };
    }
}

impl HttpBody for Body {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => {
                let Some(idle) = &mut this.idle else {
                    return Poll::Pending;
                };
                if !idle.elapsed(cx) {
                    return Poll::Pending;
                }
                // Retire the connection first, so the close says why (the guard dropped by
                // `fail` would otherwise call an HTTP/1 exchange merely incomplete).
                let timeout = idle.timeout;
                this.idle = None;
                this.connection
                    .record()
                    .close(CloseReason::BodyIdleTimeout, None);
                this.fail();
                let error = Error::body_idle_timeout(timeout).on(this.connection.clone());
                Poll::Ready(Some(Err(error)))
            }
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(idle) = &mut this.idle {
                    idle.timer = None;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => {
                this.fail();
                Poll::Ready(Some(Err(Error::body(err).on(this.connection.clone()))))
            }
            Poll::Ready(None) => {
                this.idle = None;
                this.end();
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.exchange, Exchange::Done { closed: true }) {
            Exchange::Done { .. } => {}
            Exchange::H1(mut guard) => guard.finish(self.inner.is_end_stream()),
            Exchange::H2 { .. } => {}
        }
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let exchange = match &self.exchange {
            Exchange::Done { .. } => "done",
            Exchange::H1(_) => "http1",
            Exchange::H2 { .. } => "http2",
        };
        f.debug_struct("Body")
            .field("connection", &self.connection.id())
            .field("exchange", &exchange)
            .field("end", &self.inner.is_end_stream())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_bodies_are_not_boxed() {
        let b = RequestBody::new(Full::new(Bytes::from_static(b"hello")));
        assert!(matches!(b.kind, ReqKind::Full(ref x) if x == "hello"));
        assert_eq!(b.size_hint().exact(), Some(5));
        assert!(matches!(
            RequestBody::new(Empty::<Bytes>::new()).kind,
            ReqKind::Full(ref x) if x.is_empty()
        ));
        assert!(matches!(
            RequestBody::new(String::from("x")).kind,
            ReqKind::Full(_)
        ));
        assert!(matches!(
            RequestBody::new(RequestBody::full("y")).kind,
            ReqKind::Full(_)
        ));
        let boxed = Full::new(Bytes::from_static(b"z")).boxed();
        assert!(matches!(RequestBody::new(boxed).kind, ReqKind::Stream(_)));
    }

    /// Every request moves its `Request` and every response its `Response<Body>` several
    /// times between the caller, the pool and hyper; at 256 bytes or less a move is a copy
    /// without a loop. A field added to the body, the exchange guard or the connection shows
    /// up here.
    #[test]
    fn what_each_request_moves_stays_within_256_bytes() {
        use std::mem::size_of;
        assert_eq!(size_of::<RequestBody>(), 32);
        assert!(size_of::<http::Request<RequestBody>>() <= 256);
        assert!(size_of::<http::Response<Body>>() <= 256);
    }

    #[test]
    fn full_body_yields_once_then_ends() {
        let mut b = RequestBody::full("abc");
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(!b.is_end_stream());
        let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut b).poll_frame(&mut cx) else {
            panic!()
        };
        assert_eq!(frame.into_data().unwrap(), "abc");
        assert!(b.is_end_stream());
        assert!(matches!(
            Pin::new(&mut b).poll_frame(&mut cx),
            Poll::Ready(None)
        ));
    }
}
