//! Transports that stop at test-controlled gates: a connector that can pause before dialing,
//! in the middle of a TLS handshake, or before any byte is written (so hyper's HTTP/2 handshake
//! cannot flush its preface). The cancellation tests drop requests while an establishment is
//! parked at exactly one of these points.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use pool::{ConnectError, ConnectFuture, ConnectTarget, Connected, Io, Negotiated};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::gate::{Gate, Signal};

/// Where one connection's establishment stops.
#[derive(Clone, Debug, Default)]
pub struct Gates {
    /// Park before dialing.
    pub before_dial: Option<Gate>,
    /// Park every read until open (with TLS: the client waits for the ServerHello).
    pub reads: Option<Gate>,
    /// Park every write until open (with h2c: hyper's handshake cannot flush its preface).
    pub writes: Option<Gate>,
    /// Raised each time a write or flush fails (the peer reset the connection).
    pub write_failures: Option<Signal>,
}

/// A connector that dials loopback TCP (and TLS, if configured) and stops at the gates planned
/// for each connection, in order; connections without a plan run ungated.
#[derive(Clone)]
pub struct GatedConnector {
    tls: Option<Arc<rustls::ClientConfig>>,
    plans: Arc<Mutex<VecDeque<Gates>>>,
}

impl std::fmt::Debug for GatedConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatedConnector")
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl GatedConnector {
    /// A cleartext connector whose first connections stop at `plans`.
    pub fn new(plans: impl IntoIterator<Item = Gates>) -> GatedConnector {
        GatedConnector {
            tls: None,
            plans: Arc::new(Mutex::new(plans.into_iter().collect())),
        }
    }

    /// A TLS connector (for `https://` origins) using `config`.
    pub fn tls(
        config: Arc<rustls::ClientConfig>,
        plans: impl IntoIterator<Item = Gates>,
    ) -> GatedConnector {
        GatedConnector {
            tls: Some(config),
            plans: Arc::new(Mutex::new(plans.into_iter().collect())),
        }
    }
}

impl pool::Connect for GatedConnector {
    fn connect(&self, target: ConnectTarget) -> ConnectFuture {
        let gates = self.plans.lock().unwrap().pop_front().unwrap_or_default();
        let tls = self.tls.clone().filter(|_| target.origin.is_tls());
        Box::pin(async move {
            if let Some(gate) = &gates.before_dial {
                gate.wait().await;
            }
            let origin = &target.origin;
            let tcp = TcpStream::connect((origin.host(), origin.port()))
                .await
                .map_err(ConnectError::connect)?;
            let (local, remote) = (
                tcp.local_addr().map_err(ConnectError::connect)?,
                tcp.peer_addr().map_err(ConnectError::connect)?,
            );
            let io = GatedIo::new(tcp, gates.reads, gates.writes)
                .with_write_failures(gates.write_failures);
            let mut connected = Connected::new(local, remote);
            match tls {
                None => Ok((Io::custom(io), connected)),
                Some(config) => {
                    let name = ServerName::try_from(origin.host().to_owned())
                        .map_err(ConnectError::tls)?;
                    let stream = tokio_rustls::TlsConnector::from(config)
                        .connect(name, io)
                        .await
                        .map_err(ConnectError::tls)?;
                    connected.alpn = match stream.get_ref().1.alpn_protocol() {
                        Some(b"h2") => Some(Negotiated::Http2),
                        Some(_) => Some(Negotiated::Http1),
                        None => None,
                    };
                    connected.tls = Some(pool_tls::TlsInfo {
                        version: "TLSv1.3",
                        cipher_suite: "test",
                        key_exchange: None,
                        resumed: false,
                        alpn_offered: true,
                        peer_certificates: 1,
                        peer_chain: None,
                        certificate: pool::CertificateCheck::Valid,
                    });
                    Ok((Io::custom(stream), connected))
                }
            }
        })
    }
}

/// Waits for one gate from a poll function.
struct GateWait {
    gate: Option<Gate>,
    wait: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl GateWait {
    fn new(gate: Option<Gate>) -> GateWait {
        GateWait { gate, wait: None }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(gate) = &self.gate else {
            return Poll::Ready(());
        };
        let wait = self.wait.get_or_insert_with(|| {
            let gate = gate.clone();
            Box::pin(async move { gate.wait().await })
        });
        ready!(wait.as_mut().poll(cx));
        self.gate = None;
        self.wait = None;
        Poll::Ready(())
    }
}

/// I/O whose reads and writes wait for their gates to open.
pub struct GatedIo<T> {
    inner: T,
    reads: GateWait,
    writes: GateWait,
    write_failures: Option<Signal>,
}

impl<T> GatedIo<T> {
    /// Wraps `inner`; `None` gates do not stop anything.
    pub fn new(inner: T, reads: Option<Gate>, writes: Option<Gate>) -> GatedIo<T> {
        GatedIo {
            inner,
            reads: GateWait::new(reads),
            writes: GateWait::new(writes),
            write_failures: None,
        }
    }

    /// Raises `signal` each time a write or flush fails.
    pub fn with_write_failures(mut self, signal: Option<Signal>) -> GatedIo<T> {
        self.write_failures = signal;
        self
    }

    /// Passes `result` on, raising the write-failure signal if it is an error.
    fn written<R>(&self, result: io::Result<R>) -> io::Result<R> {
        if let (Err(_), Some(signal)) = (&result, &self.write_failures) {
            signal.raise();
        }
        result
    }
}

impl<T> std::fmt::Debug for GatedIo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatedIo").finish_non_exhaustive()
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GatedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        ready!(self.reads.poll(cx));
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GatedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.writes.poll(cx));
        let result = ready!(Pin::new(&mut self.inner).poll_write(cx, buf));
        Poll::Ready(self.written(result))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.writes.poll(cx));
        let result = ready!(Pin::new(&mut self.inner).poll_flush(cx));
        Poll::Ready(self.written(result))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
