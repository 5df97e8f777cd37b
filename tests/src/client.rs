//! Small helpers for driving the pool in tests.

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Empty};
use pool::{ConnectionHandle, ConnectionPool, OriginKey, PartitionStats};

/// A GET request with an empty body.
pub fn get(url: &str) -> Request<Empty<Bytes>> {
    Request::get(url).body(Empty::new()).expect("valid request")
}

/// `request` carrying a [`pool::Progress`] its caller keeps, to read where it stands.
pub fn followed<B>(mut request: Request<B>) -> (Request<B>, pool::Progress) {
    let progress = pool::Progress::new();
    request.extensions_mut().insert(progress.clone());
    (request, progress)
}

/// The origin of `url`.
pub fn origin(url: &str) -> OriginKey {
    OriginKey::from_uri(&url.parse().expect("valid URI")).expect("valid origin")
}

/// Sends a GET and reads the whole body; panics on any error.
pub async fn fetch(client: &pool::Client, url: &str) -> (ConnectionHandle, Bytes) {
    send(client, get(url)).await
}

/// Sends `request` and reads the whole body; panics on any error.
pub async fn send<B>(client: &pool::Client, request: Request<B>) -> (ConnectionHandle, Bytes)
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let response = client.request(request).await.expect("request succeeds");
    let handle = response.body().connection().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body reads")
        .to_bytes();
    (handle, body)
}

/// Lets other tasks run until the origin's summed gauges satisfy `condition`. Bounded by a
/// real-time deadline (a hang fails the test rather than blocking CI), never by sleeping; panics
/// with the gauges if they never settle.
pub async fn settle(
    pool: &ConnectionPool,
    origin: &OriginKey,
    condition: impl Fn(&PartitionStats) -> bool,
) {
    let stats = || pool.stats(origin).total();
    eventually(
        || condition(&stats()),
        || format!("gauges never settled: {:?}", stats()),
    )
    .await;
}

/// Lets other tasks run until `condition` holds, as [`settle`] does for gauges: for what the
/// pool shows only through its stats (a lesson it learnt of a server). Panics with `why` if it
/// never holds.
pub async fn eventually(condition: impl Fn() -> bool, why: impl Fn() -> String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "{}", why());
        tokio::task::yield_now().await;
    }
}

/// Lets other tasks run until the request behind `progress` reaches `stage` (see
/// [`eventually`]); panics with the stage it stayed at if it never does.
pub async fn reaches(progress: &pool::Progress, stage: pool::RequestStage) {
    eventually(
        || progress.stage() == stage,
        || format!("{:?}, never {stage:?}", progress.stage()),
    )
    .await;
}

/// A streaming request body: each chunk its own frame, produced by polling like any stream, so
/// the pool cannot replay it.
#[derive(Debug)]
pub struct Chunks(std::collections::VecDeque<Bytes>);

impl Chunks {
    /// A body of `chunks`, in order.
    pub fn new(chunks: impl IntoIterator<Item = Bytes>) -> Chunks {
        Chunks(chunks.into_iter().collect())
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|b| Ok(http_body::Frame::data(b))))
    }
}

/// A streaming request body that sends one chunk, then waits at a gate before it ends (a gate
/// the test never opens makes a body that never ends: an upload the server answers early).
pub struct Stalled {
    first: Option<Bytes>,
    wait: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    opened: bool,
    rest: Option<Bytes>,
}

impl Stalled {
    /// `first`, then the end once `gate` opens.
    pub fn new(first: impl Into<Bytes>, gate: crate::gate::Gate) -> Stalled {
        Stalled {
            first: Some(first.into()),
            wait: Box::pin(async move { gate.wait().await }),
            opened: false,
            rest: None,
        }
    }

    /// Yields `rest` once the gate opens, before the end.
    pub fn then(mut self, rest: impl Into<Bytes>) -> Stalled {
        self.rest = Some(rest.into());
        self
    }
}

impl std::fmt::Debug for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stalled")
            .field("first_sent", &self.first.is_none())
            .finish()
    }
}

impl http_body::Body for Stalled {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        if let Some(chunk) = self.first.take() {
            return std::task::Poll::Ready(Some(Ok(http_body::Frame::data(chunk))));
        }
        if !self.opened {
            std::task::ready!(self.wait.as_mut().poll(cx));
            self.opened = true;
        }
        let rest = self.rest.take();
        std::task::Poll::Ready(rest.map(|chunk| Ok(http_body::Frame::data(chunk))))
    }
}

/// How many bounded origins `pool` keeps an admission for, read from its `Debug` output (which
/// reports it as `bounded_origins`).
pub fn bounded_origins(pool: &pool::ConnectionPool) -> usize {
    let debug = format!("{pool:?}");
    let (_, after) = debug
        .split_once("bounded_origins: ")
        .expect("the pool's Debug reports its bounded origins");
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count")
}
