//! One HTTP/2 exchange: send the request on a stream lease of a generation, retire the
//! generation when its connection failed (GOAWAY, closed dispatcher, I/O error), and wrap the
//! response body so the stream ends with it.

use std::time::Duration;

use http::Request;
use pool_core::CloseReason;
use pool_core::connection::ConnectionRecord;
use pool_core::sync::Arc;
use pool_h2::{H2SendOutcome, StreamLease};

use super::{Exchange, resend};
use crate::body::{Body, RequestBody};
use crate::cell::CellEntry;
use crate::client::Client;
use crate::connection::ConnectionHandle;
use crate::error::Error;

/// Sends `request` on `lease`, one stream of an accepting generation.
pub(super) async fn exchange(
    client: &Client,
    entry: &Arc<CellEntry>,
    lease: StreamLease<RequestBody>,
    request: Request<RequestBody>,
    waited: Option<Duration>,
) -> Result<Exchange, Error> {
    let record = lease.record().clone();
    let reused = record.requests_served() > 0;
    client.report_reuse(&record, reused);
    match client.with_read_timeout(lease.send(request)).await? {
        H2SendOutcome::Response(response, guard) => {
            let handle = ConnectionHandle::new(record, reused, waited);
            Ok(client.attach(response, handle, |incoming, handle| {
                Body::h2(incoming, guard, handle)
            }))
        }
        H2SendOutcome::Unsent {
            request: unsent,
            error,
            reused,
        } => {
            // hyper's dispatcher for this generation is gone.
            retire(entry, &record);
            resend::unsent(client, &record, error, reused)?;
            Ok(Exchange::Resend(unsent))
        }
        H2SendOutcome::Failed {
            error,
            connection_level,
        } => {
            if connection_level {
                retire(entry, &record);
            }
            Err(Error::request(error))
        }
    }
}

/// Takes a generation whose connection failed out of its cell, so the next request gets a
/// replacement while the streams it accepted drain.
fn retire(entry: &CellEntry, record: &Arc<ConnectionRecord>) {
    record.close(CloseReason::ProtocolClosed, None);
    entry.cell.retire_h2(record);
}
