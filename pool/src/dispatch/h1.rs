//! One HTTP/1 exchange: shape the request for the wire, send it on the reserved connection,
//! and wrap the response body so the connection returns at the message boundary.

use std::time::Duration;

use http::Request;
use pool_core::sync::Arc;
use pool_h1::{H1Connection, SendOutcome};

use super::{Exchange, resend};
use crate::body::{Body, RequestBody};
use crate::cell::CellEntry;
use crate::client::Client;
use crate::connection::ConnectionHandle;
use crate::error::Error;

/// Sends `request` on `conn`, a connection reserved for it.
pub(super) async fn exchange(
    client: &Client,
    entry: &Arc<CellEntry>,
    conn: H1Connection<RequestBody>,
    mut request: Request<RequestBody>,
    waited: Option<Duration>,
) -> Result<Exchange, Error> {
    let record = conn.record().clone();
    let reused = record.requests_served() > 0;
    client.report_reuse(&record, reused);
    pool_h1::prepare_request(&mut request, &entry.host);
    match client.with_read_timeout(conn.send(request)).await? {
        SendOutcome::Response(response, guard) => {
            let handle = ConnectionHandle::new(record, reused, waited);
            Ok(client.attach(response, handle, |incoming, handle| {
                Body::h1(incoming, guard, handle)
            }))
        }
        SendOutcome::Unsent {
            request: mut unsent,
            error,
            reused,
        } => {
            resend::unsent(client, &record, error, reused)?;
            pool_h1::restore_absolute_uri(&mut unsent, &entry.origin);
            Ok(Exchange::Resend(unsent))
        }
        SendOutcome::Failed(error) => Err(Error::request(error)),
    }
}
