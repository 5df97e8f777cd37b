//! One HTTP/1 exchange: shape the request for the wire, send it on the reserved connection,
//! and wrap the response body so the connection returns at the message boundary.

use std::time::Duration;

use http::Request;
use pool_core::ResendReason;
use pool_core::sync::Arc;
use pool_h1::{BodyGate, H1Connection, SendOutcome};
use std::future::Future;

use super::{Exchange, Served};
use crate::body::{Body, RequestBody};
use crate::cell::CellEntry;
use crate::client::Client;
use crate::error::Error;

/// Hands `request` to `conn`, a connection reserved for it; the caller awaits the returned
/// future (under the read deadline) and passes its outcome to [`finish`]. Split in two, not an
/// `async fn`, so the request's one future holds hyper's response future directly instead of
/// another state machine around it. The gate is the request body's when it waits for
/// `100 Continue` or may be stopped (see `expect` and `gated`).
pub(super) fn start(
    client: &Client,
    entry: &CellEntry,
    conn: H1Connection<RequestBody>,
    mut request: Request<RequestBody>,
    waited: Option<Duration>,
) -> (
    Served,
    Option<Arc<BodyGate>>,
    impl Future<Output = SendOutcome<RequestBody>> + Send + use<>,
) {
    let served = client.dispatching(conn.record(), waited);
    let gate = super::expect::hold(client, &mut request);
    let own_host;
    let host = match entry.shares_route {
        false => &entry.host,
        // A forward route's cell serves several origins: each request names its own.
        true => {
            own_host = route_host(request.uri()).unwrap_or_else(|| entry.host.clone());
            &own_host
        }
    };
    conn.prepare(&mut request, host);
    (served, gate, conn.send(request))
}

/// The `Host` of a request sent on a forward route's connection: its own origin's authority,
/// as a cell computes it for its origin. Out of line: only cells that share a route take it.
#[inline(never)]
fn route_host(uri: &http::Uri) -> Option<http::HeaderValue> {
    let origin = pool_core::OriginKey::from_uri(uri).ok()?;
    http::HeaderValue::from_str(&origin.authority()).ok()
}

/// What the exchange that [`start`] began came to.
pub(super) fn finish(
    client: &Client,
    entry: &CellEntry,
    served: Served,
    gate: Option<Arc<BodyGate>>,
    outcome: SendOutcome<RequestBody>,
) -> Result<Exchange, Error> {
    match outcome {
        SendOutcome::Response(mut response, mut guard) => {
            if let Some(gate) = gate {
                if guard.expected_continue(gate.clone()) {
                    response
                        .extensions_mut()
                        .insert(super::expect::BodyWithheld);
                } else if super::gated::refuses_the_rest(client, &response) {
                    if let Some(sent) = guard.stop_body(gate) {
                        response
                            .extensions_mut()
                            .insert(super::gated::BodyStopped::new(sent));
                    }
                } else if gate.state() != pool_h1::GateState::Waiting {
                    // Going on, or handed to hyper whole but maybe not yet written (nothing
                    // tells those apart before the connection goes home): the caller may wait
                    // for the rest.
                    guard.body_goes_on(gate.clone());
                    response
                        .extensions_mut()
                        .insert(super::gated::BodyStillSending::new(gate));
                }
            }
            Ok(client.respond(response, served, |incoming, handle| {
                Body::h1(incoming, guard, handle)
            }))
        }
        // `reused` in the outcome is the fact `served` already holds (the record counted the
        // dispatch), so `served` answers for it.
        SendOutcome::Unsent {
            request: mut unsent,
            error,
            ..
        } => {
            pool_h1::restore_absolute_uri(&mut unsent, &entry.origin);
            Ok(served.again(ResendReason::Unsent, error, Some(unsent)))
        }
        SendOutcome::Failed {
            error,
            before_response: true,
            reused,
        } => {
            if reused {
                // The server closed the connection after the requests it had answered, without
                // saying so: what its request quota is made of (see pool-core's `cell/quota.rs`).
                let record = &served.record;
                let answered = record.requests_served().saturating_sub(1);
                entry
                    .cell
                    .connection_ended(entry.shared.ended(record, answered, true));
            }
            Ok(served.again(ResendReason::ClosedBeforeResponse, error, None))
        }
        SendOutcome::Failed { error, .. } => Err(served.fail(Error::request(error))),
    }
}
