//! [`ScriptedSocks5`]: a SOCKS5 proxy (RFC 1928, with RFC 1929's user name and password) on
//! loopback that records what each client asked for, so tests can tell `socks5://` (an address
//! the client resolved) from `socks5h://` (a name the proxy resolves) and check credentials.
//! It answers `CONNECT` only; a name is resolved with the system resolver, trying each address.
//!
//! Written here rather than taken from a crate: the SOCKS crates are clients, and the server
//! side of a test needs to record and refuse on command.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// One `CONNECT` a client asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocksRequest {
    /// `ADDR:PORT` or `NAME:PORT`, as asked.
    pub target: String,
    /// Whether the client sent a name (for the proxy to resolve).
    pub by_name: bool,
    /// The user name it authenticated with, if any.
    pub user: Option<String>,
}

/// How the proxy answers.
#[derive(Debug, Clone, Default)]
struct Script {
    /// Required user name and password; `None` accepts clients without authentication.
    credentials: Option<(String, String)>,
    /// A reply code to refuse every `CONNECT` with (5: connection refused, ...).
    refuse: Option<u8>,
}

/// A SOCKS5 proxy on `127.0.0.1`.
///
/// # Drop behavior
///
/// Dropping it stops accepting and aborts every open tunnel.
#[derive(Debug)]
pub struct ScriptedSocks5 {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<SocksRequest>>>,
    task: JoinHandle<()>,
}

impl ScriptedSocks5 {
    /// A proxy that needs no authentication and connects wherever it is asked.
    pub async fn start() -> ScriptedSocks5 {
        ScriptedSocks5::with_script(Script::default()).await
    }

    /// A proxy that accepts only `user` with `password` (RFC 1929).
    pub async fn with_credentials(user: &str, password: &str) -> ScriptedSocks5 {
        let script = Script {
            credentials: Some((user.to_owned(), password.to_owned())),
            ..Script::default()
        };
        ScriptedSocks5::with_script(script).await
    }

    /// A proxy that refuses every `CONNECT` with reply `code`.
    pub async fn refusing(code: u8) -> ScriptedSocks5 {
        let script = Script {
            refuse: Some(code),
            ..Script::default()
        };
        ScriptedSocks5::with_script(script).await
    }

    async fn with_script(script: Script) -> ScriptedSocks5 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            let mut tunnels = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let script = script.clone();
                let recorded = Arc::clone(&recorded);
                tunnels.spawn(async move {
                    // A client that breaks off the handshake only ends its own tunnel.
                    let _ = serve(client, &script, &recorded).await;
                });
            }
        });
        ScriptedSocks5 {
            addr,
            requests,
            task,
        }
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every `CONNECT` asked for so far, in order.
    pub fn requests(&self) -> Vec<SocksRequest> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

impl Drop for ScriptedSocks5 {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One client: the method choice, authentication, the request, then the tunnel.
async fn serve(
    mut client: TcpStream,
    script: &Script,
    recorded: &Mutex<Vec<SocksRequest>>,
) -> std::io::Result<()> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await?;
    let user = match &script.credentials {
        None => {
            client.write_all(&[5, 0]).await?;
            None
        }
        Some((want_user, want_password)) => {
            if !methods.contains(&2) {
                client.write_all(&[5, 0xff]).await?;
                return Ok(());
            }
            client.write_all(&[5, 2]).await?;
            let user = read_counted(&mut client, 1).await?;
            let password = read_counted(&mut client, 0).await?;
            let ok = user == *want_user && password == *want_password;
            client.write_all(&[1, u8::from(!ok)]).await?;
            if !ok {
                return Ok(());
            }
            Some(user)
        }
    };
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let (host, by_name) = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            (std::net::Ipv4Addr::from(ip).to_string(), false)
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip).await?;
            (format!("[{}]", std::net::Ipv6Addr::from(ip)), false)
        }
        _ => (read_counted(&mut client, 0).await?, true),
    };
    let port = client.read_u16().await?;
    let target = format!("{host}:{port}");
    recorded.lock().expect("not poisoned").push(SocksRequest {
        target: target.clone(),
        by_name,
        user,
    });
    let reply = |code: u8| [5, code, 0, 1, 0, 0, 0, 0, 0, 0];
    if let Some(code) = script.refuse {
        client.write_all(&reply(code)).await?;
        return Ok(());
    }
    let mut upstream = None;
    for addr in tokio::net::lookup_host(target.as_str()).await? {
        if let Ok(stream) = TcpStream::connect(addr).await {
            upstream = Some(stream);
            break;
        }
    }
    let Some(mut upstream) = upstream else {
        client.write_all(&reply(5)).await?;
        return Ok(());
    };
    client.write_all(&reply(0)).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// A length-prefixed string (after `skip` bytes, the version of an authentication request).
async fn read_counted(client: &mut TcpStream, skip: usize) -> std::io::Result<String> {
    let mut skipped = vec![0u8; skip];
    client.read_exact(&mut skipped).await?;
    let len = client.read_u8().await?;
    let mut text = vec![0u8; usize::from(len)];
    client.read_exact(&mut text).await?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}
