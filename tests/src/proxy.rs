//! A scripted HTTP proxy on loopback: `CONNECT` tunnels (accepted, refused with a status, or
//! closed right after accepting) and forward requests (answered by the proxy itself, as the
//! origin would be), with an optional credential requirement: an exact `Proxy-Authorization`
//! (Basic), or a Digest or NTLM answer to its own challenge, checked. It records what it
//! received.
//!
//! What it does not do: forward absolute-form requests to a real origin, cache, or speak
//! HTTP/2 to clients.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::ntlm;

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

/// What the proxy asks of a request's `Proxy-Authorization`.
#[derive(Clone, Debug)]
enum Guard {
    /// Nothing.
    Open,
    /// Exactly this value (`Basic …`); a `407` offering Basic otherwise, and the connection
    /// closes.
    Exact(Arc<str>),
    /// A Digest answer (MD5, `qop=auth`) for this user and password to the proxy's own
    /// challenge ([`DIGEST_REALM`], [`DIGEST_NONCE`]); a `407` with that challenge otherwise,
    /// after which the connection stays open when `keep_open` is set (else the `407` says
    /// `Connection: close` and the proxy closes).
    Digest {
        user: Arc<str>,
        password: Arc<str>,
        keep_open: bool,
    },
    /// NTLM: a negotiate message draws the challenge ([`crate::ntlm::challenge`], NTLMv2's when
    /// `v2`), and an authenticate message that answers it with `password`, on the connection
    /// the challenge went out on, is let through; a `407` otherwise, and the connection stays
    /// open (NTLM's answer must come on it).
    Ntlm { password: Arc<str>, v2: bool },
}

/// The realm of the proxy's Digest challenge.
pub const DIGEST_REALM: &str = "scripted";
/// The nonce of the proxy's Digest challenge.
pub const DIGEST_NONCE: &str = "dcd98b7102dd2f0e8b11d0f600bfb0c093";

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
        let guard = credentials.map_or(Guard::Open, |c| Guard::Exact(c.into()));
        ScriptedProxy::start_with(script, guard, None).await
    }

    /// Like [`start`](Self::start), but requests must carry a Digest answer to the proxy's
    /// challenge for `user` with `password` (checked: MD5, `qop=auth`, the request's method
    /// and target). A `407` keeps its connection open when `keep_open` is set; otherwise it
    /// says `Connection: close` and closes, as a proxy that does not keep connections after a
    /// refusal does.
    pub async fn start_digest(
        script: ConnectScript,
        (user, password): (&str, &str),
        keep_open: bool,
    ) -> ScriptedProxy {
        let guard = Guard::Digest {
            user: user.into(),
            password: password.into(),
            keep_open,
        };
        ScriptedProxy::start_with(script, guard, None).await
    }

    /// Like [`start`](Self::start), but requests must authenticate with NTLM, answering the
    /// proxy's challenge (NTLMv2's when `v2`, else NTLMv1's) with `password` on the connection
    /// it went out on.
    pub async fn start_ntlm(script: ConnectScript, password: &str, v2: bool) -> ScriptedProxy {
        let guard = Guard::Ntlm {
            password: password.into(),
            v2,
        };
        ScriptedProxy::start_with(script, guard, None).await
    }

    /// Like [`start`](Self::start), but clients reach the proxy over TLS with `config` (an
    /// `https://` proxy); [`url`](Self::url) then names `https://localhost:PORT`.
    pub async fn start_tls(
        script: ConnectScript,
        credentials: Option<&str>,
        config: Arc<rustls::ServerConfig>,
    ) -> ScriptedProxy {
        let guard = credentials.map_or(Guard::Open, |c| Guard::Exact(c.into()));
        ScriptedProxy::start_with(script, guard, Some(config)).await
    }

    async fn start_with(
        script: ConnectScript,
        credentials: Guard,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> ScriptedProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Seen::default()));
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
    credentials: Guard,
    seen: Arc<Mutex<Seen>>,
) {
    // NTLM: whether this connection carried a negotiate message, so its challenge went out.
    let mut negotiated = false;
    while let Some(head) = read_head(&mut io).await {
        let line = head.lines().next().unwrap_or_default().to_owned();
        let request = ProxyRequest {
            conn,
            line: line.clone(),
            proxy_authorization: header(&head, "proxy-authorization"),
            host: header(&head, "host"),
            head: head.clone(),
        };
        let mut parts = line.split(' ');
        let (method, target) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let authorized = match &credentials {
            Guard::Open => true,
            Guard::Exact(expected) => request.proxy_authorization.as_deref() == Some(&**expected),
            Guard::Digest { user, password, .. } => request
                .proxy_authorization
                .as_deref()
                .is_some_and(|answer| digest_matches(answer, method, target, user, password)),
            Guard::Ntlm { password, v2 } => {
                let message = request
                    .proxy_authorization
                    .as_deref()
                    .and_then(ntlm::message);
                negotiated
                    && matches!(message, Some((3, m)) if ntlm::verify(&m, *v2, password).is_some())
            }
        };
        let negotiating = matches!(&credentials, Guard::Ntlm { .. })
            && request
                .proxy_authorization
                .as_deref()
                .and_then(ntlm::message)
                .is_some_and(|(kind, _)| kind == 1);
        seen.lock().unwrap().requests.push(request);
        if !authorized {
            let (challenge, keep_open) = match &credentials {
                Guard::Digest { keep_open, .. } => (
                    format!(
                        "Digest realm=\"{DIGEST_REALM}\", nonce=\"{DIGEST_NONCE}\", \
                         algorithm=MD5, qop=\"auth\""
                    ),
                    *keep_open,
                ),
                Guard::Ntlm { v2, .. } if negotiating => (ntlm::challenge(*v2), true),
                Guard::Ntlm { .. } => ("NTLM".to_owned(), true),
                _ => ("Basic realm=\"test\"".to_owned(), false),
            };
            negotiated = negotiating;
            let body = "authenticate first";
            let close = if keep_open {
                ""
            } else {
                "connection: close\r\n"
            };
            let answer = format!(
                "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: {challenge}\r\n\
                 {close}content-length: {}\r\n\r\n{body}",
                body.len()
            );
            if io.write_all(answer.as_bytes()).await.is_err() || !keep_open {
                return;
            }
            continue;
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

/// Whether `answer` (a `Proxy-Authorization` value) is the Digest answer (MD5, `qop=auth`,
/// RFC 7616 section 3.4.1) of `user` with `password` to the proxy's challenge, for a `method`
/// request to `target`. For a forward request the answer's `uri` is the path (as curl sends
/// it) and `target` the absolute form: their paths must agree. Computed here with MD5 alone,
/// not with the `digest_auth` crate the pool answers with, so that a fault there cannot pass
/// its own check.
fn digest_matches(answer: &str, method: &str, target: &str, user: &str, password: &str) -> bool {
    use md5::{Digest, Md5};
    let Some(params) = answer.strip_prefix("Digest ") else {
        return false;
    };
    let param = |name: &str| {
        params.split(',').find_map(|part| {
            let (key, value) = part.trim().split_once('=')?;
            (key == name).then(|| value.trim_matches('"').to_owned())
        })
    };
    let hex = |text: String| {
        Md5::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let (Some(uri), Some(cnonce), Some(nc), Some(response)) = (
        param("uri"),
        param("cnonce"),
        param("nc"),
        param("response"),
    ) else {
        return false;
    };
    let path = target
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|at| &rest[at..]))
        .unwrap_or(target);
    let ha1 = hex(format!("{user}:{DIGEST_REALM}:{password}"));
    let ha2 = hex(format!("{method}:{uri}"));
    param("username").as_deref() == Some(user)
        && param("nonce").as_deref() == Some(DIGEST_NONCE)
        && uri == path
        && response == hex(format!("{ha1}:{DIGEST_NONCE}:{nc}:{cnonce}:auth:{ha2}"))
}
