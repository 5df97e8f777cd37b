//! Scenario 9: the pool as the AWS SDK's HTTP client (`pool-smithy`) against the SDK's own two
//! clients, the `pool` module of aws-smithy-http-client and its default hyper-util client, all
//! driven the way the SDK orchestrator drives them: per request, `http_connector(settings,
//! components)` on the shared client, then `HttpConnector::call`, then the `SdkBody` read to
//! its end.
//!
//! Rows (issue 15's table): HTTP/1.1 keep-alive at c = 64 and 256, TLS with ALPN h2 at c = 64,
//! a cold burst of 200 requests to a fresh h2 origin, and a bounded origin (N = 8, c = 256).
//! The SDK's default client has no connection bound, so its bounded row runs unbounded and is
//! labelled so. Every contender gets the SDK's default connector settings (connect timeout
//! 3.1 s, no read timeout), tokio's sleep and the system clock, and is validated
//! (`validate_base_client_config`) before it is measured, as the SDK does when a service client
//! is built. Connections are counted by the servers (accepted TCP connections per sample).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_smithy_async::rt::sleep::TokioSleep;
use aws_smithy_async::time::SystemTimeSource;
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::tls::{Provider, TlsContext, TrustStore};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorSettings, SharedHttpClient,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::{
    RuntimeComponents, RuntimeComponentsBuilder,
};
use aws_smithy_types::config_bag::ConfigBag;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::contenders::{Sample, Worker, closed_loop};
use crate::report::{Spread, spread};
use crate::scenarios::Plan;
use crate::server::{Servers, listen, serve_h1};

const CONTENDERS: [&str; 3] = ["pool-smithy", "SDK pool", "SDK hyper-util"];

/// Which origin a client is built for.
#[derive(Clone, Copy)]
enum Target {
    /// Plain HTTP/1.1, optionally bounded to this many connections.
    Http { bound: Option<usize> },
    /// TLS offering `h2, http/1.1`, trusting the bench CA.
    Tls,
}

/// Builds contender `index`'s client (on the current runtime).
fn client(index: usize, target: Target, ca_pem: &str) -> SharedHttpClient {
    let tls = || {
        let trust = TrustStore::empty()
            .with_native_roots(false)
            .with_pem_certificate(ca_pem.as_bytes().to_vec());
        TlsContext::builder()
            .with_trust_store(trust)
            .build()
            .expect("TLS context")
    };
    let provider = || Provider::Rustls(CryptoMode::Ring);
    match (index, target) {
        (0, Target::Http { bound }) => {
            let mut builder = pool_smithy::PoolHttpClient::builder()
                .native_roots(false)
                .configure_pool(|b| b.metrics(false));
            if let Some(n) = bound {
                builder = builder.max_connections_per_host(n);
            }
            SharedHttpClient::new(builder.build().expect("pool-smithy"))
        }
        (0, Target::Tls) => SharedHttpClient::new(
            pool_smithy::PoolHttpClient::builder()
                .native_roots(false)
                .configure_pool(|b| b.metrics(false))
                .add_root_certificates_pem(ca_pem.to_owned())
                .build()
                .expect("pool-smithy"),
        ),
        (1, target) => {
            use aws_smithy_http_client::pool::{Client, ConnectionPool};
            let mut builder = ConnectionPool::builder();
            if let Target::Http { bound: Some(n) } = target {
                builder = builder.max_connections_per_host(n);
            }
            let pool = match target {
                Target::Http { .. } => builder.build_http(),
                Target::Tls => builder
                    .tls_provider(provider())
                    .tls_context(tls())
                    .build_https(),
            };
            SharedHttpClient::new(Client::new(&pool.expect("SDK pool")).expect("SDK client"))
        }
        (_, Target::Http { .. }) => aws_smithy_http_client::Builder::new().build_http(),
        (_, Target::Tls) => aws_smithy_http_client::Builder::new()
            .tls_provider(provider())
            .tls_context(tls())
            .build_https(),
    }
}

/// The operation's components and settings as the SDK builds them by default.
fn operation(client: &SharedHttpClient) -> (RuntimeComponents, HttpConnectorSettings) {
    let components = RuntimeComponentsBuilder::for_tests()
        .with_http_client(Some(client.clone()))
        .with_sleep_impl(Some(TokioSleep::new()))
        .with_time_source(Some(SystemTimeSource::new()))
        .build()
        .expect("components");
    client
        .validate_base_client_config(&RuntimeComponentsBuilder::for_tests(), &ConfigBag::base())
        .expect("client validates");
    let settings = HttpConnectorSettings::builder()
        .connect_timeout(Duration::from_millis(3100))
        .build();
    (components, settings)
}

/// One request as the orchestrator makes it.
struct SmithyWorker {
    client: SharedHttpClient,
    components: RuntimeComponents,
    settings: HttpConnectorSettings,
    request: HttpRequest,
}

impl SmithyWorker {
    fn new(client: &SharedHttpClient, url: &str) -> SmithyWorker {
        let (components, settings) = operation(client);
        SmithyWorker {
            client: client.clone(),
            components,
            settings,
            request: HttpRequest::get(url).expect("request"),
        }
    }
}

impl Worker for SmithyWorker {
    async fn one(&mut self) {
        let connector = self.client.http_connector(&self.settings, &self.components);
        let request = self.request.try_clone().expect("an empty body clones");
        let response = connector.call(request).await.expect("smithy request");
        response.into_body().collect().await.expect("smithy body");
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// An HTTP/1.1 origin that counts the connections it accepts, on its own thread and runtime.
fn counting_h1() -> (SocketAddr, Arc<AtomicU64>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("bench-smithy-h1")
        .enable_all()
        .build()
        .expect("runtime");
    let listener = listen(&runtime);
    let addr = listener.local_addr().expect("addr");
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = accepted.clone();
    runtime.spawn(async move {
        loop {
            if let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::Relaxed);
                serve_h1(stream);
            }
        }
    });
    std::thread::Builder::new()
        .name("bench-smithy-h1".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .expect("thread");
    (addr, accepted)
}

/// One row: every contender's samples and the connections each sample opened.
struct Row {
    title: String,
    samples: [Vec<Sample>; 3],
    connections: [Vec<u64>; 3],
}

impl Row {
    fn rps(&self, contender: usize) -> Vec<f64> {
        self.samples[contender].iter().map(Sample::rps).collect()
    }

    /// `pool-smithy / other` per round.
    fn ratio(&self, other: usize) -> Spread {
        let per_round: Vec<f64> = self
            .rps(0)
            .iter()
            .zip(self.rps(other))
            .map(|(a, b)| a / b)
            .collect();
        spread(&per_round)
    }
}

/// Closed-loop rounds of `c` workers per contender, the contenders' order rotating each round.
fn row(
    title: String,
    plan: Plan,
    c: usize,
    url: &str,
    target: Target,
    ca_pem: &str,
    accepted: &AtomicU64,
) -> Row {
    let mut samples: [Vec<Sample>; 3] = Default::default();
    let mut connections: [Vec<u64>; 3] = Default::default();
    for round in 0..plan.rounds {
        for k in 0..CONTENDERS.len() {
            let index = (round + k) % CONTENDERS.len();
            let before = accepted.load(Ordering::SeqCst);
            let sample = current_thread().block_on(async {
                let client = client(index, target, ca_pem);
                let workers = (0..c).map(|_| SmithyWorker::new(&client, url)).collect();
                closed_loop(workers, plan.warmup, plan.measure).await
            });
            connections[index].push(accepted.load(Ordering::SeqCst) - before);
            samples[index].push(sample);
        }
    }
    Row {
        title,
        samples,
        connections,
    }
}

/// What one cold burst cost one contender.
struct Burst {
    millis: f64,
    connections: u64,
}

/// `n` concurrent requests from a fresh client to the TLS origin, `rounds` times per contender.
fn cold_bursts(servers: &Servers, url: &str, n: usize, rounds: usize) -> [Vec<Burst>; 3] {
    let counters = &servers.tls_counters;
    let mut bursts: [Vec<Burst>; 3] = Default::default();
    for round in 0..rounds {
        for k in 0..CONTENDERS.len() {
            let index = (round + k) % CONTENDERS.len();
            let before = counters.accepted.load(Ordering::SeqCst);
            let started = Instant::now();
            current_thread().block_on(async {
                let client = client(index, Target::Tls, &servers.ca_pem);
                let mut tasks = tokio::task::JoinSet::new();
                for _ in 0..n {
                    let mut worker = SmithyWorker::new(&client, url);
                    let one: Pin<Box<dyn Future<Output = ()> + Send>> =
                        Box::pin(async move { worker.one().await });
                    tasks.spawn(one);
                }
                while tasks.join_next().await.is_some() {}
            });
            let millis = started.elapsed().as_secs_f64() * 1000.0;
            // Losing attempts may still be handshaking on the server's thread.
            let deadline = Instant::now() + Duration::from_secs(10);
            while counters.handshakes.load(Ordering::SeqCst)
                + counters.failures.load(Ordering::SeqCst)
                < counters.accepted.load(Ordering::SeqCst)
                && Instant::now() < deadline
            {
                std::thread::yield_now();
            }
            bursts[index].push(Burst {
                millis,
                connections: counters.accepted.load(Ordering::SeqCst) - before,
            });
        }
    }
    bursts
}

/// Scenario 9's results.
pub(crate) struct Report {
    rows: Vec<Row>,
    burst_size: usize,
    bursts: [Vec<Burst>; 3],
}

/// Runs scenario 9.
pub(crate) fn run(servers: &Servers, plan: Plan, quick: bool) -> Report {
    const BURST: usize = 200;
    let (h1, h1_accepted) = counting_h1();
    let h1_url = format!("http://{h1}/");
    let tls_url = format!("https://localhost:{}/", servers.tls.port());
    let ca = servers.ca_pem.as_str();
    let open = Target::Http { bound: None };
    let rows = vec![
        row(
            "H1, c = 64".into(),
            plan,
            64,
            &h1_url,
            open,
            ca,
            &h1_accepted,
        ),
        row(
            "H1, c = 256".into(),
            plan,
            256,
            &h1_url,
            open,
            ca,
            &h1_accepted,
        ),
        row(
            "TLS + ALPN h2, c = 64".into(),
            plan,
            64,
            &tls_url,
            Target::Tls,
            ca,
            &servers.tls_counters.accepted,
        ),
        row(
            "bounded N = 8, c = 256 (SDK hyper-util: unbounded)".into(),
            plan,
            256,
            &h1_url,
            Target::Http { bound: Some(8) },
            ca,
            &h1_accepted,
        ),
    ];
    let bursts = cold_bursts(servers, &tls_url, BURST, if quick { 3 } else { 5 });
    Report {
        rows,
        burst_size: BURST,
        bursts,
    }
}

fn median_u64(values: &[u64]) -> u64 {
    let v: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    spread(&v).median as u64
}

impl Report {
    pub(crate) fn markdown(&self) -> String {
        let mut out = String::from(
            "\n### 9. pool-smithy vs the SDK's clients, through `HttpConnector::call`\n\n\
             req/s (median), connections opened per sample (median) in parentheses; ratio = \
             pool-smithy / SDK pool per round (median, min–max); goal ≥ 1.0\n\n\
             | row | pool-smithy | SDK pool | SDK hyper-util | ratio vs SDK pool | ratio vs SDK hyper-util |\n\
             |---|---:|---:|---:|---:|---:|\n",
        );
        for row in &self.rows {
            let cell = |i: usize| {
                format!(
                    "{:.0} ({})",
                    spread(&row.rps(i)).median,
                    median_u64(&row.connections[i])
                )
            };
            let (pool, util) = (row.ratio(1), row.ratio(2));
            out += &format!(
                "| {} | {} | {} | {} | **{:.3}** ({:.3}–{:.3}) | {:.3} ({:.3}–{:.3}) |\n",
                row.title,
                cell(0),
                cell(1),
                cell(2),
                pool.median,
                pool.min,
                pool.max,
                util.median,
                util.min,
                util.max
            );
        }
        out += &format!(
            "\ncold burst of {} requests to a fresh TLS origin offering h2:\n\n\
             | contender | connections per burst | time to complete (median ms) |\n|---|---|---:|\n",
            self.burst_size
        );
        for (name, bursts) in CONTENDERS.iter().zip(&self.bursts) {
            let conns: Vec<u64> = bursts.iter().map(|b| b.connections).collect();
            let ms = spread(&bursts.iter().map(|b| b.millis).collect::<Vec<_>>());
            out += &format!("| {name} | {conns:?} | {:.1} |\n", ms.median);
        }
        out
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "rows": self.rows.iter().map(|row| json!({
                "row": row.title,
                "contenders": CONTENDERS.iter().enumerate().map(|(i, name)| json!({
                    "name": name,
                    "rps": row.rps(i),
                    "rps_median": spread(&row.rps(i)).median,
                    "connections": row.connections[i],
                })).collect::<Vec<_>>(),
                "ratio_vs_sdk_pool": { "median": row.ratio(1).median, "min": row.ratio(1).min, "max": row.ratio(1).max },
                "ratio_vs_sdk_hyper_util": { "median": row.ratio(2).median, "min": row.ratio(2).min, "max": row.ratio(2).max },
            })).collect::<Vec<_>>(),
            "cold_burst": {
                "requests": self.burst_size,
                "contenders": CONTENDERS.iter().zip(&self.bursts).map(|(name, bursts)| json!({
                    "name": name,
                    "connections": bursts.iter().map(|b| b.connections).collect::<Vec<_>>(),
                    "millis": bursts.iter().map(|b| b.millis).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            },
        })
    }
}
