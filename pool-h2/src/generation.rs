//! Generations, stream leases and failure classification.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper::client::conn::http2::SendRequest;
use pool_core::cell::PooledH2;
use pool_core::connection::ConnectionRecord;
use pool_core::stats::Gauge;
use pool_core::sync::Arc;
use pool_core::{CloseReason, ResendReason};

use crate::classify::{
    asked_for_calm, go_away_asking_for_calm, graceful_go_away, held_back, is_connection_error,
    is_connection_lost, not_processed,
};
use crate::guard::StreamGuard;
use crate::handshake::H2Home;
use crate::heard::PeerHeard;
use crate::kill::{KillSwitch, Why};
use crate::sending::{Dispatch, dispatch};
use crate::streams::Streams;
use crate::uploads::UploadWaiting;

/// One HTTP/2 connection as the pool holds it. Cheap to clone: clones share the sender.
pub struct H2Generation<B> {
    inner: Arc<Inner<B>>,
}

struct Inner<B> {
    sender: SendRequest<B>,
    /// What its streams need of it (one shared allocation, so a lease costs no allocation).
    shared: Arc<GenerationHandle>,
}

impl<B> Drop for Inner<B> {
    /// The generation's last handle: no stream can be taken on it any more. If every stream
    /// left was abandoned, nothing else will end the connection (see `kill.rs`).
    fn drop(&mut self) {
        self.shared.streams.seal();
        self.shared.end_if_abandoned();
    }
}

impl<B> Clone for H2Generation<B> {
    fn clone(&self) -> Self {
        H2Generation {
            inner: self.inner.clone(),
        }
    }
}

impl<B> H2Generation<B> {
    /// Wraps a handshaken sender and its (installed) record; `streams` is shared with the
    /// driver, `home` is told when a stream frees up at the limit.
    pub(crate) fn new(
        sender: SendRequest<B>,
        record: Arc<ConnectionRecord>,
        streams: Arc<Streams>,
        home: Arc<dyn H2Home>,
        kill: std::sync::Arc<KillSwitch>,
        heard: std::sync::Arc<PeerHeard>,
    ) -> Self {
        H2Generation {
            inner: Arc::new(Inner {
                sender,
                shared: Arc::new(GenerationHandle {
                    record,
                    streams,
                    home,
                    kill,
                    heard,
                }),
            }),
        }
    }

    /// Streams reserved or in use.
    pub fn streams_taken(&self) -> usize {
        self.inner.shared.streams.taken()
    }

    /// The generation's lifecycle record.
    pub fn record(&self) -> &Arc<ConnectionRecord> {
        &self.inner.shared.record
    }

    /// Whether the generation still accepts new streams: not logically closed, and hyper's
    /// dispatcher still running.
    pub fn is_accepting(&self) -> bool {
        !self.inner.shared.record.is_closed() && !self.inner.sender.is_closed()
    }

    /// Turns the stream the cell reserved ([`PooledH2::try_reserve`]) into a lease, or gives the
    /// reservation back and returns `None` if the generation stopped accepting.
    ///
    /// # Concurrency
    ///
    /// A lease taken just before the generation closes is still honoured by hyper if the
    /// dispatcher accepts the request, or handed back unsent if it does not; either way the
    /// lease's stream is released exactly once.
    ///
    /// A generation that stopped accepting because its peer allows no stream, on a connection
    /// that never served, still gives the lease: the request comes back refused (hyper hands it
    /// back unsent, `ResendReason::RefusedStream`), a re-send counted against its budget. Looking
    /// again instead would open connection after connection to such a server without a bound.
    pub fn lease(&self) -> Option<StreamLease<B>> {
        if !self.is_accepting() && !self.inner.shared.hands_back_refused() {
            self.inner.shared.unreserve();
            return None;
        }
        self.inner
            .shared
            .record
            .gauges()
            .inc(Gauge::H2ActiveStreams);
        Some(StreamLease {
            sender: self.inner.sender.clone(),
            guard: StreamGuard::new(self.inner.shared.clone()),
        })
    }
}

impl<B: Send + 'static> PooledH2 for H2Generation<B> {
    fn record(&self) -> &Arc<ConnectionRecord> {
        &self.inner.shared.record
    }

    fn is_accepting(&self) -> bool {
        H2Generation::is_accepting(self)
    }

    fn try_reserve(&self) -> bool {
        self.inner.shared.streams.try_reserve()
    }

    fn unreserve(&self) {
        self.inner.shared.unreserve();
    }

    fn unreserve_quietly(&self) {
        self.inner.shared.streams.unreserve();
    }

    fn is_full(&self) -> bool {
        self.inner.shared.streams.is_full()
    }

    fn has_streams(&self) -> bool {
        self.inner.shared.streams.in_use()
    }

    fn stream_limit(&self) -> Option<usize> {
        self.inner.shared.streams.limit()
    }

    fn assume_stream_limit(&self, limit: usize) {
        self.inner.shared.streams.assume(limit);
    }

    fn limit_requests(&self, quota: u64) {
        self.inner.shared.streams.quota.set(quota);
    }
}

/// A generation's record, stream accounting and home: what a stream holds of it, without the
/// body type.
pub(crate) struct GenerationHandle {
    pub(crate) record: Arc<ConnectionRecord>,
    pub(crate) streams: Arc<Streams>,
    pub(crate) home: Arc<dyn H2Home>,
    /// Ends the connection's transport (see `kill.rs`).
    kill: std::sync::Arc<KillSwitch>,
    /// Whether the peer has sent anything on the connection (see `heard.rs`).
    heard: std::sync::Arc<PeerHeard>,
}

impl Drop for GenerationHandle {
    /// Nothing refers to the connection any more (the cell let it go, and every stream on it
    /// ended): tell the cell what it learns from the connection about its server's
    /// per-connection request quota.
    fn drop(&mut self) {
        let (served, cut) = self.streams.quota.ended(self.record.requests_served());
        self.home.connection_ended(&self.record, served, cut);
    }
}

impl GenerationHandle {
    /// Releases one stream; a generation that was at its limit tells its cell, whose oldest
    /// waiting request takes the stream, and any other says the stream ended.
    pub(crate) fn release(&self) {
        let was_full = self.streams.release();
        self.released(was_full);
    }

    /// Gives back a reservation that was never leased, as [`release`](Self::release) does a
    /// stream; it no longer counts against the request quota either.
    fn unreserve(&self) {
        let was_full = self.streams.unreserve();
        self.released(was_full);
    }

    fn released(&self, was_full: bool) {
        if was_full {
            self.home.stream_freed(&self.record);
        } else {
            self.home.stream_ended(&self.record);
        }
        self.end_if_abandoned();
    }

    /// `dispatched` requests, the one just handed to hyper included, went to this connection:
    /// if that was the last its request quota allows, the generation retires now, so that the
    /// next request goes to a new connection rather than into the server's cut.
    ///
    /// One window of the quota before that, it asks its cell to open its successor. It also
    /// retires once the server's empty DATA frames come near h2's limit (`frames.rs`).
    pub(crate) fn dispatched(&self, dispatched: u64) {
        if self.streams.frames_spent() {
            crate::frames::retire_before_the_frame_limit(&self.record, &*self.home);
        }
        let quota = &self.streams.quota;
        // Without a quota (the common case) the peer's limit is not even read.
        if !quota.is_set() {
            return;
        }
        if quota.successor_due(dispatched, self.streams.limit()) {
            self.home.successor_wanted(&self.record);
        }
        if !quota.spent_by(dispatched) {
            return;
        }
        if self.record.close(CloseReason::RequestQuota, None) {
            tracing::debug!(
                connection = self.record.info().id().as_u64(),
                requests = dispatched,
                "the connection carried its server's per-connection request quota: retiring it"
            );
        }
        self.home.retire(&self.record);
    }

    /// The peer refused one of this generation's streams: learn its limit from the connection
    /// (waking waiting requests if it grew). Returns whether the peer allows no stream at all:
    /// then the generation can serve nothing until the peer says otherwise, and the failure is
    /// the connection's, so the refused request goes elsewhere (see `H2SendOutcome::Failed`).
    fn refused(&self) -> bool {
        let (grew, allows_none) = self.streams.saw_refusal();
        if allows_none {
            no_streams_allowed(&self.streams, &self.record, &*self.home, &self.kill);
        } else if grew {
            self.home.stream_freed(&self.record);
        }
        allows_none
    }

    /// Why a request that never became a stream on this connection was not sent:
    /// [`ResendReason::RefusedStream`] once the connection closed because its peer allows no
    /// stream (see [`no_streams_allowed`]), otherwise [`ResendReason::Unsent`].
    fn unsent_reason(&self) -> ResendReason {
        if self.record.close_reason() == Some(CloseReason::NoStreamsAllowed) {
            ResendReason::RefusedStream
        } else {
            ResendReason::Unsent
        }
    }

    /// Whether a request granted a stream here after the generation stopped accepting is still
    /// handed over, to come back refused: the peer allows no stream and the connection never
    /// served (see `H2Generation::lease`).
    fn hands_back_refused(&self) -> bool {
        self.unsent_reason() == ResendReason::RefusedStream && !self.streams.responded()
    }

    /// Kills the connection if no stream can be taken on it any more and every stream left
    /// is abandoned. Checked by each change that can make it so: the generation's last handle
    /// going, a stream ending, a stream being abandoned.
    pub(crate) fn end_if_abandoned(&self) {
        if self.streams.only_abandoned_left() {
            tracing::debug!(
                connection = self.record.info().id().as_u64(),
                "every stream left is abandoned: ending the connection"
            );
            self.kill.kill(Why::Abandoned);
        }
    }
}

/// The peer allows no stream at all (seen by a refusal, or by the driver): the connection can
/// serve nothing until the peer says otherwise. Its record closes (`NoStreamsAllowed`) and its
/// generation retires, so waiting requests get another connection; requests hyper had not
/// made streams of yet come back as refused (`GenerationHandle::unsent_reason`, which reads the
/// close reason: it is recorded before hyper's dispatch task ends). On a connection that
/// never served a response the transport ends too: a request h2 had queued for a stream would
/// otherwise wait on it for ever, and whatever was sent went to a server that allowed no
/// stream from its first SETTINGS on (or lowered its limit to 0 before answering anything).
/// On one that had served, the streams already open go on to their end.
pub(crate) fn no_streams_allowed(
    streams: &Streams,
    record: &Arc<ConnectionRecord>,
    home: &dyn H2Home,
    kill: &KillSwitch,
) {
    if record.close(CloseReason::NoStreamsAllowed, None) {
        tracing::debug!(
            connection = record.info().id().as_u64(),
            "the peer allows no HTTP/2 stream: retiring the connection"
        );
    }
    home.retire(record);
    if !streams.responded() {
        kill.kill(Why::NoStreams);
    }
}

impl<B> fmt::Debug for H2Generation<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("H2Generation")
            .field("record", &self.inner.shared.record)
            .field("streams", &self.inner.shared.streams)
            .finish()
    }
}

/// The right to open one stream on a generation.
pub struct StreamLease<B> {
    sender: SendRequest<B>,
    guard: StreamGuard,
}

/// What came of [`StreamLease::send`].
pub enum H2SendOutcome<B> {
    /// The response head arrived; the guard keeps the stream counted until the body ends.
    Response(Response<Incoming>, StreamGuard),
    /// hyper handed the request back unsent (the dispatcher closed first).
    Unsent {
        /// The original request.
        request: Request<B>,
        /// [`ResendReason::Unsent`], or [`ResendReason::RefusedStream`] when the dispatcher
        /// was ended because the peer allows no stream (see `H2Driver`).
        reason: ResendReason,
        /// Why it could not be sent.
        error: hyper::Error,
        /// Whether the generation had served a request before this one.
        reused: bool,
    },
    /// The request failed after hyper accepted it.
    Failed {
        /// The failure.
        error: hyper::Error,
        /// Whether the failure concerns the whole connection (see [`is_connection_error`]), or
        /// the peer refused the stream and allows no stream at all (its
        /// `SETTINGS_MAX_CONCURRENT_STREAMS` is 0): either way the request must not come back
        /// to this connection.
        connection_level: bool,
        /// Set when the protocol proves the server did not process the request (see
        /// [`not_processed`]).
        not_processed: Option<ResendReason>,
        /// The connection closed or was reset under the stream before its response began,
        /// with no proof either way (see [`is_connection_lost`]). On a connection the server
        /// had begun to serve (`heard`), this is HTTP/2's keep-alive race: safe to repeat only
        /// for an idempotent request (RFC 9110 §9.2.2).
        connection_lost: bool,
        /// The peer reset the stream with `ENHANCE_YOUR_CALM` before its response (see
        /// `calm.rs`): it is shedding load, and the generation now opens fewer streams. No
        /// proof either way: safe to repeat only for an idempotent request.
        calmed: bool,
        /// With `calmed`: the refusal lowered the generation's calm cap, so the pool had
        /// opened more streams than the peer took (`calm.rs`): the refusal is the pool's doing,
        /// not the request's.
        cap_lowered: bool,
        /// The peer had sent something on the connection (its SETTINGS at least) before the
        /// failure: the server took the connection and began HTTP/2 on it (see `heard.rs`).
        heard: bool,
    },
}

impl<B> fmt::Debug for H2SendOutcome<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            H2SendOutcome::Response(response, _) => {
                f.debug_tuple("Response").field(&response.status()).finish()
            }
            H2SendOutcome::Unsent { error, reused, .. } => f
                .debug_struct("Unsent")
                .field("error", error)
                .field("reused", reused)
                .finish(),
            H2SendOutcome::Failed {
                error,
                connection_level,
                not_processed,
                connection_lost,
                calmed,
                cap_lowered,
                heard,
            } => f
                .debug_struct("Failed")
                .field("error", error)
                .field("connection_level", connection_level)
                .field("not_processed", not_processed)
                .field("connection_lost", connection_lost)
                .field("calmed", calmed)
                .field("cap_lowered", cap_lowered)
                .field("heard", heard)
                .finish(),
        }
    }
}

impl<B> StreamLease<B>
where
    B: Body + Unpin + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    /// Sends `request` (absolute URI: hyper derives `:scheme` and `:authority` from it) on the
    /// leased stream.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future resets the stream (`RST_STREAM(CANCEL)`); the generation is
    /// unaffected and the lease is released.
    ///
    /// The request is handed to hyper when this is called, not when the future is first
    /// polled, so the future holds the stream's guard and hyper's response future, not the
    /// request, and not the sender either: a request handed over just as hyper's dispatcher
    /// stops can stay in its queue unread (tokio's channel drains what it holds when the
    /// receiver drops, and a message pushed in that instant arrives after the drain), and it is
    /// handed back, unsent, only when the queue itself goes, with its last sender. A future
    /// holding a sender would wait for ever on a request its own sender keeps queued.
    ///
    /// A request with a body, once its cell sends one body at a time (`uploads.rs`), first
    /// takes its connection's upload permit; if another upload holds it, it waits for it (the
    /// connection taking no new stream meanwhile), and is handed to hyper when it has it. It
    /// waits holding the sender and the request: nothing of it is in hyper's queue yet, and a
    /// dispatcher that ended meanwhile hands it back unsent once it is handed over.
    pub fn send(self, request: Request<B>) -> impl Future<Output = H2SendOutcome<B>> + Send {
        let StreamLease { sender, guard } = self;
        let upload = !request.body().is_end_stream();
        // Only once the cell sends one body at a time, and only for an upload.
        let semaphore = guard
            .generation
            .as_ref()
            .filter(|_| upload)
            .and_then(|g| Some((g, g.streams.uploads.permit()?)));
        let mut permit = None;
        if let Some((generation, semaphore)) = semaphore {
            match semaphore.clone().try_acquire_owned() {
                Ok(taken) => permit = Some(taken),
                Err(_) => {
                    // Counted before this returns, so the cell sends the next request
                    // elsewhere (the connection counts as full while an upload waits).
                    let waiting = UploadWaiting::new(generation.clone());
                    return Dispatch::Queued {
                        waiting: Box::pin(async move {
                            // Never closed, so the permit always comes.
                            let permit = semaphore.acquire_owned().await.ok();
                            drop(waiting);
                            dispatch(sender, guard, request, true, permit).await
                        }),
                    };
                }
            }
        }
        Dispatch::Sent {
            sending: dispatch(sender, guard, request, upload, permit),
        }
    }
}

impl StreamGuard {
    /// What hyper's answer to the request sent on this guard's stream comes to.
    pub(crate) fn outcome<B>(
        self,
        response: Result<Response<Incoming>, hyper::client::conn::TrySendError<Request<B>>>,
        reused: bool,
    ) -> H2SendOutcome<B> {
        match response {
            Ok(response) => {
                if let Some(generation) = &self.generation {
                    if generation.streams.saw_response() {
                        generation.home.stream_freed(&generation.record);
                    }
                }
                H2SendOutcome::Response(response, self)
            }
            Err(mut err) => {
                let unsent = err.take_message();
                let error = err.into_error();
                match unsent {
                    Some(request) => {
                        let generation = self.generation.as_deref();
                        if let Some(generation) = generation {
                            generation.streams.quota.not_processed(false);
                        }
                        H2SendOutcome::Unsent {
                            request,
                            reason: generation
                                .map_or(ResendReason::Unsent, GenerationHandle::unsent_reason),
                            error,
                            reused,
                        }
                    }
                    None => {
                        // A closed record covers a dispatcher that is gone: the driver closes
                        // the record before it drops hyper's dispatch task.
                        let generation = self.generation.as_deref();
                        let proven = not_processed(&error);
                        // Only a refusal from the peer reads its limit again.
                        let allows_none = proven == Some(ResendReason::RefusedStream)
                            && generation.is_some_and(GenerationHandle::refused);
                        let not_processed = proven.or_else(|| {
                            held_back(
                                &error,
                                generation.is_some_and(|g| g.streams.dispatcher_ended()),
                            )
                            .then(|| generation.map(GenerationHandle::unsent_reason))
                            .flatten()
                        });
                        if let Some(g) = generation.filter(|_| go_away_asking_for_calm(&error)) {
                            crate::calm::learn_from_calm_goaway(&g.streams.uploads, &g.record);
                        }
                        if let (Some(generation), Some(reason)) = (generation, not_processed) {
                            // What the connection's end tells its cell (see `quota.rs`):
                            // only a graceful GOAWAY is a quota's cut.
                            let cut = reason == ResendReason::GoAway && graceful_go_away(&error);
                            generation.streams.quota.not_processed(cut);
                        }
                        let connection_level = is_connection_error(&error)
                            || self.record().is_some_and(|record| record.is_closed())
                            || allows_none;
                        let connection_lost = is_connection_lost(&error);
                        let calmed = asked_for_calm(&error);
                        let cap_lowered =
                            calmed && generation.is_some_and(|g| g.streams.saw_calm());
                        let heard = self
                            .generation
                            .as_deref()
                            .is_some_and(|generation| generation.heard.heard());
                        H2SendOutcome::Failed {
                            error,
                            connection_level,
                            not_processed,
                            connection_lost,
                            calmed,
                            cap_lowered,
                            heard,
                        }
                    }
                }
            }
        }
    }
}

impl<B> StreamLease<B> {
    /// The record of the leased generation.
    pub fn record(&self) -> &Arc<ConnectionRecord> {
        self.guard
            .record()
            .expect("a lease holds its record until sent")
    }
}

impl<B> fmt::Debug for StreamLease<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamLease")
            .field("guard", &self.guard)
            .finish()
    }
}
