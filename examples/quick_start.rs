//! Quick start: one pool, one client, a few requests, and what each response says about the
//! connection that served it.
//!
//! ```sh
//! cargo run -p pool-examples --example quick_start            # against a local origin
//! cargo run -p pool-examples --example quick_start -- URL     # against URL
//! ```

use http_body_util::BodyExt;
use pool::{ConnectionPool, RequestBody};
use pool_examples::LocalOrigin;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Without a URL, start the examples' local origin on this runtime.
    let (url, _origin) = match std::env::args().nth(1) {
        Some(url) => (url, None),
        None => {
            let origin = LocalOrigin::start().await?;
            (origin.url("/"), Some(origin))
        }
    };

    let pool = ConnectionPool::builder()
        .max_connections_per_host(4)
        .build()?;
    let client = pool.client()?;

    for _ in 0..3 {
        let request = http::Request::get(url.as_str()).body(RequestBody::empty())?;
        match client.request(request).await {
            Ok(response) => {
                let status = response.status();
                let connection = response.body().connection().clone();
                let body = response.into_body().collect().await?.to_bytes();
                println!(
                    "{status}: {} bytes over connection {} ({}, reused: {})",
                    body.len(),
                    connection.id(),
                    connection.protocol().version_str(),
                    connection.is_reused(),
                );
            }
            // `{:#}` prints the whole cause chain on one line, each level once.
            Err(error) => println!("request failed: {error:#}"),
        }
    }
    println!("{:?}", pool.stats(url.as_str()));
    Ok(())
}
