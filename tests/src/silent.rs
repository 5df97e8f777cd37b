//! A peer that accepts connections and never sends a byte: a TLS server that never finishes its
//! handshake, an HTTP proxy that never answers its `CONNECT`, a SOCKS proxy that never answers
//! its greeting. For tests of the connect timeout's steps.

use std::net::SocketAddr;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A silent peer on a loopback port, for as long as this value lives: it accepts every
/// connection and holds it open, reading nothing and writing nothing.
#[derive(Debug)]
pub struct SilentPeer {
    addr: SocketAddr,
    accepting: JoinHandle<()>,
}

impl SilentPeer {
    /// Listens on a fresh port of 127.0.0.1, on the current runtime.
    ///
    /// # Panics
    ///
    /// If no port can be bound.
    pub async fn start() -> SilentPeer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("the bound address");
        let accepting = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        SilentPeer { addr, accepting }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for SilentPeer {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}
