//! One HTTP/1 exchange: shape the request for the wire, send it on the reserved connection,
//! and wrap the response body so the connection returns at the message boundary.

use std::time::Duration;

use http::Request;
use pool_core::ResendReason;
use pool_core::sync::Arc;
use pool_h1::{H1Connection, SendOutcome};

use super::Exchange;
use super::deadline::ReadDeadline;
use super::resend::Again;
use crate::body::{Body, RequestBody};
use crate::cell::CellEntry;
use crate::client::Client;
use crate::error::Error;

/// Sends `request` on `conn`, a connection reserved for it.
pub(super) async fn exchange(
    client: &Client,
    entry: &Arc<CellEntry>,
    conn: H1Connection<RequestBody>,
    mut request: Request<RequestBody>,
    waited: Option<Duration>,
    deadline: &mut ReadDeadline,
) -> Result<Exchange, Error> {
    let served = client.dispatching(conn.record(), waited);
    pool_h1::prepare_request(&mut request, &entry.host);
    let sent = conn.send(request);
    match deadline.bound(&*client.pool.shared.sleep, sent).await? {
        SendOutcome::Response(response, guard) => {
            Ok(client.respond(response, served, |incoming, handle| {
                Body::h1(incoming, guard, handle)
            }))
        }
        SendOutcome::Unsent {
            request: mut unsent,
            error,
            reused,
        } => {
            pool_h1::restore_absolute_uri(&mut unsent, &entry.origin);
            Ok(Exchange::Again(Again {
                reason: ResendReason::Unsent,
                error,
                record: served.record,
                reused,
                request: Some(unsent),
            }))
        }
        SendOutcome::Failed {
            error,
            reused,
            before_response: true,
        } => Ok(Exchange::Again(Again {
            reason: ResendReason::ClosedBeforeResponse,
            error,
            record: served.record,
            reused,
            request: None,
        })),
        SendOutcome::Failed { error, .. } => Err(Error::request(error)),
    }
}
