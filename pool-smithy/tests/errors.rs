//! Each failure the pool reports reaches the SDK as the `ConnectorError` kind its retry
//! classifier expects, with the connection it happened on or marked never connected, driven
//! through `SharedHttpClient` → `http_connector` → `call` against loopback peers.

mod common;

use std::time::Duration;

use aws_smithy_runtime_api::client::connection::CaptureSmithyConnection;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::retry::ErrorKind;
use common::{attempt, get, never_connected, read, settings, tokio_components};
use pool::ProtocolPolicy;
use pool_smithy::PoolHttpClient;
use pool_tests::client::{origin, settle};
use pool_tests::gate::Gate;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::h2::{H2ConnPlan, Reason, ScriptedH2Server, StreamPlan};
use pool_tests::h2frames::{FramePeer, GoAwayScript};
use pool_tests::refused::RefusedAddr;
use pool_tests::resolve::FixedResolver;

/// Sends one GET through `client` as the orchestrator would, with no timeouts.
async fn fail(client: &PoolHttpClient, url: &str) -> ConnectorError {
    let components = tokio_components(&SharedHttpClient::new(client.clone()));
    attempt(&components, &settings(None, None), get(url))
        .await
        .expect_err("the request fails")
}

/// The pool's error under the SDK's, to check the failure is the one the test names.
fn pool_error(error: &ConnectorError) -> &pool::Error {
    std::error::Error::source(error)
        .and_then(|e| e.downcast_ref::<pool::Error>())
        .expect("the source is the pool's error")
}

#[tokio::test]
async fn a_refused_connection_is_io_and_never_connected() {
    let refused = RefusedAddr::new();
    let client = PoolHttpClient::new().unwrap();
    let error = fail(&client, &format!("http://{}/", refused.addr())).await;
    assert!(pool_error(&error).is_connect(), "{error:?}");
    assert!(error.is_io(), "{error:?}");
    assert!(never_connected(&error), "{error:?}");
}

#[tokio::test]
async fn a_name_that_does_not_resolve_is_io_and_never_connected() {
    let client = PoolHttpClient::builder()
        .resolver(FixedResolver::default())
        .build()
        .unwrap();
    let error = fail(&client, "http://nowhere.test/").await;
    assert!(pool_error(&error).is_resolve(), "{error:?}");
    assert!(error.is_io(), "{error:?}");
    assert!(never_connected(&error), "{error:?}");
}

#[tokio::test]
async fn a_reset_after_the_request_is_io_on_that_connection() {
    let server = ScriptedH1Server::start_with(ConnPlan::new().read_request().reset()).await;
    let client = PoolHttpClient::new().unwrap();
    let error = fail(&client, &server.url("/")).await;
    assert!(pool_error(&error).is_reset(), "{error:?}");
    assert!(error.is_io(), "{error:?}");
    let metadata = error
        .connection_metadata()
        .expect("the connection is named");
    assert_eq!(metadata.remote_addr(), Some(server.addr()));
}

#[tokio::test]
async fn an_incomplete_message_is_a_transient_other() {
    let server = ScriptedH1Server::start_with(ConnPlan::new().read_request().close()).await;
    let client = PoolHttpClient::new().unwrap();
    let error = fail(&client, &server.url("/")).await;
    assert!(pool_error(&error).is_incomplete_message(), "{error:?}");
    assert!(error.is_other(), "{error:?}");
    assert_eq!(error.as_other(), Some(ErrorKind::TransientError));
    assert!(error.connection_metadata().is_some());
}

#[tokio::test]
async fn a_refused_stream_is_io_and_the_pool_leaves_the_retry_to_the_sdk() {
    let server = ScriptedH2Server::builder()
        .default_conn_plan(
            H2ConnPlan::new().default_stream(StreamPlan::reset(Reason::REFUSED_STREAM)),
        )
        .start()
        .await;
    let client = PoolHttpClient::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .build()
        .unwrap();
    let error = fail(&client, &server.url("/")).await;
    assert!(pool_error(&error).is_refused_stream(), "{error:?}");
    assert!(error.is_io(), "{error:?}");
    assert!(error.connection_metadata().is_some());
    assert_eq!(
        server.streams_accepted(),
        1,
        "the default retry policy re-sends only what hyper handed back unsent"
    );
}

/// A GOAWAY whose last stream id leaves two of three open streams unprocessed: those two
/// fail as `io` (the SDK retries them), and the pool does not send them again itself.
#[tokio::test]
async fn a_goaway_is_io() {
    let peer = FramePeer::start(GoAwayScript {
        streams: 3,
        last_stream_id: 1,
        goaway: true,
        reset: false,
        silent: false,
    })
    .await;
    let client = PoolHttpClient::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .build()
        .unwrap();
    let components = tokio_components(&SharedHttpClient::new(client.clone()));
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..3 {
        let (components, request) = (components.clone(), get(&peer.url("/")));
        calls.spawn(async move {
            match attempt(&components, &settings(None, None), request).await {
                Ok(response) => Ok(read(response).await),
                Err(error) => Err(error),
            }
        });
    }
    let mut failures = Vec::new();
    while let Some(outcome) = calls.join_next().await {
        if let Err(error) = outcome.unwrap() {
            failures.push(error);
        }
    }
    assert_eq!(failures.len(), 2, "{failures:?}");
    for error in &failures {
        assert!(pool_error(error).is_go_away(), "{error:?}");
        assert!(error.is_io(), "{error:?}");
        assert!(error.connection_metadata().is_some());
    }
    assert_eq!(peer.connections(), 1, "no re-send on a new connection");
}

#[tokio::test]
async fn a_request_the_pool_cannot_address_is_a_user_error() {
    let client = PoolHttpClient::new().unwrap();
    for url in ["/relative/only", "ftp://files.test/x"] {
        let error = fail(&client, url).await;
        assert!(pool_error(&error).is_invalid_uri(), "{url}: {error:?}");
        assert!(error.is_user(), "{url}: {error:?}");
        assert!(never_connected(&error), "{url}: {error:?}");
    }
}

#[tokio::test]
async fn a_full_pending_queue_is_a_throttling_error() {
    let release = Gate::new();
    let server = ScriptedH1Server::start_with(
        ConnPlan::new()
            .respond(Reply::ok("held").gate(release.clone()))
            .then_serve_forever(Reply::ok("ok")),
    )
    .await;
    let client = PoolHttpClient::builder()
        .max_connections_per_host(1)
        .max_pending_per_host(1)
        .build()
        .unwrap();
    let url = server.url("/");
    let components = tokio_components(&SharedHttpClient::new(client.clone()));
    let held = tokio::spawn({
        let (components, request) = (components.clone(), get(&url));
        async move { attempt(&components, &settings(None, None), request).await }
    });
    server.wait_for_requests(1).await;
    let queued = tokio::spawn({
        let (components, request) = (components.clone(), get(&url));
        async move { attempt(&components, &settings(None, None), request).await }
    });
    settle(client.pool(), &origin(&url), |s| s.waiting_requests == 1).await;

    let error = fail(&client, &url).await;
    assert!(pool_error(&error).is_saturated(), "{error:?}");
    assert!(error.is_other(), "{error:?}");
    assert_eq!(error.as_other(), Some(ErrorKind::ThrottlingError));
    assert!(never_connected(&error), "{error:?}");

    release.open();
    assert_eq!(read(held.await.unwrap().unwrap()).await, "held");
    assert_eq!(read(queued.await.unwrap().unwrap()).await, "ok");
}

#[tokio::test]
async fn a_failure_on_a_connection_reaches_the_poisoning_interceptor() {
    let server = ScriptedH1Server::start_with(ConnPlan::new().read_request().reset()).await;
    let client = PoolHttpClient::new().unwrap();
    let components = tokio_components(&SharedHttpClient::new(client.clone()));
    let capture = CaptureSmithyConnection::new();
    let mut request = get(&server.url("/"));
    request.add_extension(capture.clone());
    let timeouts = settings(Some(Duration::from_secs(5)), None);
    let error = attempt(&components, &timeouts, request)
        .await
        .expect_err("reset");
    let metadata = capture
        .get()
        .expect("the capture names the failed connection");
    assert_eq!(
        metadata.connection_id(),
        error.connection_metadata().and_then(|m| m.connection_id())
    );
    // Poisoning a connection that already failed is harmless.
    metadata.poison();
}
