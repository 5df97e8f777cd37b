//! The proxy checks: poolcurl through tinyproxy, a real forward proxy, to the nginx of the
//! reload checks (its HTTP/1.1 and TLS listeners) as the origin. They run after the reloads.
//!
//! Two tinyproxy instances run in the foreground (`tinyproxy -d -c CONF`), each with its own
//! config and log in the temp dir: an open one and one with `BasicAuth user pass`. Neither has
//! a `ConnectPort` line, so CONNECT may reach any port (nginx's TLS port is not 443).
//!
//! * Forward proxy: `-n 2000 -c 8 --http1.1` to nginx's `http://` listener.
//! * CONNECT tunnel with HTTP/2 inside: a cold `-n 50 -c 50 --http2` burst to `https://`, which
//!   must open exactly one tunnel carrying one h2 connection.
//! * BasicAuth accepted, for an `http://` and an `https://` URL.
//! * BasicAuth refused (no credentials, wrong password), in curl mode: a refused CONNECT exits 56
//!   naming the proxy's status, a refused forward request is the response (exit 0, its status).
//!   The status expected is the one tinyproxy sends to the same request made by hand: 407 without
//!   credentials, and (tinyproxy 1.11) 401 for a wrong password.
//! * `http_proxy` and `NO_PROXY` from the environment: a proxy on a closed port is bypassed for a
//!   `NO_PROXY` host (exit 0, nginx's body) and fails the request without it (exit 7).
//! * Beside curl: `-s -x PROXY -w ' %{num_connects}' URL URL` prints the same bytes and exits
//!   with the same code (when curl is installed); so do two `https://localhost:1/` URLs with
//!   `--connect-to` sending their connection to nginx's TLS port, directly and through
//!   tinyproxy, where the log must show the tunnel asked for the target.
//!
//! Every load through the proxy must also appear in tinyproxy's log: one request line per
//! request for `http://` (a forward proxy sees each request), one CONNECT per connection the
//! pool made for `https://`. So a check cannot pass by reaching nginx directly.
//!
//! tinyproxy closes each client connection after one response without announcing it (no
//! `Connection: close`), so through it every HTTP/1.1 connection carries one request. A
//! request the pool sent on a connection that had just been closed is resent on a new one
//! (`resends` shows `closed_before_response`); two such after one response each teach the pool
//! the quota of one request per connection (`connections.request_quotas`), after which each
//! connection retires with its response. The HTTP/1.1 loads check that it was learnt and that
//! under 5% of the requests went twice (about 15% before the pool learnt it, each re-send a
//! request that would have failed had it been a POST). Part of that is a fixed cost, not a
//! rate: the `c` connections of the cold start are each cut once before any cut can teach
//! (siblings never agree, see `pool_core`'s quota learner), the re-sent requests' own new
//! connections can be cut once each before the first of their cuts is heard of, and each probe
//! costs one. Both loads are therefore 1,000 requests or more: at 200 with `-c 8`, 3 to 7
//! re-sends were usual and a busy machine once saw 11, over the ceiling of 10 with the pool
//! behaving as designed; at 1,000 the usual 5 to 8 are far below 50.
//!
//! Without tinyproxy (on `PATH`, `/usr/sbin`, `/usr/bin`) these checks are one "skip" row.

use std::io::Write as _;

use super::*;

/// The BasicAuth instance's user and password.
const USER: &str = "user";
const PASS: &str = "pass";
/// The credentials a refused login sends, and their Basic encoding for the hand-made probe.
const WRONG: &str = "user:wrong";
const WRONG_BASIC: &str = "dXNlcjp3cm9uZw=="; // base64("user:wrong")

/// The check names, in table order (also for the rows when something could not start).
const CHECKS: [&str; 12] = [
    "tinyproxy http1.1, -n 2000 -c 8",
    "tinyproxy CONNECT TLS ALPN h2, -n 50 -c 50",
    "tinyproxy BasicAuth http1.1, -n 1000 -c 8",
    "tinyproxy BasicAuth CONNECT h2, -n 200 -c 8",
    "tinyproxy BasicAuth, no credentials, https: exit 56",
    "tinyproxy BasicAuth, wrong password, https: exit 56",
    "tinyproxy BasicAuth, wrong password, http: status",
    "http_proxy dead, NO_PROXY=127.0.0.1: bypassed",
    "http_proxy dead, no NO_PROXY: exit 7",
    "curl vs poolcurl -x, 2 URLs, -w num_connects",
    "curl vs poolcurl --connect-to, TLS, 2 URLs",
    "curl vs poolcurl --connect-to through a CONNECT tunnel",
];

/// The origin the proxy checks reach: nginx's HTTP/1.1 and TLS ports and the CA that signed its
/// certificate (for `localhost`).
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub(crate) http: u16,
    pub(crate) tls: u16,
    pub(crate) ca: PathBuf,
}

/// A tinyproxy we started (stopped on drop) and its port.
struct Tinyproxy {
    server: Server,
    port: u16,
}

pub(crate) fn proxy_checks(
    poolcurl: &Path,
    origin: Result<Origin, String>,
    dir: &Path,
) -> Vec<Row> {
    let Some(binary) = find_binary("tinyproxy") else {
        return vec![Row::skipped(
            "skipped: tinyproxy not found".into(),
            Some("the proxy checks need tinyproxy on PATH, /usr/sbin or /usr/bin"),
        )];
    };
    let started = origin.and_then(|origin| {
        let open = Tinyproxy::start(&binary, &dir.join("open"), "tinyproxy", false)?;
        let auth = Tinyproxy::start(&binary, &dir.join("auth"), "tinyproxy (BasicAuth)", true)?;
        Ok((origin, open, auth))
    });
    let (origin, open, auth) = match started {
        Ok(started) => started,
        Err(e) => return CHECKS.map(|c| Row::broken(c.into(), &e)).into(),
    };
    let names = announce(CHECKS);
    let [c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12] = names;
    let http = format!("http://127.0.0.1:{}/", origin.http);
    let https = format!("https://localhost:{}/", origin.tls);
    let ca = format!("--cacert={}", origin.ca.display());
    let open_url = format!("http://127.0.0.1:{}", open.port);
    let auth_url = format!("http://{USER}:{PASS}@127.0.0.1:{}", auth.port);
    let wrong_url = format!("http://{WRONG}@127.0.0.1:{}", auth.port);
    let bare_url = format!("http://127.0.0.1:{}", auth.port);
    let h1 = ["--http1.1", &http];
    let h2 = ["--http2", &ca, &https];
    let mut rows = vec![
        load_through(poolcurl, c1, &open, &open_url, (2000, 8), &h1, false),
        // A cold burst over HTTP/2: one tunnel, one connection.
        load_through(poolcurl, c2, &open, &open_url, (50, 50), &h2, true),
        // 1,000 requests, not 200: see the module docs on the 5% ceiling.
        load_through(poolcurl, c3, &auth, &auth_url, (1000, 8), &h1, false),
        load_through(poolcurl, c4, &auth, &auth_url, (200, 8), &h2, false),
    ];

    // Refused logins, in curl mode, each beside the same request made by hand.
    let connect = format!(
        "CONNECT localhost:{0} HTTP/1.1\r\nHost: localhost:{0}\r\n",
        origin.tls
    );
    let get = format!("GET {http} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", origin.http);
    let wrong = format!("Proxy-Authorization: Basic {WRONG_BASIC}\r\n");
    let refusals = [
        (
            c5,
            format!("{connect}\r\n"),
            ["-sS", "-x", &bare_url, &ca, &https].to_vec(),
        ),
        (
            c6,
            format!("{connect}{wrong}\r\n"),
            ["-sS", "-x", &wrong_url, &ca, &https].to_vec(),
        ),
        (
            c7,
            format!("{get}{wrong}\r\n"),
            [
                "-sS",
                "-x",
                &wrong_url,
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &http,
            ]
            .to_vec(),
        ),
    ];
    for (check, request, args) in refusals {
        let answer = probe(auth.port, &request);
        let connect = request.starts_with("CONNECT ");
        rows.push(judge_refusal(
            check,
            run_cli(poolcurl, &args, &[]),
            answer,
            connect,
        ));
    }

    // The environment: a proxy nothing listens on, bypassed only for a NO_PROXY host.
    for (check, no_proxy) in [(c8, Some("127.0.0.1")), (c9, None)] {
        let dead = match free_ports::<1>() {
            Ok([port]) => format!("http://127.0.0.1:{port}"),
            Err(e) => {
                rows.push(Row::broken(check, &e));
                continue;
            }
        };
        let mut env = vec![("http_proxy", dead.as_str())];
        env.extend(no_proxy.map(|host| ("NO_PROXY", host)));
        let run = run_cli(poolcurl, &["-sS", &http], &env);
        let (code, body) = if no_proxy.is_some() {
            (0, Some("ok\n"))
        } else {
            (7, None)
        };
        rows.push(judge_cli(check, run, code, body, None, Vec::new()));
    }

    let args = [
        "-s",
        "-x",
        &open_url,
        "-w",
        " %{num_connects}",
        &http,
        &http,
    ];
    let Some(curl) = find_binary("curl") else {
        for check in [c10, c11, c12] {
            rows.push(Row::skipped(
                format!("skipped: curl not found ({check})"),
                None,
            ));
        }
        return rows;
    };
    rows.push(beside_curl(c10, &curl, poolcurl, &args));

    // `--connect-to`: URLs name `localhost:1`, the connection goes to nginx's TLS port, and
    // TLS still verifies `localhost`. Through the proxy, the tunnel must be asked for the
    // target, which tinyproxy's log shows (one CONNECT for each tool's two URLs).
    let rule = format!("localhost:1:127.0.0.1:{}", origin.tls);
    let ca_path = origin.ca.display().to_string();
    // curl takes no `--flag=value` form: the CA path is an argument of its own.
    let mut args = vec![
        "-s",
        "--cacert",
        &ca_path,
        "--connect-to",
        &rule,
        "-w",
        " %{http_code} %{num_connects}",
        "https://localhost:1/",
        "https://localhost:1/",
    ];
    rows.push(beside_curl(c11, &curl, poolcurl, &args));
    let tunnel = format!("CONNECT 127.0.0.1:{}", origin.tls);
    let before = open.logged(&tunnel);
    args.splice(0..0, ["-x", open_url.as_str()]);
    let mut row = beside_curl(c12, &curl, poolcurl, &args);
    let tunnels = open.logged(&tunnel) - before;
    row.details
        .push(format!("tinyproxy logged {tunnels} {tunnel}"));
    if tunnels != 2 {
        row.passed = Some(false);
        row.cells[RESULT] = "FAIL".into();
        row.details
            .push("expected 2: one tunnel to the target for each tool".into());
    }
    rows.push(row);
    rows
}

impl Tinyproxy {
    /// Writes `tinyproxy.conf` into `dir`, starts tinyproxy in the foreground and waits until it
    /// listens on 127.0.0.1.
    fn start(
        binary: &Path,
        dir: &Path,
        name: &'static str,
        basic_auth: bool,
    ) -> Result<Tinyproxy, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let [port] = free_ports::<1>()?;
        let log = dir.join("tinyproxy.log");
        // No `ConnectPort` (all ports allowed for CONNECT), no `Allow` (all clients), no `User`
        // (as root tinyproxy warns and stays root). `Timeout` bounds an idle connection.
        let auth = if basic_auth {
            format!("BasicAuth {USER} {PASS}\n")
        } else {
            String::new()
        };
        let conf = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 60\nMaxClients 200\nLogLevel Info\n\
             LogFile \"{}\"\nDisableViaHeader Yes\n{auth}",
            log.display()
        );
        let conf_path = dir.join("tinyproxy.conf");
        std::fs::write(&conf_path, conf).map_err(|e| format!("write tinyproxy.conf: {e}"))?;
        let mut cmd = Command::new(binary);
        cmd.arg("-d").arg("-c").arg(&conf_path);
        let mut server = Server::start(name, cmd, log, &dir.join("stderr.log"))?;
        // A prefork tinyproxy (before 1.11) stops its children on SIGTERM.
        server.stop_with_sigterm();
        server.wait_ready(&[port])?;
        Ok(Tinyproxy { server, port })
    }

    /// How many lines of its log contain `needle`.
    fn logged(&self, needle: &str) -> usize {
        let log = std::fs::read_to_string(&self.server.log).unwrap_or_default();
        log.lines().filter(|l| l.contains(needle)).count()
    }
}

/// `poolcurl load -x PROXY -n N -c C ARGS` (the URL last), judged like every load, plus: the
/// proxy logged each request (`http://`) or each connection's CONNECT (`https://`), and with
/// `one_connection` the run opened exactly one connection, an h2 one.
fn load_through(
    poolcurl: &Path,
    check: String,
    proxy: &Tinyproxy,
    proxy_url: &str,
    (n, c): (u64, u64),
    args: &[&str],
    one_connection: bool,
) -> Row {
    let url = args.last().expect("a URL");
    let (proto, needle) = match url.strip_prefix("https://") {
        Some(rest) => (
            "h2",
            format!("): CONNECT {} HTTP/", rest.trim_end_matches('/')),
        ),
        None => ("h1", format!("): GET {url} HTTP/")),
    };
    let tunnel = proto == "h2";
    let before = proxy.logged(&needle);
    let (n_arg, c_arg) = (n.to_string(), c.to_string());
    let flags = ["-x", proxy_url, "-n", &n_arg, "-c", &c_arg];
    let all: Vec<String> = flags.iter().chain(args).map(|a| a.to_string()).collect();
    let run = Running::spawn(poolcurl, &all).map(Running::finish);
    let logged = proxy.logged(&needle).saturating_sub(before);
    let json = run
        .as_ref()
        .ok()
        .and_then(|r| serde_json::from_str::<Value>(&r.stdout).ok());
    let count = |path: &str| {
        json.as_ref()
            .and_then(|j| j.pointer(path))
            .and_then(Value::as_u64)
    };
    let show = |v: Option<u64>| v.map_or("n/a".into(), |v| v.to_string());
    let mut problems = Vec::new();
    // What the proxy must have seen: every request, or every transport (a connection, or a
    // handshake that failed or lost the race) in a tunnel of its own.
    let (seen, what) = if tunnel {
        let transports = ["opened", "failed", "redundant_handshakes"]
            .map(|k| count(&format!("/connections/{k}")).unwrap_or(0));
        (transports.iter().sum(), "CONNECT(s), one per connection")
    } else {
        (count("/requests").unwrap_or(0), "requests")
    };
    if logged as u64 != seen {
        problems.push(format!(
            "tinyproxy logged {logged} {what}, poolcurl made {seen}"
        ));
    }
    if !tunnel {
        let json = json.as_ref().unwrap_or(&Value::Null);
        if let Some(problem) = quota::quota_other_than(json, 1, "tinyproxy's") {
            problems.push(problem);
        }
        if let (Some(requests), Some(retries)) = (count("/requests"), count("/connections/retries"))
        {
            if retries * 20 > requests {
                problems.push(format!(
                    "{retries} re-sends for {requests} requests: over 5%"
                ));
            }
        }
    }
    let (opened, h2) = (count("/connections/opened"), count("/connections/h2"));
    if one_connection && (opened != Some(1) || h2 != Some(1)) {
        problems.push(format!(
            "expected one tunnel with one h2 connection: opened={} h2={}",
            show(opened),
            show(h2)
        ));
    }
    let mut row = Row::judge(check, run, Some(n), proto, problems);
    if logged as u64 == seen {
        row.details
            .push(format!("tinyproxy logged {logged} {what}"));
    }
    row
}

/// Runs `program ARGS` (poolcurl in curl mode, or curl) without the machine's proxy variables,
/// with `env` set.
pub(crate) fn run_cli(
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Finished, String> {
    let mut cmd = without_proxy_env(Command::new(program));
    cmd.args(args).envs(env.iter().copied());
    Running::start(cmd).map(Running::finish)
}

/// poolcurl with `args` exits `code`, prints `stdout` and says `stderr` (a part of it).
pub(crate) fn expect_run(
    check: String,
    poolcurl: &Path,
    args: &[&str],
    code: i32,
    stdout: &str,
    stderr: &str,
) -> Row {
    let run = match run_cli(poolcurl, args, &[]) {
        Ok(run) => run,
        Err(e) => return Row::broken(check, &e),
    };
    let mut problems = Vec::new();
    if run.status.and_then(|s| s.code()) != Some(code) {
        problems.push(format!("poolcurl exited {:?}, not {code}", run.status));
    }
    if run.stdout != stdout {
        problems.push(format!("printed {:?}, not {stdout:?}", run.stdout));
    }
    if !run.stderr.contains(stderr) {
        problems.push(format!("stderr {:?} does not say {stderr:?}", run.stderr));
    }
    let mut row = Row::new(check, Some(problems.is_empty()));
    if problems.is_empty() {
        row.details.push(format!("exit {code}, printed {stdout:?}"));
    } else {
        row.details = problems;
        row.details.push(format!(
            "stderr: {}",
            run.stderr.trim().replace('\n', " | ")
        ));
    }
    row
}

/// tinyproxy's status code for `request`, sent by hand on a connection of its own: what a
/// refused login is answered with. It must be a refusal (401 or 407).
fn probe(port: u16, request: &str) -> Result<u16, String> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
        .map_err(|e| format!("probe: connect to tinyproxy: {e}"))?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("probe: send: {e}"))?;
    let mut head = Vec::new();
    let mut buf = [0; 1024];
    while !head.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default();
    match line.split(' ').nth(1).and_then(|c| c.parse().ok()) {
        Some(code @ (401 | 407)) => Ok(code),
        _ => Err(format!(
            "tinyproxy did not refuse the login by hand: {line:?}"
        )),
    }
}

/// Judges a refused login: `answer` is the status tinyproxy sent the same request made by
/// hand (a failed probe fails the check). A refused CONNECT must exit 56 naming that status on
/// stderr; a refused forward request is the response: exit 0 and `-w %{http_code}` prints it.
fn judge_refusal(
    check: String,
    run: Result<Finished, String>,
    answer: Result<u16, String>,
    connect: bool,
) -> Row {
    let mut row = match &answer {
        Ok(status) if connect => {
            let want = format!("CONNECT tunnel failed, response {status}");
            judge_cli(check, run, 56, None, Some(&want), Vec::new())
        }
        Ok(status) => judge_cli(check, run, 0, Some(&status.to_string()), None, Vec::new()),
        Err(e) => judge_cli(
            check,
            run,
            if connect { 56 } else { 0 },
            None,
            None,
            vec![e.clone()],
        ),
    };
    if let Ok(status) = answer {
        row.details.push(format!(
            "tinyproxy answers the same request by hand with {status}"
        ));
    }
    row
}

/// Judges a run in curl mode: it exited with `code`, printed exactly `stdout` and a stderr
/// containing `stderr_has` (each when given). `problems` are failures found before.
fn judge_cli(
    check: String,
    run: Result<Finished, String>,
    code: i32,
    stdout: Option<&str>,
    stderr_has: Option<&str>,
    mut problems: Vec<String>,
) -> Row {
    let run = match run {
        Ok(run) => run,
        Err(e) => return Row::broken(check, &e),
    };
    let exit = run.status.map(|s| s.code());
    if exit != Some(Some(code)) {
        problems.push(format!(
            "expected exit {code}, got {}",
            describe(run.status)
        ));
    }
    if let Some(want) = stdout.filter(|want| run.stdout != *want) {
        problems.push(format!(
            "expected stdout {want:?}, got {:?}",
            clip(&run.stdout)
        ));
    }
    if let Some(want) = stderr_has.filter(|want| !run.stderr.contains(want)) {
        problems.push(format!("expected {want:?} on stderr"));
    }
    let failed = !problems.is_empty();
    let mut row = Row::new(check, Some(!failed));
    row.details = problems;
    if failed || stderr_has.is_some() {
        let stderr = run.stderr.trim().replace('\n', " | ");
        row.details.push(format!("stderr: {}", clip(&stderr)));
    }
    row
}

/// The same arguments to curl and to poolcurl (curl mode): identical stdout bytes and exit
/// codes, and curl itself succeeded (else nothing was compared).
pub(crate) fn beside_curl(check: String, curl: &Path, poolcurl: &Path, args: &[&str]) -> Row {
    beside_curl_exiting(check, curl, poolcurl, args, 0)
}

/// As [`beside_curl`], for a command line curl ends with exit code `expected` (a failure the
/// check is about).
pub(crate) fn beside_curl_exiting(
    check: String,
    curl: &Path,
    poolcurl: &Path,
    args: &[&str],
    expected: i32,
) -> Row {
    let runs = run_cli(curl, args, &[]).and_then(|c| Ok((c, run_cli(poolcurl, args, &[])?)));
    let (curl, ours) = match runs {
        Ok(runs) => runs,
        Err(e) => return Row::broken(check, &e),
    };
    let mut problems = Vec::new();
    if curl.status.and_then(|s| s.code()) != Some(expected) {
        problems.push(format!(
            "curl itself did not exit {expected}: {}",
            describe(curl.status)
        ));
    }
    if curl.status.map(|s| s.code()) != ours.status.map(|s| s.code()) {
        problems.push(format!(
            "exit codes differ: curl {}, poolcurl {}",
            describe(curl.status),
            describe(ours.status)
        ));
    }
    if curl.stdout != ours.stdout {
        problems.push("stdout differs".into());
    }
    let failed = !problems.is_empty();
    let mut row = Row::new(check, Some(!failed));
    row.details = problems;
    if failed {
        row.details
            .push(format!("curl stdout:     {:?}", clip(&curl.stdout)));
        row.details
            .push(format!("poolcurl stdout: {:?}", clip(&ours.stdout)));
        row.details
            .push(format!("poolcurl stderr: {}", clip(ours.stderr.trim())));
    } else {
        row.details.push(format!("both printed {:?}", curl.stdout));
    }
    row
}

fn describe(status: Option<ExitStatus>) -> String {
    status.map_or(format!("killed after {} s", RUN_DEADLINE.as_secs()), |s| {
        s.to_string()
    })
}

/// At most 300 characters of `text`.
fn clip(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}
