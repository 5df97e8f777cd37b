//! What the tests share: runtime components built with the runtime API's test utilities, one
//! attempt made exactly as the SDK orchestrator makes it, and a sleep the test fires by hand.

#![allow(dead_code, unreachable_pub)]

use std::future::poll_fn;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::Duration;

use aws_smithy_async::rt::sleep::{AsyncSleep, SharedAsyncSleep, Sleep, TokioSleep};
use aws_smithy_async::time::SystemTimeSource;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorSettings, SharedHttpClient,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::{
    RuntimeComponents, RuntimeComponentsBuilder,
};
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use http_body_util::BodyExt;

/// An operation's runtime components: the test utilities' stand-ins, with `sleep` as the
/// operation's sleep (or none) and the system clock, and `client` as the HTTP client.
pub fn components(client: &SharedHttpClient, sleep: Option<SharedAsyncSleep>) -> RuntimeComponents {
    let mut builder = RuntimeComponentsBuilder::for_tests()
        .with_http_client(Some(client.clone()))
        .with_time_source(Some(SystemTimeSource::new()));
    builder.set_sleep_impl(sleep);
    builder.build().expect("runtime components")
}

/// Components with tokio's sleep, the SDK's default.
pub fn tokio_components(client: &SharedHttpClient) -> RuntimeComponents {
    components(client, Some(SharedAsyncSleep::new(TokioSleep::new())))
}

/// Connector settings as the orchestrator builds them from a `TimeoutConfig`.
pub fn settings(connect: Option<Duration>, read: Option<Duration>) -> HttpConnectorSettings {
    let mut builder = HttpConnectorSettings::builder();
    builder.set_connect_timeout(connect);
    builder.set_read_timeout(read);
    builder.build()
}

/// One attempt as the orchestrator makes it: the components' HTTP client, `http_connector`
/// with the attempt's settings, then `call`.
pub async fn attempt(
    components: &RuntimeComponents,
    settings: &HttpConnectorSettings,
    request: HttpRequest,
) -> Result<HttpResponse, ConnectorError> {
    let client = components.http_client().expect("an HTTP client");
    let connector = client.http_connector(settings, components);
    connector.call(request).await
}

/// A GET as the SDK hands it to the connector.
pub fn get(url: &str) -> HttpRequest {
    HttpRequest::get(url).expect("valid request")
}

/// A request with a method and body.
pub fn request(method: &str, url: &str, body: SdkBody) -> HttpRequest {
    let request = http::Request::builder()
        .method(method)
        .uri(url)
        .body(body)
        .expect("valid request");
    HttpRequest::try_from(request).expect("valid request")
}

/// Reads a response body to its end.
pub async fn read(response: HttpResponse) -> Bytes {
    response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
}

/// An `AsyncSleep` that records what it was asked for and completes only when the test
/// [`fire`](ManualSleep::fire)s it: proof that a timeout runs on the operation's sleep.
#[derive(Clone, Debug, Default)]
pub struct ManualSleep {
    state: Arc<Mutex<SleepState>>,
}

#[derive(Debug, Default)]
struct SleepState {
    requested: Vec<Duration>,
    fired: bool,
    wakers: Vec<Waker>,
}

impl ManualSleep {
    pub fn new() -> ManualSleep {
        ManualSleep::default()
    }

    /// The durations sleeps were started for, in order.
    pub fn requested(&self) -> Vec<Duration> {
        self.lock().requested.clone()
    }

    /// Completes every sleep, started or future.
    pub fn fire(&self) {
        let wakers = {
            let mut state = self.lock();
            state.fired = true;
            std::mem::take(&mut state.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Waits until `n` sleeps were started.
    pub async fn wait_requested(&self, n: usize) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while self.lock().requested.len() < n {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the sleep was started");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SleepState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AsyncSleep for ManualSleep {
    fn sleep(&self, duration: Duration) -> Sleep {
        self.lock().requested.push(duration);
        let state = self.state.clone();
        Sleep::new(poll_fn(move |cx| {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.fired {
                Poll::Ready(())
            } else {
                state.wakers.push(cx.waker().clone());
                Poll::Pending
            }
        }))
    }
}

/// Whether the error says no connection was ever established for the request (the status
/// has no accessor; its `Debug` form names it).
pub fn never_connected(error: &ConnectorError) -> bool {
    format!("{error:?}").contains("NeverConnected")
}
