//! pool-tls's connector without the pool: `HttpConnector` as a `tower_service::Service<Uri>`
//! under hyper's own `client::conn` API.
//!
//! ```sh
//! cargo run -p pool-examples --example connector
//! ```

use std::sync::Arc;

use http_body_util::{BodyExt, Empty};
use pool_examples::LocalOrigin;
use pool_tls::{DialOptions, HttpConnector, SystemResolver, TlsConnector, TlsOptions};
use tower_service::Service;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let origin = LocalOrigin::start().await?;
    let tls = TlsConnector::new(TlsOptions::default())?;
    let mut connector = HttpConnector::new(Arc::new(SystemResolver), DialOptions::default(), tls);

    let uri: http::Uri = origin.url("/").parse()?;
    let connection = connector.call(uri.clone()).await?;
    println!(
        "connected {} -> {} in {:?} (h2 by ALPN: {})",
        connection.connected().local_addr,
        connection.connected().remote_addr,
        connection.connected().timings.connect,
        connection.is_h2(),
    );

    // hyper's HTTP/1.1 client connection over it; the driver runs as its own task.
    let (mut sender, driver) = hyper::client::conn::http1::handshake(connection).await?;
    let driver = tokio::spawn(driver);
    for _ in 0..2 {
        sender.ready().await?;
        let request = http::Request::get(uri.path())
            .header(
                http::header::HOST,
                uri.authority().map_or("", |a| a.as_str()),
            )
            .body(Empty::<bytes::Bytes>::new())?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        println!("{status}: {:?}", String::from_utf8_lossy(&body));
    }
    drop(sender);
    driver.await??;
    println!("{} requests served on one connection", origin.served());
    Ok(())
}
