//! `cargo xtask interop`: the pool, through `poolcurl load`, against real servers nobody here
//! wrote, on loopback.
//!
//! * **nginx, graceful reloads under load.** One nginx master (`worker_processes 2`, its own
//!   config, logs, pid file and certificates in a temp dir) with three listeners: HTTP/1.1, h2c
//!   and TLS offering `h2` and `http/1.1` by ALPN. For HTTP/1.1, h2c, TLS+h2 and TLS+http/1.1,
//!   one `poolcurl load -z 5s -c 32` runs while six `nginx -s reload`s are sent, spread over the
//!   five seconds. Check: every request succeeded, none aborted, and nginx logged six reloads.
//! * **nginx with a maximum connection lifetime** (`lifetime.rs`): HTTP/1.1 and h2c runs with
//!   `--max-connection-lifetime 1s` succeed entirely while connections are retired for their
//!   age about once a second each; and a listener announcing `Keep-Alive: timeout=2`, whose
//!   idle connections the pool retires before nginx closes them; and the pool-wide idle cap
//!   (`--max-idle-connections`) over two names of one listener, with nginx's log of which
//!   connection served each request.
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
//!   beside it as the reference (not a check; skipped when h2load is absent).
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
//! * **h2o** (`h2o.rs`): TLS ALPN h2 at its 100-stream limit (`-c 200`, exactly two
//!   connections), and its 1 s idle close met by a request every 1.5 s. One "skip" row without
//!   h2o.
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
mod beside;
mod caddy;
mod cpu;
mod dns;
mod early;
mod h2limits;
mod h2o;
mod haproxy;
mod latency;
mod lifetime;
mod oha;
mod process;
mod proxy;
mod report;
mod socks;
mod squid;
mod stapling;
mod streams;
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
use oha::*;
use process::*;
use proxy::*;
use report::*;
use socks::*;
use squid::*;
use stapling::*;
use streams::*;
use workers::*;

/// Graceful reloads sent during each nginx run.
const RELOADS: u64 = 6;
/// Rounds against nghttpd, each a fresh poolcurl process.
const ROUNDS: usize = 5;
/// How long a server may take to accept connections after it was started.
const READY_DEADLINE: Duration = Duration::from_secs(10);
/// How long one poolcurl run may take before it is killed and counted as failed: `-z 5s` plus
/// poolcurl's own 10 s drain limit, with margin (a `-n` run has no limit of its own).
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// Arguments every poolcurl run starts with.
const LOAD: &[&str] = &["load", "--no-progress", "--output-format", "json"];
/// The nginx cases: name, the protocol its connections must use, poolcurl's protocol flag.
const NGINX_CASES: [(&str, &str, &str); 4] = [
    ("http1.1", "h1", "--http1.1"),
    ("h2c", "h2", "--http2-prior-knowledge"),
    ("TLS ALPN h2", "h2", "--http2"),
    ("TLS ALPN http/1.1", "h1", "--http1.1"),
];

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
        // Two more servers of their own, with nginx's certificate.
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

/// nginx started by [`start_nginx`] (or why it did not start), with its files in `dir`.
pub(crate) type Nginx = Result<(PathBuf, Server, [u16; 14]), String>;

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

/// Announces `checks` (nginx's, beside curl) and finds what they need: nginx's ports and curl.
/// `Err` holds the rows to report instead: every check broken when nginx did not start, or one
/// skip row when curl is not installed.
fn nginx_and_curl<'a, const N: usize>(
    checks: [&str; N],
    started: &'a Nginx,
) -> Result<(&'a [u16; 14], PathBuf), Vec<Row>> {
    for check in checks {
        eprintln!("interop: {check} ...");
    }
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return Err(checks.map(|c| Row::broken(c.to_string(), e)).into()),
    };
    let Some(curl) = find_binary("curl") else {
        let skipped = format!("skipped: curl not found ({})", checks[0]);
        return Err(vec![Row::skipped(skipped, None)]);
    };
    Ok((ports, curl))
}

fn nginx_reloads(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let name = |case: &str| format!("nginx {case}, -z 5s -c 32, {RELOADS} reloads");
    let (nginx, server, ports) = match started {
        Ok((nginx, server, ports)) => (nginx, server, ports),
        Err(e) => return NGINX_CASES.map(|c| Row::broken(name(c.0), e)).into(),
    };
    let ca = dir.join("ca.pem").display().to_string();
    let mut rows = Vec::new();
    for (i, (case, proto, flag)) in NGINX_CASES.into_iter().enumerate() {
        eprintln!("interop: {} ...", name(case));
        let mut args = ["-z", "5s", "-c", "32", flag].map(String::from).to_vec();
        if i < 2 {
            args.push(format!("http://127.0.0.1:{}/", ports[i]));
        } else {
            // The certificate names `localhost`; `--resolve` pins it to 127.0.0.1, where nginx
            // listens, so no connection tries ::1 first.
            let p = ports[2];
            let resolve = format!("--resolve=localhost:{p}:127.0.0.1");
            args.extend([
                format!("--cacert={ca}"),
                resolve,
                format!("https://localhost:{p}/"),
            ]);
        }
        let reloads_before = count_reloads(&server.log);
        let run = Running::spawn(poolcurl, &args);
        let mut problems = match &run {
            Ok(run) => reload_during(nginx, dir, run.started),
            Err(_) => Vec::new(),
        };
        let finished = run.map(Running::finish);
        // The master logs "reconfiguring" when it handles a SIGHUP, within milliseconds of
        // the signal; the run lasts at least 0.75 s past the last one.
        let reloaded = count_reloads(&server.log) - reloads_before;
        if reloaded as u64 != RELOADS {
            problems.push(format!("nginx logged {reloaded} of {RELOADS} reloads"));
        }
        rows.push(Row::judge(name(case), finished, None, proto, problems));
    }
    rows
}

/// Sends [`RELOADS`] `nginx -s reload`s at 0.5 s, 1.25 s, ... 4.25 s after `started`.
/// Returns failures.
fn reload_during(nginx: &Path, dir: &Path, started: Instant) -> Vec<String> {
    let times = (Duration::from_millis(500), Duration::from_millis(750));
    at_intervals(started, RELOADS, times, |_| {
        succeeds(nginx_cmd(nginx, dir, Some("reload")))
    })
}

/// Finds nginx, writes certificates and `nginx.conf` into `dir`, starts nginx as a foreground
/// master and waits until it listens. Returns the binary, the server and its ports: HTTP/1.1,
/// h2c, TLS, HTTP/1.1 and TLS again without nginx's 1000-requests-per-connection limit (for
/// the oha comparison), HTTP/1.1 announcing a 2 s keep-alive timeout, HTTP/1.1 and TLS
/// reading HAProxy's PROXY line first, and TLS stapling a good and a revoked OCSP response.
fn start_nginx(dir: &Path) -> Nginx {
    let nginx = find_binary("nginx").ok_or("nginx not found")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let pki = TestPki::new();
    let write = |file: &str, text: String| {
        std::fs::write(dir.join(file), text).map_err(|e| format!("write {file}: {e}"))
    };
    write("ca.pem", pki.ca_pem())?;
    write("server.pem", pki.server_cert_pem())?;
    write("server.key", pki.server_key_pem())?;
    write_staples(&pki, dir)?;
    write_big_file(dir)?;
    latency::write_huge_file(dir)?;
    // A self-signed certificate made as a CA, as `openssl req -x509` makes one.
    let (self_signed, self_signed_key) = pki.self_signed_pem(true);
    write("self-signed.pem", self_signed)?;
    write("self-signed.key", self_signed_key)?;
    let ports = free_ports::<14>()?;
    // nginx 1.25.1 replaced `listen ... http2` by a per-server `http2 on;` (the old form
    // still works there, with a warning).
    let (listen_h2, h2_on) = if nginx_version(&nginx) >= Some((1, 25, 1)) {
        ("", "http2 on;")
    } else {
        (" http2", "")
    };
    // As root nginx would run its workers as `nobody`; keep them as the harness's user. (As
    // anyone else, `user` is ignored with a warning, so it is left out.)
    let user = if running_as_root() { "user root;" } else { "" };
    let d = dir.display();
    let ok = r#"location / { return 200 "ok\n"; }"#;
    // For the early-answer checks: an upload over 1 KiB is refused with 413 from its head.
    let small = r#"location /small { client_max_body_size 1k; return 200 "ok\n"; }"#;
    // For `--haproxy-protocol`: the address the PROXY line named.
    let proxied = r#"location / { return 200 "$proxy_protocol_addr\n"; }"#;
    let large_head = large_head_location();
    let [p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14] = ports;
    let stapling = stapling_servers(dir, (p9, p10), ok);
    let alt_svc = alt_svc_server(dir, (p11, p12), (listen_h2, h2_on));
    let conf = format!(
        "worker_processes 2;
{user}
pid {d}/nginx.pid;
error_log {d}/error.log notice;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    default_type text/plain;
    # The compiled-in temp paths (e.g. /var/lib/nginx) need not exist or be writable.
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{ listen 127.0.0.1:{p1}; {ok} {small} }}
    # For the HTTP/2 limit checks (`h2limits.rs`): a file larger than a stream's window, and a
    # response head of 40 KiB; and the download from 100 ms away (`latency.rs`).
    server {{
        listen 127.0.0.1:{p2}{listen_h2}; {h2_on} {ok} {small} {large_head}
        location = /big {{ alias {d}/big.bin; }}
        location = /huge {{ alias {d}/huge.bin; }}
    }}
    server {{
        listen 127.0.0.1:{p3} ssl{listen_h2}; {h2_on}
        ssl_certificate {d}/server.pem;
        ssl_certificate_key {d}/server.key;
        {ok} {small} {large_head}
        # For the download from 100 ms away (`latency.rs`).
        location = /huge {{ alias {d}/huge.bin; }}
    }}
    # For the oha comparison only: no connection ends after 1000 requests, so neither tool's
    # figures include (or, for oha, drop) the requests caught by nginx's GOAWAY; and a socket
    # per worker (`reuseport`), so the kernel spreads the connections over the workers rather
    # than whichever worker wakes first taking most of a burst (see `workers.rs`).
    server {{ listen 127.0.0.1:{p4} reuseport; keepalive_requests 1000000; {ok} }}
    # For `--unix-socket` beside curl.
    server {{ listen unix:{d}/nginx.sock; {ok} }}
    server {{
        listen 127.0.0.1:{p5} ssl{listen_h2} reuseport; {h2_on}
        keepalive_requests 1000000;
        ssl_certificate {d}/server.pem;
        ssl_certificate_key {d}/server.key;
        {ok}
    }}
    # For the pool-wide idle cap: which of nginx's connections served each request.
    log_format connection '$connection';
    server {{ listen 127.0.0.1:{p14}; access_log {d}/idle-cap.log connection; {ok} }}
    # Closes idle connections after 2 s and says so (`Keep-Alive: timeout=2`).
    server {{ listen 127.0.0.1:{p6}; keepalive_timeout 2s 2s; {ok} }}
    # Each connection starts with HAProxy's PROXY line, over cleartext and before TLS.
    server {{ listen 127.0.0.1:{p7} proxy_protocol; {proxied} }}
    server {{
        listen 127.0.0.1:{p8} ssl proxy_protocol;
        ssl_certificate {d}/server.pem;
        ssl_certificate_key {d}/server.key;
        {proxied}
    }}
    # Its own self-signed certificate, which a client trusts by naming it as the root.
    server {{
        listen 127.0.0.1:{p13} ssl;
        ssl_certificate {d}/self-signed.pem;
        ssl_certificate_key {d}/self-signed.key;
        {ok}
    }}
    # `--cert-status`: TLS stapling a good and a revoked OCSP response from files.
    {stapling}
    # `--alt-svc`: an origin naming an alternative, both served here.
    {alt_svc}
}}
"
    );
    write("nginx.conf", conf)?;
    let mut cmd = nginx_cmd(&nginx, dir, None);
    cmd.args(["-g", "daemon off;"]);
    let mut server = Server::start("nginx", cmd, dir.join("error.log"), &dir.join("stderr.log"))?;
    // `-s stop` makes the master stop its workers too; killing only the master would leave
    // them running, holding the ports.
    server.stop = Some(nginx_cmd(&nginx, dir, Some("stop")));
    server.wait_ready(&ports)?;
    Ok((nginx, server, ports))
}

/// `nginx -p DIR -c DIR/nginx.conf -e DIR/error.log [-s SIGNAL]`. `-e` (nginx 1.19.5+) keeps
/// nginx from opening its compiled-in error log (unwritable for a normal user) before it has
/// read the config.
fn nginx_cmd(nginx: &Path, dir: &Path, signal: Option<&str>) -> Command {
    let mut cmd = Command::new(nginx);
    cmd.arg("-p").arg(dir).arg("-c").arg(dir.join("nginx.conf"));
    cmd.arg("-e")
        .arg(dir.join("error.log"))
        .stdin(Stdio::null());
    cmd.args(signal.map(|s| ["-s", s]).into_iter().flatten());
    cmd
}

fn nginx_version(nginx: &Path) -> Option<(u32, u32, u32)> {
    // `nginx -v` prints "nginx version: nginx/1.22.1" (maybe with a suffix) on stderr.
    let out = Command::new(nginx).arg("-v").output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let version = text.split("nginx/").nth(1)?.split_whitespace().next()?;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

fn count_reloads(error_log: &Path) -> usize {
    let log = std::fs::read_to_string(error_log).unwrap_or_default();
    log.lines()
        .filter(|l| l.ends_with(": reconfiguring"))
        .count()
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
    let (_server, port) = match start_nghttpd(dir) {
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
    rows
}

/// Starts nghttpd (h2c, at most 10 concurrent streams per connection) serving `dir/htdocs`,
/// which holds one small `file`, and waits until it listens.
fn start_nghttpd(dir: &Path) -> Result<(Server, u16), String> {
    let nghttpd = find_binary("nghttpd").ok_or("nghttpd not found")?;
    let docroot = dir.join("htdocs");
    std::fs::create_dir_all(&docroot)
        .and_then(|()| std::fs::write(docroot.join("file"), "hello from nghttpd\n"))
        .map_err(|e| format!("docroot: {e}"))?;
    let [port] = free_ports::<1>()?;
    let mut cmd = Command::new(nghttpd);
    cmd.args([
        "--no-tls",
        "--address=127.0.0.1",
        "--max-concurrent-streams=10",
    ]);
    cmd.arg(format!("--htdocs={}", docroot.display()))
        .arg(port.to_string());
    let log = dir.join("nghttpd.log");
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
