//! The client under tower middleware: a timeout and a concurrency limit from `tower`, called
//! with `ready().await?.call(request)` and `oneshot`, no type annotations.
//!
//! ```sh
//! cargo run -p pool-examples --example tower_stack
//! ```

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use pool::{ConnectionPool, RequestBody};
use pool_examples::LocalOrigin;
use tower::{Service, ServiceBuilder, ServiceExt};

#[tokio::main]
async fn main() -> Result<(), tower::BoxError> {
    let origin = LocalOrigin::start().await?;
    let pool = ConnectionPool::builder().build()?;

    // The client serves `Request<RequestBody>`, so every layer's types are inferred.
    let mut service = ServiceBuilder::new()
        .timeout(Duration::from_secs(5))
        .concurrency_limit(8)
        .service(pool.client()?);

    let request = http::Request::get(origin.url("/")).body(RequestBody::empty())?;
    let response = service.ready().await?.call(request).await?;
    println!("ready + call: {}", response.status());
    response.into_body().collect().await?;

    // `oneshot` on a clone, the way concurrent callers share one stack.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let service = service.clone();
        let request =
            http::Request::get(origin.url(&format!("/?n={i}"))).body(RequestBody::empty())?;
        tasks.push(tokio::spawn(async move {
            let response = service.oneshot(request).await?;
            let status = response.status();
            response.into_body().collect().await?;
            Ok::<_, tower::BoxError>(status)
        }));
    }
    for task in tasks {
        let status = task.await??;
        assert!(status.is_success());
    }

    // A stack whose requests carry another body type: `Client::service::<B>()`.
    let full = ServiceBuilder::new()
        .timeout(Duration::from_secs(5))
        .service(pool.client()?.service::<Full<Bytes>>());
    let request =
        http::Request::post(origin.url("/")).body(Full::new(Bytes::from_static(b"hi")))?;
    let response = full.oneshot(request).await?;
    println!("Full<Bytes> body: {}", response.status());

    println!("{} requests served", origin.served());
    Ok(())
}
