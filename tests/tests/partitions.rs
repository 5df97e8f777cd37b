//! Partitions and observation: placement on the owner runtime, owner shutdown, interface
//! binding, gauges after a burst, lifecycle events and listener panics.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pool::{
    BoxFuture, CloseReason, ConnectionEventListener, ConnectionInfo, ConnectionPool, DriverSpawner,
    Partition, PartitionId, TokioDriverSpawner,
};
use pool_tests::client::{fetch, get, origin, settle};
use pool_tests::events::{Event, EventLog, observed};
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::JoinSet;

const LIMIT: Duration = Duration::from_secs(20);

fn runtime(name: &'static str) -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
        .unwrap()
}

/// Counts the futures a partition submits and records the thread that first polls each.
#[derive(Debug, Clone)]
struct RecordingSpawner {
    handle: Handle,
    submitted: Arc<std::sync::atomic::AtomicUsize>,
    polled_on: Arc<Mutex<Vec<String>>>,
}

impl RecordingSpawner {
    fn new(handle: Handle) -> RecordingSpawner {
        RecordingSpawner {
            handle,
            submitted: Arc::default(),
            polled_on: Arc::default(),
        }
    }

    fn submitted(&self) -> usize {
        self.submitted.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn threads(&self) -> Vec<String> {
        self.polled_on.lock().unwrap().clone()
    }
}

impl DriverSpawner for RecordingSpawner {
    fn spawn(&self, future: BoxFuture) {
        self.submitted
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let log = self.polled_on.clone();
        self.handle.spawn(async move {
            log.lock()
                .unwrap()
                .push(std::thread::current().name().unwrap_or("?").to_owned());
            future.await
        });
    }
}

/// A request polled on runtime B through partition A: the connection's establishment, driver
/// and maintenance all run on runtime A, and a reuse submits nothing at all.
#[test]
fn establishment_and_driver_run_on_the_owner_runtime() {
    let (rt_a, rt_b, server_rt) = (
        runtime("runtime-a"),
        runtime("runtime-b"),
        runtime("server"),
    );
    let server = server_rt.block_on(ScriptedH1Server::start_with(ConnPlan::serve_forever(
        Reply::ok("x"),
    )));
    let spawner_a = RecordingSpawner::new(rt_a.handle().clone());
    let spawner_b = RecordingSpawner::new(rt_b.handle().clone());
    let (a, b) = (PartitionId::from_index(0), PartitionId::from_index(1));
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions([
            Partition::new(a, spawner_a.clone()),
            Partition::new(b, spawner_b.clone()),
        ])
        .event_listener(events.clone())
        // An idle deadline, so that the first return starts the maintenance task.
        .idle_timeout(Some(std::time::Duration::from_secs(90)))
        .build()
        .unwrap();
    let client = pool.client_for(a).unwrap();
    let url = server.url("/");

    let (first, _) = rt_b.block_on(async {
        let (handle, body) = fetch(&client, &url).await;
        settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
        // The first return to idle also starts partition A's maintenance task, but it arms
        // the idle deadline after the cell's lock is released: the gauge can read 1 before
        // that task is submitted. Wait for it too, or it lands in the reuse below.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while spawner_a.submitted() < 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "no maintenance task: {:?}",
                spawner_a.threads()
            );
            tokio::task::yield_now().await;
        }
        (handle, body)
    });
    let submitted = spawner_a.threads();
    assert!(
        submitted.len() >= 2,
        "establishment and driver at least: {submitted:?}"
    );
    assert!(submitted.iter().all(|t| t == "runtime-a"), "{submitted:?}");
    assert!(
        spawner_b.threads().is_empty(),
        "partition B was never involved"
    );
    assert_eq!(first.info().partition(), a);
    assert_eq!(events.created()[0].partition(), a);

    let before = spawner_a.submitted();
    let (second, _) = rt_b.block_on(async {
        let fetched = fetch(&client, &url).await;
        settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
        fetched
    });
    assert_eq!(second.id(), first.id());
    assert_eq!(
        spawner_a.submitted(),
        before,
        "a reuse (and the return after it) submits no work"
    );
}

/// Shutting down partition A's runtime closes A's connections as `OwnerRuntimeShutdown`;
/// requests through partition B keep succeeding, and a new request through A fails instead of
/// hanging.
#[test]
fn owner_runtime_shutdown_closes_its_connections_only() {
    let (rt_a, rt_b, server_rt, test_rt) = (
        runtime("runtime-a"),
        runtime("runtime-b"),
        runtime("server"),
        runtime("test"),
    );
    let server = server_rt.block_on(ScriptedH1Server::start_with(ConnPlan::serve_forever(
        Reply::ok("x"),
    )));
    let (a, b) = (PartitionId::from_index(0), PartitionId::from_index(1));
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions([
            Partition::new(a, TokioDriverSpawner::from_handle(rt_a.handle().clone())),
            Partition::new(b, TokioDriverSpawner::from_handle(rt_b.handle().clone())),
        ])
        .event_listener(events.clone())
        .build()
        .unwrap();
    let (client_a, client_b) = (pool.client_for(a).unwrap(), pool.client_for(b).unwrap());
    let url = server.url("/");
    let key = origin(&url);

    let (conn_a, conn_b) = test_rt.block_on(async {
        let (conn_a, _) = fetch(&client_a, &url).await;
        let (conn_b, _) = fetch(&client_b, &url).await;
        settle(&pool, &key, |s| s.h1_idle == 2).await;
        (conn_a, conn_b)
    });
    assert_ne!(conn_a.id(), conn_b.id());

    rt_a.shutdown_timeout(LIMIT);

    test_rt.block_on(async {
        tokio::time::timeout(LIMIT, events.wait_for_closed(1))
            .await
            .unwrap();
        assert_eq!(
            events.closed(),
            vec![(conn_a.id(), CloseReason::OwnerRuntimeShutdown)]
        );
        for _ in 0..3 {
            let (again, body) = fetch(&client_b, &url).await;
            assert_eq!(body, "x");
            // B's connection is driven on runtime B while this test reads on another runtime,
            // so a request may race the previous connection's return and get a fresh one;
            // either way it is B's and B is unaffected by A's shutdown.
            assert_eq!(again.info().partition(), b);
            assert!(
                events.closed().iter().all(|(id, _)| *id == conn_a.id()),
                "only A's connection closed"
            );
        }
        let error = tokio::time::timeout(LIMIT, client_a.request(get(&url)))
            .await
            .unwrap()
            .expect_err("A's runtime is gone");
        assert!(error.is_canceled(), "{error:?}");
        let row = pool.stats(&key).get(a).copied().unwrap();
        assert_eq!(
            (row.establishing, row.waiting_requests, row.admitted()),
            (0, 0, 0),
            "{row:?}"
        );
    });
}

#[tokio::test]
async fn a_missing_interface_is_a_connect_error_at_establishment() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let p = PartitionId::from_index(0);
    let pool = ConnectionPool::builder()
        .partitions([Partition::new(p, TokioDriverSpawner::current()).interface("pool-none0")])
        .build()
        .expect("an interface is not checked at build time");
    let client = pool.client_for(p).unwrap();
    let error = client
        .request(get(&server.url("/")))
        .await
        .expect_err("no such interface");
    assert!(error.is_connect() && error.is_interface(), "{error:?}");
    assert!(format!("{error:#}").contains("pool-none0"), "{error:#}");
}

/// Partitions with these identities, all on the current runtime.
fn on_this_runtime(ids: [PartitionId; 2]) -> [Partition; 2] {
    ids.map(|id| Partition::new(id, TokioDriverSpawner::current()))
}

/// After a concurrent burst settles: nothing establishing or waiting, every admitted connection
/// idle, and the events account for every live connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gauges_and_events_agree_after_a_burst() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let events = EventLog::new();
    let (p0, p1) = (PartitionId::from_index(0), PartitionId::from_index(1));
    let pool = ConnectionPool::builder()
        .partitions(on_this_runtime([p0, p1]))
        .event_listener(events.clone())
        .build()
        .unwrap();
    let url = server.url("/");
    let mut tasks = JoinSet::new();
    for i in 0..200 {
        let client = pool.client_for(if i % 2 == 0 { p0 } else { p1 }).unwrap();
        let url = url.clone();
        tasks.spawn(async move { fetch(&client, &url).await });
    }
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap().1, "x");
    }
    let key = origin(&url);
    // Attempts launched by requests that a returning connection served first finish in the
    // background and land in the idle set; the burst has settled once they have.
    settle(&pool, &key, |s| s.h1_active == 0 && s.establishing == 0).await;
    let stats = pool.stats(&key);
    let total = stats.total();
    assert_eq!(total.establishing, 0);
    assert_eq!(total.waiting_requests, 0);
    assert_eq!(stats.admitted(), total.h1_idle + total.h2_accepting);
    let live = events.created().len() - events.closed().len();
    assert_eq!(live, total.h1_idle, "created - closed = live connections");
    assert_eq!(server.accepted(), events.created().len());
    assert_eq!(stats.iter().count(), 2, "a row per partition");
    assert!(stats.get(p0).is_some() && stats.get(p1).is_some());
    assert_eq!(pool.origins(), vec![key]);
}

/// `max_idle_connections` under a concurrent burst over eight origins and two partitions on
/// two threads, unbounded and with `max_connections_per_host(2)`: once it settles, exactly the
/// cap's number of connections are idle across the pool, every other connection closed with
/// `IdleLimit` (the races between returns over the cap close neither too few nor too many) or,
/// bounded, `Reclaimed` (a permit moving to the other partition), and nothing else closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_cap_holds_across_partitions_under_a_burst() {
    const CAP: usize = 3;
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let port = server.addr().port();
    let urls: Vec<String> = (0..8)
        .map(|i| format!("http://o{i}.test:{port}/"))
        .collect();
    let (p0, p1) = (PartitionId::from_index(0), PartitionId::from_index(1));
    for bound in [None, Some(2)] {
        let events = EventLog::new();
        let mut builder = ConnectionPool::builder()
            .partitions(on_this_runtime([p0, p1]))
            .max_idle_connections(CAP)
            .resolver(pool_tests::resolve::EveryName(server.addr()))
            .event_listener(events.clone());
        if let Some(bound) = bound {
            builder = builder.max_connections_per_host(bound);
        }
        let pool = builder.build().unwrap();
        let mut tasks = JoinSet::new();
        for i in 0..64 {
            let client = pool.client_for(if i % 2 == 0 { p0 } else { p1 }).unwrap();
            let urls = urls.clone();
            tasks.spawn(async move {
                for round in 0..10 {
                    let (_, body) = fetch(&client, &urls[(i + round) % urls.len()]).await;
                    assert_eq!(body, "x");
                }
            });
        }
        while let Some(result) = tasks.join_next().await {
            result.unwrap();
        }
        let idle = || -> usize {
            urls.iter()
                .map(|url| pool.stats(&origin(url)).total().h1_idle)
                .sum()
        };
        for url in &urls {
            settle(&pool, &origin(url), |s| {
                s.h1_active == 0 && s.establishing == 0 && s.waiting_requests == 0
            })
            .await;
        }
        assert_eq!(idle(), CAP, "bound {bound:?}");
        let created = events.created().len();
        assert!(created > CAP, "the burst opened {created} connections");
        let (capped, reclaimed) = (
            events.closed_with(CloseReason::IdleLimit),
            events.closed_with(CloseReason::Reclaimed),
        );
        assert!(capped > 0, "bound {bound:?}");
        if bound.is_none() {
            assert_eq!(reclaimed, 0);
        }
        assert_eq!(capped + reclaimed, created - CAP, "bound {bound:?}");
        assert_eq!(events.closed().len(), created - CAP, "no other close");
    }
}

/// A listener that panics on the first close of the idle cap: the task that returned the
/// connection unwinds, the victim is closed all the same, and the cap still holds exactly
/// afterwards (the victim being closed is not left counted out of the idle total, which would
/// keep one connection too many idle for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_panicking_on_the_idle_caps_close_leaves_the_cap_exact() {
    #[derive(Clone, Default)]
    struct PanicsOnce {
        panicked: Arc<std::sync::atomic::AtomicBool>,
    }
    impl ConnectionEventListener for PanicsOnce {
        fn connection_closed(
            &self,
            _: &ConnectionInfo,
            reason: CloseReason,
            _: Option<&(dyn std::error::Error + Send + Sync + 'static)>,
        ) {
            let first = !self
                .panicked
                .swap(true, std::sync::atomic::Ordering::SeqCst);
            if reason == CloseReason::IdleLimit && first {
                panic!("listener bug: closed");
            }
        }
    }
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let port = server.addr().port();
    let url = move |name: &str| format!("http://{name}.test:{port}/");
    let pool = ConnectionPool::builder()
        .max_idle_connections(1)
        .resolver(pool_tests::resolve::EveryName(server.addr()))
        .event_listener(PanicsOnce::default())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let idle = |names: &[&str]| -> usize {
        names
            .iter()
            .map(|name| pool.stats(&origin(&url(name))).total().h1_idle)
            .sum()
    };
    fetch(&client, &url("a")).await;
    // b's return closes a, and the listener panics on that close in whichever task returned
    // b: this one (its join is then the panic) or b's connection driver.
    let _panicked_or_not = tokio::spawn({
        let (client, url) = (client.clone(), url("b"));
        async move { fetch(&client, &url).await }
    })
    .await;
    settle(&pool, &origin(&url("a")), |s| {
        s.h1_idle == 0 && s.physically_live == 0
    })
    .await;
    for name in ["c", "d"] {
        fetch(&client, &url(name)).await;
        settle(&pool, &origin(&url(name)), |s| s.h1_active == 0).await;
    }
    assert_eq!(
        idle(&["a", "b", "c", "d"]),
        1,
        "the cap holds after the panic"
    );
}

/// A listener that panics on every callback: the task that raised the event unwinds, the pool's
/// accounting stays exact, and other requests are unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_listener_unwinds_only_the_task_that_raised_the_event() {
    #[derive(Clone, Default)]
    struct Panicky {
        calls: Arc<Mutex<Vec<&'static str>>>,
    }
    impl ConnectionEventListener for Panicky {
        fn connection_created(&self, _: &ConnectionInfo) {
            self.calls.lock().unwrap().push("created");
            panic!("listener bug: created");
        }
        fn connection_closed(
            &self,
            _: &ConnectionInfo,
            _: CloseReason,
            _: Option<&(dyn std::error::Error + Send + Sync + 'static)>,
        ) {
            self.calls.lock().unwrap().push("closed");
            panic!("listener bug: closed");
        }
    }
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let listener = Panicky::default();
    let pool = ConnectionPool::builder()
        .event_listener(listener.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");

    // The created event panics in the establishment task; the request is still served.
    let (handle, body) = tokio::time::timeout(LIMIT, fetch(&client, &url))
        .await
        .unwrap();
    assert_eq!(body, "x");
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;

    // The closed event panics in the task that poisons the connection; the pool stays exact.
    let poisoner = tokio::spawn(async move { handle.poison() });
    assert!(poisoner.await.unwrap_err().is_panic());
    settle(&pool, &origin(&url), |s| {
        s.h1_idle == 0 && s.admitted() == 0
    })
    .await;
    let (next, _) = tokio::time::timeout(LIMIT, fetch(&client, &url))
        .await
        .unwrap();
    assert!(!next.is_reused());
    assert!(
        listener
            .calls
            .lock()
            .unwrap()
            .starts_with(&["created", "closed", "created"])
    );

    // Dropping the pool closes the idle connection; the panic reaches the dropping task only
    // after every connection was closed.
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
    let dropper = tokio::spawn(async move {
        drop(client);
        drop(pool);
    });
    assert!(dropper.await.unwrap_err().is_panic());
    assert_eq!(
        listener
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| **c == "closed")
            .count(),
        2
    );
}

#[tokio::test]
async fn responses_identify_their_connection_and_events_carry_the_same_info() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let (_pool, client, events) = observed(ConnectionPool::builder());
    let (handle, _) = fetch(&client, &server.url("/")).await;
    let info = handle.info();
    assert_eq!(info.remote_addr(), Some(server.addr()));
    assert!(info.local_addr().is_some());
    assert!(info.partition().is_anonymous());
    assert_eq!(info.origin(), &origin(&server.url("/")));
    let created = events.created();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].id(), handle.id());
    assert!(matches!(events.events()[0], Event::Created(_)));
}
