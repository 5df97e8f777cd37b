//! `SharedHttpClient` → `http_connector` → `call`, as the SDK orchestrator drives it, against
//! scripted loopback servers: reuse, one bound under facades with different timeouts, the
//! connect and read timeouts on the operation's sleep, connection metadata and poisoning,
//! bodies, and the client's other `HttpClient` methods.

mod common;

use std::time::Duration;

use aws_smithy_async::rt::sleep::SharedAsyncSleep;
use aws_smithy_runtime_api::client::connection::CaptureSmithyConnection;
use aws_smithy_runtime_api::client::http::telemetry::{
    CaptureHttpAttemptTelemetry, ConnectionUsage,
};
use aws_smithy_runtime_api::client::http::{HttpClient, SharedHttpClient};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::ConfigBag;
use bytes::Bytes;
use common::{ManualSleep, attempt, components, get, read, request, settings, tokio_components};
use pool_smithy::{PoolHttpClient, ReadTimeout};
use pool_tests::client::{Chunks, origin, settle};
use pool_tests::gate::Gate;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::resolve::HangingResolver;

/// Waits until `call` asked `sleep` for exactly `limit`, checks that it is still waiting (only
/// that sleep can end it), fires the sleep and returns the call's error.
async fn fails_when_the_sleep_fires(
    sleep: &ManualSleep,
    limit: Duration,
    call: tokio::task::JoinHandle<Result<HttpResponse, ConnectorError>>,
) -> ConnectorError {
    sleep.wait_requested(1).await;
    assert_eq!(sleep.requested(), [limit]);
    assert!(
        !call.is_finished(),
        "only the operation's sleep ends the wait"
    );
    sleep.fire();
    call.await.unwrap().expect_err("the timeout")
}

fn shared(client: &PoolHttpClient) -> SharedHttpClient {
    SharedHttpClient::new(client.clone())
}

#[tokio::test]
async fn operations_with_different_settings_reuse_one_connection() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hi"))).await;
    let client = PoolHttpClient::builder()
        .native_roots(false)
        .build()
        .unwrap();
    let sdk = shared(&client);
    let components = tokio_components(&sdk);

    let mut ids = Vec::new();
    let mut usages = Vec::new();
    for settings in [
        settings(Some(Duration::from_secs(1)), None),
        settings(Some(Duration::from_secs(2)), Some(Duration::from_secs(30))),
        settings(None, None),
    ] {
        let mut req = get(&server.url("/op"));
        let capture = CaptureSmithyConnection::new();
        let telemetry = CaptureHttpAttemptTelemetry::new();
        req.add_extension(capture.clone());
        req.add_extension(telemetry.clone());
        let response = attempt(&components, &settings, req)
            .await
            .expect("response");
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(read(response).await, "hi");
        ids.push(capture.get().expect("metadata").connection_id());
        let recorded = telemetry.get();
        usages.push(recorded.acquisition().expect("selection").usage());
        assert!(recorded.connector_call_duration().is_some());
    }
    assert_eq!(server.accepted(), 1, "one connection served all three");
    assert!(
        ids.iter().all(|id| id.is_some() && *id == ids[0]),
        "{ids:?}"
    );
    assert_eq!(
        usages,
        [
            ConnectionUsage::Fresh,
            ConnectionUsage::Reused,
            ConnectionUsage::Reused
        ]
    );
}

#[tokio::test]
async fn facades_with_different_timeouts_share_one_bound() {
    let release = Gate::new();
    let server = ScriptedH1Server::start_with(
        ConnPlan::new()
            .respond(Reply::ok("first").gate(release.clone()))
            .then_serve_forever(Reply::ok("next")),
    )
    .await;
    let client = PoolHttpClient::builder()
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let sdk = shared(&client);
    let components = tokio_components(&sdk);
    let url = server.url("/");

    let first = tokio::spawn({
        let (components, request) = (components.clone(), get(&url));
        let settings = settings(Some(Duration::from_secs(1)), None);
        async move { read(attempt(&components, &settings, request).await.unwrap()).await }
    });
    server.wait_for_requests(1).await;
    let second = tokio::spawn({
        let (components, request) = (components.clone(), get(&url));
        let settings = settings(Some(Duration::from_secs(7)), Some(Duration::from_secs(60)));
        async move { read(attempt(&components, &settings, request).await.unwrap()).await }
    });
    // The second operation's own settings build no second pool or bound: it waits for the
    // one connection the first holds.
    settle(client.pool(), &origin(&url), |s| s.waiting_requests == 1).await;
    assert_eq!(server.accepted(), 1);
    release.open();
    assert_eq!(first.await.unwrap(), "first");
    assert_eq!(second.await.unwrap(), "next");
    assert_eq!(server.accepted(), 1, "the bound held across both facades");
    assert_eq!(client.pool().stats(url.as_str()).peak_admitted(), 1);
}

#[tokio::test]
async fn the_read_timeout_runs_on_the_operations_sleep() {
    let never = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::new().respond(Reply::ok("late").gate(never))).await;
    let client = PoolHttpClient::new().unwrap();
    let sdk = shared(&client);
    let sleep = ManualSleep::new();
    let components = components(&sdk, Some(SharedAsyncSleep::new(sleep.clone())));
    let call = tokio::spawn({
        let request = get(&server.url("/slow"));
        let settings = settings(None, Some(Duration::from_secs(5)));
        async move { attempt(&components, &settings, request).await }
    });
    server.wait_for_requests(1).await;
    let error = fails_when_the_sleep_fires(&sleep, Duration::from_secs(5), call).await;
    assert!(error.is_timeout(), "{error:?}");
    let source = std::error::Error::source(&error).expect("source");
    assert_eq!(
        source
            .downcast_ref::<ReadTimeout>()
            .map(ReadTimeout::duration),
        Some(Duration::from_secs(5))
    );
}

#[tokio::test]
async fn without_a_sleep_in_the_components_the_read_timeout_falls_back_to_tokios() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("ok"))).await;
    let client = PoolHttpClient::new().unwrap();
    let sdk = shared(&client);
    let components = components(&sdk, None);
    assert!(components.sleep_impl().is_none());
    let settings = settings(Some(Duration::from_secs(5)), Some(Duration::from_secs(5)));
    let response = attempt(&components, &settings, get(&server.url("/")))
        .await
        .expect("a read timeout without an operation sleep still works");
    assert_eq!(read(response).await, "ok");
}

#[tokio::test(start_paused = true)]
async fn the_connect_timeout_of_the_settings_bounds_the_establishment() {
    let client = PoolHttpClient::builder()
        .resolver(HangingResolver)
        .build()
        .unwrap();
    let sdk = shared(&client);
    let components = tokio_components(&sdk);
    let started = tokio::time::Instant::now();
    let settings = settings(Some(Duration::from_secs(3)), None);
    let error = attempt(&components, &settings, get("http://hangs.test/"))
        .await
        .expect_err("connect timeout");
    assert!(error.is_timeout(), "{error:?}");
    assert!(common::never_connected(&error), "{error:?}");
    assert!(error.connection_metadata().is_none());
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

#[tokio::test]
async fn the_connect_timeout_runs_on_the_operations_sleep() {
    let client = PoolHttpClient::builder()
        .resolver(HangingResolver)
        .build()
        .unwrap();
    let sdk = shared(&client);
    let sleep = ManualSleep::new();
    let components = components(&sdk, Some(SharedAsyncSleep::new(sleep.clone())));
    let call = tokio::spawn({
        let settings = settings(Some(Duration::from_secs(3)), None);
        async move { attempt(&components, &settings, get("http://hangs.test/")).await }
    });
    // The establishment on the pool's partition asks the operation's sleep for the limit.
    let error = fails_when_the_sleep_fires(&sleep, Duration::from_secs(3), call).await;
    assert!(error.is_timeout(), "{error:?}");
    assert!(common::never_connected(&error), "{error:?}");
    let stats = client.pool().stats("http://hangs.test/").total();
    assert_eq!((stats.establishing, stats.waiting_requests), (0, 0));
}

#[tokio::test]
async fn metadata_reaches_the_sdk_and_its_poison_retires_the_connection() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let client = PoolHttpClient::new().unwrap();
    let sdk = shared(&client);
    let components = tokio_components(&sdk);
    let settings = settings(None, None);

    let mut ids = Vec::new();
    for _ in 0..2 {
        let capture = CaptureSmithyConnection::new();
        let mut req = get(&server.url("/"));
        req.add_extension(capture.clone());
        read(attempt(&components, &settings, req).await.unwrap()).await;
        let metadata = capture.get().expect("the connector set a retriever");
        assert_eq!(metadata.remote_addr(), Some(server.addr()));
        let local = metadata.local_addr().expect("local address");
        assert!(local.ip().is_loopback());
        let establishment = metadata.establishment().expect("establishment timings");
        assert!(establishment.total_duration() >= establishment.transport_duration());
        ids.push(metadata.connection_id().expect("connection id"));
        // What the SDK's poisoning interceptor does after a transient error.
        metadata.poison();
    }
    assert_ne!(ids[0], ids[1], "the poisoned connection was not reused");
    assert_eq!(server.accepted(), 2);
    settle(client.pool(), &origin(&server.url("/")), |s| s.h1_idle == 0).await;
}

#[tokio::test]
async fn bytes_bodies_and_streaming_bodies_are_sent_as_given() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("ok"))).await;
    let client = PoolHttpClient::new().unwrap();
    let sdk = shared(&client);
    let components = tokio_components(&sdk);
    let settings = settings(None, None);

    let bytes = request("PUT", &server.url("/bytes"), SdkBody::from("in memory"));
    read(attempt(&components, &settings, bytes).await.unwrap()).await;
    let chunks = Chunks::new([Bytes::from_static(b"str"), Bytes::from_static(b"eam")]);
    let mut streaming = request(
        "POST",
        &server.url("/stream"),
        SdkBody::from_body_1_x(chunks),
    );
    streaming
        .headers_mut()
        .insert("transfer-encoding", "chunked");
    read(attempt(&components, &settings, streaming).await.unwrap()).await;

    let seen = server.requests();
    assert_eq!(seen[0].body, "in memory");
    assert_eq!(seen[0].header("content-length"), Some("9"));
    assert_eq!(seen[1].body, "stream");
    assert_eq!(seen[1].header("transfer-encoding"), Some("chunked"));
}

#[tokio::test]
async fn the_client_reports_hyper_and_validates_cheaply() {
    let client = PoolHttpClient::builder()
        .native_roots(false)
        .build()
        .unwrap();
    let metadata = client.connector_metadata().expect("metadata");
    assert_eq!(metadata.name(), "hyper");
    assert_eq!(metadata.version().as_deref(), Some("1.x"));
    let components = tokio_components(&shared(&client));
    let config = ConfigBag::base();
    client
        .validate_base_client_config(&RuntimeComponentsBuilder::for_tests(), &config)
        .expect("preflight without native roots succeeds");
    client
        .validate_final_config(&components, &config)
        .expect("nothing to validate");
}
