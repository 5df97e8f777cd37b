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
            let json: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
            let count = |path: &str| json.pointer(path).and_then(Value::as_u64);
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
        let json: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        let count = |path: &str| json.pointer(path).and_then(Value::as_u64);
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
