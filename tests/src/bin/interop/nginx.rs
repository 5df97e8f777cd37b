//! nginx for the interop checks: its start (certificates, files and one config with every
//! listener the checks use), its command line and version, and the graceful reloads under load
//! that are its own checks. Most other modules load this nginx or put a server in front of it.

use super::*;

/// Graceful reloads sent during each nginx run.
const RELOADS: u64 = 6;
/// The nginx cases: name, the protocol its connections must use, poolcurl's protocol flag.
const NGINX_CASES: [(&str, &str, &str); 4] = [
    ("http1.1", "h1", "--http1.1"),
    ("h2c", "h2", "--http2-prior-knowledge"),
    ("TLS ALPN h2", "h2", "--http2"),
    ("TLS ALPN http/1.1", "h1", "--http1.1"),
];

/// nginx started by [`start_nginx`] (or why it did not start), with its files in `dir`.
pub(crate) type Nginx = Result<(PathBuf, Server, [u16; 15]), String>;

/// Announces `checks` (nginx's, beside curl) and finds what they need: nginx's ports and curl.
/// `Err` holds the rows to report instead: every check broken when nginx did not start, or one
/// skip row when curl is not installed.
pub(crate) fn nginx_and_curl<'a, const N: usize>(
    checks: [&str; N],
    started: &'a Nginx,
) -> Result<(&'a [u16; 15], PathBuf), Vec<Row>> {
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

pub(crate) fn nginx_reloads(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let name = |case: &str| format!("nginx {case}, -z 5s -c 32, {RELOADS} reloads");
    let (nginx, server, ports) = match started {
        Ok((nginx, server, ports)) => (nginx, server, ports),
        Err(e) => return NGINX_CASES.map(|c| Row::broken(name(c.0), e)).into(),
    };
    let ca = dir.join("ca.pem").display().to_string();
    let mut rows = Vec::new();
    for (i, (case, proto, flag)) in NGINX_CASES.into_iter().enumerate() {
        eprintln!("interop: {} ...", name(case));
        let mut target = vec![flag.to_string()];
        if i < 2 {
            target.push(format!("http://127.0.0.1:{}/", ports[i]));
        } else {
            // The certificate names `localhost`; `--resolve` pins it to 127.0.0.1, where nginx
            // listens, so no connection tries ::1 first.
            let p = ports[2];
            let resolve = format!("--resolve=localhost:{p}:127.0.0.1");
            target.extend([
                format!("--cacert={ca}"),
                resolve,
                format!("https://localhost:{p}/"),
            ]);
        }
        let reloads_before = count_reloads(&server.log);
        // Reloads at 0.5 s, 1.25 s, ... 4.25 s.
        let times = (Duration::from_millis(500), Duration::from_millis(750));
        let (finished, mut problems) =
            load_through_reloads(poolcurl, &target, RELOADS, times, |_| {
                succeeds(nginx_cmd(nginx, dir, Some("reload")))
            });
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

/// Finds nginx, writes certificates and `nginx.conf` into `dir`, starts nginx as a foreground
/// master and waits until it listens. Returns the binary, the server and its ports: HTTP/1.1,
/// h2c, TLS, HTTP/1.1 and TLS again without nginx's 1000-requests-per-connection limit (for
/// the oha comparison), HTTP/1.1 announcing a 2 s keep-alive timeout, HTTP/1.1 and TLS
/// reading HAProxy's PROXY line first, TLS stapling a good and a revoked OCSP response, and
/// (last) HTTP/1.1 closing idle connections after 1 s without saying so.
pub(crate) fn start_nginx(dir: &Path) -> Nginx {
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
    let ports = free_ports::<15>()?;
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
    let [
        p1,
        p2,
        p3,
        p4,
        p5,
        p6,
        p7,
        p8,
        p9,
        p10,
        p11,
        p12,
        p13,
        p14,
        p15,
    ] = ports;
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
    # The origin of the proxy checks; `/big` for Varnish's backend (`varnish.rs`).
    server {{ listen 127.0.0.1:{p1}; {ok} {small} location = /big {{ alias {d}/big.bin; }} }}
    # For the HTTP/2 limit checks (`h2limits.rs`): a file larger than a stream's window, and a
    # response head of 40 KiB; and the download from 100 ms away (`latency.rs`). nginx's
    # default request quota, named for the check that the pool learns it (`quota.rs`).
    server {{
        listen 127.0.0.1:{p2}{listen_h2}; {h2_on} {ok} {small} {large_head}
        keepalive_requests 1000;
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
    # Closes idle connections after 1 s without saying so (no second parameter, no header).
    server {{ listen 127.0.0.1:{p15}; keepalive_timeout 1s; {ok} }}
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
pub(crate) fn nginx_cmd(nginx: &Path, dir: &Path, signal: Option<&str>) -> Command {
    let mut cmd = Command::new(nginx);
    cmd.arg("-p").arg(dir).arg("-c").arg(dir.join("nginx.conf"));
    cmd.arg("-e")
        .arg(dir.join("error.log"))
        .stdin(Stdio::null());
    cmd.args(signal.map(|s| ["-s", s]).into_iter().flatten());
    cmd
}

pub(crate) fn nginx_version(nginx: &Path) -> Option<(u32, u32, u32)> {
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

pub(crate) fn count_reloads(error_log: &Path) -> usize {
    let log = std::fs::read_to_string(error_log).unwrap_or_default();
    log.lines()
        .filter(|l| l.ends_with(": reconfiguring"))
        .count()
}
