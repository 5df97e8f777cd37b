//! A peer that vanishes without a word: no FIN, no reset, nothing answers any more (a host
//! gone, a NAT or load balancer that forgot the flow), checked against the kernel's own TCP.
//!
//! On loopback the kernel answers for every peer, so [`check`] runs a copy of the calling test
//! under `unshare -rn` (a network namespace with a user namespace, so that no privilege is
//! needed), where taking the namespace's own `lo` down silences every connection at once while
//! both ends stay open: what a vanished peer looks like from the client.
//!
//! Three pools each leave one idle connection to one server: one with keepalive probing after
//! 1 s (every 1 s, 2 probes), one with `TCP_USER_TIMEOUT` of 1 s and no keepalive, one with
//! neither. Then `lo` goes down. The probing pool's connection must end with the kernel's
//! `ETIMEDOUT` while idle, when the silent pool's connection is still there; a POST (not
//! re-sent: it may have been processed) written into the user-timeout pool's connection must
//! fail with `ETIMEDOUT`, when the same POST into the silent pool's connection still waits.
//! Both closes must say what the transport met.
//!
//! [`Check::Unanswered`] dials an address whose SYNs go unanswered (TEST-NET-1 routed into the
//! namespace's `lo`, where no host takes them): with `TCP_USER_TIMEOUT` of 1 s and no connect
//! timeout the connect must fail with the kernel's `ETIMEDOUT`, a connect error that is a
//! timeout but not the pool's connect timeout (a pool whose own connect timeout is shorter ends
//! it first, naming the TCP connect as the step it ended; a name whose first address is that
//! one and whose second answers connects to the second after happy eyeballs' delay), while
//! the same connect without the user timeout
//! still waits on the kernel's SYN retries (over two minutes), and the pool must hold nothing
//! afterwards.
//!
//! Without `unshare` or `ip` (`.ci/run` installs both) or where namespaces are not allowed,
//! [`check`] prints one line saying so and returns.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::Command;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use pool::{ConnectStep, ConnectionPool, PartitionStats, ProtocolPolicy};

use crate::client::{fetch, get, origin, settle};
use crate::events::{EventLog, observed};
use crate::h1::{ConnPlan, Reply, ScriptedH1Server};
use crate::h2::{ScriptedH2Server, StreamPlan};
use crate::resolve::FixedResolver;

/// Set in the environment of the copy that runs in its own namespace.
const IN_NETNS: &str = "POOL_TESTS_IN_NETNS";

/// The protocol the connections speak.
#[derive(Clone, Copy, Debug)]
pub enum Over {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2 by prior knowledge.
    H2c,
}

/// What [`check`] runs in the namespace.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// Idle and busy connections whose peer vanishes, over this protocol.
    Vanish(Over),
    /// A connect nothing answers.
    Unanswered,
}

/// Runs `what` (see the module docs) from the test called `test` (its exact name in the
/// calling test binary, which runs again in the namespace).
pub fn check(test: &str, what: Check) {
    if in_own_namespace(test) {
        in_this_namespace(what);
    }
}

/// Runs the test called `test` (its exact name in the calling test binary) again in a network
/// namespace of its own, with `lo` up: `true` in that copy, where the caller goes on with what
/// it checks there, `false` in the calling run once the copy passed (or after one line saying
/// why no namespace could be made).
pub fn in_own_namespace(test: &str) -> bool {
    if std::env::var_os(IN_NETNS).is_some() {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new("unshare")
        .args(["-rn", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""])
        .arg(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(IN_NETNS, "1")
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            eprintln!("skipped: `unshare` could not be run ({e}); `.ci/run` installs it");
            return false;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() && stdout.is_empty() {
        // `unshare` or `ip` itself failed: no namespace (the test binary never ran).
        eprintln!("skipped: no network namespace here: {}", stderr.trim());
        return false;
    }
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "the copy in its own namespace:\n{stdout}\n{stderr}"
    );
    false
}

/// The check itself, in the namespace with `lo` up.
fn in_this_namespace(what: Check) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match what {
        Check::Vanish(over) => runtime.block_on(vanish(over)),
        Check::Unanswered => runtime.block_on(unanswered()),
    }
}

/// `ip ARGS`, which must succeed (in the namespace).
pub fn ip(args: &[&str]) {
    let status = Command::new("ip").args(args).status().unwrap();
    assert!(status.success(), "ip {}: {status}", args.join(" "));
}

async fn vanish(over: Over) {
    // Either server lives to the end of the check.
    let (_h1, _h2, url) = match over {
        Over::Http1 => {
            let server =
                ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
            let url = server.url("/");
            (Some(server), None, url)
        }
        Over::H2c => {
            let server = ScriptedH2Server::start_with(StreamPlan::ok("x")).await;
            let url = server.url("/");
            (None, Some(server), url)
        }
    };
    let idle = |s: &PartitionStats| match over {
        Over::Http1 => s.h1_idle == 1,
        Over::H2c => s.h2_accepting == 1 && s.h2_active_streams == 0,
    };
    let key = origin(&url);
    let second = Duration::from_secs(1);
    let quiet = || {
        let builder = ConnectionPool::builder()
            .tcp_keepalive(None)
            .tcp_user_timeout(None);
        match over {
            Over::Http1 => builder,
            Over::H2c => builder.protocol(ProtocolPolicy::Http2PriorKnowledge),
        }
    };
    let (probing, probing_client, probing_events) = observed(
        quiet()
            .tcp_keepalive(Some(second))
            .tcp_keepalive_interval(Some(second))
            .tcp_keepalive_retries(Some(2)),
    );
    let (bounded, bounded_client, bounded_events) =
        observed(quiet().tcp_user_timeout(Some(second)));
    let (silent, silent_client, silent_events) = observed(quiet());
    for client in [&probing_client, &bounded_client, &silent_client] {
        fetch(client, &url).await;
    }
    for pool in [&probing, &bounded, &silent] {
        settle(pool, &key, idle).await;
    }

    ip(&["link", "set", "lo", "down"]);

    // Keepalive: after 1 s of silence and two unanswered probes, about 3 s.
    tokio::time::timeout(20 * second, probing_events.wait_for_closed(1))
        .await
        .expect("the probing pool's idle connection ends");
    assert_timed_out(&probing_events);
    settle(&probing, &key, |s| *s == PartitionStats::default()).await;
    // The same silence, no probes: nothing noticed.
    assert!(
        idle(&silent.stats(&key).total()),
        "{:?}",
        silent.stats(&key)
    );
    assert!(silent_events.closed().is_empty());

    // TCP_USER_TIMEOUT: a request written into the dead connection fails in about 1 s,
    // while the same request into the connection without it still waits.
    let post = |client: &pool::Client| {
        let request = Request::post(url.as_str())
            .body(Full::new(Bytes::from_static(b"payload")))
            .unwrap();
        let client = client.clone();
        async move { client.request(request).await }
    };
    let waiting = post(&silent_client);
    tokio::pin!(waiting);
    timed_out_first(post(&bounded_client), waiting.as_mut(), "request").await;
    assert!(bounded_events.resent().is_empty(), "a POST is not re-sent");
    // Its connection's close says what the transport met, not only that it closed.
    bounded_events.wait_for_closed(1).await;
    assert_timed_out(&bounded_events);
    settle(&bounded, &key, |s| *s == PartitionStats::default()).await;
    assert!(
        now(waiting.as_mut()).is_none(),
        "without a user timeout the request still waits"
    );
}

async fn unanswered() {
    // TEST-NET-1 (RFC 5737) into `lo`: nothing here has the address, so nothing answers.
    ip(&["route", "add", "192.0.2.0/24", "dev", "lo"]);
    let url = "http://192.0.2.1/";
    let second = Duration::from_secs(1);
    let pool = |user_timeout| {
        ConnectionPool::builder()
            .connect_timeout(None)
            .tcp_user_timeout(user_timeout)
            .build()
            .unwrap()
    };
    // The pool's own connect timeout, shorter than the user timeout, ends it first and says
    // where: in the TCP connect.
    let timed = ConnectionPool::builder()
        .connect_timeout(Some(second / 2))
        .build()
        .unwrap();
    let error = timed.client().unwrap().request(get(url)).await.unwrap_err();
    assert!(
        error.is_connect_timeout() && error.connect_timed_out_during() == Some(ConnectStep::Dial),
        "{error:#}"
    );
    // Happy eyeballs against the kernel: a name whose first address drops the SYN and whose
    // second answers connects to the second once the attempt delay (250 ms) has passed.
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("up"))).await;
    let port = server.addr().port();
    let dropped = SocketAddr::from(([192, 0, 2, 1], port));
    let resolver = FixedResolver::new([("dual.test", vec![dropped, server.addr()])]);
    let dual = ConnectionPool::builder()
        .resolver(resolver)
        .build()
        .unwrap();
    let started = Instant::now();
    let (handle, body) = fetch(
        &dual.client().unwrap(),
        &format!("http://dual.test:{port}/"),
    )
    .await;
    assert_eq!(body, "up");
    assert_eq!(handle.info().remote_addr(), Some(server.addr()));
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "the second address waited for the delay: {:?}",
        started.elapsed()
    );
    let (bounded, silent) = (pool(Some(second)), pool(None));
    let request = |pool: &ConnectionPool| {
        let client = pool.client().unwrap();
        async move { client.request(get(url)).await }
    };
    let waiting = request(&silent);
    tokio::pin!(waiting);
    let error = timed_out_first(request(&bounded), waiting.as_mut(), "connect").await;
    assert!(
        error.is_connect() && !error.is_connect_timeout(),
        "{error:#}"
    );
    settle(&bounded, &origin(url), |s| *s == PartitionStats::default()).await;
    assert!(
        now(waiting.as_mut()).is_none(),
        "without a user timeout the connect still waits"
    );
}

/// The error of `bounded` (a request on a pool with a user timeout), which must fail within
/// 20 s and before `waiting` (the same `what` on a pool without one) ends, with the kernel's
/// `ETIMEDOUT`: a timeout, and neither the pool's read timeout nor its pool timeout.
async fn timed_out_first<T, W: Future>(
    bounded: impl Future<Output = Result<T, pool::Error>>,
    waiting: Pin<&mut W>,
    what: &str,
) -> pool::Error {
    let failed = tokio::select! {
        result = tokio::time::timeout(Duration::from_secs(20), bounded) => {
            result.unwrap_or_else(|_| panic!("the user timeout ends the {what}"))
        }
        _ = waiting => panic!("the {what} without a user timeout ended first"),
    };
    let Err(error) = failed else {
        panic!("the {what} into silence succeeded");
    };
    let chain = format!("{error:#}");
    assert!(
        chain.contains("timed out"),
        "the kernel's ETIMEDOUT: {chain}"
    );
    assert!(
        error.is_timeout() && error.is_system_timeout(),
        "the system's timeout: {chain}"
    );
    assert!(
        !error.is_read_timeout() && !error.is_pool_timeout(),
        "{chain}"
    );
    error
}

/// The one close in `events` was the protocol's, and it names the kernel's `ETIMEDOUT`.
fn assert_timed_out(events: &EventLog) {
    assert!(events.closed_once_reading("timed out"), "{events:?}");
}

/// `future` polled once: its output if it is ready.
fn now<F: Future>(future: Pin<&mut F>) -> Option<F::Output> {
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}
