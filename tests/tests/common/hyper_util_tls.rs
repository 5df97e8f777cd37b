//! A rustls connector for hyper-util's legacy client (dev-only), so the differential tests and
//! the benchmark can put hyper-util against TLS + ALPN origins. It does what a user would wire
//! up with a TLS connector crate: TCP, rustls with the given client config, and report `h2`
//! when ALPN selected it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Connects `https://` URIs with rustls.
#[derive(Clone)]
pub(crate) struct RustlsConnector {
    config: Arc<rustls::ClientConfig>,
    dials: Arc<std::sync::atomic::AtomicUsize>,
}

impl RustlsConnector {
    pub(crate) fn new(config: Arc<rustls::ClientConfig>) -> RustlsConnector {
        RustlsConnector {
            config,
            dials: Arc::default(),
        }
    }

    /// Dials started so far.
    #[allow(dead_code)]
    pub(crate) fn dials(&self) -> usize {
        self.dials.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The TLS transport, telling hyper-util whether ALPN chose HTTP/2.
pub(crate) struct TlsIo {
    inner: TokioIo<TlsStream<TcpStream>>,
}

impl Connection for TlsIo {
    fn connected(&self) -> Connected {
        let h2 = self.inner.inner().get_ref().1.alpn_protocol() == Some(b"h2");
        if h2 {
            Connected::new().negotiated_h2()
        } else {
            Connected::new()
        }
    }
}

impl hyper::rt::Read for TlsIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for TlsIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl tower_service::Service<Uri> for RustlsConnector {
    type Response = TlsIo;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsIo, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        self.dials.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let config = self.config.clone();
        Box::pin(async move {
            let host = uri
                .host()
                .ok_or("URI without host")?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri.port_u16().unwrap_or(443);
            let tcp = TcpStream::connect((host.as_str(), port)).await?;
            tcp.set_nodelay(true)?;
            let name = ServerName::try_from(host)?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await?;
            Ok(TlsIo {
                inner: TokioIo::new(tls),
            })
        })
    }
}
