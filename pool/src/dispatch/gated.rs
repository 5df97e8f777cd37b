//! A request body behind a [`BodyGate`]: held back for `100 Continue` (HTTP/1), stopped when
//! the server refuses it before it was all sent, and counted as it goes (HTTP/1 and 2).
//!
//! The body is handed to hyper in pieces of at most [`PIECE`] bytes (a larger data frame is
//! split without a copy), so a stop takes effect within one piece even for a body given as one
//! buffer: hyper takes a frame whole, and what it took it writes. Each piece goes through
//! [`BodyGate::hand_over`], which counts it while the gate is open and refuses it once a
//! response stopped the body; a refused piece is dropped, since nothing after a stop is ever
//! sent. After the stop the body yields nothing until the exchange aborts it, and then ends
//! with [`BodyRefused`], on which hyper closes an HTTP/1 connection (see `pool_h1`'s `gate`
//! module) and resets an HTTP/2 stream with `CANCEL`, the error's source.
//!
//! Over HTTP/2 the abort waits for the response's end, as over HTTP/1: a reset of the stream
//! before then would cut the response off too. A server that stops granting flow-control
//! window leaves hyper waiting for window before it asks the body again, and the reset goes
//! only once it does (or the connection ends). Until then the stream is abandoned
//! ([`pool_h2::StreamGuard::abandon`]): counted, but not keeping its connection in use, and a
//! closed connection left with nothing but such streams is ended rather than drained.
//!
//! hyper's writer also takes frame after frame for as long as the socket accepts bytes, without
//! reading in between: to a server that reads and discards a refused upload (nginx's lingering
//! close) a body would go whole before its answer was even read. So the body yields to the
//! connection's task after every [`YIELD_EVERY`] bytes, until the runtime has polled its I/O
//! driver: hyper reads then, and the exchange can stop the body within about that many bytes of
//! the answer's arrival.
//!
//! What this module does not do: decide which HTTP/1 bodies get a gate (`expect` and `h1` do),
//! or when a response's end aborts a stopped body (the response body does).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pool_core::sync::Arc;
use pool_core::{AsyncSleep, Sleep};
use pool_h1::{BodyGate, GateState};

use crate::body::RequestBody;
use crate::client::{BoxError, Client};

/// The largest piece handed to hyper at once: 256 KiB. A body of at most this many bytes,
/// known in advance, goes with its head in one write and gets no gate for stopping (there is
/// nothing left to stop by the time a response can come). Measured on a 512 MiB loopback
/// upload (see docs/ARCHITECTURE.md), pieces of this size and a yield every two of them went
/// faster than hyper writing the body whole; 64 KiB pieces went slower.
pub(crate) const PIECE: usize = 256 * 1024;

/// A response extension: this response (status 300 or above) came while the request's body was
/// still being sent, so the pool sent no more of it, as curl and Go's HTTP/2 transport do (RFC
/// 9112 §9.5: a client stops sending a body the server does not want). Once the response has
/// been read (or dropped) an HTTP/1 connection closes, since the request's framing is broken,
/// and an HTTP/2 stream is reset with `CANCEL`, which leaves its connection serving. See
/// [`Builder::keep_sending_on_error`](crate::Builder::keep_sending_on_error).
///
/// ```no_run
/// # async fn upload(client: pool::Client, bytes: bytes::Bytes) -> Result<(), Box<dyn std::error::Error>> {
/// let put = http::Request::put("http://example.com/bucket/key")
///     .body(pool::RequestBody::full(bytes))?;
/// let response = client.request(put).await?;
/// if let Some(stopped) = response.extensions().get::<pool::BodyStopped>() {
///     // Refused part way (413, 401, 307...): the server saw at most this much of the body.
///     println!("{} bytes went", stopped.bytes_sent());
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyStopped {
    sent: u64,
}

impl BodyStopped {
    pub(super) fn new(sent: u64) -> BodyStopped {
        BodyStopped { sent }
    }

    /// The body bytes handed to the connection before the stop (the server read at most
    /// these).
    pub fn bytes_sent(&self) -> u64 {
        self.sent
    }
}

/// A response extension: this response came before the pool saw the request's body written
/// to its end, and the pool goes on sending it: the status was below 300, the pool keeps
/// sending on error, or (over HTTP/2) the body had all been handed to hyper already. Over
/// HTTP/2 it goes on until its end or until the server resets the stream. Only a body of over
/// 256 KiB, or of unknown length, is followed this way.
///
/// [`sent`](Self::sent) waits for the rest: a client whose transfer ends only when its upload
/// has, as curl's does, awaits it after reading the response, rather than leaving (or exiting)
/// with the upload cut short.
#[derive(Clone, Debug)]
pub struct BodyStillSending {
    gate: Arc<BodyGate>,
    at_response: u64,
}

impl BodyStillSending {
    pub(super) fn new(gate: Arc<BodyGate>) -> BodyStillSending {
        let at_response = gate.handed_over();
        BodyStillSending { gate, at_response }
    }

    /// The body bytes the pool had handed to the connection when the response came: the
    /// whole body when hyper had taken it all but had perhaps not written it yet.
    pub fn sent_at_response(&self) -> u64 {
        self.at_response
    }

    /// Resolves once the exchange is over, with the body bytes the pool handed to the
    /// connection: over HTTP/1 the connection has written the body's last byte (hyper takes
    /// another request only then), or it closed, or the body was dropped before its end; over
    /// HTTP/2 hyper let go of the body (its last frame queued, or its stream reset). Await it
    /// after the response's body has been read or dropped: the exchange is not over before.
    pub async fn sent(&self) -> u64 {
        std::future::poll_fn(|cx| self.gate.poll_settled(cx)).await
    }
}

/// Marks a request whose body already goes behind its gate: hyper can hand a request back
/// unsent, and the pool sends it again with the same gate (hyper never polled the body).
#[derive(Clone)]
pub(super) struct Held(pub(super) Arc<BodyGate>);

/// Whether a response may come before `body` is all sent (to stop it, or to be waited on for
/// the rest): any body not known to fit in one piece.
pub(super) fn may_outlast_its_head(body: &RequestBody) -> bool {
    body.size_hint()
        .exact()
        .is_none_or(|len| len > PIECE as u64)
}

/// Puts an HTTP/2 request's body behind a gate open from the start, so that a response that
/// comes before its end can say how much of it went and when it ended
/// ([`BodyStillSending`]). Over HTTP/2 the body's part of the exchange is over when hyper lets
/// go of it: its last frame was queued, or its stream was reset (a server refuses the rest of
/// a body with `RST_STREAM(NO_ERROR)`). Nothing for an empty body (almost every `GET`) or one
/// that fits in one piece.
#[inline]
pub(super) fn follow_h2(request: &mut Request<RequestBody>) -> Option<Arc<BodyGate>> {
    if request.body().is_end_stream() {
        return None;
    }
    follow_h2_slow(request)
}

#[cold]
#[inline(never)]
fn follow_h2_slow(request: &mut Request<RequestBody>) -> Option<Arc<BodyGate>> {
    if let Some(Held(gate)) = request.extensions().get::<Held>() {
        return Some(gate.clone());
    }
    if !may_outlast_its_head(request.body()) {
        return None;
    }
    let gate = Arc::new(BodyGate::flowing());
    let body = std::mem::take(request.body_mut());
    let mut gated = GatedBody::new(body, gate.clone(), None);
    gated.drop_ends_exchange = true;
    *request.body_mut() = RequestBody::new(gated);
    request.extensions_mut().insert(Held(gate.clone()));
    Some(gate)
}

/// How many bytes a gated body hands over between two yields to the connection's task: 512 KiB,
/// two pieces. A yield costs a wake-up and a look at the sockets, next to the copies of half a
/// megabyte.
const YIELD_EVERY: usize = 2 * PIECE;

/// How long a body held back for `100 Continue` waits, on which clock.
pub(super) struct Wait {
    pub(super) wait: Duration,
    pub(super) timer: std::sync::Arc<dyn AsyncSleep>,
}

/// A request body behind a gate (see the module docs).
pub(super) struct GatedBody {
    inner: RequestBody,
    gate: Arc<BodyGate>,
    /// The wait for `100 Continue`, for a gate that starts out waiting.
    wait: Option<Wait>,
    /// Started when hyper first asks for the body, which is once the head is written.
    sleep: Option<Sleep>,
    /// Whether the gate was last seen open: then each piece asks the gate as it is handed
    /// over, rather than before the inner body is polled.
    flowing: bool,
    /// The rest of a data frame larger than [`PIECE`].
    rest: Bytes,
    /// Bytes handed over since the last yield.
    unyielded: usize,
    /// The yield under way, when one is.
    yielding: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Whether the body's drop ends the exchange for whoever waits for the upload: over
    /// HTTP/2, where no connection goes home after it.
    drop_ends_exchange: bool,
}

impl GatedBody {
    pub(super) fn new(inner: RequestBody, gate: Arc<BodyGate>, wait: Option<Wait>) -> Self {
        GatedBody {
            inner,
            gate,
            wait,
            sleep: None,
            flowing: false,
            rest: Bytes::new(),
            unyielded: 0,
            yielding: None,
            drop_ends_exchange: false,
        }
    }

    /// Waits until the gate lets the body go: `Ready(Ok)` once it is open, `Ready(Err)` once
    /// it was aborted, `Pending` while it waits or was refused.
    fn poll_open(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        loop {
            match self.gate.poll_state(cx) {
                GateState::Open | GateState::Sent => return Poll::Ready(Ok(())),
                GateState::Aborted => return Poll::Ready(Err(Box::new(BodyRefused::new()))),
                GateState::Refused => return Poll::Pending,
                GateState::Waiting => {
                    let Some(Wait { wait, timer }) = &self.wait else {
                        // Only a gate made for `100 Continue` starts out waiting.
                        self.gate.open();
                        continue;
                    };
                    let sleep = self.sleep.get_or_insert_with(|| timer.sleep(*wait));
                    ready!(sleep.as_mut().poll(cx));
                    // The wait ran out: the body goes, unless a final response refused it
                    // meanwhile (the loop reads which).
                    tracing::debug!("no 100 Continue within {wait:?}; sending the body");
                    self.gate.open();
                }
            }
        }
    }
}

impl Drop for GatedBody {
    fn drop(&mut self) {
        // hyper let go of the body: whoever waits for the upload learns that no more goes.
        self.gate.body_dropped();
        if self.drop_ends_exchange {
            self.gate.exchange_over();
        }
    }
}

impl HttpBody for GatedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if !this.flowing {
            if let Err(error) = ready!(this.poll_open(cx)) {
                return Poll::Ready(Some(Err(error)));
            }
            this.flowing = true;
        }
        if this.unyielded >= YIELD_EVERY {
            // Lets hyper read: an answer that came meanwhile reaches the exchange, which may
            // stop the body before its next piece. tokio's yield, not a wake of our own: it
            // runs the task again only after the runtime polled its I/O driver, and until
            // then hyper's read finds no readiness to act on (the runtime polls the driver
            // only every 61 tasks while tasks are ready).
            let yielding = this
                .yielding
                .get_or_insert_with(|| Box::pin(tokio::task::yield_now()));
            ready!(yielding.as_mut().poll(cx));
            this.yielding = None;
            this.unyielded = 0;
        }
        let frame = if this.rest.is_empty() {
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                None => {
                    this.gate.sent_all();
                    return Poll::Ready(None);
                }
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                Some(Ok(frame)) => frame,
            }
        } else {
            Frame::data(std::mem::take(&mut this.rest))
        };
        let frame = match frame.into_data() {
            Ok(mut data) => {
                if data.len() > PIECE {
                    this.rest = data.split_off(PIECE);
                }
                Frame::data(data)
            }
            Err(trailers) => trailers,
        };
        let len = frame.data_ref().map_or(0, Bytes::len);
        if !this.gate.hand_over(len, cx) {
            // A response stopped the body after the gate was last read: this piece never
            // goes. The gate wakes the task when the exchange aborts the body, unless the
            // abort came first (an HTTP/2 response that ended with its head, before hyper
            // asked for this piece): then nothing would wake it again, and the body ends now.
            this.flowing = false;
            if let Poll::Ready(Err(error)) = this.poll_open(cx) {
                return Poll::Ready(Some(Err(error)));
            }
            return Poll::Pending;
        }
        this.unyielded += len;
        if this.rest.is_empty() && this.inner.is_end_stream() {
            this.gate.sent_all();
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

/// Whether a final response that came before its request's body was all sent refuses the
/// rest: a status of 300 or above, as curl decides (Go's HTTP/2 transport too). A 1xx or 2xx
/// response may want the body still (a server that streams its answer to an upload as it
/// reads it).
pub(super) fn refuses_the_rest<B>(client: &Client, response: &http::Response<B>) -> bool {
    response.status().as_u16() >= 300 && !client.pool.keep_sending_on_error
}

/// The error a refused or stopped body ends with, once its response is over; hyper then closes
/// an HTTP/1 connection, and resets an HTTP/2 stream with the reason it finds among the error's
/// sources: `CANCEL` (RFC 9113 §8.1: the client no longer wants the stream). Nobody sees it as a
/// request's error: the request already has its response.
#[derive(Debug)]
pub(super) struct BodyRefused {
    cancel: h2::Error,
}

impl BodyRefused {
    fn new() -> BodyRefused {
        BodyRefused {
            cancel: h2::Error::from(h2::Reason::CANCEL),
        }
    }
}

impl fmt::Display for BodyRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the server answered before the request body was sent; the rest of it was not sent",
        )
    }
}

impl std::error::Error for BodyRefused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cancel)
    }
}
