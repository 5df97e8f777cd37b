//! One stream's task: its plan's steps (head, data, trailers, waits, resets) against the
//! client's request, noticing a client reset while it waits.

use std::future::{Future, poll_fn};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use ::h2::server::SendResponse;
use ::h2::{RecvStream, SendStream};
use bytes::{Bytes, BytesMut};
use http::{Request, Response};

pub(super) use ::h2::Reason;

use crate::counters::Shared;

use super::conn::{ConnFlags, H2Ctx};
use super::plan::{StreamPlan, StreamStep};
use super::records::InFlight;
use super::{H2Request, StreamReset};

/// The response side of a stream as the plan advances.
pub(super) enum Out {
    /// No head sent yet.
    Pending(SendResponse<Bytes>),
    /// Head sent, stream open.
    Open(SendStream<Bytes>),
    /// Ended or reset.
    Done,
}

/// One stream's task state.
pub(super) struct StreamTask {
    pub(super) conn_id: u64,
    pub(super) index: usize,
    pub(super) ctx: Arc<H2Ctx>,
    pub(super) shared: Arc<Shared>,
    pub(super) flags: Arc<ConnFlags>,
    pub(super) scripted: Option<StreamPlan>,
    /// Dropped right before the frame that finishes the stream is queued, so `max_in_flight`
    /// never counts a stream the client may already consider closed.
    pub(super) in_flight: Option<InFlight>,
}

impl StreamTask {
    pub(super) async fn run(mut self, request: Request<RecvStream>, respond: SendResponse<Bytes>) {
        let stream_id = respond.stream_id().as_u32();
        let (parts, mut body) = request.into_parts();
        let mut data = BytesMut::new();
        loop {
            match body.data().await {
                Some(Ok(chunk)) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    data.extend_from_slice(&chunk);
                }
                Some(Err(e)) => return self.body_failed(stream_id, &e),
                None => break,
            }
        }
        let trailers = match body.trailers().await {
            Ok(t) => t,
            Err(e) => return self.body_failed(stream_id, &e),
        };
        let request = H2Request {
            conn_id: self.conn_id,
            stream_id,
            index: self.index,
            method: parts.method,
            uri: parts.uri,
            headers: parts.headers,
            body: data.freeze(),
            trailers,
        };
        self.ctx.records.requests.push(request.clone());
        let plan = self
            .scripted
            .take()
            .or_else(|| self.ctx.fallback.as_ref().map(|f| f(&request)));
        let mut out = Out::Pending(respond);
        let Some(plan) = plan else {
            self.shared.error(format!(
                "conn {} stream {stream_id}: no stream plan (plan exhausted) for {} {}",
                self.conn_id,
                request.method,
                request.path()
            ));
            self.finish(&mut out, Reason::INTERNAL_ERROR);
            return;
        };
        self.execute(plan, stream_id, &mut out).await;
        match out {
            Out::Open(mut s) => {
                self.in_flight.take();
                let _ = s.send_data(Bytes::new(), true);
            }
            Out::Pending(_) => {
                self.shared.error(format!(
                    "conn {} stream {stream_id}: stream plan ended without a response",
                    self.conn_id
                ));
                self.finish(&mut out, Reason::INTERNAL_ERROR);
            }
            Out::Done => {}
        }
    }

    pub(super) fn body_failed(&self, stream_id: u32, e: &::h2::Error) {
        if e.is_reset() && e.is_remote() {
            if let Some(reason) = e.reason() {
                self.record_reset(stream_id, reason);
            }
        }
    }

    pub(super) fn record_reset(&self, stream_id: u32, reason: Reason) {
        if self.flags.abrupt.load(Ordering::SeqCst) || self.flags.dead.load(Ordering::SeqCst) {
            return;
        }
        self.ctx.records.resets.push(StreamReset {
            conn_id: self.conn_id,
            stream_id,
            reason,
        });
    }

    /// Resets the stream from the server side.
    pub(super) fn finish(&mut self, out: &mut Out, reason: Reason) {
        self.in_flight.take();
        match std::mem::replace(out, Out::Done) {
            Out::Pending(mut r) => r.send_reset(reason),
            Out::Open(mut s) => s.send_reset(reason),
            Out::Done => {}
        }
    }

    pub(super) async fn execute(&mut self, plan: StreamPlan, stream_id: u32, out: &mut Out) {
        let steps = plan.steps;
        let mut i = 0;
        while i < steps.len() {
            // A head or data step directly followed by `End` carries END_STREAM itself.
            let then_end = matches!(steps.get(i + 1), Some(StreamStep::End));
            let sent = match &steps[i] {
                StreamStep::Wait(wait) => {
                    match wait_or_reset(out, wait.run()).await {
                        None => {}
                        Some(Ok(reason)) => {
                            self.record_reset(stream_id, reason);
                            return;
                        }
                        Some(Err(_)) => return,
                    }
                    Ok(())
                }
                StreamStep::Head { status, headers } => match std::mem::replace(out, Out::Done) {
                    Out::Pending(mut respond) => {
                        let mut response = Response::new(());
                        *response.status_mut() = *status;
                        *response.headers_mut() = headers.clone();
                        if then_end {
                            self.in_flight.take();
                            i += 1;
                        }
                        match respond.send_response(response, then_end) {
                            Ok(stream) if !then_end => {
                                *out = Out::Open(stream);
                                Ok(())
                            }
                            Ok(_) => Ok(()),
                            Err(e) => {
                                *out = Out::Pending(respond);
                                Err(e)
                            }
                        }
                    }
                    other => {
                        *out = other;
                        self.misplaced(stream_id, "head() after the head or the end");
                        Ok(())
                    }
                },
                StreamStep::Data(data) => match out {
                    Out::Open(stream) => {
                        if then_end {
                            self.in_flight.take();
                            i += 1;
                        }
                        let res = stream.send_data(data.clone(), then_end);
                        if then_end && res.is_ok() {
                            *out = Out::Done;
                        }
                        res
                    }
                    _ => {
                        self.misplaced(stream_id, "data() without an open response");
                        Ok(())
                    }
                },
                StreamStep::Trailers(trailers) => match out {
                    Out::Open(stream) => {
                        self.in_flight.take();
                        let res = stream.send_trailers(trailers.clone());
                        if res.is_ok() {
                            *out = Out::Done;
                        }
                        res
                    }
                    _ => {
                        self.misplaced(stream_id, "trailers() without an open response");
                        Ok(())
                    }
                },
                StreamStep::End => match out {
                    Out::Open(stream) => {
                        self.in_flight.take();
                        let res = stream.send_data(Bytes::new(), true);
                        if res.is_ok() {
                            *out = Out::Done;
                        }
                        res
                    }
                    Out::Done => Ok(()),
                    Out::Pending(_) => {
                        self.misplaced(stream_id, "end() before head()");
                        Ok(())
                    }
                },
                StreamStep::Reset(reason) => {
                    self.finish(out, *reason);
                    Ok(())
                }
            };
            if sent.is_err() {
                // Usually the client reset the stream between two steps; find out how.
                if let Some(Ok(reason)) = poll_reset_now(out) {
                    self.record_reset(stream_id, reason);
                }
                *out = Out::Done;
                return;
            }
            i += 1;
        }
    }

    pub(super) fn misplaced(&self, stream_id: u32, what: &str) {
        self.shared.error(format!(
            "conn {} stream {stream_id}: stream plan has {what}",
            self.conn_id
        ));
    }
}

/// Runs `wait` unless the client resets the stream first: `Some(Ok(reason))` for a reset,
/// `Some(Err(_))` if the connection failed, `None` if the wait completed.
pub(super) async fn wait_or_reset(
    out: &mut Out,
    wait: impl Future<Output = ()>,
) -> Option<Result<Reason, ::h2::Error>> {
    match out {
        Out::Pending(respond) => tokio::select! {
            () = wait => None,
            res = poll_fn(|cx| respond.poll_reset(cx)) => Some(res),
        },
        Out::Open(stream) => tokio::select! {
            () = wait => None,
            res = poll_fn(|cx| stream.poll_reset(cx)) => Some(res),
        },
        Out::Done => {
            wait.await;
            None
        }
    }
}

/// Polls for a reset once, without waiting.
pub(super) fn poll_reset_now(out: &mut Out) -> Option<Result<Reason, ::h2::Error>> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let polled = match out {
        Out::Pending(respond) => respond.poll_reset(&mut cx),
        Out::Open(stream) => stream.poll_reset(&mut cx),
        Out::Done => return None,
    };
    match polled {
        Poll::Ready(res) => Some(res),
        Poll::Pending => None,
    }
}
