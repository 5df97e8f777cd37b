//! NTLM through a proxy nobody here wrote: Squid with its `ntlm_fake_auth` helper, which runs
//! NTLM's whole exchange (negotiate, challenge, authenticate, on one connection) and accepts
//! any user's answer, to the nginx of the other checks. It checks the pool's
//! `AuthScheme::Ntlm` (`--proxy-ntlm`) against a real proxy's NTLM state machine; the answer's
//! cryptography is checked by the pool's tests against MS-NLMP's values and a server that
//! verifies it.
//!
//! * Beside curl, the same stdout and exit code: forward requests to two origins of the same
//!   server (`127.0.0.1` and `localhost`), which share the proxy's connection in both (the
//!   second's `%{num_connects}` is 0), a `CONNECT` tunnel to TLS with ALPN h2, and no
//!   credentials (the `407` is the response).
//! * `poolcurl load -n 200 -c 8` through NTLM tunnels to h2: every connection the pool made is
//!   one `TCP_TUNNEL/200` line in Squid's access log, authenticated (a user named).
//!
//! Without Squid, its helper or curl, these checks are one "skip" row. `.ci/run` installs
//! Debian's `squid`.

use super::*;

/// The checks, in table order.
const CHECKS: [&str; 4] = [
    "curl vs poolcurl via squid NTLM, forward, 2 origins",
    "curl vs poolcurl via squid NTLM, CONNECT to TLS h2",
    "curl vs poolcurl via squid NTLM, no credentials: 407",
    "squid NTLM CONNECT h2, -n 200 -c 8",
];

/// Where Debian installs Squid's NTLM helper that accepts any credentials.
const FAKE_AUTH: &str = "/usr/lib/squid/ntlm_fake_auth";

/// Squid's configuration: loopback only, no cache, NTLM required for everything, any port.
const SQUID_CONF: &str = "http_port 127.0.0.1:PORT
pid_filename DIR/squid.pid
cache_log DIR/cache.log
access_log DIR/access.log
coredump_dir DIR
cache deny all
pinger_enable off
shutdown_lifetime 0 seconds
auth_param ntlm program HELPER
auth_param ntlm children 4
acl authed proxy_auth REQUIRED
http_access allow authed
http_access deny all
";

pub(crate) fn squid_checks(
    poolcurl: &Path,
    origin: Result<Origin, String>,
    dir: &Path,
) -> Vec<Row> {
    let helper = Path::new(FAKE_AUTH);
    let (Some(squid), Some(curl), true) =
        (find_binary("squid"), find_binary("curl"), helper.is_file())
    else {
        return vec![Row::skipped(
            "skipped: squid, its ntlm_fake_auth or curl".into(),
            Some("the NTLM proxy checks need squid (with /usr/lib/squid/ntlm_fake_auth) and curl"),
        )];
    };
    let names = announce(CHECKS);
    let started = origin.and_then(|origin| {
        let [port] = free_ports::<1>()?;
        let server = start_squid(&squid, dir, helper, port)?;
        Ok((server, port, origin))
    });
    let (server, port, origin) = match started {
        Ok(started) => started,
        Err(e) => return names.map(|n| Row::broken(n, &e)).into(),
    };
    let [forward, tunnel, bare, load] = names;
    let proxy = format!("http://127.0.0.1:{port}");
    let http = format!("http://127.0.0.1:{}/", origin.http);
    // The same server by name: another origin, forwarded to the same proxy.
    let by_name = format!("http://localhost:{}/", origin.http);
    let https = format!("https://localhost:{}/", origin.tls);
    let ca = origin.ca.display().to_string();
    let ntlm = [
        "-s",
        "-x",
        proxy.as_str(),
        "--proxy-ntlm",
        "-U",
        "alice:any",
    ];
    let two = [
        &ntlm[..],
        &["-w", " %{http_code} %{num_connects}", &http, &by_name],
    ]
    .concat();
    let tls = [
        &ntlm[..],
        &[
            "-w",
            " %{http_code} %{http_connect} %{http_version}",
            "--cacert",
            &ca,
            &https,
        ],
    ]
    .concat();
    let rows = vec![
        beside_curl(forward, &curl, poolcurl, &two),
        beside_curl(tunnel, &curl, poolcurl, &tls),
        beside_curl(
            bare,
            &curl,
            poolcurl,
            &[
                "-s",
                "-x",
                &proxy,
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &http,
            ],
        ),
        load_through_ntlm(poolcurl, load, server, dir, (&proxy, &ca, &https)),
    ];
    rows
}

/// Writes the configuration and starts Squid in the foreground (`-N`), waiting until it
/// listens. Squid drops to its own user, so its directory is open to it.
fn start_squid(squid: &Path, dir: &Path, helper: &Path, port: u16) -> Result<Server, String> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))
        .map_err(|e| format!("open {} to squid's user: {e}", dir.display()))?;
    let conf = dir.join("squid.conf");
    let text = SQUID_CONF
        .replace("PORT", &port.to_string())
        .replace("DIR", &dir.display().to_string())
        .replace("HELPER", &helper.display().to_string());
    std::fs::write(&conf, text).map_err(|e| format!("write {}: {e}", conf.display()))?;
    let mut cmd = Command::new(squid);
    cmd.arg("-f").arg(&conf).arg("-N");
    let mut server = start_in(dir, "squid", cmd, port)?;
    // Stopped by its own command, so that it closes its tunnels and writes their log lines.
    let mut stop = Command::new(squid);
    stop.arg("-f").arg(&conf).args(["-k", "shutdown"]);
    server.stop = Some(stop);
    Ok(server)
}

/// `poolcurl load` through Squid's NTLM tunnels to `https`: every connection the pool made
/// must be one authenticated `TCP_TUNNEL/200` in the access log. Squid writes a tunnel's line
/// when the tunnel closes, so the log is read once `squid` has been stopped (its own shutdown,
/// which closes every tunnel and waits for Squid to exit).
fn load_through_ntlm(
    poolcurl: &Path,
    check: String,
    squid: Server,
    dir: &Path,
    (proxy, ca, https): (&str, &str, &str),
) -> Row {
    let access = dir.join("access.log");
    let tunnels = || {
        std::fs::read_to_string(&access)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("TCP_TUNNEL/200") && !l.contains(" - HIER_"))
            .count() as u64
    };
    let before = tunnels();
    let cacert = format!("--cacert={ca}");
    let args: Vec<String> = [
        "-x",
        proxy,
        "--proxy-ntlm",
        "-U",
        "alice:any",
        "-n",
        "200",
        "-c",
        "8",
        "--http2",
        &cacert,
        https,
    ]
    .map(str::to_owned)
    .to_vec();
    let run = Running::spawn(poolcurl, &args).map(Running::finish);
    drop(squid);
    let logged = tunnels() - before;
    let opened = run
        .as_ref()
        .ok()
        .and_then(|r| serde_json::from_str::<Value>(&r.stdout).ok())
        .and_then(|j| j.pointer("/connections/opened").and_then(Value::as_u64));
    let mut problems = Vec::new();
    if Some(logged) != opened {
        problems.push(format!(
            "squid logged {logged} authenticated tunnel(s), poolcurl opened {}",
            opened.map_or("n/a".into(), |o| o.to_string())
        ));
    }
    let mut row = Row::judge(check, run, Some(200), "h2", problems);
    row.details.push(format!(
        "squid logged {logged} authenticated TCP_TUNNEL/200"
    ));
    row
}
