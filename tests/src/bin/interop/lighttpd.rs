//! lighttpd, a fifth server with HTTP/1 and HTTP/2 of its own (beside nginx, Caddy's Go, h2o and
//! HAProxy), in two situations:
//!
//! * **Graceful restarts under load.** `SIGUSR1` to a lighttpd in the foreground (`-D`) is a
//!   graceful restart in the same process: it stops accepting, ends its HTTP/1.1 connections
//!   (idle ones closed, busy ones answered with `Connection: close`), sends each HTTP/2
//!   connection `GOAWAY` and waits for their streams (at most `graceful-shutdown-timeout`),
//!   then reads its config again and listens anew. Its `GOAWAY` names a last stream below
//!   streams already in flight, so the pool re-sends those. HTTP/1.1, TLS with ALPN h2 and h2c,
//!   each `poolcurl load -z 5s -c 32` through [`RESTARTS`] restarts, each sent once lighttpd
//!   has logged the last one's start: every request answered, more than one connection
//!   opened (the restarts closed connections), and every restart logged in time.
//! * **Its stream limit of 8.** lighttpd allows 8 concurrent streams per HTTP/2 connection
//!   (not configurable). `-z 4s -c 32 --partitions 1` over h2c must open exactly four
//!   connections and fail nothing: 32 streams need four, and the pool opens no fifth.
//! * **Its idle timeout, on a one-second tick.** lighttpd closes an idle HTTP/1.1 connection
//!   without saying when (no `Keep-Alive` header), and looks at its idle connections once a
//!   second, so with `server.max-keep-alive-idle = 1` each close comes 1-2 s after the
//!   response, by the phase of that tick. One request every 2.5 s (`-z 20s -c 1 --rate 0.4`):
//!   every request answered, the pool learns the timeout from lighttpd's closes (between 1 s
//!   and 2 s in the JSON summary), and retires at least two later connections itself
//!   (`idle_timeout`) before lighttpd would close them.
//!
//! One lighttpd serves all, with nginx's test certificate on its TLS port. Without lighttpd
//! (or its `mod_openssl`) the checks are one "skip" row. `.ci/run` installs Debian's
//! `lighttpd` and `lighttpd-mod-openssl` (its service is held back by the same `policy-rc.d` as
//! nginx's).

use super::*;

/// Graceful restarts sent during each load.
const RESTARTS: u64 = 4;

/// The checks, in table order.
const CHECKS: [&str; 5] = [
    "lighttpd http1.1, -z 5s -c 32, 4 graceful restarts",
    "lighttpd TLS ALPN h2, -z 5s -c 32, 4 graceful restarts",
    "lighttpd h2c, -z 5s -c 32, 4 graceful restarts",
    "lighttpd h2c, 8 streams, -z 4s -c 32 --partitions 1: four connections",
    "lighttpd http1.1 closing idle connections after 1-2 s unannounced, a request every 2.5 s",
];

/// Where Debian keeps lighttpd's modules; its TLS is a module of its own package.
const MODULES: &str = "/usr/lib/lighttpd";

/// The checks; `certs` is the directory holding nginx's `ca.pem`, `server.pem` and
/// `server.key`.
pub(crate) fn lighttpd_checks(poolcurl: &Path, certs: &Path, dir: &Path) -> Vec<Row> {
    let lighttpd = find_binary("lighttpd");
    let tls_module = Path::new(MODULES).join("mod_openssl.so");
    let Some(lighttpd) = lighttpd.filter(|_| tls_module.is_file()) else {
        return vec![Row::skipped(
            "skipped: lighttpd".into(),
            Some("the lighttpd checks need lighttpd and lighttpd-mod-openssl"),
        )];
    };
    let names = announce(CHECKS);
    let (server, [http, tls, idle]) = match start_lighttpd(&lighttpd, certs, dir) {
        Ok(started) => started,
        Err(e) => return names.map(|name| Row::broken(name, &e)).into(),
    };
    let [h1_name, tls_name, h2c_name, limit_name, idle_name] = names;
    let targets = h1_tls_h2c(http, tls, http, certs);
    let h2c_target = targets[2].1.clone();
    let mut rows = reload_checks(
        poolcurl,
        vec![h1_name, tls_name, h2c_name],
        targets.into(),
        RESTARTS,
        || restart(&server),
    );

    let mut args = strings(&["-z", "4s", "-c", "32", "--partitions", "1"]);
    args.extend(h2c_target);
    let run = Running::spawn(poolcurl, &args).map(Running::finish);
    let mut problems = Vec::new();
    match opened(&run) {
        Some(4) | None => {}
        Some(n) => problems.push(format!("expected 4 connections, opened {n}")),
    }
    rows.push(Row::judge(limit_name, run, None, "h2", problems));
    rows.push(idle_timeout_check(poolcurl, idle_name, idle));
    rows
}

/// The idle timeout check (see the module docs) on lighttpd's listener at `port`.
fn idle_timeout_check(poolcurl: &Path, name: String, port: u16) -> Row {
    let mut args = strings(&["-z", "20s", "-c", "1", "--rate", "0.4", "--http1.1"]);
    args.push(format!("http://127.0.0.1:{port}/"));
    let run = Running::spawn(poolcurl, &args).map(Running::finish);
    let mut problems = Vec::new();
    if let Ok(finished) = &run {
        let count = summary_counts(&finished.stdout);
        match (
            count("/requests"),
            count("/successes"),
            count("/connections/closed/idle_timeout"),
        ) {
            (Some(requests), Some(successes), Some(retired)) => {
                if requests < 7 || successes != requests {
                    problems.push(format!("{successes} of {requests} requests succeeded"));
                }
                if retired < 2 {
                    problems.push(format!(
                        "the pool retired {retired} idle connections itself, where two or more"
                    ));
                }
            }
            other => problems.push(format!("no request or connection counts: {other:?}")),
        }
        problems.extend(idle_timeout_problem(&finished.stdout, 950..2_100));
    }
    Row::judge(name, run, None, "h1", problems)
}

/// Sends a graceful restart and waits until lighttpd has logged its start again: lighttpd
/// ignores a `SIGUSR1` that comes while it is still shutting down from the last one (a restart
/// waits for its busy connections, which took up to 2 s by hand).
fn restart(server: &Server) -> Result<(), String> {
    let mut kill = Command::new("kill");
    kill.args(["-USR1", &server.child.id().to_string()]);
    restart_and_wait(kill, &server.log, "server started")
}

/// Writes the config, a document and the TLS port's certificate (lighttpd takes the chain and
/// key in one file), starts lighttpd in the foreground and waits until it listens. Its stop
/// command is `SIGTERM`. Its log goes to stderr, into the server's log file.
fn start_lighttpd(lighttpd: &Path, certs: &Path, dir: &Path) -> Result<(Server, [u16; 3]), String> {
    let docs = dir.join("www");
    std::fs::create_dir_all(&docs).map_err(|e| format!("create {}: {e}", docs.display()))?;
    std::fs::write(docs.join("index.html"), "lighttpd\n")
        .map_err(|e| format!("write index: {e}"))?;
    let read = |file: &str| {
        std::fs::read_to_string(certs.join(file)).map_err(|e| format!("read {file}: {e}"))
    };
    let pem = dir.join("server-and-key.pem");
    std::fs::write(&pem, read("server.pem")? + &read("server.key")?)
        .map_err(|e| format!("write {}: {e}", pem.display()))?;
    let [http, tls, idle] = free_ports::<3>()?;
    // h2c (prior knowledge) is on by default in lighttpd 1.4.69; the flags say so anyway, so
    // the checks do not lean on defaults. The 5 s shutdown bound only matters if a restart
    // would otherwise wait on a connection that never ends. The third port keeps idle
    // connections for 1 s (the idle timeout check).
    let conf = format!(
        "server.modules = (\"mod_openssl\")\nserver.modules-directory = \"{MODULES}\"\n\
         server.document-root = \"{}\"\nindex-file.names = (\"index.html\")\n\
         server.bind = \"127.0.0.1\"\nserver.port = {http}\n\
         server.feature-flags += (\"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\", \
         \"server.graceful-shutdown-timeout\" => 5)\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{tls}\" {{\n  ssl.engine = \"enable\"\n  \
         ssl.pemfile = \"{}\"\n}}\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{idle}\" {{\n  server.max-keep-alive-idle = 1\n}}\n",
        docs.display(),
        pem.display(),
    );
    let path = dir.join("lighttpd.conf");
    std::fs::write(&path, conf).map_err(|e| format!("write {}: {e}", path.display()))?;
    let mut cmd = Command::new(lighttpd);
    cmd.arg("-D").arg("-f").arg(&path);
    let log = dir.join("lighttpd.log");
    let mut server = Server::start("lighttpd", cmd, log.clone(), &log)?;
    server.stop_with_sigterm();
    server.wait_ready(&[http, tls, idle])?;
    Ok((server, [http, tls, idle]))
}
