//! A scripted HTTP proxy on loopback: `CONNECT` tunnels (accepted, refused with a status, or
//! closed right after accepting) and forward requests (answered by the proxy itself, as the
//! origin would be), with an optional credential requirement. It records what it received.
//!
//! What it does not do: forward absolute-form requests to a real origin, cache, or speak
//! HTTP/2 to clients.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with a `CONNECT`.
#[derive(Clone, Copy, Debug)]
pub enum ConnectScript {
    /// `200`, then relays bytes both ways to the named authority.
    Tunnel,
    /// Answers with this status and closes.
    Refuse(u16),
    /// `200`, then closes without relaying anything.
    CloseAfterAccept,
}

/// One request head the proxy read.
#[derive(Clone, Debug)]
pub struct ProxyRequest {
    /// The connection it arrived on (0-based accept order).
    pub conn: usize,
    /// The request line, e.g. `CONNECT origin:443 HTTP/1.1` or `GET http://o/ HTTP/1.1`.
    pub line: String,
    /// `Proxy-Authorization`, if sent.
    pub proxy_authorization: Option<String>,
    /// `Host`, if sent.
    pub host: Option<String>,
    /// The whole head as received, for headers the fields above do not pick out.
    pub head: String,
}

#[derive(Default)]
struct Seen {
    connections: usize,
    requests: Vec<ProxyRequest>,
}

/// A listening scripted proxy; stops when dropped.
#[derive(Debug)]
pub struct ScriptedProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
    tls: bool,
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seen")
            .field("connections", &self.connections)
            .field("requests", &self.requests.len())
            .finish()
    }
}

impl ScriptedProxy {
    /// Starts a proxy that handles `CONNECT` as `script` and answers forward requests with
    /// `200 via-proxy`. With `credentials` (`Basic …`), a request without exactly that
    /// `Proxy-Authorization` gets `407`.
    pub async fn start(script: ConnectScript, credentials: Option<&str>) -> ScriptedProxy {
        ScriptedProxy::start_with(script, credentials, None).await
    }

    /// Like [`start`](Self::start), but clients reach the proxy over TLS with `config` (an
    /// `https://` proxy); [`url`](Self::url) then names `https://localhost:PORT`.
    pub async fn start_tls(
        script: ConnectScript,
        credentials: Option<&str>,
        config: Arc<rustls::ServerConfig>,
    ) -> ScriptedProxy {
        ScriptedProxy::start_with(script, credentials, Some(config)).await
    }

    async fn start_with(
        script: ConnectScript,
        credentials: Option<&str>,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> ScriptedProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let credentials: Option<Arc<str>> = credentials.map(Into::into);
        let tls_flag = tls.is_some();
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                while let Ok((io, _)) = listener.accept().await {
                    let conn = {
                        let mut seen = seen.lock().unwrap();
                        seen.connections += 1;
                        seen.connections - 1
                    };
                    let (credentials, seen) = (credentials.clone(), seen.clone());
                    match &tls {
                        None => {
                            tokio::spawn(serve(io, conn, script, credentials, seen));
                        }
                        Some(config) => {
                            let acceptor = tokio_rustls::TlsAcceptor::from(config.clone());
                            tokio::spawn(async move {
                                if let Ok(io) = acceptor.accept(io).await {
                                    serve(io, conn, script, credentials, seen).await;
                                }
                            });
                        }
                    }
                }
            }
        });
        ScriptedProxy {
            addr,
            seen,
            task,
            tls: tls_flag,
        }
    }

    /// The proxy's URL: `http://127.0.0.1:PORT`, or `https://localhost:PORT` over TLS.
    pub fn url(&self) -> String {
        if self.tls {
            format!("https://localhost:{}", self.addr.port())
        } else {
            format!("http://{}", self.addr)
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.seen.lock().unwrap().connections
    }

    /// Every request head read so far, in order.
    pub fn requests(&self) -> Vec<ProxyRequest> {
        self.seen.lock().unwrap().requests.clone()
    }
}

impl Drop for ScriptedProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request head; `None` when the client closed first.
async fn read_head<S: AsyncRead + Unpin>(io: &mut S) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if io.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).ok()
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut io: S,
    conn: usize,
    script: ConnectScript,
    credentials: Option<Arc<str>>,
    seen: Arc<Mutex<Seen>>,
) {
    while let Some(head) = read_head(&mut io).await {
        let line = head.lines().next().unwrap_or_default().to_owned();
        let request = ProxyRequest {
            conn,
            line: line.clone(),
            proxy_authorization: header(&head, "proxy-authorization"),
            host: header(&head, "host"),
            head: head.clone(),
        };
        let authorized = match &credentials {
            None => true,
            Some(expected) => request.proxy_authorization.as_deref() == Some(&**expected),
        };
        seen.lock().unwrap().requests.push(request);
        if !authorized {
            let _ = io
                .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\ncontent-length: 0\r\n\r\n")
                .await;
            return;
        }
        let Some(authority) = line
            .strip_prefix("CONNECT ")
            .and_then(|r| r.split(' ').next())
        else {
            let body = b"via-proxy";
            let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
            if io.write_all(answer.as_bytes()).await.is_err() || io.write_all(body).await.is_err() {
                return;
            }
            continue;
        };
        match script {
            ConnectScript::Refuse(status) => {
                let answer = format!("HTTP/1.1 {status} Refused\r\ncontent-length: 0\r\n\r\n");
                let _ = io.write_all(answer.as_bytes()).await;
            }
            ConnectScript::CloseAfterAccept => {
                let _ = io
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await;
            }
            ConnectScript::Tunnel => {
                let Ok(mut upstream) = TcpStream::connect(authority.to_owned()).await else {
                    let _ = io.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                    return;
                };
                if io
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut io, &mut upstream).await;
                }
            }
        }
        return;
    }
}
