//! Graceful reloads of Caddy under load: Caddy 2 serves with Go's `net/http` (HTTP/2 with Go's
//! `x/net/http2`), the server behind most Go upstreams, so these checks stand beside nginx's
//! reloads (`nginx.rs`) with a second, independent implementation of the same moment.
//!
//! One Caddy in the foreground (`caddy run`), its Caddyfile and its data and config dirs in the
//! temp dir, with two sites: HTTP/1.1 on one port, TLS with ALPN h2 on another (nginx's test
//! certificate). A reload (`caddy reload`, through Caddy's admin endpoint on a third port)
//! replaces the servers, and Go's `Server.Shutdown` takes the old ones down: it closes idle
//! HTTP/1 connections (and busy ones once their response is written), and sends each HTTP/2
//! connection `GOAWAY`, closing it once its streams are done. Each reload changes the
//! response's text, so it is a new configuration and not a no-op.
//!
//! Each check runs `poolcurl load -z 5s -c 32` through [`CADDY_RELOADS`] reloads and wants
//! every request answered, and more than one connection opened: one connection for the whole
//! run would mean the reloads closed none, and the check proved nothing.
//!
//! Without caddy the checks are one "skip" row. `.ci/run` installs Debian's `caddy` (its
//! service is held back by the same `policy-rc.d` as nginx's).

use super::*;

/// Reloads sent during each run.
const CADDY_RELOADS: u64 = 4;

/// The checks, in table order.
const CHECKS: [&str; 2] = [
    "caddy (Go net/http) http1.1, -z 5s -c 32, 4 reloads",
    "caddy (Go net/http) TLS ALPN h2, -z 5s -c 32, 4 reloads",
];

/// The ports Caddy serves: HTTP/1.1, TLS, admin.
type Ports = [u16; 3];

/// The reload checks; `certs` is the directory holding nginx's `ca.pem`, `server.pem` and
/// `server.key`.
pub(crate) fn caddy_reloads(poolcurl: &Path, certs: &Path, dir: &Path) -> Vec<Row> {
    let Some(caddy) = find_binary("caddy") else {
        return vec![Row::skipped(
            "skipped: caddy".into(),
            Some("the Go net/http reload checks need caddy"),
        )];
    };
    let names = announce(CHECKS);
    let (_server, ports) = match start_caddy(&caddy, certs, dir) {
        Ok(started) => started,
        Err(e) => return names.map(|name| Row::broken(name, &e)).into(),
    };
    let [http, tls, _] = ports;
    // Reloads at 0.5 s, 1.5 s, ..., each a new configuration (`caddy N`).
    let mut generation = 0;
    // The sites serve no h2c: its target is left out.
    let [h1, tls_h2, _] = h1_tls_h2c(http, tls, http, certs);
    reload_checks(
        poolcurl,
        names.into(),
        vec![h1, tls_h2],
        CADDY_RELOADS,
        || {
            generation += 1;
            reload(&caddy, dir, ports, generation)
        },
    )
}

/// Reloads Caddy with the Caddyfile of `generation`.
fn reload(caddy: &Path, dir: &Path, ports: Ports, generation: u64) -> Result<(), String> {
    let conf = write_caddyfile(dir, ports, generation)?;
    let mut cmd = caddy_cmd(caddy, dir);
    cmd.args(["reload", "--adapter", "caddyfile", "--address"])
        .arg(format!("127.0.0.1:{}", ports[2]))
        .arg("--config")
        .arg(conf);
    succeeds(cmd)
}

/// Writes the first Caddyfile, starts Caddy in the foreground and waits until it listens.
fn start_caddy(caddy: &Path, certs: &Path, dir: &Path) -> Result<(Server, Ports), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let ports = free_ports::<3>()?;
    // The certificate's paths go into every Caddyfile; keep them beside it.
    for file in ["server.pem", "server.key"] {
        std::fs::copy(certs.join(file), dir.join(file)).map_err(|e| format!("copy {file}: {e}"))?;
    }
    let conf = write_caddyfile(dir, ports, 0)?;
    let mut cmd = caddy_cmd(caddy, dir);
    cmd.args(["run", "--adapter", "caddyfile", "--config"])
        .arg(conf);
    let log = dir.join("caddy.log");
    let mut server = Server::start("caddy", cmd, log.clone(), &log)?;
    server.wait_ready(&ports)?;
    Ok((server, ports))
}

/// `caddy` with its home, data and config dirs in `dir`, so it writes nothing elsewhere.
fn caddy_cmd(caddy: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(caddy);
    cmd.env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"));
    cmd
}

/// Writes the Caddyfile of `generation` (its responses say `caddy N`) and returns its path.
fn write_caddyfile(
    dir: &Path,
    [http, tls, admin]: Ports,
    generation: u64,
) -> Result<PathBuf, String> {
    let (cert, key) = (dir.join("server.pem"), dir.join("server.key"));
    let (cert, key) = (cert.display(), key.display());
    let conf = format!(
        "{{\n\tadmin 127.0.0.1:{admin}\n\tauto_https off\n}}\n\
         http://127.0.0.1:{http} {{\n\tbind 127.0.0.1\n\trespond \"caddy {generation}\\n\" 200\n}}\n\
         https://localhost:{tls} {{\n\tbind 127.0.0.1\n\ttls {cert} {key}\n\t\
         respond \"caddy {generation}\\n\" 200\n}}\n"
    );
    let path = dir.join(format!("Caddyfile.{generation}"));
    std::fs::write(&path, conf).map_err(|e| format!("write {}: {e}", path.display()))?;
    Ok(path)
}
