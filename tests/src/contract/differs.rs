//! The intended differences: contracts where our pool and hyper-util behave differently by
//! design, each stating both expectations and the decision.

use super::*;

/// TLS + ALPN, **differs**: a cold burst of 20 concurrent requests to an origin that offers h2
/// only through ALPN. Our pool waits for the first attempt's ALPN answer and shares one
/// connection: 1 TCP connection, 1 TLS handshake. hyper-util dials once per request before it
/// knows the protocol and throws the extra HTTP/2 connections away: more than one handshake.
/// Decision: single-flight establishment per (partition, origin) is the point of the pool.
pub async fn tls_cold_alpn_burst_differs<B: Backend>() {
    let pki = crate::tls::TestPki::new();
    // The server accepts nothing until every request is under way, so no connection can be
    // established (and reused) before the burst has fully started.
    let accepting = Gate::new();
    let server = ScriptedH2Server::builder()
        .tls(pki.server_config(&[b"h2", b"http/1.1"]))
        .accept_gate(accepting.clone())
        .default_stream(StreamPlan::ok("x"))
        .start()
        .await;
    let backend = std::sync::Arc::new(B::new(BackendConfig {
        tls: Some(TlsTrust::new(&pki)),
        ..Default::default()
    }));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let (backend, url) = (backend.clone(), server.url("/"));
        tasks.spawn(async move { fetch(&*backend, &url).await });
    }
    if backend.tls_dials().is_some() {
        bounded("every request dialing", async {
            while backend.tls_dials() < Some(20) {
                tokio::task::yield_now().await;
            }
        })
        .await;
    }
    accepting.open();
    while let Some(result) = bounded("burst", tasks.join_next()).await {
        assert_eq!(result.unwrap().as_deref(), Ok(&b"x"[..]), "{}", B::NAME);
    }
    if B::NAME == "pool" {
        assert_eq!(
            (server.accepted(), server.tls_handshakes()),
            (1, 1),
            "{}",
            B::NAME
        );
    } else {
        // Every request dialed (above), but a dial whose request was served by another's
        // connection finishes in the background: the last may reach the server after the
        // burst completed.
        bounded("every dial accepted", server.wait_for_accepted(20)).await;
        assert_eq!(
            server.accepted(),
            20,
            "{}: one TLS connection per request",
            B::NAME
        );
    }
}

/// Bounded origin, **differs**: 10 concurrent requests to an origin whose responses are held.
/// Our pool with `max_connections_per_host = 2`, `max_pending_per_host = 3` opens 2
/// connections, lets 3 requests wait and fails the other 5 at once (`is_saturated`).
/// hyper-util has no connection cap or pending cap: it opens 10 connections. Decision: the
/// bound and the fail-fast pending cap are features; hyper-util users emulate them with
/// semaphores (see `shared/seeds`).
pub async fn bounded_origin_fails_fast_differs<B: Backend>() {
    let hold = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x").gate(hold.clone())))
            .await;
    let backend = std::sync::Arc::new(B::new(BackendConfig {
        bound: Some((2, 3)),
        ..Default::default()
    }));
    let mut tasks = tokio::task::JoinSet::new();
    let spawn = |tasks: &mut tokio::task::JoinSet<_>| {
        let (backend, url) = (backend.clone(), server.url("/"));
        tasks.spawn(async move { fetch(&*backend, &url).await });
    };
    spawn(&mut tasks);
    spawn(&mut tasks);
    bounded("two requests at the server", hold.wait_arrived(2)).await;
    for _ in 0..8 {
        spawn(&mut tasks);
    }
    if B::NAME == "pool" {
        let mut saturated = 0;
        while saturated < 5 {
            let failure = bounded("fail fast", tasks.join_next())
                .await
                .unwrap()
                .unwrap()
                .expect_err("saturated");
            assert_eq!(
                failure,
                Failure::Other,
                "saturation is no transport failure"
            );
            saturated += 1;
        }
        assert_eq!(server.accepted(), 2, "{}", B::NAME);
    } else {
        bounded("ten connections", server.wait_for_accepted(10)).await;
    }
    hold.open();
    while let Some(result) = bounded("rest", tasks.join_next()).await {
        assert!(result.unwrap().is_ok(), "{}", B::NAME);
    }
}
