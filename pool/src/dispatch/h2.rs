//! One HTTP/2 exchange: send the request on a stream lease of a generation, retire the
//! generation when its connection failed (GOAWAY, closed dispatcher, I/O error), and wrap the
//! response body so the stream ends with it.

use std::future::Future;
use std::time::Duration;

use http::Request;
use pool_core::CloseReason;
use pool_core::connection::ConnectionRecord;
use pool_core::sync::Arc;
use pool_h1::BodyGate;
use pool_h2::{H2SendOutcome, StreamLease};

use super::{Exchange, Served};
use crate::body::{Body, RequestBody, StoppedBody, StreamHold};
use crate::cell::CellEntry;
use crate::client::Client;
use crate::error::Error;

/// Hands `request` to `lease`, one stream of an accepting generation; the caller awaits the
/// returned future (under the read deadline) and passes its outcome to [`finish`] (see
/// `h1::start` for why this is not an `async fn`).
pub(super) fn start(
    client: &Client,
    lease: StreamLease<RequestBody>,
    mut request: Request<RequestBody>,
    waited: Option<Duration>,
) -> (
    Served,
    Option<Arc<BodyGate>>,
    impl Future<Output = H2SendOutcome<RequestBody>> + Send + use<>,
) {
    let served = client.dispatching(lease.record(), waited);
    pool_h2::prepare_request(&mut request);
    let gate = super::gated::follow_h2(&mut request);
    (served, gate, lease.send(request))
}

/// What the exchange that [`start`] began came to.
pub(super) fn finish(
    client: &Client,
    entry: &CellEntry,
    served: Served,
    gate: Option<Arc<BodyGate>>,
    outcome: H2SendOutcome<RequestBody>,
) -> Result<Exchange, Error> {
    match outcome {
        H2SendOutcome::Response(mut response, guard) => {
            let (stream, stopped) = match gate {
                None => (StreamHold::Own { _guard: guard }, None),
                Some(gate) => follow_gated(client, &mut response, guard, gate),
            };
            Ok(client.respond(response, served, |incoming, handle| {
                Body::h2(incoming, stream, stopped, handle)
            }))
        }
        H2SendOutcome::Unsent {
            request: unsent,
            reason,
            error,
            ..
        } => {
            // hyper's dispatcher for this generation is gone.
            retire(entry, &served.record);
            Ok(served.again(reason, error, Some(unsent)))
        }
        H2SendOutcome::Failed {
            error,
            connection_level,
            not_processed,
            connection_lost,
            calmed,
            cap_lowered,
            heard,
        } => {
            if connection_level {
                // Its re-sends must not come back here: after GOAWAY the generation still
                // looks open to hyper until its dispatcher ends, and a peer that refused the
                // stream with a limit of 0 would keep them waiting for a stream for ever.
                retire(entry, &served.record);
            }
            match (not_processed, connection_lost) {
                (Some(reason), _) => Ok(served.again(reason, error, None)),
                // Not a proof either: repeated only if idempotent, on a stream under the
                // generation's lowered cap (`pool_h2`'s `calm.rs`).
                (None, _) if calmed => Ok(served.again_calmer(error, cap_lowered)),
                // No proof either way: `resend` repeats it only if it is idempotent and the
                // server had begun to serve the connection, as for HTTP/1's keep-alive race.
                (None, true) => Ok(served.again_h2_lost(error, heard)),
                (None, false) => Err(served.fail(Error::request(error))),
            }
        }
    }
}

/// The stream guard and stopped gate of a response whose request body is behind `gate`.
///
/// h2 keeps the stream open while hyper holds the request body, which may outlast the
/// response (a body waiting for flow-control window the server never gives after answering
/// early): the gate keeps the guard until then, so the pool counts the stream as long as h2
/// does and never sends more streams than the server allows. The response stops the body if
/// it refuses the rest ([`BodyStopped`](super::gated::BodyStopped); the stream is reset once
/// the response is over), or says the body goes on beside it
/// ([`BodyStillSending`](super::gated::BodyStillSending)).
fn follow_gated(
    client: &Client,
    response: &mut http::Response<hyper::body::Incoming>,
    guard: pool_h2::StreamGuard,
    gate: Arc<BodyGate>,
) -> (StreamHold, Option<StoppedBody>) {
    let shared = Arc::new(guard);
    gate.keep_until_body_dropped(Box::new(shared.clone()));
    let stopped = match stop_body(client, response, &gate) {
        Some(sent) => {
            response
                .extensions_mut()
                .insert(super::gated::BodyStopped::new(sent));
            Some(StoppedBody::new(gate, shared.clone()))
        }
        None => {
            response
                .extensions_mut()
                .insert(super::gated::BodyStillSending::new(gate));
            None
        }
    };
    (StreamHold::Shared { _guard: shared }, stopped)
}

/// Stops the request body behind `gate` if `response` refuses the rest of it and some is
/// still to go; the bytes handed over until then.
fn stop_body<B>(client: &Client, response: &http::Response<B>, gate: &BodyGate) -> Option<u64> {
    if !super::gated::refuses_the_rest(client, response) {
        return None;
    }
    gate.stop()
}

/// Takes a generation whose connection failed out of its cell, so the next request gets a
/// replacement while the streams it accepted drain.
fn retire(entry: &CellEntry, record: &Arc<ConnectionRecord>) {
    record.close(CloseReason::ProtocolClosed, None);
    entry.cell.retire_h2(record);
}
