//! nginx's per-connection request quota over h2c: `keepalive_requests 1000` (nginx's default,
//! set explicitly on the h2c listener) ends each connection with GOAWAY after 1,000 requests,
//! and with 128 streams in flight (`-c 128`, one partition, so one connection at a time) the
//! streams opened after the 1,000th are refused. Check: every request succeeded; the pool
//! learnt the quota (`connections.request_quotas` names 1,000 for the origin); most
//! connections retired at it (`closed.request_quota` at least half of those closed); and the
//! re-sends stayed under 2% of the requests. Before the pool learnt quotas, one request in
//! eight went twice (the refused ones, about 125 per connection).

use super::*;

pub(crate) fn nginx_request_quota(poolcurl: &Path, started: &Nginx) -> Row {
    let name =
        "nginx h2c, keepalive_requests 1000, -z 5s -c 128: the request quota is learnt".to_string();
    let port = match started {
        Ok((_, _, ports)) => ports[1],
        Err(e) => return Row::broken(name, e),
    };
    eprintln!("interop: {name} ...");
    let mut args = strings(&["-z", "5s", "-c", "128", "--http2-prior-knowledge"]);
    args.push(format!("http://127.0.0.1:{port}/"));
    let finished = Running::spawn(poolcurl, &args).map(Running::finish);
    let mut problems = Vec::new();
    if let Ok(run) = &finished {
        let json: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        let count = |path: &str| json.pointer(path).and_then(Value::as_u64);
        if let Some(problem) = quota_other_than(&json, 1000, "nginx's") {
            problems.push(problem);
        }
        let counts = (
            count("/requests"),
            count("/connections/retries"),
            count("/connections/closed/request_quota"),
            count("/connections/closed_total"),
        );
        match counts {
            (Some(requests), Some(retries), Some(at_quota), Some(closed)) => {
                if at_quota * 2 < closed {
                    problems.push(format!(
                        "only {at_quota} of {closed} connections retired at the quota"
                    ));
                }
                if retries * 50 > requests {
                    problems.push(format!(
                        "{retries} re-sends for {requests} requests: over 2%"
                    ));
                }
            }
            other => problems.push(format!(
                "no requests/retries/request_quota/closed_total counts in the summary: {other:?}"
            )),
        }
    }
    Row::judge(name, finished, None, "h2", problems)
}

/// What is wrong with a load summary's learnt request quotas (`connections.request_quotas`)
/// unless they are exactly `expected`, the quota of `whose` server, for its one origin.
pub(crate) fn quota_other_than(json: &Value, expected: u64, whose: &str) -> Option<String> {
    let quotas: Vec<u64> = json
        .pointer("/connections/request_quotas")
        .and_then(Value::as_object)
        .map(|quotas| quotas.values().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    (quotas != [expected])
        .then(|| format!("the pool learnt {quotas:?} as the request quota, not {whose} {expected}"))
}
