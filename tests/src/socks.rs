//! [`ScriptedSocks`]: a SOCKS proxy on loopback, speaking SOCKS5 (RFC 1928, with RFC 1929's
//! user name and password) and SOCKS4/4a (the version byte a client opens with decides), that
//! records what each client asked for, so tests can tell an address the client resolved
//! (`socks5://`, `socks4://`) from a name the proxy resolves (`socks5h://`, `socks4a://`) and
//! check credentials. It answers `CONNECT` only; a name is resolved with the system resolver,
//! trying each address.
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
    /// The protocol version the client spoke: 4 (SOCKS4 and 4a) or 5.
    pub version: u8,
    /// `ADDR:PORT` or `NAME:PORT`, as asked.
    pub target: String,
    /// Whether the client sent a name (for the proxy to resolve).
    pub by_name: bool,
    /// The user name it authenticated with (SOCKS4: its user id), if any.
    pub user: Option<String>,
}

/// How the proxy answers.
#[derive(Debug, Clone, Default)]
struct Script {
    /// Required user name and password; `None` accepts clients without authentication. A
    /// SOCKS4 client must send the user name as its user id.
    credentials: Option<(String, String)>,
    /// A SOCKS5 reply code to refuse every `CONNECT` with (5: connection refused, ...); a
    /// SOCKS4 client is refused with 91 (rejected or failed).
    refuse: Option<u8>,
}

/// A SOCKS5 and SOCKS4 proxy on `127.0.0.1`.
///
/// # Drop behavior
///
/// Dropping it stops accepting and aborts every open tunnel.
#[derive(Debug)]
pub struct ScriptedSocks {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<SocksRequest>>>,
    task: JoinHandle<()>,
}

impl ScriptedSocks {
    /// A proxy that needs no authentication and connects wherever it is asked.
    pub async fn start() -> ScriptedSocks {
        ScriptedSocks::with_script(Script::default()).await
    }

    /// A proxy that accepts only `user` with `password` (RFC 1929).
    pub async fn with_credentials(user: &str, password: &str) -> ScriptedSocks {
        let script = Script {
            credentials: Some((user.to_owned(), password.to_owned())),
            ..Script::default()
        };
        ScriptedSocks::with_script(script).await
    }

    /// A proxy that refuses every `CONNECT` with reply `code`.
    pub async fn refusing(code: u8) -> ScriptedSocks {
        let script = Script {
            refuse: Some(code),
            ..Script::default()
        };
        ScriptedSocks::with_script(script).await
    }

    async fn with_script(script: Script) -> ScriptedSocks {
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
        ScriptedSocks {
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

impl Drop for ScriptedSocks {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One client: SOCKS4 or SOCKS5 as its first byte says.
async fn serve(
    mut client: TcpStream,
    script: &Script,
    recorded: &Mutex<Vec<SocksRequest>>,
) -> std::io::Result<()> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await?;
    if head[0] == 4 {
        return serve_v4(client, script, recorded).await;
    }
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
        version: 5,
        target: target.clone(),
        by_name,
        user,
    });
    let reply = |code: u8| [5, code, 0, 1, 0, 0, 0, 0, 0, 0];
    if let Some(code) = script.refuse {
        client.write_all(&reply(code)).await?;
        return Ok(());
    }
    let Some(upstream) = dial(&target).await else {
        client.write_all(&reply(5)).await?;
        return Ok(());
    };
    client.write_all(&reply(0)).await?;
    tunnel(client, upstream).await
}

/// A SOCKS4 or 4a client, after its first two bytes (version, command): port, address, the
/// user id, and for 4a (an address of `0.0.0.x`, x not 0) the name.
async fn serve_v4(
    mut client: TcpStream,
    script: &Script,
    recorded: &Mutex<Vec<SocksRequest>>,
) -> std::io::Result<()> {
    let port = client.read_u16().await?;
    let mut ip = [0u8; 4];
    client.read_exact(&mut ip).await?;
    let user = read_terminated(&mut client).await?;
    let by_name = ip[..3] == [0, 0, 0] && ip[3] != 0;
    let host = match by_name {
        true => read_terminated(&mut client).await?,
        false => std::net::Ipv4Addr::from(ip).to_string(),
    };
    let target = format!("{host}:{port}");
    let user = (!user.is_empty()).then_some(user);
    recorded.lock().expect("not poisoned").push(SocksRequest {
        version: 4,
        target: target.clone(),
        by_name,
        user: user.clone(),
    });
    let reply = |code: u8| [0, code, 0, 0, 0, 0, 0, 0];
    let wrong_user = script
        .credentials
        .as_ref()
        .is_some_and(|(want, _)| user.as_ref() != Some(want));
    let upstream = match script.refuse.is_some() || wrong_user {
        true => None,
        false => dial(&target).await,
    };
    let Some(upstream) = upstream else {
        client.write_all(&reply(91)).await?;
        return Ok(());
    };
    client.write_all(&reply(90)).await?;
    tunnel(client, upstream).await
}

/// The first address of `target` (`HOST:PORT`) that accepts a connection.
async fn dial(target: &str) -> Option<TcpStream> {
    for addr in tokio::net::lookup_host(target).await.ok()? {
        if let Ok(stream) = TcpStream::connect(addr).await {
            return Some(stream);
        }
    }
    None
}

/// Copies both ways until either side closes.
async fn tunnel(mut client: TcpStream, mut upstream: TcpStream) -> std::io::Result<()> {
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// A NUL-terminated string (SOCKS4's user id and 4a's name).
async fn read_terminated(client: &mut TcpStream) -> std::io::Result<String> {
    let mut text = Vec::new();
    loop {
        match client.read_u8().await? {
            0 => return Ok(String::from_utf8_lossy(&text).into_owned()),
            byte => text.push(byte),
        }
    }
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
