//! `cargo xtask interop`: the pool, through `poolcurl load`, against real servers nobody here
//! wrote, on loopback.
//!
//! * **nginx, graceful reloads under load** (`nginx.rs`). One nginx master (`worker_processes
//!   2`, its own config, logs, pid file and certificates in a temp dir) with three listeners:
//!   HTTP/1.1, h2c and TLS offering `h2` and `http/1.1` by ALPN. For HTTP/1.1, h2c, TLS+h2 and
//!   TLS+http/1.1, one `poolcurl load -z 5s -c 32` runs while six `nginx -s reload`s are sent,
//!   spread over the five seconds. Check: every request succeeded, none aborted, and nginx logged six reloads.
//! * **nginx with a maximum connection lifetime** (`lifetime.rs`): HTTP/1.1 and h2c runs with
//!   `--max-connection-lifetime 1s` succeed entirely while connections are retired for their
//!   age about once a second each; and a listener announcing `Keep-Alive: timeout=2`, whose
//!   idle connections the pool retires before nginx closes them; and the pool-wide idle cap
//!   (`--max-idle-connections`) over two names of one listener, with nginx's log of which
//!   connection served each request.
//! * **nginx's request quota over h2c** (`quota.rs`): `keepalive_requests 1000` with 128
//!   streams in flight; the pool must learn the quota from nginx's GOAWAYs, retire most
//!   connections at it, and re-send under 2% of the requests (one in eight before).
//! * **nginx's h2c listener with responses left unread** (`h2limits.rs`, the pool as a library):
//!   three 2.5 MiB responses unread must not stop a small one on the same connection; hyper's
//!   5 MiB connection window, which stops it, runs beside as a reference row. And a 40 KiB
//!   response head over h2c and TLS h2, beside curl, with hyper's 16 KiB header-list limit
//!   beside as another reference row.
//! * **A 32 MiB download from 100 ms away** (`latency.rs`): a relay delays nginx's TLS h2
//!   listener by 50 ms each way; poolcurl's transfer must take at most twice curl's time (plus
//!   0.2 s), and the library's default window's time over h2c is printed as a reference.
//! * **nghttpd with `--max-concurrent-streams=10`.** Five rounds, each a fresh poolcurl process
//!   (a fresh pool) sending a cold burst `-n 200 -c 200` over h2c. Check: all 200 requests
//!   succeeded in every round. `h2load -n 200 -c 1 -m 200` against the same server is printed
//!   beside it as the reference (not a check; skipped when h2load is absent). And an nghttpd
//!   allowing no stream at all (`-m 0`), beside curl: both give up, exit 56 (`beside.rs`).
//! * **HTTP/2 at the stream limit** (`streams.rs`): nghttpd's limit of 10 streams with
//!   `-c 100` (10 connections, at least 2x one connection's requests/s), and nginx's 128 with
//!   `-c 64` and a cold burst of 200 (exactly one connection).
//! * **tinyproxy in front of that nginx** (after the reloads): forward proxy, CONNECT tunnels
//!   with HTTP/2 inside, BasicAuth accepted and refused, `http_proxy`/`NO_PROXY`, and curl side
//!   by side (`-x`, and `--connect-to` to nginx directly and through a tunnel); see
//!   `proxy.rs`. Without tinyproxy these checks are one "skip" row.
//! * **nginx on a Unix socket**, beside curl: `--unix-socket` with two URLs, the second on the
//!   reused connection.
//! * **nginx reading HAProxy's PROXY line** (`listen ... proxy_protocol`), beside curl:
//!   `--haproxy-protocol` over HTTP/1.1 and TLS, nginx answering with the address it read.
//! * **nginx with a self-signed certificate made as a CA**, beside curl: `--cacert` naming that
//!   certificate is trusted, by name, not for another name (`beside.rs`, with the two above).
//! * **nginx stapling OCSP responses** (`ssl_stapling_file`), beside curl: `--cert-status` to
//!   a listener stapling a good status and to one stapling a revoked one (`stapling.rs`).
//! * **microsocks** (SOCKS5) in front of that nginx, beside curl: `socks5h://` with a user
//!   and password to HTTP/1.1 and TLS h2, and a wrong password (`socks.rs`).
//! * **Dante** (SOCKS4 and SOCKS5) in front of that nginx, beside curl: `socks4://` and
//!   `--socks4` to HTTP/1.1 and TLS h2, `socks5://`, and a refused target (`socks.rs`).
//! * **nginx naming an alternative service** (`add_header Alt-Svc`, TLS h2), beside curl:
//!   `--alt-svc` with a redirect that goes to the alternative, and each tool following the
//!   cache file the other wrote, which must hold the entry in curl's format (`alt_svc.rs`).
//! * **nginx refusing an upload before its body arrived** (`413` from the head): beside curl over
//!   HTTP/1.1 and TLS http/1.1, poolcurl alone over h2c and TLS h2, where curl 7.88 fails
//!   (`early.rs`).
//! * **Apache httpd with `mod_auth_digest`**, beside curl: `--digest` with the right and a
//!   wrong password, and httpd as a Digest proxy (`mod_proxy`): `--proxy-digest` forwarded,
//!   `-p --proxy-anyauth` through `CONNECT`, wrong passwords both ways, and `poolcurl load`
//!   through Digest tunnels, one challenge per connection in httpd's log (`apache.rs`); one
//!   "skip" row without httpd.
//! * **Squid requiring NTLM** (`ntlm_fake_auth`) in front of that nginx, beside curl:
//!   `--proxy-ntlm` forwarded and through a tunnel to TLS h2, no credentials, and `poolcurl
//!   load` through NTLM tunnels, one authenticated tunnel per connection in Squid's log
//!   (`squid.rs`).
//! * **dnsmasq** answering `--dns-servers` for a name of that nginx's, and refusing another
//!   (`dns.rs`).
//! * **Caddy, graceful reloads under load** (`caddy.rs`): Go's `net/http` server, HTTP/1.1 and
//!   TLS ALPN h2, `-z 5s -c 32` through four `caddy reload`s; every request succeeds and the
//!   reloads closed connections. One "skip" row without caddy.
//! * **HAProxy, soft reloads under load** (`haproxy.rs`): in front of nginx, HTTP/1.1, TLS ALPN
//!   h2 and h2c frontends, `-z 5s -c 32` through four `SIGUSR2` reloads of its master; every
//!   request succeeds, the reloads closed connections, and the master logged each reload. One
//!   "skip" row without haproxy.
//! * **Apache httpd, graceful restarts under load** (`apache_restart.rs`): HTTP/1.1, TLS ALPN
//!   h2 and h2c (`mod_http2`), `-z 5s -c 32` through four `-k graceful`s; every request
//!   succeeds and the restarts closed connections. One "skip" row without httpd's `mod_http2`
//!   and `mod_ssl`.
//! * **lighttpd** (`lighttpd.rs`): HTTP/1.1, TLS ALPN h2 and h2c, `-z 5s -c 32` through four
//!   graceful restarts (`SIGUSR1`); every request succeeds, the restarts closed connections,
//!   and its log shows each restart. And its 8-stream limit: `-c 32 --partitions 1` over h2c
//!   opens exactly four connections. One "skip" row without lighttpd.
//! * **h2o** (`h2o.rs`): TLS ALPN h2 at its 100-stream limit (`-c 200`, exactly two
//!   connections), and its 1 s idle close met by a request every 1.5 s. One "skip" row without
//!   h2o.
//! * **Node.js's HTTP/2 server** (`node.rs`): 2 MB downloads at `-c 32`, which it sheds with
//!   `ENHANCE_YOUR_CALM`; every request succeeds and the server did shed. One "skip" row
//!   without node.
//! * **Apache Tomcat's HTTP/2 uploads** (`tomcat.rs`): 200 KB POSTs at `-c 16` over h2c, which
//!   Tomcat's overhead protection ends connections for while they overlap; the pool learns to
//!   send one body at a time, so only the first connection's uploads may fail. One "skip" row
//!   without Tomcat.
//! * **Eclipse Jetty's HTTP/2 downloads** (`jetty.rs`): 1 MiB GETs at `-c 32` over h2c, which
//!   Jetty's rate control ends connections for (the stream `WINDOW_UPDATE`s h2 sends near the
//!   end of each response); the pool learns a larger stream window, so only the first
//!   connections' downloads may fail. One "skip" row without Jetty.
//! * **Varnish Cache's HTTP/2** (`varnish.rs`), in front of nginx: GETs over h2c on one
//!   connection, and 2.5 MiB downloads cut short by `-m 0.01` at `-c 32`, whose late DATA frames
//!   after the client's resets must not end the connection (h2's own limit on local error
//!   resets did). One "skip" row without varnishd.
//! * **`poolcurl load` vs oha** on that nginx (`oha.rs`, with `--oha PATH`): HTTP/1.1 and TLS
//!   ALPN h2, requests/s and latency side by side. A measurement printed as reference rows and
//!   a table of its own, never a check.
//!
//! Every load check also confirms it exercised the protocol it names (only h1 or only h2
//! connections) and that poolcurl exited 0. Requests, successes, failures, connections opened
//! and the transparent re-sends (`connections.retries`, and `connections.resends` by reason;
//! "n/a" when this poolcurl build does not report them) go into one table on stdout, details
//! below it. Exit status 1 when any check failed (a server that is missing or does not start
//! fails its checks), 2 for bad arguments.
//!
//! nginx keeps its defaults otherwise, so `keepalive_requests 1000` also ends connections during
//! a run (HTTP/1.1: `Connection: close`; HTTP/2: GOAWAY): the pool must take those in its
//! stride too.
//!
//! What it does not do: judge performance (the oha comparison is printed, not checked), build
//! poolcurl (pass its path: `--poolcurl PATH` or `POOLCURL`; by default the `poolcurl` next to
//! this binary) or install servers (`.ci/run` does, on CI) or oha (`cargo xtask interop` does). It finds `nginx`, `nghttpd`, `h2load`, `tinyproxy` and `curl` on `PATH` and in
//! `/usr/sbin`, `/usr/bin`. Every poolcurl (and curl) run has the machine's proxy variables
//! (`http_proxy`, `NO_PROXY`, ...) removed from its environment. Servers are stopped and the
//! temp dir removed however the program ends, except when it is killed by a signal (a Ctrl-C
//! reaches the servers too: same process group).

mod alt_svc;
mod apache;
mod apache_restart;
mod beside;
mod caddy;
mod cpu;
mod dns;
mod early;
mod h2limits;
mod h2o;
mod haproxy;
mod jetty;
mod latency;
mod lifetime;
mod lighttpd;
mod nginx;
mod node;
mod oha;
mod process;
mod proxy;
mod quota;
mod report;
mod socks;
mod squid;
mod stapling;
mod streams;
mod tomcat;
mod varnish;
mod workers;

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use pool_tests::tls::{TempDir, TestPki};
use serde_json::{Map, Value};

use alt_svc::*;
use apache::*;
use early::*;
use h2limits::*;
use lifetime::*;
use nginx::*;
use oha::*;
use process::*;
use proxy::*;
use quota::nginx_request_quota;
use report::*;
use socks::*;
use squid::*;
use stapling::*;
use streams::*;
use workers::*;

/// Rounds against nghttpd, each a fresh poolcurl process.
const ROUNDS: usize = 5;
/// How long a server may take to accept connections after it was started.
const READY_DEADLINE: Duration = Duration::from_secs(10);
/// How long one poolcurl run may take before it is killed and counted as failed: `-z 5s` plus
/// poolcurl's own 10 s drain limit, with margin (a `-n` run has no limit of its own).
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// Arguments every poolcurl run starts with.
const LOAD: &[&str] = &["load", "--no-progress", "--output-format", "json"];

fn main() -> ExitCode {
    let Some((poolcurl, oha)) = paths() else {
        eprintln!(
            "usage: interop [--poolcurl PATH] [--oha PATH]  (or POOLCURL=PATH; default: next to interop)"
        );
        return ExitCode::from(2);
    };
    if !poolcurl.is_file() {
        eprintln!("interop: poolcurl not found at {}", poolcurl.display());
        return ExitCode::from(2);
    }
    // Every server and the temp dir are dropped (stopped, removed) at the end of this block.
    let (rows, comparison) = {
        let tmp = TempDir::new("interop");
        let nginx_dir = tmp.path().join("nginx");
        let nginx = start_nginx(&nginx_dir);
        // First, on a quiet nginx: the measurement.
        let (mut rows, comparison) = oha_comparison(&poolcurl, oha.as_deref(), &nginx, &nginx_dir);
        rows.extend(nginx_reloads(&poolcurl, &nginx, &nginx_dir));
        rows.extend(nginx_lifetime(&poolcurl, &nginx));
        rows.push(nginx_keep_alive_hint(&poolcurl, &nginx));
        rows.push(nginx_silent_idle_timeout(&poolcurl, &nginx));
        rows.push(nginx_request_quota(&poolcurl, &nginx));
        rows.extend(nginx_idle_cap(&poolcurl, &nginx, &nginx_dir));
        rows.extend(nginx_one_h2_connection(
            &poolcurl,
            &nginx,
            &nginx_dir.join("ca.pem"),
        ));
        rows.extend(nginx_unread_responses(&nginx));
        rows.extend(nginx_large_head(&poolcurl, &nginx, &nginx_dir));
        rows.push(nginx_large_head_with_hypers_limit(&nginx));
        rows.extend(latency::nginx_far_download(&poolcurl, &nginx, &nginx_dir));
        rows.extend(nghttpd_stream_limit(&poolcurl, &tmp.path().join("nghttpd")));
        // The proxy checks reuse nginx (HTTP/1.1 and TLS listeners) as their origin.
        let origin = nginx
            .as_ref()
            .map_err(Clone::clone)
            .map(|(_, _, ports)| Origin {
                http: ports[0],
                tls: ports[2],
                ca: nginx_dir.join("ca.pem"),
            });
        rows.extend(proxy_checks(
            &poolcurl,
            origin.clone(),
            &tmp.path().join("tinyproxy"),
        ));
        rows.extend(socks_checks(
            &poolcurl,
            origin.clone(),
            &tmp.path().join("socks"),
        ));
        rows.extend(squid_checks(
            &poolcurl,
            origin.clone(),
            &tmp.path().join("squid"),
        ));
        rows.extend(dante_checks(
            &poolcurl,
            origin.clone(),
            &tmp.path().join("dante"),
        ));
        rows.extend(dns::dnsmasq_checks(
            &poolcurl,
            origin,
            &tmp.path().join("dnsmasq"),
        ));
        rows.push(beside::nginx_unix_socket(&poolcurl, &nginx, &nginx_dir));
        rows.push(beside::nginx_proxy_protocol(&poolcurl, &nginx, &nginx_dir));
        rows.extend(beside::nginx_self_signed(&poolcurl, &nginx, &nginx_dir));
        rows.extend(nginx_stapling(&poolcurl, &nginx, &nginx_dir));
        rows.extend(nginx_alt_svc(&poolcurl, &nginx, &nginx_dir));
        rows.extend(nginx_early_answer(&poolcurl, &nginx, &nginx_dir));
        rows.extend(apache_digest(&poolcurl, &tmp.path().join("httpd")));
        // More servers of their own, with nginx's certificate.
        rows.extend(caddy::caddy_reloads(
            &poolcurl,
            &nginx_dir,
            &tmp.path().join("caddy"),
        ));
        rows.extend(h2o::h2o_checks(
            &poolcurl,
            &nginx_dir,
            &tmp.path().join("h2o"),
        ));
        let h1_origin = nginx
            .as_ref()
            .map(|(_, _, ports)| ports[0])
            .map_err(Clone::clone);
        rows.extend(haproxy::haproxy_reloads(
            &poolcurl,
            h1_origin,
            &nginx_dir,
            &tmp.path().join("haproxy"),
        ));
        rows.extend(apache_restart::apache_restarts(
            &poolcurl,
            &nginx_dir,
            &tmp.path().join("httpd-restart"),
        ));
        rows.extend(lighttpd::lighttpd_checks(
            &poolcurl,
            &nginx_dir,
            &tmp.path().join("lighttpd"),
        ));
        rows.extend(node::node_checks(
            &poolcurl,
            &nginx_dir,
            &tmp.path().join("node"),
        ));
        rows.extend(tomcat::tomcat_checks(&poolcurl, &tmp.path().join("tomcat")));
        rows.extend(jetty::jetty_checks(&poolcurl, &tmp.path().join("jetty")));
        let backend = nginx
            .as_ref()
            .map(|(_, _, ports)| ports[0])
            .map_err(Clone::clone);
        rows.extend(varnish::varnish_checks(
            &poolcurl,
            backend,
            &tmp.path().join("varnish"),
        ));
        (rows, comparison)
    };
    print_table(&rows);
    print!("{comparison}");
    let checks = rows.iter().filter(|r| r.passed.is_some()).count();
    let failed = rows.iter().filter(|r| r.passed == Some(false)).count();
    println!("\ninterop: {} of {checks} checks passed", checks - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// poolcurl's path and oha's, if given, from `--poolcurl PATH` and `--oha PATH`; `None` for
/// anything else on the command line.
fn paths() -> Option<(PathBuf, Option<PathBuf>)> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut poolcurl, mut oha) = (None, None);
    for pair in args.chunks(2) {
        match pair {
            [flag, path] if flag == "--poolcurl" => poolcurl = Some(PathBuf::from(path)),
            [flag, path] if flag == "--oha" => oha = Some(PathBuf::from(path)),
            _ => return None,
        }
    }
    let poolcurl = match (poolcurl, std::env::var_os("POOLCURL")) {
        (Some(path), _) => path,
        (None, Some(path)) => path.into(),
        (None, None) => std::env::current_exe().ok()?.with_file_name("poolcurl"),
    };
    Some((poolcurl, oha))
}

// ---------------------------------------------------------------------------------------------
// nginx

/// `args` as owned strings, for command lines built from borrowed pieces.
pub(crate) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// poolcurl's target arguments for `https://localhost:PORT/` over TLS with ALPN h2, trusting
/// the `ca.pem` in `certs` (nginx's test CA; the certificate names `localhost`, which
/// `--resolve` pins to 127.0.0.1).
pub(crate) fn tls_h2_target(port: u16, certs: &Path) -> Vec<String> {
    vec![
        "--http2".into(),
        format!("--cacert={}", certs.join("ca.pem").display()),
        format!("--resolve=localhost:{port}:127.0.0.1"),
        format!("https://localhost:{port}/"),
    ]
}

/// The targets of a server's HTTP/1.1 (at `http`), TLS with ALPN h2 (at `tls`) and h2c (at
/// `h2c`) listeners, in that order, each with the protocol its row checks.
pub(crate) fn h1_tls_h2c(
    http: u16,
    tls: u16,
    h2c: u16,
    certs: &Path,
) -> [(&'static str, Vec<String>); 3] {
    [
        (
            "h1",
            vec!["--http1.1".into(), format!("http://127.0.0.1:{http}/")],
        ),
        ("h2", tls_h2_target(tls, certs)),
        (
            "h2",
            vec![
                "--http2-prior-knowledge".into(),
                format!("http://127.0.0.1:{h2c}/"),
            ],
        ),
    ]
}

fn running_as_root() -> bool {
    // The effective uid is the second field of `Uid:` in /proc/self/status (Linux).
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"));
    uid.and_then(|u| u.split_whitespace().nth(1)) == Some("0")
}

// ---------------------------------------------------------------------------------------------
// nghttpd

fn nghttpd_stream_limit(poolcurl: &Path, dir: &Path) -> Vec<Row> {
    let name = |round: usize| format!("nghttpd -m 10, -n 200 -c 200 h2c, round {round}");
    let (_server, port) = match start_nghttpd(dir, 10) {
        Ok(started) => started,
        Err(e) => return (1..=ROUNDS).map(|r| Row::broken(name(r), &e)).collect(),
    };
    let url = format!("http://127.0.0.1:{port}/file");
    let mut rows = Vec::new();
    for round in 1..=ROUNDS {
        eprintln!("interop: {} ...", name(round));
        let args = ["-n", "200", "-c", "200", "--http2-prior-knowledge", &url].map(String::from);
        let finished = Running::spawn(poolcurl, &args).map(Running::finish);
        rows.push(Row::judge(
            name(round),
            finished,
            Some(200),
            "h2",
            Vec::new(),
        ));
    }
    if let Some(h2load) = find_binary("h2load") {
        rows.push(h2load_reference(&h2load, &url));
    }
    rows.extend(nghttpd_scale_out(poolcurl, &url));
    rows.push(beside::nghttpd_speaking_first(poolcurl, &url));
    rows.push(match start_nghttpd(dir, 0) {
        Ok((_none, port)) => {
            let url = format!("http://127.0.0.1:{port}/file");
            beside::nghttpd_allowing_no_streams(poolcurl, &url)
        }
        Err(e) => Row::broken(beside::ALLOWING_NO_STREAMS.into(), &e),
    });
    rows
}

/// Starts nghttpd (h2c, at most `streams` concurrent streams per connection) serving
/// `dir/htdocs`, which holds one small `file`, and waits until it listens.
fn start_nghttpd(dir: &Path, streams: u32) -> Result<(Server, u16), String> {
    let nghttpd = find_binary("nghttpd").ok_or("nghttpd not found")?;
    let docroot = dir.join("htdocs");
    std::fs::create_dir_all(&docroot)
        .and_then(|()| std::fs::write(docroot.join("file"), "hello from nghttpd\n"))
        .map_err(|e| format!("docroot: {e}"))?;
    let [port] = free_ports::<1>()?;
    let mut cmd = Command::new(nghttpd);
    cmd.args(["--no-tls", "--address=127.0.0.1"]);
    cmd.arg(format!("--max-concurrent-streams={streams}"))
        .arg(format!("--htdocs={}", docroot.display()))
        .arg(port.to_string());
    let log = dir.join(format!("nghttpd-{streams}.log"));
    let mut server = Server::start("nghttpd", cmd, log.clone(), &log)?;
    server.wait_ready(&[port])?;
    Ok((server, port))
}

/// h2load's "requests: ..." line as a reference row (never a check).
fn h2load_reference(h2load: &Path, url: &str) -> Row {
    let mut row = Row::new("h2load -n 200 -c 1 -m 200 (reference)".into(), None);
    let out = Command::new(h2load)
        .args(["-n", "200", "-c", "1", "-m", "200", url])
        .output();
    let stdout = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let Some(line) = stdout.lines().find(|l| l.starts_with("requests:")) else {
        row.cells[RESULT] = "no result".into();
        return row;
    };
    // "requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed, 0 errored, ..."
    let field = |what: &str| {
        let part = line.split(", ").find(|p| p.ends_with(what));
        part.and_then(|p| p.split(' ').rev().nth(1))
            .unwrap_or("?")
            .to_string()
    };
    row.cells[1..5].clone_from_slice(&[
        field(" total"),
        field(" succeeded"),
        field(" failed"),
        "1".into(),
    ]);
    row.details.push(format!("h2load {line}"));
    row
}
