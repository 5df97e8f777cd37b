//! [`UnixBridge`]: a Unix domain socket in front of a loopback TCP server, so the scripted
//! servers (and anything else on TCP) can be reached the way `--unix-socket` reaches a local
//! daemon. Each connection accepted on the path becomes one connection to the server, with the
//! bytes piped both ways, so the server's per-connection counters and records still say how
//! many connections the client opened.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::{TcpStream, UnixListener};
use tokio::task::{JoinHandle, JoinSet};

use crate::tls::TempDir;

/// A socket path whose connections are piped to a TCP address.
///
/// # Drop behavior
///
/// Dropping it stops accepting, aborts every pipe and removes the socket's directory (an
/// abstract name goes with its listener).
#[derive(Debug)]
pub struct UnixBridge {
    path: PathBuf,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
    // Declared last: the directory goes after the listener has been dropped. An abstract
    // name has none.
    _dir: Option<TempDir>,
}

impl UnixBridge {
    /// Listens on a fresh socket path and pipes each connection to `to`.
    ///
    /// # Panics
    ///
    /// If the socket cannot be bound.
    pub async fn start(to: SocketAddr) -> UnixBridge {
        let dir = TempDir::new("unix");
        let path = dir.path().join("server.sock");
        UnixBridge::listen(path, Some(dir), to)
    }

    /// Listens on a fresh name in Linux's abstract socket namespace (no file) and pipes each
    /// connection to `to`. [`path`](Self::path) is the name with its leading NUL byte, as
    /// tokio reads such a path; [`name`](Self::name) is the name alone.
    ///
    /// # Panics
    ///
    /// If the name cannot be bound.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub async fn start_abstract(to: SocketAddr) -> UnixBridge {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("pool-tests-{}-{n}", std::process::id());
        UnixBridge::listen(PathBuf::from(format!("\0{name}")), None, to)
    }

    /// Binds `path` (in `dir`, which goes with the bridge) and pipes each connection to `to`.
    fn listen(path: PathBuf, dir: Option<TempDir>, to: SocketAddr) -> UnixBridge {
        let listener = UnixListener::bind(&path).expect("bind the Unix socket");
        let accepted = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn(accept_loop(listener, to, accepted.clone()));
        UnixBridge {
            path,
            accepted,
            task,
            _dir: dir,
        }
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The abstract name of a bridge from [`start_abstract`](Self::start_abstract) (the path
    /// without its NUL byte); `None` for a bridge on a file path.
    pub fn name(&self) -> Option<&str> {
        self.path.to_str()?.strip_prefix('\0')
    }

    /// Connections accepted on the path so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for UnixBridge {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: UnixListener, to: SocketAddr, accepted: Arc<AtomicUsize>) {
    // Owned by this task: aborting it aborts every pipe.
    let mut pipes = JoinSet::new();
    while let Ok((mut unix, _)) = listener.accept().await {
        accepted.fetch_add(1, Ordering::SeqCst);
        pipes.spawn(async move {
            if let Ok(mut tcp) = TcpStream::connect(to).await {
                let _ = tokio::io::copy_bidirectional(&mut unix, &mut tcp).await;
            }
        });
    }
}
