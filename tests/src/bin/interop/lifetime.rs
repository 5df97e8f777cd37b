//! nginx with the pool's maximum connection lifetime: `poolcurl load -z 5s
//! --max-connection-lifetime 1s` over HTTP/1.1 (`-c 8`) and h2c (one connection), at a rate low
//! enough that nginx's own `keepalive_requests 1000` does not end connections first. Check:
//! every request succeeded, connections were retired for their age again and again (at least
//! 3 in five seconds), and none lived much less than its lifetime: at most 6 connections were
//! opened for each one open at the peak (five seconds over a lifetime of 0.9 to 1 s, the
//! default jitter, plus the first). How many connections an open-loop run keeps busy depends
//! on the machine, so the bounds follow the run's own peak rather than `-c`.

use super::*;

/// Name, protocol, poolcurl's protocol flag, `-c`, `--rate`, listener.
const CASES: [(&str, &str, &str, u64, &str, usize); 2] = [
    ("http1.1", "h1", "--http1.1", 8, "2000", 0),
    ("h2c", "h2", "--http2-prior-knowledge", 8, "500", 1),
];

pub(crate) fn nginx_lifetime(poolcurl: &Path, started: &Nginx) -> Vec<Row> {
    let name = |case: &str| format!("nginx {case}, -z 5s, --max-connection-lifetime 1s");
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return CASES.map(|c| Row::broken(name(c.0), e)).into(),
    };
    let mut rows = Vec::new();
    for (case, proto, flag, c, rate, listener) in CASES {
        eprintln!("interop: {} ...", name(case));
        let args = [
            "-z".to_string(),
            "5s".into(),
            "-c".into(),
            c.to_string(),
            "--rate".into(),
            rate.into(),
            "--max-connection-lifetime".into(),
            "1s".into(),
            flag.into(),
            format!("http://127.0.0.1:{}/", ports[listener]),
        ];
        let finished = Running::spawn(poolcurl, &args).map(Running::finish);
        let mut problems = Vec::new();
        if let Ok(run) = &finished {
            let count = summary_counts(&run.stdout);
            let retired = count("/connections/closed/max_lifetime");
            let opened = count("/connections/opened");
            let peak = count("/connections/peak_open");
            match (retired, opened, peak) {
                (Some(retired), Some(opened), Some(peak)) => {
                    if retired < 3 {
                        problems.push(format!(
                            "only {retired} connections retired for their age in 5 s"
                        ));
                    }
                    if opened > 6 * peak {
                        problems.push(format!(
                            "{opened} connections opened for a peak of {peak} open at once: \
                             some lived well under their 1 s lifetime"
                        ));
                    }
                }
                other => problems.push(format!(
                    "no retired/opened/peak counts in the summary: {other:?}"
                )),
            }
        }
        rows.push(Row::judge(name(case), finished, None, proto, problems));
    }
    rows
}

/// nginx announcing its keep-alive timeout (`keepalive_timeout 2s 2s`: it closes a connection
/// idle for 2 s and says `Keep-Alive: timeout=2`), with one request every 1.5 s (`-c 1 --rate
/// 0.667 -z 6s`). The pool keeps a connection idle for 1 s (the hint less its margin), so each
/// request after the first finds the last connection retired (`idle_timeout`) instead of
/// reusing one nginx is about to close. Check: every request succeeded on a connection of its
/// own, and the connections before it were retired for being idle.
pub(crate) fn nginx_keep_alive_hint(poolcurl: &Path, started: &Nginx) -> Row {
    let name = "nginx http1.1 with Keep-Alive: timeout=2, a request every 1.5 s".to_string();
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return Row::broken(name, e),
    };
    eprintln!("interop: {name} ...");
    let args = [
        "-z",
        "6s",
        "-c",
        "1",
        "--rate",
        "0.667",
        "--http1.1",
        &format!("http://127.0.0.1:{}/", ports[5]),
    ]
    .map(String::from);
    let finished = Running::spawn(poolcurl, &args).map(Running::finish);
    let mut problems = Vec::new();
    if let Ok(run) = &finished {
        let count = summary_counts(&run.stdout);
        let counts = (
            count("/requests"),
            count("/connections/opened"),
            count("/connections/closed/idle_timeout"),
        );
        match counts {
            (Some(requests), Some(opened), Some(retired)) => {
                if requests < 3 || opened != requests {
                    problems.push(format!(
                        "{requests} requests opened {opened} connections: each should have its own"
                    ));
                }
                if retired + 1 < requests {
                    problems.push(format!(
                        "only {retired} of {requests} connections retired for being idle"
                    ));
                }
            }
            other => problems.push(format!(
                "no requests/opened/idle_timeout counts in the summary: {other:?}"
            )),
        }
    }
    Row::judge(name, finished, None, "h1", problems)
}

/// nginx closing idle connections after 1 s without saying so (`keepalive_timeout 1s`: no
/// `Keep-Alive` header), with one request every 1.5 s (`-c 1 --rate 0.667 -z 7.4s`, five
/// requests). nginx closes the first two connections, 1.5 s apart, which teaches the pool its
/// timeout; from then on a connection retires half a second after going idle (`idle_timeout`),
/// before nginx's close could meet a request. Check: every request succeeded on a connection
/// of its own, nginx closed two, the pool retired the later ones, and the summary names the
/// timeout it learnt (1 s: within 50 ms below, as the pool starts counting a little after
/// nginx, and 100 ms above, the time a close may take to be heard).
pub(crate) fn nginx_silent_idle_timeout(poolcurl: &Path, started: &Nginx) -> Row {
    let name =
        "nginx http1.1 closing idle connections after 1 s unannounced, a request every 1.5 s"
            .to_string();
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return Row::broken(name, e),
    };
    eprintln!("interop: {name} ...");
    let args = strings(&["-z", "7.4s", "-c", "1", "--rate", "0.667", "--http1.1"]);
    let args = [args, vec![format!("http://127.0.0.1:{}/", ports[14])]].concat();
    let finished = Running::spawn(poolcurl, &args).map(Running::finish);
    let mut problems = Vec::new();
    if let Ok(run) = &finished {
        let count = summary_counts(&run.stdout);
        let counts = (
            count("/requests"),
            count("/successes"),
            count("/connections/opened"),
            count("/connections/closed/protocol_closed"),
            count("/connections/closed/idle_timeout"),
        );
        match counts {
            (Some(requests), Some(successes), Some(opened), Some(by_nginx), Some(retired)) => {
                if requests < 5 || successes != requests || opened != requests {
                    problems.push(format!(
                        "{successes} of {requests} requests succeeded on {opened} connections: \
                         each should succeed on its own"
                    ));
                }
                if by_nginx != 2 || retired + 3 < requests {
                    problems.push(format!(
                        "nginx closed {by_nginx} connections and the pool retired {retired} of \
                         {requests}: nginx should close two, the pool the ones after"
                    ));
                }
            }
            other => problems.push(format!("no request or connection counts: {other:?}")),
        }
        problems.extend(idle_timeout_problem(&run.stdout, 950..1_100));
    }
    Row::judge(name, finished, None, "h1", problems)
}

/// The pool-wide idle cap (`--max-idle-connections`) against nginx: two names of one listener
/// (`a.test` and `b.test`, two origins) loaded in turn by one request at a time (`-c 1 -n 100
/// --partitions 1`). With a cap of 1, each connection going idle makes two, so the one idle
/// longest (the other origin's) closes, and every request needs a connection of its own: 100
/// opened, 99 closed `idle_limit`. With a cap of 2 both stay: 2 opened, none closed. nginx's
/// access log (`$connection` per request) must count the same connections as poolcurl did.
pub(crate) fn nginx_idle_cap(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    const CASES: [(u64, u64, u64); 2] = [(1, 100, 99), (2, 2, 0)];
    let name =
        |cap: u64| format!("nginx http1.1, two origins in turn, --max-idle-connections {cap}");
    let port = match started {
        Ok((_, _, ports)) => ports[13],
        Err(e) => return CASES.map(|c| Row::broken(name(c.0), e)).into(),
    };
    let log = dir.join("idle-cap.log");
    let mut rows = Vec::new();
    for (cap, want_opened, want_closed) in CASES {
        eprintln!("interop: {} ...", name(cap));
        let logged_before = read_lines(&log).len();
        let mut args = strings(&["-n", "100", "-c", "1", "--partitions", "1", "--http1.1"]);
        args.extend(["--max-idle-connections".into(), cap.to_string()]);
        for host in ["a.test", "b.test"] {
            args.extend(["--resolve".into(), format!("{host}:{port}:127.0.0.1")]);
            args.push(format!("http://{host}:{port}/"));
        }
        let finished = Running::spawn(poolcurl, &args).map(Running::finish);
        let mut problems = Vec::new();
        if let Ok(run) = &finished {
            let count = summary_counts(&run.stdout);
            let opened = count("/connections/opened");
            let closed = count("/connections/closed/idle_limit");
            if (opened, closed) != (Some(want_opened), Some(want_closed)) {
                problems.push(format!(
                    "opened {opened:?} connections and closed {closed:?} for the cap, \
                     where {want_opened} and {want_closed}"
                ));
            }
            let served: Vec<String> = read_lines(&log).split_off(logged_before);
            let connections: std::collections::BTreeSet<&String> = served.iter().collect();
            if served.len() != 100 || Some(connections.len() as u64) != opened {
                problems.push(format!(
                    "nginx logged {} requests on {} connections, poolcurl opened {opened:?}",
                    served.len(),
                    connections.len()
                ));
            }
        }
        rows.push(Row::judge(name(cap), finished, None, "h1", problems));
    }
    rows
}

/// What is wrong with the idle timeouts poolcurl's JSON summary says the pool learnt (in
/// milliseconds, one per origin that taught one), where one was due, within `range`.
pub(crate) fn idle_timeout_problem(stdout: &str, range: std::ops::Range<u64>) -> Option<String> {
    let json: Value = serde_json::from_str(stdout).unwrap_or(Value::Null);
    let learnt: Vec<u64> = json
        .pointer("/connections/server_idle_timeouts_ms")
        .and_then(Value::as_object)
        .map(|map| map.values().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    match learnt[..] {
        [ms] if range.contains(&ms) => None,
        _ => Some(format!(
            "learnt idle timeouts {learnt:?} ms, where one within {range:?} ms"
        )),
    }
}

/// Reads a count of poolcurl's JSON summary by its path (`/connections/opened`); `None` when
/// the summary or the count is missing.
pub(crate) fn summary_counts(stdout: &str) -> impl Fn(&str) -> Option<u64> {
    let json: Value = serde_json::from_str(stdout).unwrap_or(Value::Null);
    move |path| json.pointer(path).and_then(Value::as_u64)
}

/// The lines of a log file, none if it is not there yet.
fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}
