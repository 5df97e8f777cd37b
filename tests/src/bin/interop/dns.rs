//! `--dns-servers` against a DNS server nobody here wrote: dnsmasq, answering for one name
//! (`nginx.test`, the nginx of the other checks) and refusing every other one (no upstream).
//!
//! * Two URLs by that name: nginx's body twice, the second on the reused connection, and
//!   dnsmasq's query log shows the `A` and `AAAA` questions poolcurl asked.
//! * A name dnsmasq refuses: exit 6, curl's "Could not resolve host".
//!
//! poolcurl runs alone: Debian's curl is built without c-ares and refuses `--dns-servers`
//! (exit 2). Without dnsmasq the checks are one "skip" row; `.ci/run` installs Debian's
//! `dnsmasq-base` (the program without its service).

use super::*;

/// The checks, in table order.
const CHECKS: [&str; 2] = [
    "poolcurl --dns-servers via dnsmasq, 2 URLs",
    "poolcurl --dns-servers via dnsmasq, a name it refuses",
];

pub(crate) fn dnsmasq_checks(
    poolcurl: &Path,
    origin: Result<Origin, String>,
    dir: &Path,
) -> Vec<Row> {
    let Some(dnsmasq) = find_binary("dnsmasq") else {
        return vec![Row::skipped(
            "skipped: dnsmasq".into(),
            Some("the --dns-servers checks need dnsmasq"),
        )];
    };
    let names = announce(CHECKS);
    let started = origin.and_then(|origin| {
        let [port] = free_ports::<1>()?;
        let mut cmd = Command::new(&dnsmasq);
        // In the foreground, no configuration file, hosts file or upstream: the one name
        // below is all it knows. Queries are logged to stderr, which `start_in` keeps.
        cmd.args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            "--address=/nginx.test/127.0.0.1",
            "--log-queries",
            "--log-facility=-",
            "--pid-file",
        ])
        .arg(format!("--port={port}"));
        if running_as_root() {
            // Otherwise it would drop to `nobody`, which cannot write the harness's files.
            cmd.arg("--user=root");
        }
        let server = start_in(dir, "dnsmasq", cmd, port)?;
        Ok((server, port, origin))
    });
    let (server, port, origin) = match started {
        Ok(started) => started,
        Err(e) => return names.map(|n| Row::broken(n, &e)).into(),
    };
    let [two, refused] = names;
    let servers = format!("127.0.0.1:{port}");
    let url = format!("http://nginx.test:{}/", origin.http);
    let args = [
        "-s",
        "--dns-servers",
        &servers,
        "-w",
        " %{http_code} %{num_connects}",
        &url,
        &url,
    ];
    let mut two = expect_run(two, poolcurl, &args, 0, "ok\n 200 1ok\n 200 0", "");
    let log = std::fs::read_to_string(&server.log).unwrap_or_default();
    for question in ["query[A] nginx.test", "query[AAAA] nginx.test"] {
        if !log.contains(question) {
            two.passed = Some(false);
            two.details.push(format!("dnsmasq logged no {question:?}"));
        }
    }
    let other = format!("http://other.test:{}/", origin.http);
    let refused = expect_run(
        refused,
        poolcurl,
        &["-sS", "--dns-servers", &servers, &other],
        6,
        "",
        "Could not resolve host: other.test",
    );
    vec![two, refused]
}
