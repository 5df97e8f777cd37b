//! Unix domain sockets: every origin dialed through one socket path instead of the network
//! (curl's `--unix-socket`), for servers that listen on a path (container engines, local
//! daemons, sidecars).
//!
//! The origin keeps every role but the dial: TLS still names it (SNI and the certificate
//! check), requests still carry it in `Host` / `:authority`, and the pool still keys reuse by
//! it. Nothing is resolved, and no proxy or `--connect-to` rule applies, as with curl.
//!
//! On Linux a path that starts with a NUL byte names a socket in the abstract namespace, which
//! tokio connects to as such (curl's `--abstract-unix-socket`).
//!
//! What this module does not do: listen, or check the path before dialing (a missing socket is
//! the connect error the dial returns).

use std::path::Path;
use std::sync::Arc;

use tokio::net::UnixStream;
use tokio::time::Instant;

use crate::{ConnectError, ConnectTimings, Connected};

/// Connects to the socket at `path`; the `Connected` names it and carries the connect time.
pub(crate) async fn dial_unix(
    path: &Arc<Path>,
    start: Instant,
) -> Result<(UnixStream, Connected), ConnectError> {
    let stream = UnixStream::connect(&**path)
        .await
        .map_err(|e| ConnectError::connect(e).with_target(path.display()))?;
    let mut connected = Connected::unix(path.clone());
    connected.timings = ConnectTimings {
        resolve: std::time::Duration::ZERO,
        connect: start.elapsed(),
        tls: None,
    };
    Ok((stream, connected))
}
