//! The API as users meet it: the client under tower middleware without annotations, a URL
//! whose port is not one refused as an invalid URI, the thread-per-core helper, the counting
//! listener shared through an `Arc`, stats read from a URI or text with their peaks, errors
//! that name their connection and print their chain once, the gateway example's Prometheus
//! endpoint scraped after a short load, the metrics of an origin the pool forgot, and a
//! request's progress read while it waits.
//!
//! Every server is on loopback and every wait is bounded: gates order what must happen first,
//! `settle` polls gauges under a real-time deadline, and paused time moves tower's timeout.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Empty};
use pool::runtime::ThreadPerCore;
use pool::{CloseReason, ConnectStep, ConnectionPool, CountingListener, RequestBody, RequestStage};
use pool_tests::client::{fetch, followed, get, origin, reaches, settle};
use pool_tests::gate::Gate;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::resolve::HangingResolver;
use pool_tests::silent::SilentPeer;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../../examples/gateway.rs"]
mod gateway;

/// Real-time bound for waits on other threads; a hang fails instead of blocking CI.
const LIMIT: Duration = Duration::from_secs(20);

fn empty(url: &str) -> Request<RequestBody> {
    Request::get(url).body(RequestBody::empty()).unwrap()
}

/// A URL whose port is not one (0, over 65535, or written with a sign) is an invalid URI: the
/// pool names it so, never tries the scheme's default port instead, and creates no cell.
#[tokio::test]
async fn a_port_that_is_not_one_is_an_invalid_uri() -> Result<(), BoxError> {
    let pool = ConnectionPool::builder().build()?;
    let client = pool.client()?;
    for url in [
        "http://127.0.0.1:0/",
        "http://127.0.0.1:99999/",
        "https://localhost:65536/",
        "http://127.0.0.1:+8080/",
        "http://[::1]:+80/",
    ] {
        let error = client.request(empty(url)).await.unwrap_err();
        assert!(error.is_invalid_uri(), "{url}: {error}");
        assert!(!error.is_connect(), "{url}: {error}");
    }
    assert!(pool.origins().is_empty(), "{:?}", pool.origins());
    Ok(())
}

/// `ready().await?.call(req)` and `oneshot` through a timeout and a concurrency limit, and a
/// stack over `Client::service` for another body type: no annotation anywhere.
#[tokio::test]
async fn a_tower_stack_over_the_client_needs_no_annotations() -> Result<(), BoxError> {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let pool = ConnectionPool::builder().build()?;
    let mut service = ServiceBuilder::new()
        .timeout(Duration::from_secs(10))
        .concurrency_limit(2)
        .service(pool.client()?);

    let response = service.ready().await?.call(empty(&server.url("/"))).await?;
    assert_eq!(response.status(), 200);
    let first = response.body().connection().id();
    response.into_body().collect().await?;

    let response = service.clone().oneshot(empty(&server.url("/"))).await?;
    assert!(response.body().connection().is_reused());
    assert_eq!(response.body().connection().id(), first);
    response.into_body().collect().await?;

    let typed = ServiceBuilder::new()
        .concurrency_limit(1)
        .service(pool.client()?.service::<Empty<Bytes>>());
    let response = typed.oneshot(get(&server.url("/"))).await?;
    assert_eq!(response.body().connection().id(), first);
    Ok(())
}

/// tower's timeout fails a request whose response head never comes, and the pool retires the
/// connection the dropped request was using.
#[tokio::test(start_paused = true)]
async fn a_tower_timeout_ends_a_stalled_request() {
    let stall = Gate::new();
    let server = ScriptedH1Server::start_with(
        ConnPlan::new().respond(Reply::ok("late").gate(stall.clone())),
    )
    .await;
    let counts = Arc::new(CountingListener::new());
    let pool = ConnectionPool::builder()
        .event_listener(counts.clone())
        .build()
        .unwrap();
    let service = ServiceBuilder::new()
        .timeout(Duration::from_secs(3))
        .service(pool.client().unwrap());
    let error = service
        .oneshot(empty(&server.url("/")))
        .await
        .expect_err("the head never arrives");
    assert!(error.is::<tower::timeout::error::Elapsed>(), "{error}");
    assert_eq!(counts.closed_for(CloseReason::RequestCanceled), 1);
    stall.open();
}

/// A `Progress` in a request's extensions says what the request waits for, as its caller
/// would read it when giving up: the step of the connection being made for it (a lookup that
/// never answers, a TLS handshake that never ends), a connection another request's
/// establishment is making (the first request gave up; its lookup or handshake goes on, an
/// HTTP/1 attempt taken over, an HTTP/2 flight joined), a connection
/// of a bounded origin that another request holds, or its exchange; a connect that failed
/// leaves it waiting, with nothing sent.
#[tokio::test]
async fn a_progress_says_what_a_request_waits_for() {
    let silent = SilentPeer::start().await;
    let stall = Gate::new();
    let server = ScriptedH1Server::start_with(
        ConnPlan::new()
            .respond(Reply::ok("first").gate(stall.clone()))
            .respond(Reply::ok("second")),
    )
    .await;
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };

    let hanging = ConnectionPool::builder()
        .resolver(HangingResolver)
        .build()
        .unwrap();
    let (request, progress) = followed(empty("http://never.test/"));
    assert_eq!(progress.stage(), RequestStage::Waiting);
    let client = hanging.client().unwrap();
    let lookup = tokio::spawn(async move { client.request(request).await });
    reaches(
        &progress,
        RequestStage::Connecting(Some(ConnectStep::Resolve)),
    )
    .await;
    lookup.abort();
    assert!(lookup.await.unwrap_err().is_cancelled(), "the request left");
    // The attempt goes on without its request, and the origin's next request takes it over.
    let (request, adopted) = followed(empty("http://never.test/"));
    let client = hanging.client().unwrap();
    let adopting = tokio::spawn(async move { client.request(request).await });
    reaches(&adopted, RequestStage::Joined).await;
    adopting.abort();

    let pool = ConnectionPool::builder()
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let (request, progress) = followed(empty(&format!(
        "https://localhost:{}/",
        silent.addr().port()
    )));
    let client = pool.client().unwrap();
    let handshake = tokio::spawn(async move { client.request(request).await });
    reaches(&progress, RequestStage::Connecting(Some(ConnectStep::Tls))).await;
    handshake.abort();
    // The establishment goes on for the pool, and the origin's next request waits for it.
    let (request, joined) = followed(empty(&format!(
        "https://localhost:{}/",
        silent.addr().port()
    )));
    let client = pool.client().unwrap();
    let joining = tokio::spawn(async move { client.request(request).await });
    reaches(&joined, RequestStage::Joined).await;
    joining.abort();
    assert_eq!(
        progress.stage(),
        RequestStage::Connecting(Some(ConnectStep::Tls)),
        "the step stays the launching request's"
    );

    let (request, first) = followed(empty(&server.url("/")));
    let client = pool.client().unwrap();
    let holding = tokio::spawn(async move { client.request(request).await });
    reaches(&first, RequestStage::Exchange).await;
    let (request, second) = followed(empty(&server.url("/")));
    let client = pool.client().unwrap();
    let queued = tokio::spawn(async move { client.request(request).await });
    settle(&pool, &origin(&server.url("/")), |s| {
        s.waiting_requests == 1
    })
    .await;
    assert_eq!(second.stage(), RequestStage::Waiting);
    stall.open();
    for request in [holding, queued] {
        let body = request.await.unwrap().unwrap().into_body().collect().await;
        assert!(body.is_ok());
    }
    assert_eq!(second.stage(), RequestStage::Exchange);

    let (request, progress) = followed(empty(&format!("http://127.0.0.1:{refused}/")));
    let error = pool.client().unwrap().request(request).await.unwrap_err();
    assert!(error.is_connect(), "{error:?}");
    assert_eq!(progress.stage(), RequestStage::Waiting);
}

/// Work runs on partition `i`'s named thread with a client of partition `i` (a future that is
/// not `Send` included), its connections belong to that partition, and shutdown drops the pool
/// while the runtimes still run: every idle connection closes as `PoolDropped`.
#[test]
fn thread_per_core_runs_work_on_its_partition_and_shuts_down_in_order() {
    let side = tokio::runtime::Runtime::new().unwrap();
    let server = side.block_on(ScriptedH1Server::start_with(ConnPlan::serve_forever(
        Reply::ok("x"),
    )));
    let counts = Arc::new(CountingListener::new());
    let cores = ThreadPerCore::builder()
        .partitions(2)
        .thread_name("api-test")
        .build(ConnectionPool::builder().event_listener(counts.clone()))
        .unwrap();
    assert_eq!(cores.len(), 2);
    assert!(cores.pool().client().is_err(), "explicit partitions");
    for index in 0..2 {
        let url = server.url("/");
        let (thread, partition, owner) = cores
            .spawn(index, move |client| async move {
                // Not `Send`: fine on a partition's own thread.
                let local = std::rc::Rc::new(client);
                let (handle, _) = fetch(&local, &url).await;
                let thread = std::thread::current().name().map(str::to_owned);
                (thread, local.partition(), handle.info().partition())
            })
            .join()
            .unwrap();
        assert_eq!(
            thread.as_deref(),
            Some(format!("api-test-{index}").as_str())
        );
        assert_eq!(partition, cores.partition_id(index));
        assert_eq!(owner, partition);
    }
    let panicked = cores.spawn(1, |_client| async { panic!("boom") }).join();
    assert!(panicked.expect_err("the task panicked").is_panic());
    assert_eq!(counts.opened(), 2);
    cores.shutdown();
    assert_eq!(counts.closed_for(CloseReason::PoolDropped), 2);
    assert_eq!(counts.open(), 0);
    drop(server);
}

/// A listener handed over as an `Arc` is read afterwards through the caller's clone.
#[tokio::test]
async fn a_counting_listener_is_read_through_its_arc() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let counts = Arc::new(CountingListener::new());
    let pool = ConnectionPool::builder()
        .event_listener(counts.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    for _ in 0..3 {
        fetch(&client, &server.url("/")).await;
    }
    assert_eq!(counts.opened(), 1);
    assert_eq!(counts.opened_with(pool::Protocol::Http1), 1);
    assert_eq!(counts.reused(), 2);
    assert_eq!(
        (counts.closed(), counts.failed(), counts.resent()),
        (0, 0, 0)
    );
    drop((client, pool));
    assert_eq!(counts.closed_for(CloseReason::PoolDropped), 1);
}

/// Stats read the same from an `OriginKey`, a `Uri` and text; the peaks keep the most admitted
/// and the most waiting after the gauges fall, until a reset.
#[tokio::test]
async fn stats_come_from_a_uri_or_text_and_keep_their_peaks() {
    let release = Gate::new();
    let server = ScriptedH1Server::start_with(
        ConnPlan::new()
            .respond(Reply::ok("first").gate(release.clone()))
            .then_serve_forever(Reply::ok("x")),
    )
    .await;
    let pool = ConnectionPool::builder()
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");
    let key = origin(&url);
    let spawn = || {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move { fetch(&client, &url).await })
    };
    // The first request holds the one connection (its reply is gated); three more wait.
    let mut requests = vec![spawn()];
    settle(&pool, &key, |s| s.h1_active == 1 && s.waiting_requests == 0).await;
    requests.extend((0..3).map(|_| spawn()));
    settle(&pool, &key, |s| s.waiting_requests == 3).await;
    assert_eq!(pool.stats(&key).peak_waiting(), 3);
    release.open();
    for request in requests {
        tokio::time::timeout(LIMIT, request).await.unwrap().unwrap();
    }
    settle(&pool, &key, |s| s.h1_idle == 1).await;

    let uri: http::Uri = url.parse().unwrap();
    let (by_key, by_uri, by_text) = (pool.stats(&key), pool.stats(&uri), pool.stats(url.as_str()));
    assert_eq!(by_key, by_uri);
    assert_eq!(by_key, by_text);
    assert_eq!(pool.stats("not a uri").limit(), Some(1));
    assert!(pool.stats("not a uri").is_empty());
    assert_eq!((by_key.waiting_requests(), by_key.h1_idle()), (0, 1));
    assert_eq!((by_key.peak_admitted(), by_key.peak_waiting()), (1, 3));
    pool.reset_peaks();
    let after = pool.stats(&key);
    assert_eq!((after.peak_admitted(), after.peak_waiting()), (1, 0));
}

/// A failure on a connection names it: a reused one that closed before the response of a
/// request the pool may not re-send, a fresh one that did the same, and a body cut short.
/// `{}` is one level; `{:#}` the chain, each level once.
#[tokio::test]
async fn errors_name_their_connection_and_print_their_chain_once() {
    let server = ScriptedH1Server::builder()
        .plan(
            ConnPlan::new()
                .respond(Reply::ok("a"))
                .read_request()
                .close(),
        )
        .plan(ConnPlan::new().read_request().close())
        .plan(ConnPlan::new().respond(Reply::ok("abc").declared_length(10).then_close()))
        .start()
        .await;
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");
    let (first, _) = fetch(&client, &url).await;
    let post = || {
        Request::post(url.as_str())
            .body(RequestBody::full("x"))
            .unwrap()
    };

    let error = client
        .request(post())
        .await
        .expect_err("closed before the response");
    let on = error.connection().expect("the request was on a connection");
    assert_eq!((on.id(), on.is_reused()), (first.id(), true));
    assert!(!error.is_retryable(), "a POST is not idempotent");

    let error = client
        .request(post())
        .await
        .expect_err("closed on a fresh connection");
    let on = error.connection().expect("the request was on a connection");
    assert!(on.id() != first.id() && !on.is_reused());

    let text = error.to_string();
    let chain = format!("{error:#}");
    let cause = error.source().expect("a cause").to_string();
    assert!(
        !text.contains(&cause),
        "{text:?} repeats its cause {cause:?}"
    );
    assert_eq!(chain, format!("{text}: {}", chain_of(error.source())));

    let response = client.request(get(&url)).await.expect("the head arrives");
    let served = response.body().connection().id();
    let error = response.into_body().collect().await.expect_err("cut short");
    assert!(error.is_body());
    assert_eq!(error.connection().map(|c| c.id()), Some(served));
}

/// The chain below `error`, each level's own text joined by ": ".
fn chain_of(mut error: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut levels = Vec::new();
    while let Some(level) = error {
        levels.push(level.to_string());
        error = level.source();
    }
    levels.join(": ")
}

/// The sum of every sample of `name` whose labels include `origin="{origin}"`.
fn series(scrape: &str, name: &str, origin: &str) -> Option<f64> {
    let want = format!("origin=\"{origin}\"");
    let values: Vec<f64> = scrape
        .lines()
        .filter(|line| line.starts_with(&format!("{name}{{")) && line.contains(&want))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// The gateway example's Prometheus endpoint, scraped after its load, publishes the documented
/// series with the values the responses themselves report.
#[test]
fn the_gateway_example_serves_the_documented_series() {
    let options = gateway::Options {
        partitions: 2,
        requests: 120,
        concurrency: 4,
        limit: 3,
        serve: Duration::ZERO,
    };
    let report = gateway::run(&options).expect("the gateway runs");
    let (scrape, origin, seen) = (&report.scrape, report.origin.as_str(), &report.seen);
    let value = |name| series(scrape, name, origin).unwrap_or(0.0) as usize;
    assert_eq!(seen.responses, 240);
    // Placement may reclaim a connection while the two partitions settle their shares of the
    // bound (one holding all three permits at first); nothing else closes during the load.
    assert_eq!(
        report.closed, report.reclaimed,
        "only reclaims closed connections"
    );
    let open = seen.connections - report.closed as usize;
    assert_eq!(value("pool_connections_opened_total"), seen.connections);
    assert_eq!(report.opened as usize, seen.connections);
    assert_eq!(value("pool_requests_reused_total"), seen.reused);
    assert_eq!(value("pool_requests_borrowed_total"), seen.borrowed);
    assert_eq!(value("pool_requests_waited_total"), seen.waited);
    assert_eq!(value("pool_request_wait_seconds_count"), seen.waited);
    assert_eq!(value("pool_connections_admitted"), open);
    assert_eq!(value("pool_connections_idle"), open);
    assert_eq!(value("pool_requests_waiting"), 0);
    assert_eq!(value("pool_connections_establishing"), 0);
    assert_eq!(value("pool_permits_available"), options.limit - open);
    let peak = value("pool_connections_admitted_peak");
    assert!(
        (1..=options.limit * options.partitions).contains(&peak),
        "{peak}"
    );
    assert!(scrape.contains(&format!(
        "pool_connections_opened_total{{origin=\"{origin}\",partition=\"0\",protocol=\"http1\"}}"
    )) || scrape.contains(&format!(
        "pool_connections_opened_total{{origin=\"{origin}\",partition=\"1\",protocol=\"http1\"}}"
    )), "{scrape}");
    assert!(
        scrape.contains("pool_redundant_handshakes_total 0"),
        "{scrape}"
    );
}

/// A bounded origin the pool forgot (its cells were dropped, see `ConnectionPool::origins`)
/// reads as it is: all its permits free and nothing admitted, not whatever the last
/// `record_metrics` published while it was busy.
#[test]
fn a_forgotten_origin_reads_all_permits_free_in_the_metrics() {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let server =
                ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
            let pool = ConnectionPool::builder()
                .max_connections_per_host(2)
                .metrics(true)
                .resolver(pool_tests::resolve::EveryName(server.addr()))
                .build()
                .unwrap();
            let client = pool.client().unwrap();
            let port = server.addr().port();
            let url = |name: &str| format!("http://{name}.test:{port}/");
            fetch(&client, &url("kept")).await;
            pool.record_metrics();
            let scrape = handle.render();
            assert_eq!(
                series(
                    &scrape,
                    "pool_permits_available",
                    &origin(&url("kept")).to_string()
                ),
                Some(1.0)
            );
            pool.close_idle_connections();
            settle(&pool, &origin(&url("kept")), |s| s.physically_live == 0).await;
            // New origins, each keeping nothing, until the partition sweeps.
            for i in 0..70 {
                let mut request = get(&url(&format!("o{i}")));
                request
                    .headers_mut()
                    .insert(http::header::CONNECTION, "close".parse().unwrap());
                let response = client.request(request).await.unwrap();
                response.into_body().collect().await.unwrap();
                settle(&pool, &origin(&url(&format!("o{i}"))), |s| {
                    s.physically_live == 0
                })
                .await;
            }
            assert!(!pool.origins().contains(&origin(&url("kept"))));
            pool.record_metrics();
            let scrape = handle.render();
            let kept = origin(&url("kept")).to_string();
            assert_eq!(
                series(&scrape, "pool_permits_available", &kept),
                Some(2.0),
                "{scrape}"
            );
            assert_eq!(
                series(&scrape, "pool_connections_admitted", &kept),
                Some(0.0)
            );
        })
    });
}
