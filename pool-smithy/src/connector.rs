//! [`PoolConnector`]: the per-operation facade `http_connector` returns, and one call through
//! it.

use std::fmt;
use std::time::Duration;

use aws_smithy_async::rt::sleep::SharedAsyncSleep;
use aws_smithy_async::time::SharedTimeSource;
use aws_smithy_runtime_api::client::http::{HttpConnector, HttpConnectorFuture};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;

use crate::body::{request_body, response_body};
use crate::error::connector_error;
use crate::metadata::Captures;
use crate::timeout;

/// What [`PoolHttpClient::http_connector`](crate::PoolHttpClient) hands the SDK for one
/// operation: a clone of the client's `pool::Client` carrying the settings' connect timeout
/// and the operation's `AsyncSleep` (which measures it), the read timeout, and the operation's
/// `TimeSource`. Building it takes reference counts and one small allocation (the sleep's
/// adapter); connections, the bound and the waiting requests stay in the pool.
///
/// # A call
///
/// 1. The request becomes an `http` 1.x request (`try_into_http1x`; a failure is a `user`
///    error). Its `SdkBody` becomes the pool's `RequestBody`: the same `Bytes` when it holds
///    bytes (so hyper can hand it back unsent and the pool send it again), a stream otherwise
///    (never buffered).
/// 2. The pool sends it. The read timeout, when set, races the whole call on the operation's
///    sleep and fails it with a `timeout` whose source is [`ReadTimeout`](crate::ReadTimeout).
/// 3. The response keeps hyper's body, wrapped into an `SdkBody` without copying; the
///    connection's metadata goes to the request's `CaptureSmithyConnection` and
///    `CaptureHttpAttemptTelemetry`.
/// 4. A pool error becomes a `ConnectorError`:
///
/// | pool error | `ConnectorError` |
/// |---|---|
/// | invalid URI, `HTTP/2.0` required of an HTTP/1 origin | `user` |
/// | any timeout | `timeout` |
/// | connect failure (resolve, TCP, TLS, certificate, proxy, handshake) | `io`, never connected |
/// | incomplete message | `other(TransientError)` |
/// | reset, `GOAWAY`, `REFUSED_STREAM`, not processed, a closed connection | `io` |
/// | the pending cap reached | `other(ThrottlingError)` |
/// | anything else | `other` |
///
/// An error that happened on a connection carries its `ConnectionMetadata` (and the captures
/// get it, so the SDK's poisoning interceptor can retire that connection); one that happened
/// before a connection served the request is marked never connected.
pub struct PoolConnector {
    client: pool::Client,
    read_timeout: Option<Duration>,
    sleep: SharedAsyncSleep,
    time: SharedTimeSource,
}

impl PoolConnector {
    pub(crate) fn new(
        client: pool::Client,
        read_timeout: Option<Duration>,
        sleep: SharedAsyncSleep,
        time: SharedTimeSource,
    ) -> PoolConnector {
        PoolConnector {
            client,
            read_timeout,
            sleep,
            time,
        }
    }

    /// The read timeout this facade applies.
    pub fn read_timeout(&self) -> Option<Duration> {
        self.read_timeout
    }
}

impl fmt::Debug for PoolConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolConnector")
            .field("client", &self.client)
            .field("read_timeout", &self.read_timeout)
            .finish_non_exhaustive()
    }
}

impl HttpConnector for PoolConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let (client, read_timeout) = (self.client.clone(), self.read_timeout);
        let (sleep, time) = (self.sleep.clone(), self.time.clone());
        HttpConnectorFuture::new(async move {
            let captures = Captures::of(&request, &time);
            let result = send(&client, request, read_timeout, &sleep, &captures).await;
            captures.finish(&time);
            result
        })
    }
}

async fn send(
    client: &pool::Client,
    request: HttpRequest,
    read_timeout: Option<Duration>,
    sleep: &SharedAsyncSleep,
    captures: &Captures,
) -> Result<HttpResponse, ConnectorError> {
    let request = request
        .try_into_http1x()
        .map_err(|e| ConnectorError::user(e.into()))?;
    let (parts, body) = request.into_parts();
    let body = request_body(body).map_err(ConnectorError::user)?;
    let request = http::Request::from_parts(parts, body);
    let response = match timeout::within(read_timeout, sleep, client.request(request)).await {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => {
            captures.connection(error.connection());
            return Err(connector_error(error));
        }
        Err(elapsed) => return Err(ConnectorError::timeout(elapsed.into())),
    };
    captures.connection(Some(response.body().connection()));
    HttpResponse::try_from(response.map(response_body))
        .map_err(|e| ConnectorError::other(e.into(), None))
}
