//! Scenarios 6 to 8: partitions. How throughput scales with partitions on an in-memory
//! transport (bounded and not), where a bounded origin's permits settle across partitions in
//! steady state under each reuse scope, and how long a lightly loaded partition waits beside a
//! heavily loaded one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use hdrhistogram::Histogram;
use http::{Request, Uri};
use http_body_util::{BodyExt, Empty};
use pool::{
    ConnectionEventListener, ConnectionInfo, ConnectionPool, ConnectionReuseScope, Partition,
    PartitionId, TokioDriverSpawner,
};

use crate::contenders::{PoolWorker, Sample, closed_loop, pool_builder};
use crate::report::{Scenario, spread};
use crate::scenarios::{Plan, current_thread, merge, rounds};
use crate::server::serve_h1_io;

/// An in-memory transport: each connection is a `tokio::io::duplex` pair whose server half is
/// served by hyper on the runtime that establishes it (the owner partition's).
#[derive(Clone, Debug)]
struct MemoryConnector;

impl pool::Connect for MemoryConnector {
    fn connect(&self, _target: pool::ConnectTarget) -> pool::ConnectFuture {
        Box::pin(async move {
            let (client, server) = tokio::io::duplex(256 * 1024);
            serve_h1_io(server);
            let addr: SocketAddr = "127.0.0.1:80".parse().expect("addr");
            Ok((pool::Io::custom(client), pool::Connected::new(addr, addr)))
        })
    }
}

/// `uri` in a buffer of its own, for the workers of one thread. Clones of one `Uri` share a
/// reference count, and the threads of two partitions that cloned the same one would both
/// change it on every request: a cost of the harness, which a pool that keeps its own state
/// per partition would be charged for.
pub(crate) fn own_uri(uri: &Uri) -> Uri {
    uri.to_string().parse().expect("uri")
}

/// A pool over `runtimes` (one partition each), optionally bounded.
fn pool_over(
    runtimes: &[tokio::runtime::Runtime],
    configure: impl FnOnce(pool::Builder) -> pool::Builder,
) -> ConnectionPool {
    let builder = pool_builder().partitions(runtimes.iter().enumerate().map(|(i, rt)| {
        Partition::new(
            PartitionId::from_index(i as u32),
            TokioDriverSpawner::from_handle(rt.handle().clone()),
        )
    }));
    configure(builder).build().expect("pool")
}

/// `c` closed-loop pool workers spread over `partitions` partitions (a current-thread runtime
/// on its own thread each) of a pool `configure` finishes; the samples are merged.
pub(crate) fn run_partitioned(
    partitions: usize,
    c: usize,
    uri: &Uri,
    plan: Plan,
    configure: impl FnOnce(pool::Builder) -> pool::Builder,
) -> Sample {
    let runtimes: Vec<_> = (0..partitions).map(|_| current_thread()).collect();
    let pool = pool_over(&runtimes, configure);
    // A current-thread runtime drives its connections only inside `block_on`, and a peer
    // partition may be borrowing them: every partition keeps its runtime running until all
    // partitions finished measuring.
    let finished = Arc::new(tokio::sync::Barrier::new(partitions));
    let samples: Vec<Sample> = std::thread::scope(|scope| {
        let handles: Vec<_> = runtimes
            .iter()
            .enumerate()
            .map(|(i, rt)| {
                let client = pool
                    .client_for(PartitionId::from_index(i as u32))
                    .expect("partition");
                let (uri, finished) = (own_uri(uri), finished.clone());
                scope.spawn(move || {
                    rt.block_on(async {
                        let workers = (0..c / partitions)
                            .map(|_| PoolWorker {
                                client: client.clone(),
                                uri: uri.clone(),
                            })
                            .collect();
                        let sample = closed_loop(workers, plan.warmup, plan.measure).await;
                        finished.wait().await;
                        sample
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("partition thread"))
            .collect()
    });
    merge(samples)
}

/// Scenario 6: the same 64 workers through 1 partition (one thread) and 2 partitions (two
/// threads) on the in-memory transport, unbounded and with a bound of 8 per origin. The ratio
/// is 2 partitions over 1.
pub(crate) fn partition_scaling(plan: Plan) -> Vec<Scenario> {
    const C: usize = 64;
    const N: usize = 8;
    let uri: Uri = "http://memory.test/".parse().expect("uri");
    let run = |partitions: usize, limit: Option<usize>| {
        run_partitioned(partitions, C, &uri, plan, |b| {
            let b = b.connector(MemoryConnector);
            match limit {
                Some(n) => b.max_connections_per_host(n),
                None => b,
            }
        })
    };
    let (one, two) = (|| run(1, None), || run(2, None));
    let (one_n, two_n) = (|| run(1, Some(N)), || run(2, Some(N)));
    vec![
        Scenario::new(
            format!("6. partition scaling, in-memory, c = {C}, unbounded"),
            rounds(plan, &[("2 partitions", &two), ("1 partition", &one)]),
        ),
        Scenario::new(
            format!("6. partition scaling, in-memory, c = {C}, bounded N = {N}"),
            rounds(plan, &[("2 partitions", &two_n), ("1 partition", &one_n)]),
        ),
    ]
}

/// Counts what the pool did while `measuring` is set: connections opened, reclaimed, and
/// requests served by another partition's connection.
#[derive(Debug, Default)]
struct Census {
    measuring: AtomicBool,
    opened: AtomicU64,
    reclaimed: AtomicU64,
    borrowed: AtomicU64,
}

impl ConnectionEventListener for Census {
    fn connection_created(&self, _: &ConnectionInfo) {
        if self.measuring.load(Ordering::Relaxed) {
            self.opened.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn connection_borrowed(&self, _: &ConnectionInfo, _: PartitionId) {
        if self.measuring.load(Ordering::Relaxed) {
            self.borrowed.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn connection_closed(
        &self,
        _: &ConnectionInfo,
        reason: pool::CloseReason,
        _: Option<&pool::EventError>,
    ) {
        if self.measuring.load(Ordering::Relaxed) && reason == pool::CloseReason::Reclaimed {
            self.reclaimed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One partition's share of a run: requests completed in the window and how long each waited
/// in the pool for a connection (0 for a reuse hit).
struct PartitionRun {
    requests: u64,
    wait_us: Histogram<u64>,
}

/// Runs `concurrency[i]` closed-loop workers through `clients[i]` on `runtimes[i]` (a
/// current-thread runtime on its own thread each) against `uri`; the census counts between
/// warm-up and the end.
fn drive(
    clients: Vec<pool::Client>,
    runtimes: &[tokio::runtime::Runtime],
    concurrency: &[usize],
    uri: &Uri,
    plan: Plan,
    census: &Census,
) -> Vec<PartitionRun> {
    let start = Instant::now();
    let (measured_from, until) = (start + plan.warmup, start + plan.warmup + plan.measure);
    let finished = Arc::new(tokio::sync::Barrier::new(runtimes.len()));
    std::thread::scope(|scope| {
        let handles: Vec<_> = runtimes
            .iter()
            .zip(concurrency)
            .zip(clients)
            .map(|((rt, &c), client)| {
                let (uri, finished) = (own_uri(uri), finished.clone());
                scope.spawn(move || {
                    rt.block_on(async move {
                        let mut tasks = tokio::task::JoinSet::new();
                        for _ in 0..c {
                            let (client, uri) = (client.clone(), uri.clone());
                            tasks.spawn(async move {
                                let mut run = PartitionRun {
                                    requests: 0,
                                    wait_us: crate::contenders::worker_histogram(),
                                };
                                while Instant::now() < until {
                                    let t = Instant::now();
                                    let request = Request::get(uri.clone())
                                        .body(Empty::<bytes::Bytes>::new());
                                    let response = client
                                        .request(request.expect("request"))
                                        .await
                                        .expect("pool request");
                                    let waited = response.body().connection().wait_time();
                                    response.into_body().collect().await.expect("body");
                                    if t >= measured_from {
                                        run.requests += 1;
                                        let us = waited.map_or(0, |w| w.as_micros() as u64);
                                        run.wait_us.saturating_record(us);
                                    }
                                }
                                run
                            });
                        }
                        let mut total = PartitionRun {
                            requests: 0,
                            wait_us: Histogram::new(3).expect("histogram"),
                        };
                        while let Some(run) = tasks.join_next().await {
                            let run = run.expect("worker");
                            total.requests += run.requests;
                            total.wait_us.add(run.wait_us).expect("same bounds");
                        }
                        finished.wait().await;
                        total
                    })
                })
            })
            .collect();
        std::thread::sleep(measured_from.saturating_duration_since(Instant::now()));
        census.measuring.store(true, Ordering::Relaxed);
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        census.measuring.store(false, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().expect("partition thread"))
            .collect()
    })
}

/// A client of each of the first `partitions` partitions of `pool`.
fn clients(pool: &ConnectionPool, partitions: usize) -> Vec<pool::Client> {
    (0..partitions)
        .map(|i| {
            pool.client_for(PartitionId::from_index(i as u32))
                .expect("partition")
        })
        .collect()
}

/// One steady-state run of scenario 7.
struct Steady {
    rps: f64,
    opened_per_1000: f64,
    borrowed_pct: f64,
    reclaimed: u64,
    held: Vec<usize>,
}

/// Scenario 7: 4 partitions, a bound of 8, 256 workers (64 per partition) against the
/// loopback HTTP/1.1 server, under each reuse scope: after warm-up, how many connections open
/// per 1,000 requests, what share of requests borrow another partition's connection, and how
/// the permits are spread.
pub(crate) fn placement_steady_state(h1: SocketAddr, plan: Plan) -> String {
    const P: usize = 4;
    const N: usize = 8;
    const C: usize = 256;
    let uri: Uri = format!("http://{h1}/").parse().expect("uri");
    let scopes = [
        ("partition", ConnectionReuseScope::Partition),
        (
            "interface (default)",
            ConnectionReuseScope::NetworkInterface,
        ),
        ("pool", ConnectionReuseScope::Pool),
    ];
    let mut out = format!(
        "\n### 7. placement, steady state: {P} partitions, N = {N}, c = {C}, loopback HTTP/1.1\n\n\
         Counted after warm-up; medians over {} rounds, worst round in brackets.\n\n\
         | reuse scope | req/s | new connections per 1,000 requests | borrowed requests | \
         reclaims | permits held per partition (last round) |\n|---|---:|---:|---:|---:|---|\n",
        plan.rounds
    );
    for (name, scope) in scopes {
        let runs: Vec<Steady> = (0..plan.rounds)
            .map(|_| {
                let runtimes: Vec<_> = (0..P).map(|_| current_thread()).collect();
                let census = Arc::new(Census::default());
                let pool = pool_over(&runtimes, |b| {
                    b.max_connections_per_host(N)
                        .connection_reuse_scope(scope)
                        .event_listener(census.clone())
                });
                let parts = drive(
                    clients(&pool, P),
                    &runtimes,
                    &[C / P; P],
                    &uri,
                    plan,
                    &census,
                );
                let requests: u64 = parts.iter().map(|p| p.requests).sum();
                let stats = pool.stats(&uri);
                let per = |n: u64| n as f64 * 1000.0 / requests.max(1) as f64;
                Steady {
                    rps: requests as f64 / plan.measure.as_secs_f64(),
                    opened_per_1000: per(census.opened.load(Ordering::Relaxed)),
                    borrowed_pct: per(census.borrowed.load(Ordering::Relaxed)) / 10.0,
                    reclaimed: census.reclaimed.load(Ordering::Relaxed),
                    held: stats.iter().map(|(_, s)| s.admitted()).collect(),
                }
            })
            .collect();
        let med = |f: &dyn Fn(&Steady) -> f64| spread(&runs.iter().map(f).collect::<Vec<_>>());
        let (rps, opened, borrowed, reclaimed) = (
            med(&|r| r.rps),
            med(&|r| r.opened_per_1000),
            med(&|r| r.borrowed_pct),
            med(&|r| r.reclaimed as f64),
        );
        out += &format!(
            "| {name} | {:.0} | {:.2} (≤ {:.2}) | {:.1}% (≤ {:.1}%) | {:.0} | {:?} |\n",
            rps.median,
            opened.median,
            opened.max,
            borrowed.median,
            borrowed.max,
            reclaimed.median,
            runs.last().map(|r| r.held.clone()).unwrap_or_default(),
        );
    }
    out
}

/// Scenario 8: two partitions share a bound of 8; partition 0 runs 200 workers, partition 1
/// runs 20. How long partition 1's requests wait for a connection (p99), beside partition 0,
/// alone, and alone with the bound at its equal share (what owning half of the bound would
/// give it), and that neither starves. `upstream` is the latency the server adds to each
/// response, if any: with none, a request's service time is CPU on the two cores the heavy
/// partition also loads; with some, it is mostly that latency.
///
/// The fourth configuration is the control for that CPU: the same two loads on the same
/// threads against the same server, but through two separate pools bounded at N / 2 each (a
/// static equal split, with nothing shared between the partitions). Its light partition pays
/// everything the heavy load costs it on the cores and nothing the shared bound does, so
/// beside it the shared pool's p99 reads as what sharing one bound costs.
pub(crate) fn placement_fairness(
    h1: SocketAddr,
    plan: Plan,
    upstream: Option<std::time::Duration>,
) -> String {
    const N: usize = 8;
    const HEAVY: usize = 200;
    const LIGHT: usize = 20;
    let uri: Uri = format!("http://{h1}/").parse().expect("uri");
    // `split`: each partition in a pool of its own, bounded at `limit` (the control above).
    let run = |heavy: usize, limit: usize, split: bool| {
        let runtimes: Vec<_> = (0..2).map(|_| current_thread()).collect();
        let census = Arc::new(Census::default());
        let bounded = |b: pool::Builder| {
            b.max_connections_per_host(limit)
                .event_listener(census.clone())
        };
        let clients = if split {
            let pools: Vec<_> = runtimes
                .chunks(1)
                .map(|one| pool_over(one, bounded))
                .collect();
            pools.iter().flat_map(|pool| clients(pool, 1)).collect()
        } else {
            clients(&pool_over(&runtimes, bounded), 2)
        };
        drive(clients, &runtimes, &[heavy, LIGHT], &uri, plan, &census)
    };
    let mut shared_p99 = Vec::new();
    let mut alone_p99 = Vec::new();
    let mut share_p99 = Vec::new();
    let mut split_p99 = Vec::new();
    let mut heavy_p99 = Vec::new();
    let mut requests = Vec::new();
    let mut split_requests = Vec::new();
    for round in 0..plan.rounds {
        // Rotate which configuration runs first. The third is partition 1 alone with the
        // bound at its equal share (N / 2): what it would have if it owned half of the bound;
        // the fourth the control, both loads through separate pools of N / 2.
        let configurations = [
            (HEAVY, N, false),
            (0, N, false),
            (0, N / 2, false),
            (HEAVY, N / 2, true),
        ];
        let mut runs: [Vec<PartitionRun>; 4] = Default::default();
        for k in 0..runs.len() {
            let which = (round + k) % runs.len();
            let (heavy, limit, split) = configurations[which];
            runs[which] = run(heavy, limit, split);
        }
        let [together, alone, share, split] = runs;
        let p99 = |r: &PartitionRun| r.wait_us.value_at_quantile(0.99) as f64;
        shared_p99.push(p99(&together[1]));
        alone_p99.push(p99(&alone[1]));
        share_p99.push(p99(&share[1]));
        split_p99.push(p99(&split[1]));
        heavy_p99.push(p99(&together[0]));
        requests.push((together[0].requests, together[1].requests));
        split_requests.push((split[0].requests, split[1].requests));
    }
    let over = |base: &[f64]| -> Vec<f64> {
        shared_p99
            .iter()
            .zip(base)
            .map(|(s, a)| s / a.max(1.0))
            .collect()
    };
    let (ratio, ratio_share, ratio_split) = (over(&alone_p99), over(&share_p99), over(&split_p99));
    let latency = upstream.map_or_else(String::new, |l| {
        format!(", the server answering after {} ms", l.as_millis())
    });
    let (r, rs, rx) = (spread(&ratio), spread(&ratio_share), spread(&ratio_split));
    let (s, a, sh, x, h) = (
        spread(&shared_p99),
        spread(&alone_p99),
        spread(&share_p99),
        spread(&split_p99),
        spread(&heavy_p99),
    );
    format!(
        "\n### 8. placement, fairness: N = {N}, partition 0 with c = {HEAVY}, partition 1 with \
         c = {LIGHT}, loopback HTTP/1.1{latency}\n\n\
         | | p99 wait for a connection, µs (median) |\n|---|---:|\n\
         | partition 1 beside partition 0 | {:.0} |\n| partition 1 alone | {:.0} |\n\
         | partition 1 alone, bound at its equal share (N = {half}) | {:.0} |\n\
         | partition 1 beside partition 0, separate pools of N = {half} each (control) | {:.0} |\n\
         | partition 0 beside partition 1 | {:.0} |\n\n\
         ratio light beside heavy / light alone: **{:.2}** (min {:.2}, max {:.2})\n\n\
         ratio light beside heavy / light alone at its equal share: **{:.2}** (min {:.2}, \
         max {:.2})\n\n\
         ratio light beside heavy / light beside heavy in separate pools (the cost of sharing \
         the bound): **{:.2}** (min {:.2}, max {:.2})\n\n\
         requests in the window per round (partition 0, partition 1): {requests:?}; separate \
         pools: {split_requests:?}\n",
        s.median,
        a.median,
        sh.median,
        x.median,
        h.median,
        r.median,
        r.min,
        r.max,
        rs.median,
        rs.min,
        rs.max,
        rx.median,
        rx.min,
        rx.max,
        half = N / 2,
    )
}
