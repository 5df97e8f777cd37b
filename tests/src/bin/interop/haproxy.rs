//! Soft reloads of HAProxy under load: the proxy most often in front of an upstream, with
//! HTTP/1 and HTTP/2 implementations of its own (its `mux_h1` and `mux_h2`), beside nginx's
//! and Caddy's reloads.
//!
//! One HAProxy in master-worker mode (`haproxy -W`, in the foreground), its config and
//! certificate in the temp dir, in front of nginx's HTTP/1.1 listener, with three frontends:
//! HTTP/1.1, TLS with ALPN h2, and h2c (`proto h2`). A reload is `SIGUSR2` to the master: it
//! starts a new worker on the same sockets and soft-stops the old one, which finishes what it
//! has in flight, closes its HTTP/1.1 connections (an idle keep-alive connection within a
//! second, by hand: the keep-alive race is possible) and sends HTTP/2 connections `GOAWAY`.
//! Each check runs `poolcurl load -z 5s -c 32` through [`HAPROXY_RELOADS`] reloads, each sent
//! once the master has logged the last one ("Reloading HAProxy"), and wants every request
//! answered and more than one connection opened (the reloads closed connections).
//!
//! Without haproxy the checks are one "skip" row. `.ci/run` installs Debian's `haproxy` (its
//! service is held back by the same `policy-rc.d` as nginx's).

use super::*;

/// Reloads sent during each run.
const HAPROXY_RELOADS: u64 = 4;

/// The checks, in table order.
const CHECKS: [&str; 3] = [
    "haproxy http1.1, -z 5s -c 32, 4 soft reloads",
    "haproxy TLS ALPN h2, -z 5s -c 32, 4 soft reloads",
    "haproxy h2c, -z 5s -c 32, 4 soft reloads",
];

/// The reload checks, in front of nginx's HTTP/1.1 listener `origin`; `certs` is the
/// directory holding nginx's `ca.pem`, `server.pem` and `server.key`.
pub(crate) fn haproxy_reloads(
    poolcurl: &Path,
    origin: Result<u16, String>,
    certs: &Path,
    dir: &Path,
) -> Vec<Row> {
    let Some(haproxy) = find_binary("haproxy") else {
        return vec![Row::skipped(
            "skipped: haproxy".into(),
            Some("the HAProxy reload checks need haproxy"),
        )];
    };
    let names = announce(CHECKS);
    let started = origin.and_then(|origin| start_haproxy(&haproxy, origin, certs, dir));
    let (server, [http, tls, h2c]) = match started {
        Ok(started) => started,
        Err(e) => return names.map(|name| Row::broken(name, &e)).into(),
    };
    let master = server.child.id().to_string();
    reload_checks(
        poolcurl,
        names.into(),
        h1_tls_h2c(http, tls, h2c, certs).into(),
        HAPROXY_RELOADS,
        || {
            let mut kill = Command::new("kill");
            kill.args(["-USR2", &master]);
            restart_and_wait(kill, &server.log, "Reloading HAProxy")
        },
    )
}

/// Writes the config and the frontend's certificate (HAProxy takes the chain and key in one
/// file), starts the master in the foreground and waits until it listens. Its stop command is
/// `SIGTERM` to the master, which stops the workers too.
fn start_haproxy(
    haproxy: &Path,
    origin: u16,
    certs: &Path,
    dir: &Path,
) -> Result<(Server, [u16; 3]), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let read = |file: &str| {
        std::fs::read_to_string(certs.join(file)).map_err(|e| format!("read {file}: {e}"))
    };
    let pem = dir.join("frontend.pem");
    std::fs::write(&pem, read("server.pem")? + &read("server.key")?)
        .map_err(|e| format!("write {}: {e}", pem.display()))?;
    let [http, tls, h2c] = free_ports::<3>()?;
    let conf = format!(
        "defaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    \
         timeout server 30s\n    timeout http-keep-alive 10s\n\
         frontend fe\n    bind 127.0.0.1:{http}\n    \
         bind 127.0.0.1:{tls} ssl crt {} alpn h2,http/1.1\n    \
         bind 127.0.0.1:{h2c} proto h2\n    default_backend nginx\n\
         backend nginx\n    server origin 127.0.0.1:{origin}\n",
        pem.display()
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, conf).map_err(|e| format!("write {}: {e}", path.display()))?;
    let mut cmd = Command::new(haproxy);
    cmd.arg("-W").arg("-f").arg(&path);
    let log = dir.join("haproxy.log");
    let mut server = Server::start("haproxy", cmd, log.clone(), &log)?;
    server.stop_with_sigterm();
    server.wait_ready(&[http, tls, h2c])?;
    Ok((server, [http, tls, h2c]))
}
