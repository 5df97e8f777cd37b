//! HTTP/2 against h2o, a third server implementation of its own (beside nginx and nghttpd):
//!
//! * **Its stream limit.** h2o allows 100 concurrent streams per connection
//!   (`http2-max-concurrent-requests-per-connection`, set here so the check does not lean on
//!   the default). `poolcurl load -z 4s -c 200` over TLS with ALPN h2 must open exactly two
//!   connections and fail nothing: the pool scales out past the limit without queueing on one
//!   connection, and no further.
//! * **Its idle close.** With `http2-idle-timeout: 1`, h2o sends `GOAWAY` and closes a
//!   connection after a second without a request. `poolcurl load -n 4 -c 1 --rate 0.667` (a
//!   request every 1.5 s) must fail nothing and open more than one connection (h2o's close was
//!   met, or the check proved nothing): each request after a close goes on a new connection,
//!   or is re-sent if it raced the close.
//!
//! One h2o serves both, in the foreground with one thread, its config and documents in the
//! temp dir, and nginx's test certificate (the idle timeout never applies to the first check,
//! whose 200 streams never pause). Without h2o the checks are one "skip" row. `.ci/run` installs
//! Debian's `h2o` (its service is held back by the same `policy-rc.d` as nginx's).

use super::*;

/// The checks, in table order.
const CHECKS: [&str; 2] = [
    "h2o TLS ALPN h2, 100 streams, -z 4s -c 200: two connections",
    "h2o TLS ALPN h2, 1 s idle timeout, a request every 1.5 s",
];

/// The h2o checks; `certs` is the directory holding nginx's `ca.pem`, `server.pem` and
/// `server.key`.
pub(crate) fn h2o_checks(poolcurl: &Path, certs: &Path, dir: &Path) -> Vec<Row> {
    let Some(h2o) = find_binary("h2o") else {
        return vec![Row::skipped(
            "skipped: h2o".into(),
            Some("the h2o checks need h2o"),
        )];
    };
    let [limit_name, idle_name] = announce(CHECKS);
    let (_server, port) = match start_h2o(&h2o, certs, dir) {
        Ok(started) => started,
        Err(e) => return [limit_name, idle_name].map(|n| Row::broken(n, &e)).into(),
    };
    let load = |flags: &[&str]| {
        let mut args = strings(flags);
        args.extend(tls_h2_target(port, certs));
        Running::spawn(poolcurl, &args).map(Running::finish)
    };
    // 200 streams in flight all the time: the idle timeout never applies.
    let run = load(&["-z", "4s", "-c", "200"]);
    let mut problems = Vec::new();
    match opened(&run) {
        Some(2) | None => {}
        Some(n) => problems.push(format!("expected 2 connections, opened {n}")),
    }
    let limit = Row::judge(limit_name, run, None, "h2", problems);

    let run = load(&["-n", "4", "-c", "1", "--rate", "0.667"]);
    let mut problems = Vec::new();
    if opened(&run) == Some(1) {
        problems.push("one connection for the whole run: h2o's idle close was not met".into());
    }
    let idle = Row::judge(idle_name, run, Some(4), "h2", problems);
    vec![limit, idle]
}

/// Writes the config and a document into `dir`, starts h2o in the foreground and waits until
/// it listens on its port.
fn start_h2o(h2o: &Path, certs: &Path, dir: &Path) -> Result<(Server, u16), String> {
    let docs = dir.join("www");
    std::fs::create_dir_all(&docs).map_err(|e| format!("create {}: {e}", docs.display()))?;
    std::fs::write(docs.join("index.html"), "h2o\n").map_err(|e| format!("write index: {e}"))?;
    let [port] = free_ports::<1>()?;
    let (cert, key) = (certs.join("server.pem"), certs.join("server.key"));
    // As root h2o hands its threads to `user` (`nobody` by default); keep root, so it can read
    // the temp dir whatever its mode.
    let user = if running_as_root() {
        "user: root\n"
    } else {
        ""
    };
    let conf = format!(
        "{user}num-threads: 1\naccess-log: /dev/null\n\
         http2-max-concurrent-requests-per-connection: 100\nhttp2-idle-timeout: 1\n\
         listen:\n  port: {port}\n  host: 127.0.0.1\n  ssl:\n    certificate-file: {}\n    \
         key-file: {}\n    ocsp-update-interval: 0\nhosts:\n  default:\n    paths:\n      /:\n        file.dir: {}\n",
        cert.display(),
        key.display(),
        docs.display(),
    );
    let path = dir.join("h2o.conf");
    std::fs::write(&path, conf).map_err(|e| format!("write {}: {e}", path.display()))?;
    let mut cmd = Command::new(h2o);
    cmd.arg("-c").arg(&path);
    let log = dir.join("h2o.log");
    let mut server = Server::start("h2o", cmd, log.clone(), &log)?;
    server.wait_ready(&[port])?;
    Ok((server, port))
}
