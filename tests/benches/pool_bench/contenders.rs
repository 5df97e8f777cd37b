//! The contenders' request loops and the closed-loop driver that measures them.
//!
//! Every contender sends the same request (`GET`, empty body, `Host` set the way that client
//! sets it) and reads the whole response body; only the client differs.

use std::future::Future;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::header::HOST;
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client as LegacyClient;
use hyper_util::client::legacy::connect::Connect as LegacyConnect;
use pool_tls::TokioIo;
use tokio::net::TcpStream;

/// One measurement: completed requests over the measured window, and their latencies.
#[derive(Debug)]
pub(crate) struct Sample {
    pub(crate) requests: u64,
    pub(crate) secs: f64,
    pub(crate) latency_us: Histogram<u64>,
}

impl Sample {
    pub(crate) fn rps(&self) -> f64 {
        self.requests as f64 / self.secs
    }
    pub(crate) fn p50_us(&self) -> u64 {
        self.latency_us.value_at_quantile(0.5)
    }
    pub(crate) fn p99_us(&self) -> u64 {
        self.latency_us.value_at_quantile(0.99)
    }
}

/// A client that performs one request-response at a time.
pub(crate) trait Worker: Send + 'static {
    /// Sends one request and reads the whole response body.
    fn one(&mut self) -> impl Future<Output = ()> + Send;
}

/// Runs every worker in a closed loop on the current runtime: a warm-up (connections get
/// established), then `measure` during which completed requests and their latencies count.
pub(crate) async fn closed_loop<W: Worker>(
    workers: Vec<W>,
    warmup: Duration,
    measure: Duration,
) -> Sample {
    let start = Instant::now();
    let (measured_from, until) = (start + warmup, start + warmup + measure);
    let mut tasks = tokio::task::JoinSet::new();
    for mut worker in workers {
        tasks.spawn(async move {
            let mut latency = worker_histogram();
            let mut requests = 0u64;
            loop {
                let t = Instant::now();
                if t >= until {
                    break;
                }
                Profiled(std::pin::pin!(worker.one())).await;
                if t >= measured_from {
                    requests += 1;
                    latency.saturating_record(t.elapsed().as_micros() as u64);
                }
            }
            (requests, latency)
        });
    }
    let mut sample = Sample {
        requests: 0,
        secs: measure.as_secs_f64(),
        latency_us: Histogram::new(3).expect("histogram"),
    };
    while let Some(result) = tasks.join_next().await {
        let (requests, latency) = result.expect("worker");
        sample.requests += requests;
        sample
            .latency_us
            .add(latency)
            .expect("same histogram bounds");
    }
    sample
}

/// A future polled through a function that is never inlined, so a profiler can count exactly
/// its work, for every contender alike: each worker's exchange, and raw hyper's connection
/// driver (the pool's driver is a function of its own already). The compiler inlines some
/// contenders' `one` into the loop and not others', so without it the same toggle measured
/// different work. For example `valgrind --tool=callgrind --collect-atstart=no
/// --toggle-collect='*contenders::Profiled*poll*' --toggle-collect='*H1Driver*as*Future*poll*'`.
pub(crate) struct Profiled<F>(pub(crate) F);

impl<F: Future + Unpin> Future for Profiled<F> {
    type Output = F::Output;

    #[inline(never)]
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

/// A worker's histogram of microseconds, sized up front for up to 10 s: one that grew on demand
/// reallocated and zeroed its counts inside the measured window whenever a new maximum came,
/// work that no contender does and that, under valgrind's slow clock, dominated the client
/// thread's profile. A value past 10 s counts as 10 s.
pub(crate) fn worker_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000, 3).expect("histogram bounds")
}

fn get(uri: &Uri) -> Request<Empty<Bytes>> {
    Request::get(uri.clone())
        .body(Empty::new())
        .expect("request")
}

/// A pool builder as a user who did not ask for the `metrics` feature gets it. The bench shares
/// its crate, and so its features, with the integration tests, which turn `pool/metrics` on; a
/// pool of such a build publishes every event (a reuse included) through the facade unless told
/// not to, a cost the other contenders and a user without the feature never pay.
pub(crate) fn pool_builder() -> pool::Builder {
    pool::ConnectionPool::builder().metrics(false)
}

/// Our pool.
pub(crate) struct PoolWorker {
    pub(crate) client: pool::Client,
    pub(crate) uri: Uri,
}

impl Worker for PoolWorker {
    async fn one(&mut self) {
        let response = self
            .client
            .request(get(&self.uri))
            .await
            .expect("pool request");
        response.into_body().collect().await.expect("pool body");
    }
}

/// hyper-util's legacy client.
pub(crate) struct LegacyWorker<C> {
    pub(crate) client: LegacyClient<C, Empty<Bytes>>,
    pub(crate) uri: Uri,
}

impl<C: LegacyConnect + Clone + Send + Sync + 'static> Worker for LegacyWorker<C> {
    async fn one(&mut self) {
        let response = self
            .client
            .request(get(&self.uri))
            .await
            .expect("hyper-util request");
        response
            .into_body()
            .collect()
            .await
            .expect("hyper-util body");
    }
}

/// hyper's connection API without a pool: one pre-established HTTP/1.1 sender per worker.
pub(crate) struct RawH1Worker {
    sender: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    host: HeaderValue,
}

impl RawH1Worker {
    /// Connects and handshakes; the connection's driver runs on the current runtime.
    pub(crate) async fn connect(addr: std::net::SocketAddr) -> RawH1Worker {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(Profiled(conn));
        RawH1Worker {
            sender,
            host: HeaderValue::from_str(&addr.to_string()).expect("host"),
        }
    }
}

impl Worker for RawH1Worker {
    async fn one(&mut self) {
        self.sender.ready().await.expect("ready");
        let request = Request::get("/")
            .header(HOST, self.host.clone())
            .body(Empty::new())
            .expect("request");
        let response = self
            .sender
            .send_request(request)
            .await
            .expect("raw request");
        response.into_body().collect().await.expect("raw body");
    }
}

/// hyper's connection API without a pool: one pre-established HTTP/2 sender, cloned per worker.
pub(crate) struct RawH2Worker {
    sender: hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    uri: Uri,
}

impl RawH2Worker {
    /// Connects once (h2c) and returns `n` workers sharing the connection.
    pub(crate) async fn connect(addr: std::net::SocketAddr, n: usize) -> Vec<RawH2Worker> {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, conn) =
            hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
        tokio::spawn(conn);
        let uri: Uri = format!("http://{addr}/").parse().expect("uri");
        (0..n)
            .map(|_| RawH2Worker {
                sender: sender.clone(),
                uri: uri.clone(),
            })
            .collect()
    }
}

impl Worker for RawH2Worker {
    async fn one(&mut self) {
        let response = self
            .sender
            .send_request(get(&self.uri))
            .await
            .expect("raw request");
        response.into_body().collect().await.expect("raw body");
    }
}
