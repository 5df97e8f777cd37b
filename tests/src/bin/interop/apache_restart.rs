//! Graceful restarts of Apache httpd under load: the most deployed server after nginx, with
//! HTTP/1.1 of its own and HTTP/2 from `mod_http2`.
//!
//! One httpd in the foreground (`-DFOREGROUND`, the event MPM), its config, documents and log
//! in the temp dir, on two ports: HTTP/1.1 and h2c (prior knowledge) on one, TLS with ALPN h2
//! (`mod_ssl`, nginx's test certificate) on the other. A graceful restart (`-k graceful`:
//! `SIGUSR1` to the parent) starts new workers and lets the old ones finish: they close their
//! HTTP/1.1 connections, send HTTP/2 ones `GOAWAY`, and close connections they had just taken,
//! new TLS ones after their SETTINGS under every stream the client had sent, with no `GOAWAY`
//! about them (the pool repeats those idempotent requests: `pool-h2/src/heard.rs`; before, the
//! first stream of each such connection failed, in 3 of 4 hand runs). A restart can close
//! several such connections in a row; the pool waits before a request's second and third
//! re-send (the retry policy's pace), which carries it past them (before, the streams of one
//! connection failed in one CI run, 18 requests, their re-sends spent). Each check runs
//! `poolcurl load -z 5s -c 32` through [`RESTARTS`] restarts, each sent once httpd has logged
//! the last one done: every request answered, and more than one connection opened (the
//! restarts closed connections).
//!
//! Without httpd (`apache2` or `httpd`) with `mod_http2` and `mod_ssl`, the checks are one
//! "skip" row. `.ci/run` installs Debian's `apache2-bin`, which has both.

use super::*;

/// Graceful restarts sent during each load.
const RESTARTS: u64 = 4;

/// The checks, in table order.
const CHECKS: [&str; 3] = [
    "Apache httpd http1.1, -z 5s -c 32, 4 graceful restarts",
    "Apache httpd TLS ALPN h2, -z 5s -c 32, 4 graceful restarts",
    "Apache httpd h2c, -z 5s -c 32, 4 graceful restarts",
];

/// The modules httpd loads, with their files.
const MODULES: [(&str, &str); 5] = [
    ("mpm_event", "mod_mpm_event"),
    ("authz_core", "mod_authz_core"),
    ("dir", "mod_dir"),
    ("http2", "mod_http2"),
    ("ssl", "mod_ssl"),
];

/// What httpd logs once it runs again after a restart (and once at its start).
const RUNNING: &str = "resuming normal operations";

/// The restart checks; `certs` is the directory holding nginx's `ca.pem`, `server.pem` and
/// `server.key`.
pub(crate) fn apache_restarts(poolcurl: &Path, certs: &Path, dir: &Path) -> Vec<Row> {
    let httpd = find_binary("apache2").or_else(|| find_binary("httpd"));
    let modules = apache::MODULE_DIRS.iter().map(PathBuf::from).find(|d| {
        MODULES
            .iter()
            .all(|(_, file)| d.join(format!("{file}.so")).is_file())
    });
    let (Some(httpd), Some(modules)) = (httpd, modules) else {
        return vec![Row::skipped(
            "skipped: Apache httpd with mod_http2 and mod_ssl".into(),
            Some("the Apache restart checks need apache2 (or httpd) with mod_http2 and mod_ssl"),
        )];
    };
    let names = announce(CHECKS);
    let (server, conf, [http, tls]) = match start_httpd(&httpd, &modules, certs, dir) {
        Ok(started) => started,
        Err(e) => return names.map(|name| Row::broken(name, &e)).into(),
    };
    reload_checks(
        poolcurl,
        names.into(),
        h1_tls_h2c(http, tls, http, certs).into(),
        RESTARTS,
        || {
            let mut graceful = Command::new(&httpd);
            graceful.arg("-f").arg(&conf).args(["-k", "graceful"]);
            restart_and_wait(graceful, &server.log, RUNNING)
        },
    )
}

/// Writes a document and `httpd.conf` into `dir`, starts httpd in the foreground and waits
/// until it listens ([`apache::run_httpd`]). Returns the server, its config's path and its
/// two ports.
fn start_httpd(
    httpd: &Path,
    modules: &Path,
    certs: &Path,
    dir: &Path,
) -> Result<(Server, PathBuf, [u16; 2]), String> {
    let docs = dir.join("htdocs");
    std::fs::create_dir_all(&docs).map_err(|e| format!("create {}: {e}", docs.display()))?;
    std::fs::write(docs.join("index.html"), "httpd\n").map_err(|e| format!("write index: {e}"))?;
    let [http, tls] = free_ports::<2>()?;
    let preamble = apache::httpd_preamble(modules, &MODULES);
    let d = dir.display();
    let (cert, key) = (certs.join("server.pem"), certs.join("server.key"));
    // A restart waits at most 5 s for the old workers' connections.
    let conf = format!(
        "ServerRoot {d}\nServerName localhost\nListen 127.0.0.1:{http}\nListen 127.0.0.1:{tls}\n\
         PidFile {d}/httpd.pid\nErrorLog {d}/error.log\nLogLevel notice\n{preamble}\
         GracefulShutdownTimeout 5\nDocumentRoot {d}/htdocs\nDirectoryIndex index.html\n\
         Protocols h2 h2c http/1.1\n<VirtualHost 127.0.0.1:{tls}>\n  SSLEngine on\n  \
         SSLCertificateFile {}\n  SSLCertificateKeyFile {}\n</VirtualHost>\n",
        cert.display(),
        key.display(),
    );
    let (server, conf_path) = apache::run_httpd(httpd, dir, &conf, &[http, tls])?;
    Ok((server, conf_path, [http, tls]))
}
