//! The cancellation matrix: a request future dropped at each ownership boundary of a bounded
//! origin (N = 2). After each, nothing is left establishing or waiting, admitted equals the live
//! idle connections, and the origin still serves N requests at once: no permit leaked.
//!
//! Timing is controlled with gates only: the server holds responses at gates, and an injected
//! connector parks the establishment before dialing, in the middle of TLS, or before hyper's
//! HTTP/2 handshake can flush a byte.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pool::{ConnectionPool, ProtocolPolicy};
use pool_tests::client::{fetch, get, origin, settle};
use pool_tests::gate::Gate;
use pool_tests::gated::{GatedConnector, Gates};
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::h2::{ScriptedH2Server, StreamPlan};
use pool_tests::tls::TestPki;
use tokio::task::JoinSet;

const N: usize = 2;
const LIMIT: Duration = Duration::from_secs(20);

/// Which gate the server's replies currently wait on (an opened one by default).
#[derive(Clone)]
struct Holds(Arc<Mutex<Gate>>);

impl Holds {
    fn new() -> Holds {
        Holds(Arc::new(Mutex::new(Gate::opened())))
    }

    /// Replies from now on wait on a fresh closed gate, returned.
    fn hold(&self) -> Gate {
        let gate = Gate::new();
        *self.0.lock().unwrap() = gate.clone();
        gate
    }

    fn current(&self) -> Gate {
        self.0.lock().unwrap().clone()
    }
}

async fn h1_server(holds: &Holds, tls: Option<Arc<rustls::ServerConfig>>) -> ScriptedH1Server {
    let holds = holds.clone();
    let plan = ConnPlan::serve_with(move |_| Reply::ok("x").gate(holds.current()));
    let mut builder = ScriptedH1Server::builder().default_plan(plan);
    if let Some(tls) = tls {
        builder = builder.tls(tls);
    }
    builder.start().await
}

fn bounded_pool(connector: GatedConnector) -> pool::Builder {
    ConnectionPool::builder()
        .connector(connector)
        .max_connections_per_host(N)
}

/// The invariants every case ends with, then the no-leak proof: N requests at the server at
/// once while its replies are held.
async fn assert_clean(pool: &ConnectionPool, url: &str, holds: &Holds) {
    let key = origin(url);
    settle(pool, &key, |s| {
        s.establishing == 0
            && s.waiting_requests == 0
            && s.h1_active == 0
            && s.h2_active_streams == 0
    })
    .await;
    let stats = pool.stats(&key);
    let total = stats.total();
    assert_eq!(
        stats.admitted(),
        total.h1_idle + total.h2_accepting,
        "{total:?}"
    );

    let gate = holds.hold();
    let client = pool.client().unwrap();
    let mut tasks = JoinSet::new();
    for _ in 0..N {
        let (client, url) = (client.clone(), url.to_owned());
        tasks.spawn(async move { fetch(&client, &url).await });
    }
    tokio::time::timeout(LIMIT, gate.wait_arrived(N))
        .await
        .expect("N requests in flight at once: no leaked permit");
    gate.open();
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap().1, "x");
    }
}

/// Spawns a request and returns its task, to be aborted at the boundary under test.
fn spawn_request(pool: &ConnectionPool, url: &str) -> tokio::task::JoinHandle<()> {
    let (client, url) = (pool.client().unwrap(), url.to_owned());
    tokio::spawn(async move {
        let _ = client.request(get(&url)).await;
    })
}

async fn abort(task: tokio::task::JoinHandle<()>) {
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
}

#[tokio::test]
async fn cancelled_while_queued_for_a_permit() {
    let holds = Holds::new();
    let server = h1_server(&holds, None).await;
    let pool = bounded_pool(GatedConnector::new([])).build().unwrap();
    let url = server.url("/");
    let gate = holds.hold();
    let busy: Vec<_> = (0..N).map(|_| spawn_request(&pool, &url)).collect();
    tokio::time::timeout(LIMIT, gate.wait_arrived(N))
        .await
        .unwrap();
    let queued = spawn_request(&pool, &url);
    settle(&pool, &origin(&url), |s| s.waiting_requests == 1).await;
    abort(queued).await;
    settle(&pool, &origin(&url), |s| s.waiting_requests == 0).await;
    gate.open();
    for task in busy {
        task.await.unwrap();
    }
    assert_clean(&pool, &url, &holds).await;
}

#[tokio::test]
async fn cancelled_during_connect() {
    let holds = Holds::new();
    let server = h1_server(&holds, None).await;
    let dial = Gate::new();
    let pool = bounded_pool(GatedConnector::new([Gates {
        before_dial: Some(dial.clone()),
        ..Default::default()
    }]))
    .build()
    .unwrap();
    let url = server.url("/");
    let request = spawn_request(&pool, &url);
    tokio::time::timeout(LIMIT, dial.wait_arrived(1))
        .await
        .unwrap();
    abort(request).await;
    // The establishment belongs to the pool now; it finishes and the connection idles.
    dial.open();
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
    assert_clean(&pool, &url, &holds).await;
}

#[tokio::test]
async fn cancelled_during_tls() {
    let pki = TestPki::new();
    let holds = Holds::new();
    let server = h1_server(&holds, Some(pki.server_config(&[b"http/1.1"]))).await;
    let handshake = Gate::new();
    let connector = GatedConnector::tls(
        pki.client_config(&[b"http/1.1"]),
        [Gates {
            reads: Some(handshake.clone()),
            ..Default::default()
        }],
    );
    let pool = bounded_pool(connector).build().unwrap();
    let url = server.url("/");
    let request = spawn_request(&pool, &url);
    // The ClientHello went out; the client now waits for the ServerHello at the gate.
    tokio::time::timeout(LIMIT, handshake.wait_arrived(1))
        .await
        .unwrap();
    abort(request).await;
    handshake.open();
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
    assert_clean(&pool, &url, &holds).await;
}

#[tokio::test]
async fn cancelled_during_the_http2_handshake() {
    let holds = Holds::new();
    let server = {
        let holds = holds.clone();
        ScriptedH2Server::builder()
            .handler(move |_| StreamPlan::ok("x").gate(holds.current()))
            .start()
            .await
    };
    let preface = Gate::new();
    let pool = bounded_pool(GatedConnector::new([Gates {
        writes: Some(preface.clone()),
        ..Default::default()
    }]))
    .protocol(ProtocolPolicy::Http2PriorKnowledge)
    .build()
    .unwrap();
    let url = server.url("/");
    let request = spawn_request(&pool, &url);
    // hyper's handshake is flushing the connection preface and cannot.
    tokio::time::timeout(LIMIT, preface.wait_arrived(1))
        .await
        .unwrap();
    abort(request).await;
    preface.open();
    settle(&pool, &origin(&url), |s| s.h2_accepting == 1).await;
    assert_clean(&pool, &url, &holds).await;
}

#[tokio::test]
async fn cancelled_after_dispatch_before_headers() {
    let holds = Holds::new();
    let server = h1_server(&holds, None).await;
    let pool = bounded_pool(GatedConnector::new([])).build().unwrap();
    let url = server.url("/");
    let gate = holds.hold();
    let request = spawn_request(&pool, &url);
    tokio::time::timeout(LIMIT, gate.wait_arrived(1))
        .await
        .unwrap();
    abort(request).await;
    gate.open();
    // The exchange was cut: its connection is retired, not reused.
    settle(&pool, &origin(&url), |s| {
        s.admitted() == 0 && s.physically_live == 0
    })
    .await;
    assert_clean(&pool, &url, &holds).await;
}

#[tokio::test]
async fn cancelled_during_the_body() {
    let body_gate = Gate::new();
    let holds = Holds::new();
    let server = {
        let (holds, body_gate) = (holds.clone(), body_gate.clone());
        let first = std::sync::atomic::AtomicBool::new(true);
        let plan = ConnPlan::serve_with(move |_| {
            if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                Reply::ok_split("par", body_gate.clone(), "tial")
            } else {
                Reply::ok("x").gate(holds.current())
            }
        });
        ScriptedH1Server::start_with(plan).await
    };
    let pool = bounded_pool(GatedConnector::new([])).build().unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");
    let response = client.request(get(&url)).await.unwrap();
    tokio::time::timeout(LIMIT, body_gate.wait_arrived(1))
        .await
        .unwrap();
    drop(response);
    body_gate.open();
    settle(&pool, &origin(&url), |s| {
        s.admitted() == 0 && s.physically_live == 0
    })
    .await;
    assert_clean(&pool, &url, &holds).await;
}
