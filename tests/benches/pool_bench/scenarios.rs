//! Scenarios 1 to 5 (6 to 8, about partitions, are in `partitions`). Each alternates its contenders round by round on the same machine and
//! keeps every round's sample, so ratios are computed within a round (median, min, max).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::Uri;
use hyper_util::client::legacy::Client as LegacyClient;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo as UtilIo, TokioTimer};
use pool::ProtocolPolicy;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::alloc::count_allocations;
use crate::contenders::{
    LegacyWorker, PoolWorker, RawH1Worker, RawH2Worker, Sample, Worker, closed_loop, pool_builder,
};
use crate::hyper_util_tls::RustlsConnector;
use crate::report::{Measured, Scenario};
use crate::server::Servers;

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) rounds: usize,
    pub(crate) warmup: Duration,
    pub(crate) measure: Duration,
}

pub(crate) fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn legacy_builder() -> hyper_util::client::legacy::Builder {
    let mut builder = LegacyClient::builder(TokioExecutor::new());
    builder
        .pool_timer(TokioTimer::new())
        .pool_max_idle_per_host(usize::MAX);
    builder
}

async fn measure<W: Worker>(workers: Vec<W>, plan: Plan) -> Sample {
    closed_loop(workers, plan.warmup, plan.measure).await
}

/// Runs `contenders` in `plan.rounds` rounds, rotating their order each round.
/// Only the contender of this name runs (`--contender`, for profiling one of them).
pub(crate) static CONTENDER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub(crate) fn rounds(
    plan: Plan,
    contenders: &[(&'static str, &dyn Fn() -> Sample)],
) -> Vec<Measured> {
    let selected: Vec<_> = contenders
        .iter()
        .filter(|(name, _)| CONTENDER.get().is_none_or(|only| only == name))
        .collect();
    let contenders = &selected[..];
    let mut measured: Vec<Measured> = contenders
        .iter()
        .map(|(name, _)| Measured::new(name))
        .collect();
    for round in 0..plan.rounds {
        for k in 0..contenders.len() {
            let index = (round + k) % contenders.len();
            let sample = (contenders[index].1)();
            measured[index].samples.push(sample);
        }
    }
    measured
}

/// Scenario 1: HTTP/1.1 keep-alive at several concurrencies.
pub(crate) fn h1_keep_alive(
    servers: &Servers,
    target: Option<SocketAddr>,
    plan: Plan,
    concurrency: &[usize],
) -> Vec<Scenario> {
    let addr = target.unwrap_or(servers.h1);
    let uri: Uri = format!("http://{addr}/").parse().expect("uri");
    concurrency
        .iter()
        .map(|&c| {
            let pool = || {
                current_thread().block_on(async {
                    let client = pool_builder()
                        .build()
                        .expect("pool")
                        .client()
                        .expect("client");
                    measure(
                        (0..c)
                            .map(|_| PoolWorker {
                                client: client.clone(),
                                uri: uri.clone(),
                            })
                            .collect(),
                        plan,
                    )
                    .await
                })
            };
            let raw = || {
                current_thread().block_on(async {
                    let mut workers = Vec::with_capacity(c);
                    for _ in 0..c {
                        workers.push(RawH1Worker::connect(addr).await);
                    }
                    measure(workers, plan).await
                })
            };
            let legacy = || {
                current_thread().block_on(async {
                    let client = legacy_builder().build_http();
                    measure(
                        (0..c)
                            .map(|_| LegacyWorker {
                                client: client.clone(),
                                uri: uri.clone(),
                            })
                            .collect(),
                        plan,
                    )
                    .await
                })
            };
            Scenario::new(
                format!("1. H1 keep-alive, c = {c}"),
                rounds(
                    plan,
                    &[("pool", &pool), ("raw", &raw), ("hyper-util", &legacy)],
                ),
            )
        })
        .collect()
}

/// Scenario 2: HTTP/2 over h2c on one connection.
pub(crate) fn h2c(servers: &Servers, plan: Plan, concurrency: &[usize]) -> Vec<Scenario> {
    let addr = servers.h2c;
    let uri: Uri = format!("http://{addr}/").parse().expect("uri");
    concurrency
        .iter()
        .map(|&c| {
            let pool = || {
                current_thread().block_on(async {
                    let pool = pool_builder()
                        .protocol(ProtocolPolicy::Http2PriorKnowledge)
                        .build()
                        .expect("pool");
                    let client = pool.client().expect("client");
                    measure(
                        (0..c)
                            .map(|_| PoolWorker {
                                client: client.clone(),
                                uri: uri.clone(),
                            })
                            .collect(),
                        plan,
                    )
                    .await
                })
            };
            let raw = || {
                current_thread()
                    .block_on(async { measure(RawH2Worker::connect(addr, c).await, plan).await })
            };
            let legacy = || {
                current_thread().block_on(async {
                    let mut builder = legacy_builder();
                    builder.http2_only(true);
                    let client = builder.build_http();
                    measure(
                        (0..c)
                            .map(|_| LegacyWorker {
                                client: client.clone(),
                                uri: uri.clone(),
                            })
                            .collect(),
                        plan,
                    )
                    .await
                })
            };
            Scenario::new(
                format!("2. H2 (h2c), one connection, c = {c}"),
                rounds(
                    plan,
                    &[("pool", &pool), ("raw", &raw), ("hyper-util", &legacy)],
                ),
            )
        })
        .collect()
}

/// hyper-util with a connection cap: a semaphore inside the connector whose permit lives in the
/// connection's I/O (how the gateway in `shared/seeds` bounds hyper-util).
#[derive(Clone)]
struct CappedConnector {
    inner: HttpConnector,
    permits: Arc<Semaphore>,
}

struct CappedIo {
    io: UtilIo<tokio::net::TcpStream>,
    _permit: OwnedSemaphorePermit,
}

impl Connection for CappedIo {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl hyper::rt::Read for CappedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for CappedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<Uri> for CappedConnector {
    type Response = CappedIo;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<CappedIo, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (mut inner, permits) = (self.inner.clone(), self.permits.clone());
        Box::pin(async move {
            let permit = permits.acquire_owned().await?;
            let io = tower_service::Service::call(&mut inner, uri).await?;
            Ok(CappedIo {
                io,
                _permit: permit,
            })
        })
    }
}

/// Scenario 3: A bounded origin (N = 8, c = 256) through 1 and 2 partitions, against hyper-util with a
/// connection-cap semaphore in its connector.
pub(crate) fn bounded(servers: &Servers, target: Option<SocketAddr>, plan: Plan) -> Vec<Scenario> {
    const N: usize = 8;
    const C: usize = 256;
    let addr = target.unwrap_or(servers.h1);
    let uri: Uri = format!("http://{addr}/").parse().expect("uri");
    [1usize, 2]
        .iter()
        .map(|&partitions| {
            let pool = || bounded_pool(&uri, partitions, N, C, plan);
            let legacy = || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(partitions)
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    let connector = CappedConnector {
                        inner: HttpConnector::new(),
                        permits: Arc::new(Semaphore::new(N)),
                    };
                    let client = legacy_builder().build(connector);
                    measure(
                        // A URI per worker: its tasks move between the runtime's threads.
                        (0..C)
                            .map(|_| LegacyWorker {
                                client: client.clone(),
                                uri: crate::partitions::own_uri(&uri),
                            })
                            .collect(),
                        plan,
                    )
                    .await
                })
            };
            Scenario::new(
                format!("3. bounded N = {N}, c = {C}, {partitions} partition(s)"),
                rounds(
                    plan,
                    &[("pool", &pool), ("hyper-util + semaphore", &legacy)],
                ),
            )
        })
        .collect()
}

/// A pool bounded to `limit` with `partitions` partitions, running `c` workers between them.
fn bounded_pool(uri: &Uri, partitions: usize, limit: usize, c: usize, plan: Plan) -> Sample {
    crate::partitions::run_partitioned(partitions, c, uri, plan, |b| {
        b.max_connections_per_host(limit)
    })
}

pub(crate) fn merge(samples: Vec<Sample>) -> Sample {
    let mut merged = Sample {
        requests: 0,
        secs: samples[0].secs,
        latency_us: hdrhistogram::Histogram::new(3).expect("histogram"),
    };
    for sample in samples {
        merged.requests += sample.requests;
        merged
            .latency_us
            .add(sample.latency_us)
            .expect("same bounds");
    }
    merged
}

/// What one cold burst cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Burst {
    pub(crate) millis: f64,
    pub(crate) connections: u64,
    pub(crate) handshakes: u64,
}

/// Scenario 4: A cold burst of 256 concurrent requests to a fresh TLS origin offering h2 by ALPN.
pub(crate) fn cold_alpn_burst(servers: &Servers, rounds: usize) -> Vec<(&'static str, Vec<Burst>)> {
    const BURST: usize = 256;
    let uri: Uri = format!("https://localhost:{}/", servers.tls.port())
        .parse()
        .expect("uri");
    let counters = servers.tls_counters.clone();
    let measure_burst = |send: &dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>>| {
        let (accepted, handshakes) = (
            counters.accepted.load(Ordering::SeqCst),
            counters.handshakes.load(Ordering::SeqCst),
        );
        let started = Instant::now();
        current_thread().block_on(send());
        let millis = started.elapsed().as_secs_f64() * 1000.0;
        // Losing attempts may still be handshaking on the server's thread: wait until every
        // accepted connection finished its handshake, one way or the other.
        let deadline = Instant::now() + Duration::from_secs(10);
        while counters.handshakes.load(Ordering::SeqCst) + counters.failures.load(Ordering::SeqCst)
            < counters.accepted.load(Ordering::SeqCst)
            && Instant::now() < deadline
        {
            std::thread::yield_now();
        }
        Burst {
            millis,
            connections: counters.accepted.load(Ordering::SeqCst) - accepted,
            handshakes: counters.handshakes.load(Ordering::SeqCst) - handshakes,
        }
    };
    let pool_burst = || -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let uri = uri.clone();
        let ca = servers.ca_pem.clone();
        Box::pin(async move {
            let pool = pool_builder()
                .native_roots(false)
                .add_root_certificates_pem(ca)
                .build()
                .expect("pool");
            let client = pool.client().expect("client");
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..BURST {
                let mut worker = PoolWorker {
                    client: client.clone(),
                    uri: uri.clone(),
                };
                tasks.spawn(async move { worker.one().await });
            }
            while tasks.join_next().await.is_some() {}
        })
    };
    let legacy_burst = || -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let uri = uri.clone();
        let tls = servers.client_tls.clone();
        Box::pin(async move {
            let client = legacy_builder().build(RustlsConnector::new(tls));
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..BURST {
                let mut worker = LegacyWorker::<RustlsConnector> {
                    client: client.clone(),
                    uri: uri.clone(),
                };
                tasks.spawn(async move { worker.one().await });
            }
            while tasks.join_next().await.is_some() {}
        })
    };
    let mut pool = Vec::new();
    let mut legacy = Vec::new();
    for round in 0..rounds {
        if round % 2 == 0 {
            pool.push(measure_burst(&pool_burst));
            legacy.push(measure_burst(&legacy_burst));
        } else {
            legacy.push(measure_burst(&legacy_burst));
            pool.push(measure_burst(&pool_burst));
        }
    }
    vec![("pool", pool), ("hyper-util", legacy)]
}

/// Scenario 5: Allocations per request on the reuse-hit path (H1, then h2c), counted on the client's
/// thread only.
pub(crate) fn allocations(
    servers: &Servers,
    target: Option<SocketAddr>,
    requests: u64,
) -> Vec<(String, f64)> {
    let h1_addr = target.unwrap_or(servers.h1);
    let h1: Uri = format!("http://{h1_addr}/").parse().expect("uri");
    let h2: Uri = format!("http://{}/", servers.h2c).parse().expect("uri");
    let count = |mut worker: Box<dyn FnMut() -> Pin<Box<dyn Future<Output = ()> + Send>>>,
                 runtime: &tokio::runtime::Runtime| {
        // Warm up: connections established, buffers grown, the path a reuse hit.
        runtime.block_on(async {
            for _ in 0..200 {
                worker().await;
            }
        });
        let ((), allocations) = count_allocations(|| {
            runtime.block_on(async {
                for _ in 0..requests {
                    worker().await;
                }
            })
        });
        allocations as f64 / requests as f64
    };
    let mut results = Vec::new();
    for (label, uri, h2) in [("H1", h1, false), ("H2 (h2c)", h2, true)] {
        let addr = if h2 { servers.h2c } else { h1_addr };
        let runtime = current_thread();
        let pool_worker = runtime.block_on(async {
            let mut builder = pool_builder();
            if h2 {
                builder = builder.protocol(ProtocolPolicy::Http2PriorKnowledge);
            }
            PoolWorker {
                client: builder.build().expect("pool").client().expect("client"),
                uri: uri.clone(),
            }
        });
        let pool_worker = Arc::new(tokio::sync::Mutex::new(pool_worker));
        results.push((format!("{label} pool"), count(boxed(pool_worker), &runtime)));

        let runtime = current_thread();
        let raw: Box<dyn FnMut() -> Pin<Box<dyn Future<Output = ()> + Send>>> = if h2 {
            let worker = runtime
                .block_on(RawH2Worker::connect(addr, 1))
                .pop()
                .expect("worker");
            boxed(Arc::new(tokio::sync::Mutex::new(worker)))
        } else {
            boxed(Arc::new(tokio::sync::Mutex::new(
                runtime.block_on(RawH1Worker::connect(addr)),
            )))
        };
        results.push((format!("{label} raw"), count(raw, &runtime)));

        let runtime = current_thread();
        let legacy = runtime.block_on(async {
            let mut builder = legacy_builder();
            builder.http2_only(h2);
            LegacyWorker {
                client: builder.build_http(),
                uri: uri.clone(),
            }
        });
        results.push((
            format!("{label} hyper-util"),
            count(boxed(Arc::new(tokio::sync::Mutex::new(legacy))), &runtime),
        ));
    }
    results
}

fn boxed<W: Worker>(
    worker: Arc<tokio::sync::Mutex<W>>,
) -> Box<dyn FnMut() -> Pin<Box<dyn Future<Output = ()> + Send>>> {
    Box::new(move || {
        let worker = worker.clone();
        Box::pin(async move { worker.lock().await.one().await })
    })
}
