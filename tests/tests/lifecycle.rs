//! Connection lifecycle for gateways: maximum lifetime (HTTP/1 retirement, HTTP/2 renewal,
//! jitter, following DNS), warm-up, the pool timeout across partitions, and the body idle
//! timeout. Every test runs on paused tokio time: deadlines are exact, nothing sleeps in real
//! time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use pool::{
    CloseReason, ConnectionPool, OpenReason, Partition, PartitionId, ProtocolPolicy, Resolve,
    ResolveFuture, TokioDriverSpawner,
};
use pool_tests::client::{bounded_origins, fetch, get, origin, settle};
use pool_tests::events::{EventLog, observed};
use pool_tests::gate::Gate;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::h2::{ScriptedH2Server, StreamPlan};
use pool_tests::resolve::EveryName;
use pool_tests::resolve::SwitchResolver;

const SECOND: Duration = Duration::from_secs(1);

fn lifetime_pool(lifetime: Duration, events: &EventLog) -> pool::Builder {
    ConnectionPool::builder()
        .max_connection_lifetime(Some(lifetime))
        .max_connection_lifetime_jitter(Duration::ZERO)
        .event_listener(events.clone())
}

/// The reason connection `id` was closed with, if it was.
fn close_reason(events: &EventLog, id: pool::ConnectionId) -> Option<CloseReason> {
    events
        .closed()
        .into_iter()
        .find(|(closed, _)| *closed == id)
        .map(|(_, reason)| reason)
}

#[tokio::test(start_paused = true)]
async fn an_h1_connection_older_than_the_lifetime_is_not_reused() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let events = EventLog::new();
    let pool = lifetime_pool(10 * SECOND, &events).build().unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");

    let t0 = tokio::time::Instant::now().into_std();
    let (first, _) = fetch(&client, &url).await;
    let opened = tokio::time::Instant::now().into_std();
    tokio::time::sleep(5 * SECOND).await;
    let (young, _) = fetch(&client, &url).await;
    assert_eq!(young.id(), first.id(), "younger than its lifetime: reused");
    assert!(young.is_reused());

    // Idle at its tenth second: maintenance retires it then, not at the idle timeout (90 s).
    tokio::time::sleep(6 * SECOND).await;
    assert_eq!(
        close_reason(&events, first.id()),
        Some(CloseReason::MaxLifetime)
    );
    let (next, _) = fetch(&client, &url).await;
    assert_ne!(next.id(), first.id());
    assert!(!next.is_reused());
    assert_eq!(server.accepted(), 2);
    let retires_at = events.created()[0].retires_at().expect("a lifetime is set");
    assert!(
        retires_at >= t0 + 10 * SECOND && retires_at <= opened + 10 * SECOND,
        "no jitter: retirement exactly a lifetime after creation"
    );
}

#[tokio::test(start_paused = true)]
async fn an_h1_connection_in_use_at_its_lifetime_retires_when_it_returns() {
    let hold = Gate::new();
    let server = ScriptedH1Server::start_with(
        ConnPlan::new()
            .respond(Reply::ok("slow").gate(hold.clone()))
            .then_serve_forever(Reply::ok("x")),
    )
    .await;
    let events = EventLog::new();
    let pool = lifetime_pool(10 * SECOND, &events).build().unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");
    let slow = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { fetch(&client, &url).await }
    });
    hold.wait_arrived(1).await;
    tokio::time::sleep(12 * SECOND).await;
    hold.open();
    let (handle, body) = slow.await.unwrap();
    assert_eq!(body, "slow", "the exchange in progress finishes");
    events.wait_for_closed(1).await;
    assert_eq!(
        close_reason(&events, handle.id()),
        Some(CloseReason::MaxLifetime)
    );
    let (next, _) = fetch(&client, &url).await;
    assert_ne!(next.id(), handle.id());
}

/// Resolves through a [`SwitchResolver`], but holds every lookup after the first until `gate`
/// opens (so a test can keep a renewal's establishment in progress).
#[derive(Clone, Debug)]
struct HeldResolver {
    inner: SwitchResolver,
    gate: Gate,
    calls: Arc<AtomicUsize>,
}

impl Resolve for HeldResolver {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        let first = self.calls.fetch_add(1, Ordering::SeqCst) == 0;
        let (answer, gate) = (self.inner.resolve(host, port), self.gate.clone());
        Box::pin(async move {
            if !first {
                gate.wait().await;
            }
            answer.await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn an_h2_generation_is_replaced_before_it_drains_and_no_request_waits() {
    let server = ScriptedH2Server::start_with(StreamPlan::ok("x")).await;
    let events = EventLog::new();
    let renewal_lookup = Gate::new();
    let resolver = HeldResolver {
        inner: SwitchResolver::new(server.addr()),
        gate: renewal_lookup.clone(),
        calls: Arc::default(),
    };
    let pool = lifetime_pool(10 * SECOND, &events)
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .resolver(resolver.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = format!("http://svc.test:{}/", server.addr().port());

    let (old, _) = fetch(&client, &url).await;
    tokio::time::sleep(10 * SECOND).await;
    // The renewal started at the tenth second and is held in its lookup. Requests meanwhile
    // still go to the old generation, without waiting.
    renewal_lookup.wait_arrived(1).await;
    for _ in 0..5 {
        let (handle, _) = fetch(&client, &url).await;
        assert_eq!(handle.id(), old.id());
        assert_eq!(handle.wait_time(), None, "a reuse hit, not a wait");
    }
    assert_eq!(close_reason(&events, old.id()), None, "still accepting");

    renewal_lookup.open();
    events.wait_for_closed(1).await;
    assert_eq!(
        close_reason(&events, old.id()),
        Some(CloseReason::MaxLifetime)
    );
    let created = events.created();
    assert_eq!(created.len(), 2);
    assert_eq!(created[0].open_reason(), OpenReason::Request);
    assert_eq!(created[1].open_reason(), OpenReason::LifetimeRenewal);
    let (new, _) = fetch(&client, &url).await;
    assert_eq!(new.id(), created[1].id());
    assert_eq!(
        new.wait_time(),
        None,
        "the replacement was ready before it was needed"
    );
    assert_eq!(server.accepted(), 2);
}

#[tokio::test(start_paused = true)]
async fn jitter_spreads_retirement_over_its_window() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let (_pool, client, events) = observed(
        ConnectionPool::builder()
            .max_connection_lifetime(Some(60 * SECOND))
            .max_connection_lifetime_jitter(30 * SECOND),
    );
    let start = tokio::time::Instant::now().into_std();
    let warmed = client
        .preconnect(&server.url("/").parse().unwrap(), 8)
        .await
        .unwrap();
    assert_eq!(warmed.http1, 8);
    let mut retire: Vec<_> = events
        .created()
        .iter()
        .map(|info| info.retires_at().unwrap() - start)
        .collect();
    retire.sort();
    assert!(
        retire
            .iter()
            .all(|d| *d >= 30 * SECOND && *d <= 60 * SECOND)
    );
    assert!(
        retire[7] - retire[0] >= 5 * SECOND,
        "8 connections opened together retire spread out: {retire:?}"
    );
    // Each closes at its own instant, while idle: just after each retirement, the connections
    // due by then have closed and no later one has. Timers fire on tokio's millisecond ticks,
    // this check's and the maintenance task's alike. The retirement `at` and every earlier one
    // fire in an earlier tick than the check (`at + 1 ms`, rounded up), and a retirement more
    // than 3 ms later fires in a later one, but one in between may share the check's tick and
    // run before or after it. So the count is exact unless a neighbour lies within 3 ms, and
    // then it is bounded by the two.
    let by = |limit: Duration| retire.iter().filter(|r| **r <= limit).count();
    for at in &retire {
        tokio::time::sleep_until((start + *at + Duration::from_millis(1)).into()).await;
        let closed = events.closed_with(CloseReason::MaxLifetime);
        let (surely, perhaps) = (by(*at), by(*at + Duration::from_millis(3)));
        assert!(
            (surely..=perhaps).contains(&closed),
            "{closed} closed just after {at:?}, {surely} to {perhaps} expected: {retire:?}"
        );
    }
    assert_eq!(events.closed_with(CloseReason::MaxLifetime), 8);
}

#[tokio::test(start_paused = true)]
async fn a_new_connection_after_rotation_follows_the_changed_dns_answer() {
    let before = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("old"))).await;
    let after = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("new"))).await;
    let resolver = SwitchResolver::new(before.addr());
    let events = EventLog::new();
    let pool = lifetime_pool(10 * SECOND, &events)
        .resolver(resolver.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = format!("http://svc.test:{}/", before.addr().port());

    assert_eq!(fetch(&client, &url).await.1, "old");
    resolver.switch_to(after.addr());
    tokio::time::sleep(5 * SECOND).await;
    assert_eq!(fetch(&client, &url).await.1, "old", "reused: no lookup");
    tokio::time::sleep(6 * SECOND).await;
    assert_eq!(
        fetch(&client, &url).await.1,
        "new",
        "rotated: resolved again"
    );
    assert_eq!(resolver.lookups(), 2);
    assert_eq!((before.accepted(), after.accepted()), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn preconnect_on_a_bounded_origin_opens_exactly_the_bound_and_a_burst_opens_none() {
    let hold = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x").gate(hold.clone())))
            .await;
    let (pool, client, events) = observed(ConnectionPool::builder().max_connections_per_host(8));
    let url = server.url("/");
    let warmed = client.preconnect(&url.parse().unwrap(), 8).await.unwrap();
    assert_eq!((warmed.http1, warmed.http2), (8, false));
    assert!(warmed.errors.is_empty());
    assert_eq!(server.accepted(), 8);
    let stats = pool.stats(&origin(&url));
    assert_eq!((stats.total().h1_idle, stats.admitted()), (8, 8));
    assert!(
        events
            .created()
            .iter()
            .all(|info| info.open_reason() == OpenReason::Preconnect)
    );

    // A burst of 8 held at the server at once: every request has a warm connection.
    let burst: Vec<_> = (0..8)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    hold.wait_arrived(8).await;
    hold.open();
    for request in burst {
        let (handle, _) = request.await.unwrap();
        assert_eq!(handle.wait_time(), None, "a reuse hit");
    }
    assert_eq!(server.accepted(), 8, "the burst opened none");

    // Asking for more than the bound warms the bound, without waiting forever.
    let again = client.preconnect(&url.parse().unwrap(), 20).await.unwrap();
    assert_eq!(again.http1, 8);
    assert_eq!(server.accepted(), 8);
}

#[tokio::test(start_paused = true)]
async fn preconnect_to_an_h2_origin_warms_one_generation() {
    let server = ScriptedH2Server::start_with(StreamPlan::ok("x")).await;
    let pool = ConnectionPool::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");
    let warmed = client.preconnect(&url.parse().unwrap(), 8).await.unwrap();
    assert_eq!(
        (warmed.http1, warmed.http2, warmed.connections()),
        (0, true, 1)
    );
    assert_eq!(server.accepted(), 1);
    let (handle, _) = fetch(&client, &url).await;
    assert_eq!(handle.wait_time(), None);
}

#[tokio::test(start_paused = true)]
async fn preconnect_reports_failed_establishments() {
    // A port nothing listens on: bind, learn the port, close.
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    let url = format!("http://{addr}/");
    let warmed = client.preconnect(&url.parse().unwrap(), 2).await.unwrap();
    assert_eq!(warmed.connections(), 0);
    assert_eq!(warmed.errors.len(), 2);
    assert!(warmed.errors.iter().all(pool::Error::is_connect));
    settle(&pool, &origin(&url), |s| {
        s.establishing == 0 && s.waiting_requests == 0
    })
    .await;
    let invalid = client.preconnect(&"ftp://x/".parse().unwrap(), 1).await;
    assert!(invalid.unwrap_err().is_invalid_uri());
}

fn two_partitions() -> Vec<Partition> {
    (0..2)
        .map(|i| Partition::new(PartitionId::from_index(i), TokioDriverSpawner::current()))
        .collect()
}

/// Bounded, two partitions, one permit: a request of partition 1 that times out waiting leaves
/// the origin's demand order intact: the requests behind it, of both partitions, are served in
/// their order once the permit comes back.
#[tokio::test(start_paused = true)]
async fn the_pool_timeout_keeps_the_demand_order_across_partitions() {
    let hold = Gate::new();
    let server = ScriptedH1Server::builder()
        .record_requests(true)
        .default_plan(ConnPlan::serve_with({
            let hold = hold.clone();
            move |request| {
                if request.target == "/first" {
                    Reply::ok("x").gate(hold.clone())
                } else {
                    Reply::ok("x")
                }
            }
        }))
        .start()
        .await;
    let pool = ConnectionPool::builder()
        .partitions(two_partitions())
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let p0 = pool.client_for(PartitionId::from_index(0)).unwrap();
    let p1 = pool.client_for(PartitionId::from_index(1)).unwrap();
    let key = origin(&server.url("/"));
    let spawn_fetch = |client: &pool::Client, path: &str| {
        let (client, url) = (client.clone(), server.url(path));
        tokio::spawn(async move { fetch(&client, &url).await })
    };

    let first = spawn_fetch(&p0, "/first");
    hold.wait_arrived(1).await;
    let started = tokio::time::Instant::now();
    let impatient = tokio::spawn({
        let client = p1.clone().pool_timeout(Some(2 * SECOND));
        let url = server.url("/impatient");
        async move { client.request(get(&url)).await }
    });
    settle(&pool, &key, |s| s.waiting_requests == 1).await;
    let second = spawn_fetch(&p0, "/second");
    settle(&pool, &key, |s| s.waiting_requests == 2).await;
    let third = spawn_fetch(&p1, "/third");
    settle(&pool, &key, |s| s.waiting_requests == 3).await;

    let error = impatient.await.unwrap().expect_err("no permit within 2 s");
    assert!(error.is_pool_timeout() && error.is_timeout(), "{error}");
    assert_eq!(started.elapsed(), 2 * SECOND);
    settle(&pool, &key, |s| s.waiting_requests == 2).await;

    hold.open();
    first.await.unwrap();
    second.await.unwrap();
    third.await.unwrap();
    let order: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(order, ["/first", "/second", "/third"]);
    let stats = pool.stats(&key);
    assert_eq!((stats.total().waiting_requests, stats.admitted()), (0, 1));
}

/// Bounded to 4, two partitions, each warming 4 while partition 1 has 2 requests in flight:
/// partition 0's warm-up takes the 2 free permits, partition 1's gets its 2 connections back
/// when the requests end, and each would then hold 2 and wait for 2 more that only the other
/// could give back. A warm-up is therefore capped at its partition's share of the bound
/// (4 / 2), and both end.
#[tokio::test(start_paused = true)]
async fn warm_ups_in_every_partition_share_the_bound_instead_of_waiting_on_each_other() {
    let hold = Gate::new();
    let server = ScriptedH1Server::builder()
        .default_plan(ConnPlan::serve_with({
            let hold = hold.clone();
            move |request| match request.target.as_str() {
                "/held" => Reply::ok("x").gate(hold.clone()),
                _ => Reply::ok("x"),
            }
        }))
        .start()
        .await;
    let pool = ConnectionPool::builder()
        .partitions(two_partitions())
        .max_connections_per_host(4)
        .build()
        .unwrap();
    let p0 = pool.client_for(PartitionId::from_index(0)).unwrap();
    let p1 = pool.client_for(PartitionId::from_index(1)).unwrap();
    let url = server.url("/");
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (client, url) = (p1.clone(), server.url("/held"));
            tokio::spawn(async move { fetch(&client, &url).await })
        })
        .collect();
    hold.wait_arrived(2).await;

    let uri: http::Uri = url.parse().unwrap();
    let warm0 = tokio::spawn({
        let (client, uri) = (p0.clone(), uri.clone());
        async move { client.preconnect(&uri, 4).await }
    });
    let warm1 = tokio::spawn({
        let (client, uri) = (p1.clone(), uri.clone());
        async move { client.preconnect(&uri, 4).await }
    });
    settle(&pool, &origin(&url), |s| s.admitted() == 4).await;
    hold.open();
    for request in held {
        request.await.unwrap();
    }
    let both = tokio::time::timeout(60 * SECOND, async {
        (warm0.await.unwrap(), warm1.await.unwrap())
    })
    .await
    .expect("neither warm-up waits for the other's connections");
    let (warm0, warm1) = (both.0.unwrap(), both.1.unwrap());
    assert_eq!((warm0.http1, warm1.http1), (2, 2), "each partition's share");
    assert!(server.accepted() <= 4, "{} accepted", server.accepted());
}

/// Reads `body` frame by frame, returning the data read and how the body ended.
async fn read_all(body: pool::Body) -> (Vec<Bytes>, Result<(), pool::Error>) {
    let mut body = body;
    let mut chunks = Vec::new();
    loop {
        match body.frame().await {
            None => return (chunks, Ok(())),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    chunks.push(data);
                }
            }
            Some(Err(error)) => return (chunks, Err(error)),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_body_idle_timeout_fires_between_frames_and_not_while_frames_flow() {
    // Ten chunks a second apart (10 s in all, more than the 3 s timeout), then a silence.
    let mut reply = Reply::new(200).chunked();
    for i in 0..10 {
        reply = reply.body_data(format!("{i}")).body_delay(SECOND);
    }
    let reply = reply.body_delay(60 * SECOND).body_data("late");
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(reply)).await;
    let (pool, client, events) =
        observed(ConnectionPool::builder().body_idle_timeout(Some(3 * SECOND)));
    let response = client.request(get(&server.url("/"))).await.unwrap();
    let id = response.body().connection().id();
    let started = tokio::time::Instant::now();
    let (chunks, ended) = read_all(response.into_body()).await;
    assert_eq!(chunks.len(), 10, "a steady body is never cut");
    let error = ended.expect_err("the silence after the tenth chunk");
    assert!(
        error.is_body_idle_timeout() && error.is_timeout() && error.is_body(),
        "{error}"
    );
    // The last chunk came at 9 s (the delay after it is the silence): 9 s + 3 s.
    assert_eq!(started.elapsed(), 12 * SECOND);
    events.wait_for_closed(1).await;
    assert_eq!(
        close_reason(&events, id),
        Some(CloseReason::BodyIdleTimeout)
    );
    let key = origin(&server.url("/"));
    settle(&pool, &key, |s| s.h1_active == 0 && s.h1_idle == 0).await;
}

#[tokio::test(start_paused = true)]
async fn the_body_idle_timeout_retires_an_h2_connection() {
    let server = ScriptedH2Server::builder()
        .handler(|request| {
            if request.path() == "/stall" {
                StreamPlan::new()
                    .head(200)
                    .data("a")
                    .delay(60 * SECOND)
                    .data("b")
                    .end()
            } else {
                StreamPlan::ok("x")
            }
        })
        .start()
        .await;
    let (_pool, client, events) = observed(
        ConnectionPool::builder()
            .protocol(ProtocolPolicy::Http2PriorKnowledge)
            .body_idle_timeout(Some(3 * SECOND)),
    );
    let response = client.request(get(&server.url("/stall"))).await.unwrap();
    let stalled = response.body().connection().id();
    let (chunks, ended) = read_all(response.into_body()).await;
    assert_eq!(chunks, ["a"]);
    assert!(ended.unwrap_err().is_body_idle_timeout());
    assert_eq!(
        close_reason(&events, stalled),
        Some(CloseReason::BodyIdleTimeout)
    );
    let (next, _) = fetch(&client, &server.url("/")).await;
    assert_ne!(
        next.id(),
        stalled,
        "the retired connection takes no new stream"
    );
}

#[test]
fn a_lifetime_of_zero_or_a_jitter_above_it_is_rejected() {
    let error = ConnectionPool::builder()
        .max_connection_lifetime(Some(Duration::ZERO))
        .build()
        .unwrap_err();
    assert_eq!(error.setting(), "max_connection_lifetime");
    let error = ConnectionPool::builder()
        .max_connection_lifetime(Some(SECOND))
        .max_connection_lifetime_jitter(2 * SECOND)
        .build()
        .unwrap_err();
    assert_eq!(error.setting(), "max_connection_lifetime_jitter");
}

/// A sleep that completes at once and records what it was asked for.
#[derive(Clone, Debug, Default)]
struct InstantSleep(Arc<std::sync::Mutex<Vec<Duration>>>);

impl pool::AsyncSleep for InstantSleep {
    fn sleep(&self, duration: Duration) -> pool::Sleep {
        self.0.lock().unwrap().push(duration);
        Box::pin(std::future::ready(()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_clients_own_sleep_measures_its_connect_and_read_timeouts() {
    let sleep = InstantSleep::default();
    let pool = ConnectionPool::builder()
        .resolver(pool_tests::resolve::HangingResolver)
        .build()
        .unwrap();
    let client = pool
        .client()
        .unwrap()
        .connect_timeout(Some(2 * SECOND))
        .sleep(sleep.clone());
    let started = tokio::time::Instant::now();
    let error = client.request(get("http://never.test/")).await.unwrap_err();
    assert!(error.is_connect_timeout(), "{error:?}");
    assert_eq!(*sleep.0.lock().unwrap(), [2 * SECOND]);
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "the client's sleep ended the establishment, not the pool's timer"
    );
    assert_eq!(pool.stats("http://never.test/").total().establishing, 0);

    let never = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::new().respond(Reply::ok("late").gate(never))).await;
    let pool = ConnectionPool::builder().build().unwrap();
    let sleep = InstantSleep::default();
    let client = pool
        .client()
        .unwrap()
        .read_timeout(Some(5 * SECOND))
        .sleep(sleep.clone());
    let error = client.request(get(&server.url("/"))).await.unwrap_err();
    assert!(error.is_read_timeout(), "{error:?}");
    assert_eq!(*sleep.0.lock().unwrap(), [5 * SECOND]);
}

/// A server answering `/slow` with `a`, then `b` once `held` opens, and anything else with `x`.
fn slow_until(held: &Gate) -> ConnPlan {
    let held = held.clone();
    ConnPlan::serve_with(move |request| match request.target.as_str() {
        "/slow" => Reply::ok_split("a", held.clone(), "b"),
        _ => Reply::ok("x"),
    })
}

/// `close_idle_connections` closes what is idle and nothing else, as Go's
/// `CloseIdleConnections`: an idle HTTP/1 connection closes (its permit returns, so a request
/// on a bounded origin opens another at once), one serving a response finishes it and goes
/// idle, and `close_idle_connections_to` touches only its own origin.
#[tokio::test(start_paused = true)]
async fn closing_idle_http1_connections_leaves_the_busy_ones_and_other_origins() {
    let held = Gate::new();
    let server = ScriptedH1Server::start_with(slow_until(&held)).await;
    let other = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("y"))).await;
    let (pool, client, events) = observed(ConnectionPool::builder().max_connections_per_host(2));
    let (url, key) = (server.url("/"), origin(&server.url("/")));

    // One connection serving a response whose body waits, one idle.
    let slow = client.request(get(&server.url("/slow"))).await.unwrap();
    let busy = slow.body().connection().id();
    let (idle, _) = fetch(&client, &url).await;
    let (elsewhere, _) = fetch(&client, &other.url("/")).await;
    settle(&pool, &key, |s| s.h1_idle == 1 && s.h1_active == 1).await;

    pool.close_idle_connections_to(&url);
    assert_eq!(
        events.closed(),
        vec![(idle.id(), CloseReason::CallerClosedIdle)]
    );
    settle(&pool, &key, |s| s.h1_idle == 0 && s.h1_active == 1).await;
    assert_eq!(
        pool.stats(&other.url("/")).total().h1_idle,
        1,
        "other origin"
    );

    // The bound is 2 and the busy connection holds one permit: the closed one gave its back.
    let (third, _) = tokio::time::timeout(SECOND * 20, fetch(&client, &url))
        .await
        .expect("a permit for a new connection");
    assert_ne!(third.id(), idle.id());
    assert_eq!(server.accepted(), 3);

    // The busy connection finishes its response and goes home, as usual.
    held.open();
    let body = slow.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "ab");
    settle(&pool, &key, |s| s.h1_idle == 2 && s.h1_active == 0).await;
    assert_eq!(close_reason(&events, busy), None);

    // Everywhere: every idle connection of both origins closes; nothing is left open.
    pool.close_idle_connections();
    for id in [busy, third.id(), elsewhere.id()] {
        assert_eq!(
            close_reason(&events, id),
            Some(CloseReason::CallerClosedIdle)
        );
    }
    settle(&pool, &key, |s| s.admitted() == 0 && s.physically_live == 0).await;
    let (after, _) = fetch(&client, &url).await;
    assert!(
        !after.is_reused(),
        "the next request opens a new connection"
    );
}

/// An HTTP/2 connection is idle when no stream is in flight on it: `close_idle_connections`
/// leaves one serving a stream accepting (the next request shares it), and closes it once its
/// streams are done; the next request then opens a new one.
#[tokio::test(start_paused = true)]
async fn closing_idle_http2_connections_waits_for_their_streams_to_end() {
    let held = Gate::new();
    let server = ScriptedH2Server::builder()
        .handler({
            let held = held.clone();
            move |request| match request.path() {
                "/slow" => StreamPlan::ok_split("a", held.clone(), "b"),
                _ => StreamPlan::ok("x"),
            }
        })
        .start()
        .await;
    let (pool, client, events) =
        observed(ConnectionPool::builder().protocol(ProtocolPolicy::Http2PriorKnowledge));
    let (url, key) = (server.url("/"), origin(&server.url("/")));
    let slow = client.request(get(&server.url("/slow"))).await.unwrap();
    let first = slow.body().connection().id();

    pool.close_idle_connections();
    let (shared, _) = fetch(&client, &url).await;
    assert_eq!(
        shared.id(),
        first,
        "a connection with a stream in flight is not idle"
    );
    assert!(events.closed().is_empty());

    held.open();
    let body = slow.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "ab");
    settle(&pool, &key, |s| s.h2_active_streams == 0).await;
    pool.close_idle_connections();
    assert_eq!(
        close_reason(&events, first),
        Some(CloseReason::CallerClosedIdle)
    );
    let (next, _) = fetch(&client, &url).await;
    assert_ne!(next.id(), first, "the next request opens a new connection");
    assert_eq!(server.streams_per_connection(), vec![2, 1]);
}

/// A partition does not keep a cell for every origin it ever met (a gateway whose upstreams
/// are pod addresses meets new ones at every deploy): once it holds more than 64, making
/// another first drops those with nothing in them. An origin with a response in flight or an
/// idle connection keeps its cell and its connection; a dropped origin gets a new cell when
/// asked for again, also through a client that remembers the old one.
#[tokio::test(start_paused = true)]
async fn cells_with_nothing_in_them_are_dropped_as_new_origins_arrive() {
    origins_come_and_go(ConnectionPool::builder()).await;
}

/// [`cells_with_nothing_in_them_are_dropped_as_new_origins_arrive`] for bounded origins (a
/// crawler bounded per host meets millions): a dropped origin's admission is forgotten with
/// its cell, and the origin asked for again gets a new one.
#[tokio::test(start_paused = true)]
async fn bounded_origins_with_nothing_in_them_are_dropped_with_their_admission() {
    let pool = origins_come_and_go(ConnectionPool::builder().max_connections_per_host(1)).await;
    let kept = pool.origins().len();
    assert_eq!(
        bounded_origins(&pool),
        kept,
        "an admission for each origin kept, and none for those dropped"
    );
}

/// 200 origins through `builder` (one server answering every name), each serving one request
/// and keeping nothing, beside a busy origin and an idle one; checks that the partition keeps
/// at most 65 cells and what the kept ones hold. Returns the pool.
async fn origins_come_and_go(builder: pool::Builder) -> ConnectionPool {
    let held = Gate::new();
    let server = ScriptedH1Server::start_with(slow_until(&held)).await;
    let port = server.addr().port();
    let url = move |name: &str, path: &str| format!("http://{name}.test:{port}{path}");
    let (pool, client, _events) = observed(builder.resolver(EveryName(server.addr())));
    let slow = client.request(get(&url("busy", "/slow"))).await.unwrap();
    let (idle, _) = fetch(&client, &url("idle", "/")).await;
    // Each of these origins serves one request and keeps nothing (`Connection: close`).
    let once = |client: pool::Client, name: String| async move {
        let mut request = get(&url(&name, "/"));
        request
            .headers_mut()
            .insert(http::header::CONNECTION, "close".parse().unwrap());
        let response = client.request(request).await.unwrap();
        let handle = response.body().connection().clone();
        response.into_body().collect().await.unwrap();
        handle
    };
    let remembering = pool.client().unwrap();
    let first = once(remembering.clone(), "o0".into()).await;
    for i in 1..200 {
        once(client.clone(), format!("o{i}")).await;
        // Until the connection's transport is gone, its cell is not empty.
        settle(&pool, &origin(&url(&format!("o{i}"), "/")), |s| {
            s.physically_live == 0
        })
        .await;
    }
    let origins = pool.origins();
    assert!(origins.len() <= 65, "{} cells kept", origins.len());
    for kept in ["busy", "idle"] {
        assert!(
            origins.contains(&origin(&url(kept, "/"))),
            "{kept} kept its cell"
        );
    }
    assert!(
        !origins.contains(&origin(&url("o0", "/"))),
        "o0's cell was dropped"
    );

    // The client remembering o0's old cell gets a new one.
    let again = once(remembering, "o0".into()).await;
    assert_ne!(again.id(), first.id());
    assert!(pool.origins().contains(&origin(&url("o0", "/"))));

    // What the kept origins held is still theirs.
    held.open();
    let body = slow.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "ab");
    let (reused, _) = fetch(&client, &url("idle", "/")).await;
    assert_eq!(reused.id(), idle.id());
    pool
}

/// `max_idle_connections` bounds the idle HTTP/1 connections of the whole pool: a connection
/// going idle past the cap closes the one idle longest since its last exchange, whatever its
/// origin (`IdleLimit`). A reused connection counts from its new exchange, so the origins in use
/// keep their connections while the cold ones go; with two partitions one partition's return
/// closes the other's connection; with 0 no connection stays idle.
#[tokio::test(start_paused = true)]
async fn the_idle_cap_closes_the_connection_idle_longest_across_origins() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let port = server.addr().port();
    let url = move |name: &str| format!("http://{name}.test:{port}/");
    let (pool, client, events) = observed(
        ConnectionPool::builder()
            .max_idle_connections(2)
            .resolver(EveryName(server.addr())),
    );
    let idle = |name: &str| pool.stats(&origin(&url(name))).total().h1_idle;
    let (a, _) = fetch(&client, &url("a")).await;
    let (b, _) = fetch(&client, &url("b")).await;
    let (again, _) = fetch(&client, &url("a")).await;
    assert_eq!(
        again.id(),
        a.id(),
        "a's connection is reused: now b is idle longest"
    );
    let (c, _) = fetch(&client, &url("c")).await;
    settle(&pool, &origin(&url("b")), |s| s.h1_idle == 0).await;
    assert_eq!(events.closed(), [(b.id(), CloseReason::IdleLimit)]);
    assert_eq!((idle("a"), idle("c")), (1, 1));

    let (d, _) = fetch(&client, &url("d")).await;
    settle(&pool, &origin(&url("a")), |s| s.h1_idle == 0).await;
    assert_eq!(close_reason(&events, a.id()), Some(CloseReason::IdleLimit));
    let (c_again, _) = fetch(&client, &url("c")).await;
    assert_eq!(c_again.id(), c.id(), "c kept its connection");
    assert_eq!((idle("c"), idle("d")), (1, 1));
    assert_eq!(events.closed().len(), 2);
    assert_eq!(server.accepted(), 4, "a, b, c and d, each once");
    assert!(!events.closed().iter().any(|(id, _)| *id == d.id()));

    // Two partitions share the cap: partition 1's return closes partition 0's connection.
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions(two_partitions())
        .max_idle_connections(1)
        .resolver(EveryName(server.addr()))
        .event_listener(events.clone())
        .build()
        .unwrap();
    let p0 = pool.client_for(PartitionId::from_index(0)).unwrap();
    let p1 = pool.client_for(PartitionId::from_index(1)).unwrap();
    let (a, _) = fetch(&p0, &url("a")).await;
    let (b, _) = fetch(&p1, &url("b")).await;
    settle(&pool, &origin(&url("a")), |s| s.h1_idle == 0).await;
    assert_eq!(events.closed(), [(a.id(), CloseReason::IdleLimit)]);
    let stats = pool.stats(&origin(&url("b")));
    assert_eq!(stats.get(PartitionId::from_index(1)).unwrap().h1_idle, 1);
    assert_eq!(b.info().partition(), PartitionId::from_index(1));

    // 0 keeps none: each connection closes once its response is read.
    let (pool, client, events) = observed(
        ConnectionPool::builder()
            .max_idle_connections(0)
            .resolver(EveryName(server.addr())),
    );
    let (first, _) = fetch(&client, &url("a")).await;
    settle(&pool, &origin(&url("a")), |s| {
        s.h1_idle == 0 && s.h1_active == 0
    })
    .await;
    let (second, _) = fetch(&client, &url("a")).await;
    assert_ne!(first.id(), second.id());
    settle(&pool, &origin(&url("a")), |s| {
        s.h1_idle == 0 && s.h1_active == 0
    })
    .await;
    assert_eq!(events.closed_with(CloseReason::IdleLimit), 2);
}
