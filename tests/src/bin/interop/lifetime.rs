//! nginx with the pool's maximum connection lifetime: `poolcurl load -z 5s
//! --max-connection-lifetime 1s` over HTTP/1.1 (`-c 8`) and h2c (one connection), at a rate low
//! enough that nginx's own `keepalive_requests 1000` does not end connections first. Check:
//! every request succeeded and connections were retired for their age about once a second
//! each (between 3 and 6 times per connection in five seconds, allowing for the default 10 %
//! jitter and the run's edges).

use super::*;

/// Name, protocol, poolcurl's protocol flag, `-c`, `--rate`, connections at once, listener.
const CASES: [(&str, &str, &str, u64, &str, u64, usize); 2] = [
    ("http1.1", "h1", "--http1.1", 8, "2000", 8, 0),
    ("h2c", "h2", "--http2-prior-knowledge", 8, "500", 1, 1),
];

pub(crate) fn nginx_lifetime(poolcurl: &Path, started: &Nginx) -> Vec<Row> {
    let name = |case: &str| format!("nginx {case}, -z 5s, --max-connection-lifetime 1s");
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return CASES.map(|c| Row::broken(name(c.0), e)).into(),
    };
    let mut rows = Vec::new();
    for (case, proto, flag, c, rate, connections, listener) in CASES {
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
            let retired = json
                .pointer("/connections/closed/max_lifetime")
                .and_then(Value::as_u64);
            match retired {
                Some(n) if (3 * connections..=6 * connections).contains(&n) => {}
                other => problems.push(format!(
                    "expected {}..={} connections retired for their age, got {other:?}",
                    3 * connections,
                    6 * connections
                )),
            }
        }
        rows.push(Row::judge(name(case), finished, None, proto, problems));
    }
    rows
}
