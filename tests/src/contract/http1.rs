//! HTTP/1 contracts.

use super::*;

/// H1: a fully read response returns the connection; the next request reuses it (1 accept).
pub async fn h1_fully_read_response_is_reused<B: Backend>() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hello"))).await;
    let backend = B::new(BackendConfig::default());
    for _ in 0..3 {
        assert_eq!(
            fetch(&backend, &server.url("/")).await.as_deref(),
            Ok(&b"hello"[..]),
            "{}",
            B::NAME
        );
        // hyper-util returns the connection from a spawned task; wait for it to be idle
        // server-side: the server has answered and awaits the next request on the same socket.
        bounded("idle", server.wait_counters(|c| c.open == 1)).await;
    }
    assert_eq!(server.accepted(), 1, "{}: reused one connection", B::NAME);
}

/// H1: concurrent requests open distinct connections (no pipelining).
pub async fn h1_concurrent_requests_use_distinct_connections<B: Backend>() {
    let hold = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x").gate(hold.clone())))
            .await;
    let backend = std::sync::Arc::new(B::new(BackendConfig::default()));
    let url = server.url("/");
    let (a, b) = (backend.clone(), backend.clone());
    let (ua, ub) = (url.clone(), url.clone());
    let first = tokio::spawn(async move { fetch(&*a, &ua).await });
    let second = tokio::spawn(async move { fetch(&*b, &ub).await });
    bounded("both requests at the server", hold.wait_arrived(2)).await;
    assert_eq!(
        server.accepted(),
        2,
        "{}: two connections, no pipelining",
        B::NAME
    );
    hold.open();
    assert!(first.await.unwrap().is_ok() && second.await.unwrap().is_ok());
}

/// H1: a response whose (large) body is still being received makes the next request open a
/// second connection.
pub async fn h1_held_body_forces_a_second_connection<B: Backend>() {
    let large = Bytes::from(vec![b'x'; 4 << 20]);
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok(large))).await;
    let backend = B::new(BackendConfig::default());
    let held = backend
        .send(get(&server.url("/")))
        .await
        .expect("first response");
    assert_eq!(
        fetch(&backend, &server.url("/")).await.map(|b| b.len()),
        Ok(4 << 20)
    );
    assert_eq!(
        server.accepted(),
        2,
        "{}: the body in flight keeps its connection busy",
        B::NAME
    );
    drop(held);
}

/// H1, **differs**: a small response held unread by the caller, though hyper has already read
/// all of it into its buffer. hyper-util returns the connection as soon as hyper's dispatcher
/// is ready (1 connection); our pool returns it when the caller reaches the end of the body or
/// drops it (2 connections). Decision: the return is driven by the body's consumer, which costs
/// no background task or extra wake-up per request (hyper-util spawns one per response); a
/// caller that holds unread responses holds their connections.
pub async fn h1_held_small_body_differs<B: Backend>() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("body"))).await;
    let backend = B::new(BackendConfig::default());
    let held = backend
        .send(get(&server.url("/")))
        .await
        .expect("first response");
    // Let hyper-util's background readiness task run.
    bounded(
        "response read by the dispatcher",
        server.wait_for_requests(1),
    )
    .await;
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        fetch(&backend, &server.url("/")).await.as_deref(),
        Ok(&b"body"[..])
    );
    let expected = if B::NAME == "pool" { 2 } else { 1 };
    assert_eq!(server.accepted(), expected, "{}", B::NAME);
    drop(held);
}

/// H1: an idle connection is evicted at the idle timeout and the next request opens a new one.
/// Run under paused time.
pub async fn h1_idle_connection_is_evicted_at_the_timeout<B: Backend>() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let backend = B::new(BackendConfig {
        idle_timeout: Some(Duration::from_secs(5)),
        ..Default::default()
    });
    fetch(&backend, &server.url("/")).await.expect("first");
    bounded("idle", server.wait_counters(|c| c.open == 1)).await;
    tokio::time::advance(Duration::from_secs(6)).await;
    // Eviction closes the idle socket; the server sees it go.
    bounded("evicted", server.wait_for_closed(1)).await;
    fetch(&backend, &server.url("/")).await.expect("second");
    assert_eq!(
        server.accepted(),
        2,
        "{}: a new connection after eviction",
        B::NAME
    );
}

/// H1: a response body being read is not cut by the idle timeout. Run under paused time.
pub async fn h1_active_body_survives_the_idle_timeout<B: Backend>() {
    let gate = Gate::new();
    let server = ScriptedH1Server::start_with(ConnPlan::new().respond(Reply::ok_split(
        "still ",
        gate.clone(),
        "here",
    )))
    .await;
    let backend = B::new(BackendConfig {
        idle_timeout: Some(Duration::from_secs(5)),
        ..Default::default()
    });
    let response = backend.send(get(&server.url("/"))).await.expect("head");
    tokio::time::advance(Duration::from_secs(30)).await;
    gate.open();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body survives")
        .to_bytes();
    assert_eq!(body, "still here", "{}", B::NAME);
}

/// H1: a connection reset as soon as it is accepted fails the request with an I/O error.
pub async fn h1_reset_on_accept_is_an_io_error<B: Backend>() {
    let server = ScriptedH1Server::start_with(ConnPlan::new().reset()).await;
    let backend = B::new(BackendConfig::default());
    let failure = fetch(&backend, &server.url("/")).await.expect_err("reset");
    assert_eq!(failure, Failure::Io, "{}", B::NAME);
}

/// H1: a reset after the request was read fails the request with an I/O error.
pub async fn h1_reset_after_request_is_an_io_error<B: Backend>() {
    let server = ScriptedH1Server::start_with(ConnPlan::new().read_request().reset()).await;
    let backend = B::new(BackendConfig::default());
    let failure = fetch(&backend, &server.url("/")).await.expect_err("reset");
    assert_eq!(failure, Failure::Io, "{}", B::NAME);
}

/// H1: a reset mid-body delivers the head, fails the body, and retires the connection.
pub async fn h1_reset_mid_body_fails_the_body_and_retires<B: Backend>() {
    let server = ScriptedH1Server::builder()
        .plan(ConnPlan::new().respond(Reply::ok("partial").declared_length(100).then_reset()))
        .default_plan(ConnPlan::serve_forever(Reply::ok("next")))
        .start()
        .await;
    let backend = B::new(BackendConfig::default());
    let response = backend
        .send(get(&server.url("/")))
        .await
        .expect("the head arrives");
    assert_eq!(response.status(), 200);
    let failure = body_failure(response).await;
    assert!(
        matches!(failure, Failure::Io | Failure::IncompleteBody),
        "{}: {failure:?}",
        B::NAME
    );
    assert_eq!(
        fetch(&backend, &server.url("/")).await.as_deref(),
        Ok(&b"next"[..])
    );
    assert_eq!(
        server.accepted(),
        2,
        "{}: the broken connection was retired",
        B::NAME
    );
}

/// H1: a clean EOF before the declared body length is an unexpected-EOF body error.
pub async fn h1_clean_eof_mid_body_is_an_incomplete_body<B: Backend>() {
    let server = ScriptedH1Server::start_with(
        ConnPlan::new().respond(Reply::ok("short").declared_length(100).then_close()),
    )
    .await;
    let backend = B::new(BackendConfig::default());
    let response = backend
        .send(get(&server.url("/")))
        .await
        .expect("the head arrives");
    let failure = body_failure(response).await;
    assert_eq!(failure, Failure::IncompleteBody, "{}", B::NAME);
}

/// H1: a read timeout fires within ±250 ms of its setting. Run under paused time.
pub async fn h1_read_timeout_fires_on_time<B: Backend>() {
    let gate = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::new().respond(Reply::ok("late").gate(gate.clone())))
            .await;
    let backend = B::new(BackendConfig {
        read_timeout: Some(Duration::from_secs(2)),
        ..Default::default()
    });
    let started = tokio::time::Instant::now();
    let failure = fetch(&backend, &server.url("/"))
        .await
        .expect_err("times out");
    let elapsed = started.elapsed();
    assert_eq!(failure, Failure::Timeout, "{}", B::NAME);
    assert!(
        elapsed >= Duration::from_millis(1750) && elapsed <= Duration::from_millis(2250),
        "{}: fired after {elapsed:?}",
        B::NAME
    );
    gate.open();
}

/// H1: the request goes out in origin form with a `Host` header.
pub async fn h1_request_uses_origin_form_and_host<B: Backend>() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let backend = B::new(BackendConfig::default());
    fetch(&backend, &server.url("/a/b?c=d")).await.expect("ok");
    let request = &server.requests()[0];
    assert_eq!(request.target, "/a/b?c=d", "{}", B::NAME);
    assert!(request.is_origin_form());
    assert_eq!(
        request.host(),
        Some(server.authority().as_str()),
        "{}",
        B::NAME
    );
}

/// Reads `response`'s body, which must fail, and classifies the failure.
async fn body_failure(response: super::ContractResponse) -> Failure {
    response
        .into_body()
        .collect()
        .await
        .map(|_| ())
        .map_err(|e| classify(&*e))
        .expect_err("the body fails")
}
