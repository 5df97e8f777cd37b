//! Bounded origins: `max_connections_per_host` across partitions, the pending cap, borrow,
//! reclaim, and a stress run with random cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::BodyExt;
use pool::{
    CloseReason, ConnectionPool, ConnectionReuseScope, Partition, PartitionId, TokioDriverSpawner,
};
use pool_tests::chaos::{CancelAfter, XorShift};
use pool_tests::client::{fetch, get, origin, settle};
use pool_tests::events::EventLog;
use pool_tests::gate::Gate;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::resolve::EveryName;
use tokio::task::JoinSet;

const LIMIT: Duration = Duration::from_secs(30);

fn partitions(n: u32) -> Vec<Partition> {
    (0..n)
        .map(|i| Partition::new(PartitionId::from_index(i), TokioDriverSpawner::current()))
        .collect()
}

/// N = 8, four partitions, 256 requests in flight at once: the server never sees more than 8
/// connections, the pool fills exactly 8, and every request succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_holds_across_partitions() {
    let hold = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x").gate(hold.clone())))
            .await;
    // Real time passes while the requests park: a placement tolerance longer than the test
    // keeps an uneven first split of the permits from being corrected by a reclaim (which
    // would replace a connection); placement's own tests cover that.
    let pool = ConnectionPool::builder()
        .partitions(partitions(4))
        .max_connections_per_host(8)
        .placement_tolerance(Duration::from_secs(3600))
        .build()
        .unwrap();
    let url = server.url("/");
    let mut tasks = JoinSet::new();
    for i in 0..256u32 {
        let client = pool.client_for(PartitionId::from_index(i % 4)).unwrap();
        let url = url.clone();
        tasks.spawn(async move { fetch(&client, &url).await });
    }
    // Eight requests reach the server and park there; the other 248 wait in the pool.
    tokio::time::timeout(LIMIT, hold.wait_arrived(8))
        .await
        .unwrap();
    let key = origin(&url);
    settle(&pool, &key, |s| s.waiting_requests == 248).await;
    let stats = pool.stats(&key);
    assert_eq!(stats.admitted(), 8);
    assert_eq!(stats.limit(), Some(8));
    hold.open();
    let mut served = 0;
    while let Some(result) = tokio::time::timeout(LIMIT, tasks.join_next())
        .await
        .unwrap()
    {
        assert_eq!(result.unwrap().1, "x");
        served += 1;
    }
    assert_eq!(served, 256);
    assert!(
        server.max_open() <= 8,
        "the server saw {} connections",
        server.max_open()
    );
    assert_eq!(
        server.accepted(),
        8,
        "connections were reused, not replaced"
    );
    settle(&pool, &key, |s| {
        s.waiting_requests == 0 && s.h1_active == 0 && s.admitted() == 8
    })
    .await;
}

/// N = 1, M = 16: with one request in flight and 16 waiting, every further request fails at
/// once with `is_saturated`, and the 17 admitted ones succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_pending_cap_fail_fast() {
    let hold = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x").gate(hold.clone())))
            .await;
    let pool = ConnectionPool::builder()
        .max_connections_per_host(1)
        .max_pending_per_host(16)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");

    let mut tasks = JoinSet::new();
    let spawn = |tasks: &mut JoinSet<_>| {
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move { client.request(get(&url)).await.map(|_| ()) });
    };
    spawn(&mut tasks);
    // The first request holds the only connection, parked at the server.
    tokio::time::timeout(LIMIT, hold.wait_arrived(1))
        .await
        .unwrap();
    for _ in 0..99 {
        spawn(&mut tasks);
    }
    // 83 fail while nothing has been answered yet: they did not wait.
    let mut saturated = 0;
    while saturated < 83 {
        let result = tokio::time::timeout(LIMIT, tasks.join_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let error =
            result.expect_err("only saturation can finish while the server holds every response");
        assert!(error.is_saturated(), "{error:?}");
        saturated += 1;
    }
    settle(&pool, &origin(&url), |s| s.waiting_requests == 16).await;
    assert_eq!(
        server.accepted(),
        1,
        "a saturated request touches no connection"
    );
    hold.open();
    let mut ok = 0;
    while let Some(result) = tokio::time::timeout(LIMIT, tasks.join_next())
        .await
        .unwrap()
    {
        result.unwrap().expect("admitted requests succeed");
        ok += 1;
    }
    assert_eq!((saturated, ok), (83, 17));
}

/// Scope `Pool`, N = 1: a request through a second partition is served on the first
/// partition's connection, and the borrow is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_borrows_a_peer_connection() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions(partitions(2))
        .max_connections_per_host(1)
        .connection_reuse_scope(ConnectionReuseScope::Pool)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let (p0, p1) = (PartitionId::from_index(0), PartitionId::from_index(1));
    let url = server.url("/");
    let (first, _) = fetch(&pool.client_for(p0).unwrap(), &url).await;
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;

    let (second, body) = tokio::time::timeout(LIMIT, fetch(&pool.client_for(p1).unwrap(), &url))
        .await
        .unwrap();
    assert_eq!(body, "x");
    assert_eq!(
        second.id(),
        first.id(),
        "served on partition 0's connection"
    );
    assert_eq!(
        second.info().partition(),
        p0,
        "the I/O stays with its owner"
    );
    assert_eq!(events.borrowed(), vec![(first.id(), p1)]);
    assert_eq!(server.accepted(), 1);
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
    assert_eq!(
        pool.stats(&origin(&url)).get(p0).unwrap().h1_idle,
        1,
        "it went home to its owner"
    );
}

/// Scope `Partition`, N = 1: the peer's idle connection is closed as `Reclaimed` and the
/// waiting partition gets a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_reclaims_a_peer_idle_connection() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions(partitions(2))
        .max_connections_per_host(1)
        .connection_reuse_scope(ConnectionReuseScope::Partition)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let (p0, p1) = (PartitionId::from_index(0), PartitionId::from_index(1));
    let url = server.url("/");
    let (first, _) = fetch(&pool.client_for(p0).unwrap(), &url).await;
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;

    let (second, _) = tokio::time::timeout(LIMIT, fetch(&pool.client_for(p1).unwrap(), &url))
        .await
        .unwrap();
    assert_ne!(second.id(), first.id());
    assert_eq!(second.info().partition(), p1);
    assert_eq!(events.closed(), vec![(first.id(), CloseReason::Reclaimed)]);
    assert!(
        events.borrowed().is_empty(),
        "scope Partition never dispatches across partitions"
    );
    assert_eq!(server.accepted(), 2);
    assert!(
        server.max_open() <= 1,
        "the reclaimed socket was gone before the new one opened"
    );
}

/// N = 2: partition 0 fills both connections and queues more requests than they can serve
/// before and after a request through partition 1 arrives. Once the early requests finish,
/// the peer's request goes before partition 0's later ones (which then park at the server):
/// waiting is FIFO across partitions, through a borrow (scope `Pool`) or a reclaim (scope
/// `Partition`). Without it, the later requests would take both connections and the peer
/// would wait for as long as they do.
///
/// The rule under test is the one for a partition holding nothing whose request is older; the
/// placement tolerance is set past the test's length so the other way capacity moves (a
/// reclaim once the peer has waited that long, whatever the scope) cannot serve the peer
/// first on a slow run: with the default 20 ms it did, in about 3 runs in 100 with both
/// cores busy, and scope `Pool` then saw no borrow.
async fn a_busy_partition_cannot_starve_a_peer(scope: ConnectionReuseScope) -> EventLog {
    let (early, late) = (Gate::new(), Gate::new());
    let plan = {
        let (early, late) = (early.clone(), late.clone());
        ConnPlan::serve_with(move |request| match request.target.as_str() {
            "/early" => Reply::ok("x").gate(early.clone()),
            "/late" => Reply::ok("x").gate(late.clone()),
            _ => Reply::ok("x"),
        })
    };
    let server = ScriptedH1Server::start_with(plan).await;
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions(partitions(2))
        .max_connections_per_host(2)
        .connection_reuse_scope(scope)
        .placement_tolerance(LIMIT * 10)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let (p0, p1) = (PartitionId::from_index(0), PartitionId::from_index(1));
    let key = origin(&server.url("/"));
    let mut busy = JoinSet::new();
    let spawn_on = |tasks: &mut JoinSet<_>, partition, path: &str| {
        let (client, url) = (pool.client_for(partition).unwrap(), server.url(path));
        tasks.spawn(async move { fetch(&client, &url).await });
    };
    for _ in 0..8 {
        spawn_on(&mut busy, p0, "/early");
    }
    tokio::time::timeout(LIMIT, early.wait_arrived(2))
        .await
        .unwrap();
    settle(&pool, &key, |s| s.waiting_requests == 6).await;
    let mut peer = JoinSet::new();
    spawn_on(&mut peer, p1, "/peer");
    settle(&pool, &key, |s| s.waiting_requests == 7).await;
    for _ in 0..6 {
        spawn_on(&mut busy, p0, "/late");
    }
    settle(&pool, &key, |s| s.waiting_requests == 13).await;

    early.open();
    let (_, body) = tokio::time::timeout(LIMIT, peer.join_next())
        .await
        .expect("the peer's request went before partition 0's later ones")
        .unwrap()
        .unwrap();
    assert_eq!(body, "x");
    late.open();
    while let Some(result) = tokio::time::timeout(LIMIT, busy.join_next()).await.unwrap() {
        assert_eq!(result.unwrap().1, "x");
    }
    assert!(server.max_open() <= 2, "the bound held");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_is_fair_across_partitions_by_borrowing() {
    let events = a_busy_partition_cannot_starve_a_peer(ConnectionReuseScope::Pool).await;
    assert!(
        events
            .borrowed()
            .iter()
            .any(|(_, p)| *p == PartitionId::from_index(1)),
        "partition 1 was served on a connection of partition 0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_is_fair_across_partitions_by_reclaiming() {
    let events = a_busy_partition_cannot_starve_a_peer(ConnectionReuseScope::Partition).await;
    assert!(
        events.closed_with(CloseReason::Reclaimed) >= 1,
        "a connection of partition 0 closed so its permit could move"
    );
    assert!(
        events
            .created()
            .iter()
            .any(|info| info.partition() == PartitionId::from_index(1)),
        "partition 1 established its own connection"
    );
}

/// What came of [`requests_with_random_cancellation`].
struct Chaos {
    completed: usize,
    cancelled: usize,
    /// The requests that failed, with their errors.
    failed: Vec<pool::Error>,
}

impl Chaos {
    /// Every request completed or was cancelled.
    fn assert_none_failed(&self) {
        assert!(
            self.failed.is_empty(),
            "requests failed: {:#?}",
            self.failed
        );
    }
}

/// Sends `n` requests for `url`, round-robin over the pool's four partitions, about a quarter
/// of them cancelled at a random poll (`seed`), and waits for all of them within [`LIMIT`]
/// (`stuck` says what the pool looked like if not).
async fn requests_with_random_cancellation(
    pool: &ConnectionPool,
    url: &str,
    n: u64,
    seed: u64,
    stuck: impl FnOnce() -> String,
) -> Chaos {
    let completed = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut rng = XorShift::new(seed);
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let client = pool
            .client_for(PartitionId::from_index((i % 4) as u32))
            .unwrap();
        let url = url.to_owned();
        let polls = match rng.below(4) {
            0 => Some(rng.below(8) as u32),
            _ => None,
        };
        let (completed, cancelled, failed) = (completed.clone(), cancelled.clone(), failed.clone());
        tasks.spawn(async move {
            let request = async move {
                let response = client.request(get(&url)).await?;
                response.into_body().collect().await.map(drop)
            };
            match CancelAfter::new(request, polls).await {
                Some(Ok(())) => completed.fetch_add(1, Ordering::Relaxed),
                Some(Err(error)) => {
                    failed.lock().unwrap().push(error);
                    0
                }
                None => cancelled.fetch_add(1, Ordering::Relaxed),
            };
        });
    }
    tokio::time::timeout(LIMIT, async {
        while let Some(result) = tasks.join_next().await {
            result.expect("no request panicked");
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "no deadlock: every request finished or was cancelled; {}",
            stuck()
        )
    });
    let failed = std::mem::take(&mut *failed.lock().unwrap());
    Chaos {
        completed: completed.load(Ordering::Relaxed),
        cancelled: cancelled.load(Ordering::Relaxed),
        failed,
    }
}

/// Three runtimes of one worker thread each: two for the partitions, one for the test.
fn stress_runtimes() -> [tokio::runtime::Runtime; 3] {
    ["runtime-a", "runtime-b", "test"].map(|name| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(name)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// Four partitions, two on each of `a` and `b`.
fn four_partitions(a: &tokio::runtime::Runtime, b: &tokio::runtime::Runtime) -> [Partition; 4] {
    let handle =
        |rt: &tokio::runtime::Runtime| TokioDriverSpawner::from_handle(rt.handle().clone());
    [(0, a), (1, a), (2, b), (3, b)]
        .map(|(i, rt)| Partition::new(PartitionId::from_index(i), handle(rt)))
}

/// N = 4, four partitions on two runtimes, thousands of requests with random cancellation:
/// everything finishes or cancels within the deadline, the server never sees more than four
/// connections, and no permit leaks (afterwards the origin still serves four requests at once).
#[test]
fn stress_with_random_cancellation_leaks_nothing() {
    let [rt_a, rt_b, test_rt] = stress_runtimes();
    test_rt.block_on(async {
        // Every reply waits on whichever gate is current: open during the stress phase.
        let current = Arc::new(std::sync::Mutex::new(Gate::opened()));
        let plan = {
            let current = current.clone();
            ConnPlan::serve_with(move |_| {
                Reply::ok("payload").gate(current.lock().unwrap().clone())
            })
        };
        let server = ScriptedH1Server::start_with(plan).await;
        let pool = ConnectionPool::builder()
            .partitions(four_partitions(&rt_a, &rt_b))
            .max_connections_per_host(4)
            .build()
            .unwrap();
        let url = server.url("/");
        let key = origin(&url);
        let chaos =
            requests_with_random_cancellation(&pool, &url, 3000, 0x5eed_1234_abcd_0001, || {
                format!("{:#?}", pool.stats(&key))
            })
            .await;
        chaos.assert_none_failed();
        let Chaos {
            completed,
            cancelled,
            ..
        } = chaos;
        assert_eq!(completed + cancelled, 3000);
        assert!(
            completed > 2000 && cancelled > 100,
            "completed {completed}, cancelled {cancelled}"
        );
        assert!(
            server.max_open() <= 4,
            "the server saw {} connections",
            server.max_open()
        );

        settle(&pool, &key, |s| {
            s.establishing == 0 && s.waiting_requests == 0 && s.h1_active == 0
        })
        .await;
        let stats = pool.stats(&key);
        assert!(stats.admitted() <= 4);
        assert_eq!(stats.admitted(), stats.total().h1_idle);
        settle(&pool, &key, |s| s.h1_draining == 0).await;
        let stats = pool.stats(&key);
        let leaked = 4 - stats.available_permits().unwrap() - stats.admitted();
        assert_eq!(leaked, 0, "leaked permits");

        // No leaked permit: four requests can still be in flight at the same time.
        let hold = Gate::new();
        *current.lock().unwrap() = hold.clone();
        let mut four = JoinSet::new();
        for i in 0..4u32 {
            let client = pool.client_for(PartitionId::from_index(i)).unwrap();
            let url = url.clone();
            four.spawn(async move { fetch(&client, &url).await });
        }
        tokio::time::timeout(LIMIT, hold.wait_arrived(4))
            .await
            .expect("four requests in flight at once");
        hold.open();
        while let Some(result) = four.join_next().await {
            assert_eq!(result.unwrap().1, "payload");
        }
        assert!(server.max_open() <= 4);
    });
}

/// The pool timeout bounds how long a request waits for a permit: the impatient request fails
/// at its deadline (paused time, exact), withdraws cleanly, and the request behind it in the
/// origin's demand order is served when the permit comes back.
#[tokio::test(start_paused = true)]
async fn the_pool_timeout_withdraws_a_waiting_request_and_the_order_goes_on() {
    let hold = Gate::new();
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x").gate(hold.clone())))
            .await;
    let pool = ConnectionPool::builder()
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");
    let key = origin(&url);

    let first = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { fetch(&client, &url).await }
    });
    hold.wait_arrived(1).await;
    let started = tokio::time::Instant::now();
    let impatient = tokio::spawn({
        let client = client.clone().pool_timeout(Some(Duration::from_secs(2)));
        let url = url.clone();
        async move { client.request(get(&url)).await }
    });
    settle(&pool, &key, |s| s.waiting_requests == 1).await;
    let patient = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { fetch(&client, &url).await }
    });
    settle(&pool, &key, |s| s.waiting_requests == 2).await;

    let error = impatient.await.unwrap().expect_err("no permit within 2 s");
    assert!(error.is_pool_timeout() && error.is_timeout(), "{error}");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    settle(&pool, &key, |s| s.waiting_requests == 1).await;

    hold.open();
    first.await.unwrap();
    let (_, body) = patient.await.unwrap();
    assert_eq!(body, "x", "the request behind the withdrawn one was served");
    let stats = pool.stats(&key);
    assert_eq!(stats.total().waiting_requests, 0);
    assert_eq!(stats.admitted(), 1);
}

/// HTTP/2, N = 1, two partitions each with requests one after another: the one connection the
/// bound allows serves both partitions (the second borrows its streams), and no request is
/// left waiting. (A request that missed while the generation was being established, or was at
/// its stream limit, used to wait for ever: only a miss looked for a peer's streams.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_origin_bounded_to_one_connection_serves_every_partition() {
    h2_bounded_to_one(ConnectionReuseScope::NetworkInterface).await;
}

/// The same where partitions may not share connections: the generation closes, when its
/// streams are done, for the partition that holds nothing (as an HTTP/1 connection would on
/// its return), and the permit moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_origin_bounded_to_one_connection_moves_between_partitions_that_may_not_share() {
    h2_bounded_to_one(ConnectionReuseScope::Partition).await;
}

async fn h2_bounded_to_one(scope: ConnectionReuseScope) {
    use pool::ProtocolPolicy;
    use pool_tests::h2::{ScriptedH2Server, StreamPlan};
    let server = ScriptedH2Server::start_with(StreamPlan::ok("x")).await;
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions(partitions(2))
        .max_connections_per_host(1)
        .connection_reuse_scope(scope)
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let url = server.url("/");
    let mut workers = JoinSet::new();
    for i in 0..4u32 {
        let client = pool.client_for(PartitionId::from_index(i % 2)).unwrap();
        let url = url.clone();
        workers.spawn(async move {
            for _ in 0..300 {
                assert_eq!(fetch(&client, &url).await.1, "x");
            }
        });
    }
    while let Some(done) = tokio::time::timeout(LIMIT, workers.join_next())
        .await
        .unwrap_or_else(|_| {
            let created: Vec<_> = events
                .created()
                .iter()
                .map(|i| (i.id(), i.partition()))
                .collect();
            let closed = events.closed();
            panic!(
                "every request is served: {:#?}\nlast created {:?}\nlast closed {:?}",
                pool.stats(&origin(&url)),
                &created[created.len().saturating_sub(3)..],
                &closed[closed.len().saturating_sub(3)..],
            )
        })
    {
        done.unwrap();
    }
    // (A generation closed for its permit finishes its open streams after the permit moved,
    // so the server may see two connections at once.)
    let stats = pool.stats(&origin(&url));
    assert!(stats.admitted() <= 1, "{stats:#?}");
    assert_eq!(stats.total().waiting_requests, 0, "{stats:#?}");
    let (created, closed) = (events.created(), events.closed());
    if scope == ConnectionReuseScope::Partition {
        // The permit went back and forth: each connection closed so the other could open.
        assert!(created.len() > 1);
        assert!(
            closed
                .iter()
                .all(|(_, reason)| *reason == CloseReason::Reclaimed),
            "{closed:?}"
        );
    } else {
        assert_eq!(created.len(), 1, "one connection served both partitions");
        assert!(closed.is_empty(), "{closed:?}");
    }
}

/// The scopes the HTTP/2 stress runs under: partitions lending streams, and partitions moving
/// permits by closing generations.
const H2_STRESS_SCOPES: [ConnectionReuseScope; 2] = [
    ConnectionReuseScope::NetworkInterface,
    ConnectionReuseScope::Partition,
];

/// HTTP/2, bound 2, four partitions on two runtimes, 2,000 requests of which about a quarter
/// are cancelled at a random poll, where partitions lend each other streams (the `interface`
/// scope) or move permits by closing generations (the `partition` scope): no request fails or
/// is left waiting, and afterwards every permit is accounted for (held by an accepting
/// generation, or free).
///
/// A quarter of the requests cancelled, most within a few polls, is a rapid-reset pattern: h2's
/// server answers more than 20 resets of streams it has not yet accepted with
/// `GOAWAY(ENHANCE_YOUR_CALM)` and closes, failing the requests below the GOAWAY's line on a
/// fresh connection (see the next test). This server is told to allow them, so that what is
/// measured here is the pool's own accounting.
#[test]
fn h2_stress_with_random_cancellation_leaks_nothing() {
    for scope in H2_STRESS_SCOPES {
        let (chaos, server_errors) = h2_stress(scope, usize::MAX);
        chaos.assert_none_failed();
        assert!(chaos.completed > 1000, "{scope:?}");
        assert!(server_errors.is_empty(), "{scope:?}: {server_errors:?}");
    }
}

/// The same against a server that allows no reset of a stream it has not yet accepted (h2's
/// `max_pending_accept_reset_streams(0)`), which closes connections under the pool with
/// `GOAWAY(ENHANCE_YOUR_CALM)` whenever a cancellation reaches it first (in most runs, under
/// both scopes). Requests above the GOAWAY's last stream id go again on another connection; those
/// below it, which the server dropped unanswered, fail as a lost connection (a reset: h2's
/// "broken pipe"), and are sent again only from a connection that had served before, since
/// nothing proves the server did not process them (the rule for the keep-alive race,
/// `pool::RetryPolicy`). A request that hyper still held back, its stream waiting for h2 to open
/// it (h2 counts a cancelled stream until hyper's task for it resets it, a moment after the pool
/// freed it), goes again as unsent. Nothing else fails, no request is left waiting, and no
/// permit leaks: a generation that fails while partitions wait for capacity must not leave the
/// ledger thinking a permit is on its way (this test hung so under the `partition` scope), and
/// a request queued on a dispatcher as it stops must come back (it hung so under both).
#[test]
fn h2_stress_against_a_server_closing_on_rapid_resets_fails_only_lost_requests() {
    for scope in H2_STRESS_SCOPES {
        let (chaos, server_errors) = h2_stress(scope, 0);
        for error in &server_errors {
            assert!(
                error.contains("excessive load generating behavior"),
                "{scope:?}: the server failed otherwise: {error}"
            );
        }
        for error in &chaos.failed {
            let calm_down = error.is_go_away() && error.http2_error_code() == Some(0xb);
            assert!(
                error.is_request() && (error.is_reset() || calm_down),
                "{scope:?}: {error:?}"
            );
        }
        assert!(chaos.completed > 1000, "{scope:?}");
    }
}

/// Runs the HTTP/2 stress under `scope` against a scripted server that allows `resets` resets
/// of streams it has not yet accepted, checks the permits afterwards, and returns what came of
/// the requests and the server's errors.
fn h2_stress(scope: ConnectionReuseScope, resets: usize) -> (Chaos, Vec<String>) {
    use pool::ProtocolPolicy;
    use pool_tests::h2::{ScriptedH2Server, StreamPlan};
    let [rt_a, rt_b, test_rt] = stress_runtimes();
    test_rt.block_on(async {
        let server = ScriptedH2Server::builder()
            .default_stream(StreamPlan::ok("payload"))
            .max_pending_accept_reset_streams(resets)
            .start()
            .await;
        let pool = ConnectionPool::builder()
            .partitions(four_partitions(&rt_a, &rt_b))
            .max_connections_per_host(2)
            .connection_reuse_scope(scope)
            .protocol(ProtocolPolicy::Http2PriorKnowledge)
            .build()
            .unwrap();
        let url = server.url("/");
        let key = origin(&url);
        let chaos =
            requests_with_random_cancellation(&pool, &url, 2000, 0x5eed_4321_dcba_0002, || {
                format!(
                    "{scope:?}: {:#?}; the server: streams in flight per connection {:?}, \
                     accepted {:?}, errors {:?}",
                    pool.stats(&key),
                    server.streams_in_flight(),
                    server.streams_per_connection(),
                    server.errors(),
                )
            })
            .await;

        settle(&pool, &key, |s| {
            s.establishing == 0 && s.waiting_requests == 0 && s.h2_active_streams == 0
        })
        .await;
        let stats = pool.stats(&key);
        assert!(stats.admitted() <= 2, "{scope:?}: {stats:#?}");
        assert_eq!(stats.admitted(), stats.total().h2_accepting, "{scope:?}");
        let leaked = 2 - stats.available_permits().unwrap() - stats.admitted();
        assert_eq!(leaked, 0, "{scope:?}: leaked permits: {stats:#?}");
        (chaos, server.errors())
    })
}

/// A bounded origin whose cells empty and retire between bursts, in two partitions, while new
/// origins keep both partitions sweeping: the origin leaves the pool (its cells in both
/// partitions, and with them its admission) and comes back, and at no time does it have more
/// than its bound of connections open (an origin with two admissions at once could open twice
/// as many). Every request succeeds: one whose cell retired under it, or whose partition's
/// delivery was refused, still gets a connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_origin_keeps_its_bound_while_its_cells_come_and_go() {
    const ROUNDS: usize = 8;
    let hot = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("h"))).await;
    let cold = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("c"))).await;
    let pool = ConnectionPool::builder()
        .partitions(partitions(2))
        .max_connections_per_host(2)
        .resolver(EveryName(cold.addr()))
        .build()
        .unwrap();
    let hot_url = hot.url("/");
    let cold_port = cold.addr().port();
    // Every request asks for its connection to close, so nothing stays in a cell after it.
    let burst = |round: usize, phase: &str, cold_origins: usize, hot_requests: usize| {
        let mut tasks = JoinSet::new();
        for p in 0..2 {
            let client = pool.client_for(PartitionId::from_index(p)).unwrap();
            let mut urls: Vec<String> = (0..cold_origins)
                .map(|i| format!("http://r{round}{phase}p{p}o{i}.test:{cold_port}/"))
                .collect();
            for h in 0..hot_requests {
                urls.insert(h * 4, hot_url.clone());
            }
            for url in urls {
                let client = client.clone();
                tasks.spawn(async move {
                    let mut request = get(&url);
                    request
                        .headers_mut()
                        .insert(http::header::CONNECTION, "close".parse().unwrap());
                    let response = client.request(request).await;
                    let response = response.unwrap_or_else(|e| panic!("{url}: {e}"));
                    response.into_body().collect().await.unwrap();
                });
            }
        }
        async move {
            let all = async {
                while let Some(joined) = tasks.join_next().await {
                    joined.unwrap();
                }
            };
            tokio::time::timeout(LIMIT, all)
                .await
                .expect("every request finished");
        }
    };
    let hot_origin = origin(&hot_url);
    let mut left = 0;
    for round in 0..ROUNDS {
        // New origins only, enough to take each partition past its sweep threshold (64 cells
        // after a sweep left few) while the hot origin has nothing in it.
        burst(round, "a", 64, 0).await;
        if !pool.origins().contains(&hot_origin) {
            left += 1;
        }
        // The hot origin beside new origins, whose sweeps now race its lookups.
        burst(round, "b", 24, 6).await;
        settle(&pool, &hot_origin, |s| s.physically_live == 0).await;
    }
    assert!(
        hot.max_open() <= 2,
        "the hot origin had {} connections open at once",
        hot.max_open()
    );
    assert_eq!(hot.requests().len(), ROUNDS * 2 * 6);
    assert!(left > 0, "the hot origin left the pool in some round");
}
