//! `cargo xtask soak --secs N [--limit N] [--scope partition|interface|pool]`: a long
//! mixed-fault run against one bounded pool.
//!
//! Two origins on loopback: an HTTP/1.1 server whose replies include `Connection: close`,
//! resets mid-body, clean EOF mid-body, 500s and slow bodies, and a TLS server offering h2
//! whose streams are sometimes reset. One pool, four partitions on two runtimes,
//! `max_connections_per_host = 8` (`--limit`; below 4, fewer permits than partitions, so
//! HTTP/2 streams are lent and permits move between partitions), `max_pending_per_host = 256`,
//! reuse scope `Pool` (`--scope`), a short idle timeout so expiry happens during the run. 64 workers send requests until the time is
//! up; one in five is cancelled after a random number of polls.
//!
//! At the end it waits for the pool to settle and prints requests, outcomes, errors by class,
//! connections created and closed by reason, leaked permits per origin (limit − free permits −
//! admitted connections, which must be 0) and resident memory at start and end. It exits 1 if a
//! permit leaked or the pool did not settle.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use pool::{
    CloseReason, ConnectionEventListener, ConnectionInfo, ConnectionPool, ConnectionReuseScope,
    Partition, PartitionId, TokioDriverSpawner,
};
use pool_tests::chaos::{CancelAfter, XorShift};
use pool_tests::client::{get, origin};
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::h2::{Reason, ScriptedH2Server, StreamPlan};
use pool_tests::tls::TestPki;

const LIMIT: usize = 8;
const WORKERS: usize = 64;

#[derive(Clone, Default)]
struct Counting {
    created: Arc<AtomicU64>,
    closed: Arc<Mutex<BTreeMap<&'static str, u64>>>,
}

impl ConnectionEventListener for Counting {
    fn connection_created(&self, _: &ConnectionInfo) {
        self.created.fetch_add(1, Ordering::Relaxed);
    }

    fn connection_closed(
        &self,
        _: &ConnectionInfo,
        reason: CloseReason,
        _: Option<&(dyn StdError + Send + Sync)>,
    ) {
        *self
            .closed
            .lock()
            .unwrap()
            .entry(reason.as_str())
            .or_default() += 1;
    }
}

#[derive(Default)]
struct Outcomes {
    ok: AtomicU64,
    cancelled: AtomicU64,
    errors: Mutex<BTreeMap<&'static str, u64>>,
}

fn class(error: &pool::Error) -> &'static str {
    if error.is_saturated() {
        "saturated"
    } else if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "connect"
    } else if error.is_go_away() {
        "goaway"
    } else if error.is_reset() {
        "reset"
    } else if error.is_canceled() {
        "canceled"
    } else if error.is_incomplete_message() {
        "incomplete"
    } else {
        "io"
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// What the command line asks for.
struct Options {
    secs: u64,
    /// `max_connections_per_host`.
    limit: usize,
    scope: ConnectionReuseScope,
}

fn parse_options() -> Options {
    let mut options = Options {
        secs: 60,
        limit: LIMIT,
        scope: ConnectionReuseScope::Pool,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--secs" => options.secs = value.parse().unwrap_or_else(|_| usage()),
            "--limit" => {
                options.limit = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .unwrap_or_else(|| usage())
            }
            "--scope" => {
                options.scope = match value.as_str() {
                    "partition" => ConnectionReuseScope::Partition,
                    "interface" => ConnectionReuseScope::NetworkInterface,
                    "pool" => ConnectionReuseScope::Pool,
                    _ => usage(),
                }
            }
            _ => usage(),
        }
    }
    options
}

fn usage() -> ! {
    eprintln!("usage: soak [--secs N] [--limit N] [--scope partition|interface|pool]");
    std::process::exit(2)
}

/// The HTTP/1.1 origin's reply to request number `n` (deterministic mix of faults).
fn h1_reply(n: u64) -> Reply {
    match XorShift::new(n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).below(100) {
        0..=69 => Reply::ok("payload"),
        70..=77 => Reply::ok("bye").connection_close(),
        78..=82 => Reply::ok("partial").declared_length(64).then_reset(),
        83..=87 => Reply::ok("short").declared_length(64).then_close(),
        88..=92 => Reply::new(500).body("oops"),
        _ => Reply::ok("slow").body_delay(Duration::from_millis(2)),
    }
}

fn main() {
    let Options { secs, limit, scope } = parse_options();
    let rss_start = rss_kib();
    let runtime = |name: &str| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(name)
            .enable_all()
            .build()
            .expect("runtime")
    };
    let (server_rt, rt_a, rt_b, load_rt) = (
        runtime("soak-server"),
        runtime("soak-a"),
        runtime("soak-b"),
        runtime("soak-load"),
    );

    let pki = TestPki::new();
    let served = Arc::new(AtomicU64::new(0));
    let (h1, h2) = server_rt.block_on(async {
        let served = served.clone();
        let plan = ConnPlan::serve_with(move |_| h1_reply(served.fetch_add(1, Ordering::Relaxed)));
        let h1 = ScriptedH1Server::builder()
            .default_plan(plan)
            .record_requests(false)
            .start()
            .await;
        let streams = Arc::new(AtomicUsize::new(0));
        let h2 = ScriptedH2Server::builder()
            .record_requests(false)
            .tls(pki.server_config(&[b"h2", b"http/1.1"]))
            .handler(
                move |_| match streams.fetch_add(1, Ordering::Relaxed) % 20 {
                    0 => StreamPlan::reset(Reason::INTERNAL_ERROR),
                    1 => StreamPlan::ok("slow").delay(Duration::from_millis(2)),
                    _ => StreamPlan::ok("h2 payload"),
                },
            )
            .start()
            .await;
        (h1, h2)
    });

    let events = Counting::default();
    let spawner =
        |rt: &tokio::runtime::Runtime| TokioDriverSpawner::from_handle(rt.handle().clone());
    let pool = ConnectionPool::builder()
        .partitions([
            Partition::new(PartitionId::from_index(0), spawner(&rt_a)),
            Partition::new(PartitionId::from_index(1), spawner(&rt_a)),
            Partition::new(PartitionId::from_index(2), spawner(&rt_b)),
            Partition::new(PartitionId::from_index(3), spawner(&rt_b)),
        ])
        .max_connections_per_host(limit)
        .max_pending_per_host(256)
        .connection_reuse_scope(scope)
        .idle_timeout(Some(Duration::from_millis(500)))
        .native_roots(false)
        .add_root_certificates_pem(pki.ca_pem())
        .event_listener(events.clone())
        .build()
        .expect("valid pool");

    let urls = [h1.url("/"), h2.url("/")];
    let outcomes = Arc::new(Outcomes::default());
    let deadline = Instant::now() + Duration::from_secs(secs);
    println!(
        "soak: {secs} s, {WORKERS} workers, 4 partitions on 2 runtimes, N = {limit}, scope {scope:?}; rss at start {rss_start} KiB"
    );

    load_rt.block_on(async {
        let mut workers = tokio::task::JoinSet::new();
        for w in 0..WORKERS {
            let client = pool
                .client_for(PartitionId::from_index((w % 4) as u32))
                .expect("partition");
            let urls = urls.clone();
            let outcomes = outcomes.clone();
            workers.spawn(async move {
                let mut rng = XorShift::new(0xC0FFEE + w as u64);
                let mut n = 0usize;
                while Instant::now() < deadline {
                    let url = urls[n % urls.len()].clone();
                    n += 1;
                    let polls = (rng.below(5) == 0).then(|| rng.below(12) as u32);
                    let client = client.clone();
                    let exchange = async move {
                        let response = client.request(get(&url)).await?;
                        response.into_body().collect().await.map(|b| b.to_bytes())
                    };
                    match CancelAfter::new(exchange, polls).await {
                        None => outcomes.cancelled.fetch_add(1, Ordering::Relaxed),
                        Some(Ok::<Bytes, pool::Error>(_)) => {
                            outcomes.ok.fetch_add(1, Ordering::Relaxed)
                        }
                        Some(Err(error)) => {
                            *outcomes
                                .errors
                                .lock()
                                .unwrap()
                                .entry(class(&error))
                                .or_default() += 1;
                            0
                        }
                    };
                }
            });
        }
        while let Some(result) = workers.join_next().await {
            result.expect("worker panicked");
        }
    });

    // Let everything settle: nothing establishing, waiting or active; sockets of retired
    // connections gone (an HTTP/1 connection holds its permit until then).
    let keys: Vec<_> = urls.iter().map(|u| origin(u)).collect();
    let settle_deadline = Instant::now() + Duration::from_secs(20);
    let settled = loop {
        let quiet = keys.iter().all(|k| {
            let s = pool.stats(k).total();
            s.establishing == 0
                && s.waiting_requests == 0
                && s.h1_active == 0
                && s.h1_draining == 0
                && s.h2_active_streams == 0
        });
        if quiet || Instant::now() > settle_deadline {
            break quiet;
        }
        std::thread::yield_now();
    };

    let mut leaked_total = 0;
    let ok = outcomes.ok.load(Ordering::Relaxed);
    let cancelled = outcomes.cancelled.load(Ordering::Relaxed);
    let errors = outcomes.errors.lock().unwrap().clone();
    let failed: u64 = errors.values().sum();
    println!(
        "requests: {} (ok {ok}, failed {failed}, cancelled {cancelled})",
        ok + failed + cancelled
    );
    println!("errors by class: {errors:?}");
    println!(
        "connections: created {}, closed by reason {:?}",
        events.created.load(Ordering::Relaxed),
        events.closed.lock().unwrap()
    );
    println!("pool counters: {:?}", pool.counters());
    for key in &keys {
        let stats = pool.stats(key);
        let limit = stats.limit().unwrap_or(0);
        let leaked =
            limit.saturating_sub(stats.available_permits().unwrap_or(0) + stats.admitted());
        leaked_total += leaked;
        println!(
            "origin {key}: admitted {} (idle), free permits {:?}, leaked permits {leaked}",
            stats.admitted(),
            stats.available_permits()
        );
    }
    println!("settled: {settled}");
    println!("leaked permits: {leaked_total}");
    println!("rss: start {rss_start} KiB, end {} KiB", rss_kib());
    drop(pool);
    if leaked_total > 0 || !settled {
        std::process::exit(1);
    }
}
