//! HTTP/2 against Varnish Cache (Debian's `varnish`, 7.1, h2c with `-p feature=+http2`), a
//! cache in front of nginx's HTTP/1.1 listener (`/big`, 2.5 MiB, cached after the first fetch):
//!
//! * **GETs over h2c, `-z 2s -c 16`**: every request succeeds on one connection.
//! * **Downloads cut short, `-z 3s -c 32 -m 0.01`**: most of the 2.5 MiB responses are still
//!   arriving when `-m` drops them, which resets their streams while Varnish has more DATA on
//!   its way. Check: every failure is a `timeout`, at least [`CUT_AT_LEAST`] of them; one
//!   connection, never closed, nothing re-sent. Under h2's own limit on local error resets
//!   (1024 over a connection's life) the late frames made h2 end the connection itself
//!   (`GOAWAY(ENHANCE_YOUR_CALM, "too_many_internal_resets")`): three runs of this load ended
//!   2, 2 and 3 connections, and 64, 64 and 96 requests went again on the new ones
//!   (`DEFAULT_MAX_LOCAL_ERROR_RESETS` in `pool-h2/src/settings.rs`).
//!
//! Varnish runs in the foreground with its working directory in the temp dir and no jail
//! (`-j none`: as root it would hand its worker to the `vcache` user, which the temp dir may
//! not admit). Without `varnishd` the checks are one "skip" row. `.ci/run` installs Debian's
//! `varnish` (its service is held back by the same `policy-rc.d` as nginx's).

use super::*;

/// The checks, in table order.
const CHECKS: [&str; 2] = [
    "Varnish h2c, GETs -z 2s -c 16: one connection",
    "Varnish h2c, 2.5 MiB GETs cut by -m 0.01, -c 32: the connection stays",
];

/// Timeouts the second check needs, or it cut nothing short and proved nothing (runs here cut
/// 7,500 to 8,100).
const CUT_AT_LEAST: u64 = 100;

/// The Varnish checks, in front of nginx's h2c listener on `backend` (`Err`: nginx did not
/// start).
pub(crate) fn varnish_checks(
    poolcurl: &Path,
    backend: Result<u16, String>,
    dir: &Path,
) -> Vec<Row> {
    let Some(varnishd) = find_binary("varnishd") else {
        return vec![Row::skipped(
            "skipped: Varnish".into(),
            Some("the Varnish checks need varnishd"),
        )];
    };
    let [plain_name, cut_name] = announce(CHECKS);
    let started = backend.and_then(|backend| start_varnish(&varnishd, backend, dir));
    let (_server, port) = match started {
        Ok(started) => started,
        Err(e) => return [plain_name, cut_name].map(|n| Row::broken(n, &e)).into(),
    };
    let load = |flags: &[&str], path: &str| {
        let mut args = strings(flags);
        args.extend(strings(&[
            "--http2-prior-knowledge",
            &format!("http://127.0.0.1:{port}{path}"),
        ]));
        Running::spawn(poolcurl, &args).map(Running::finish)
    };
    let run = load(&["-z", "2s", "-c", "16"], "/");
    let problems = one_connection(&run);
    let plain = Row::judge(plain_name, run, None, "h2", problems);

    let run = load(&["-z", "3s", "-c", "32", "-m", "0.01"], "/big");
    let stays = |json: &Value| {
        let mut problems = Vec::new();
        let opened = json.pointer("/connections/opened").and_then(Value::as_u64);
        if opened != Some(1) {
            problems.push(format!("expected 1 connection, opened {opened:?}"));
        }
        let closed = json
            .pointer("/connections/closed")
            .and_then(Value::as_object);
        if let Some(closed) = closed.and_then(nonzero) {
            problems.push(format!("connections closed: {closed}"));
        }
        let resends = json
            .pointer("/connections/resends")
            .and_then(Value::as_object);
        if let Some(resends) = resends.and_then(nonzero) {
            problems.push(format!("re-sent: {resends}"));
        }
        problems
    };
    let cut = Row::judge_cut_short(cut_name, run, "h2", CUT_AT_LEAST, &stays);
    vec![plain, cut]
}

/// The problem, if any, with a run that should have used one connection.
fn one_connection(run: &Result<Finished, String>) -> Vec<String> {
    match opened(run) {
        Some(1) | None => Vec::new(),
        Some(n) => vec![format!("expected 1 connection, opened {n}")],
    }
}

/// Starts Varnish in front of `backend` on a free port and waits until it listens.
fn start_varnish(varnishd: &Path, backend: u16, dir: &Path) -> Result<(Server, u16), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let [port] = free_ports::<1>()?;
    let mut cmd = Command::new(varnishd);
    cmd.arg("-F")
        .args(["-j", "none"])
        .arg("-n")
        .arg(dir.join("work"))
        .args(["-a", &format!("127.0.0.1:{port}")])
        .args(["-b", &format!("127.0.0.1:{backend}")])
        .args(["-s", "malloc,64m", "-p", "feature=+http2"]);
    let log = dir.join("varnish.log");
    let mut server = Server::start("varnish", cmd, log.clone(), &log)?;
    // The manager stops its worker process on SIGTERM; a SIGKILL would leave it listening.
    server.stop_with_sigterm();
    server.wait_ready(&[port])?;
    Ok((server, port))
}
