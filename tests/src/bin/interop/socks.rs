//! SOCKS beside curl through two SOCKS servers nobody here wrote, to the nginx of the other
//! checks. Each row is curl and poolcurl on the same command line with the same stdout and exit
//! code.
//!
//! * microsocks (SOCKS5): `socks5h://` with the proxy's user and password (RFC 1929) to
//!   HTTP/1.1 on two URLs (the second on the reused tunnel) and to TLS with ALPN h2, and a
//!   wrong password (curl's exit 97).
//! * Dante (SOCKS4 and SOCKS5, no authentication): `socks4://` on two URLs, `--socks4` to TLS
//!   with ALPN h2, `socks5://` (another server's SOCKS5), and a target that refuses
//!   connections, which Dante reports as SOCKS4's "rejected or failed" (exit 97). Dante
//!   refuses SOCKS4a requests, so 4a is checked against the scripted proxy of the parity
//!   suite only.
//!
//! Without a server or curl, that server's checks are one "skip" row. `.ci/run` installs
//! Debian's `microsocks` and `dante-server`.

use super::*;

/// The checks, in table order.
const CHECKS: [&str; 3] = [
    "curl vs poolcurl via microsocks (socks5h, user), 2 URLs",
    "curl vs poolcurl via microsocks to TLS h2",
    "curl vs poolcurl via microsocks, wrong password",
];

pub(crate) fn socks_checks(
    poolcurl: &Path,
    origin: Result<Origin, String>,
    dir: &Path,
) -> Vec<Row> {
    let (Some(microsocks), Some(curl)) = (find_binary("microsocks"), find_binary("curl")) else {
        return vec![Row::skipped(
            "skipped: microsocks or curl".into(),
            Some("the SOCKS5 checks need microsocks and curl"),
        )];
    };
    let names = announce(CHECKS);
    let started = origin.and_then(|origin| {
        let [port] = free_ports::<1>()?;
        let mut cmd = Command::new(&microsocks);
        cmd.args([
            "-i",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-u",
            "alice",
            "-P",
            "s3cret",
        ]);
        let server = start_in(dir, "microsocks", cmd, port)?;
        Ok((server, port, origin))
    });
    let (_server, port, origin) = match started {
        Ok(started) => started,
        Err(e) => return names.map(|n| Row::broken(n, &e)).into(),
    };
    let [two, tls, wrong] = names;
    let proxy = format!("socks5h://alice:s3cret@127.0.0.1:{port}");
    let http = format!("http://localhost:{}/", origin.http);
    let https = format!("https://localhost:{}/", origin.tls);
    let ca = origin.ca.display().to_string();
    let wrong_proxy = format!("socks5h://alice:nope@127.0.0.1:{port}");
    vec![
        beside_curl(
            two,
            &curl,
            poolcurl,
            &[
                "-s",
                "-x",
                &proxy,
                "-w",
                " %{http_code} %{num_connects}",
                &http,
                &http,
            ],
        ),
        beside_curl(
            tls,
            &curl,
            poolcurl,
            &[
                "-s",
                "-x",
                &proxy,
                "--cacert",
                &ca,
                "-w",
                " %{http_version}",
                &https,
            ],
        ),
        beside_curl_exiting(
            wrong,
            &curl,
            poolcurl,
            &["-s", "-x", &wrong_proxy, &http],
            97,
        ),
    ]
}

/// The Dante checks, in table order.
const DANTE_CHECKS: [&str; 4] = [
    "curl vs poolcurl via Dante (socks4), 2 URLs",
    "curl vs poolcurl via Dante (--socks4) to TLS h2",
    "curl vs poolcurl via Dante (socks5)",
    "curl vs poolcurl via Dante (socks4), target refuses",
];

/// Dante's configuration: loopback in and out, no authentication, `CONNECT` only.
const DANTE_CONF: &str = "logoutput: stderr
internal: 127.0.0.1 port = PORT
external: 127.0.0.1
socksmethod: none
clientmethod: none
client pass {
  from: 127.0.0.0/8 to: 0.0.0.0/0
}
socks pass {
  from: 127.0.0.0/8 to: 0.0.0.0/0
  command: connect
  protocol: tcp
}
";

pub(crate) fn dante_checks(
    poolcurl: &Path,
    origin: Result<Origin, String>,
    dir: &Path,
) -> Vec<Row> {
    let (Some(danted), Some(curl)) = (find_binary("danted"), find_binary("curl")) else {
        return vec![Row::skipped(
            "skipped: danted or curl".into(),
            Some("the Dante SOCKS4 checks need danted (dante-server) and curl"),
        )];
    };
    let names = announce(DANTE_CHECKS);
    let started = origin.and_then(|origin| {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        // `closed` is never bound: the target that refuses connections.
        let [port, closed] = free_ports::<2>()?;
        let conf = dir.join("danted.conf");
        std::fs::write(&conf, DANTE_CONF.replace("PORT", &port.to_string()))
            .map_err(|e| format!("write {}: {e}", conf.display()))?;
        let mut cmd = Command::new(&danted);
        cmd.arg("-f").arg(&conf).args(["-N", "1"]);
        let server = start_in(dir, "danted", cmd, port)?;
        Ok((server, port, closed, origin))
    });
    let (_server, port, closed, origin) = match started {
        Ok(started) => started,
        Err(e) => return names.map(|n| Row::broken(n, &e)).into(),
    };
    let [two, tls, five, refused] = names;
    let proxy = |scheme: &str| format!("{scheme}://127.0.0.1:{port}");
    let http = format!("http://localhost:{}/", origin.http);
    let https = format!("https://localhost:{}/", origin.tls);
    let ca = origin.ca.display().to_string();
    let unreachable = format!("http://127.0.0.1:{closed}/");
    let counted = " %{http_code} %{num_connects}";
    vec![
        beside_curl(
            two,
            &curl,
            poolcurl,
            &["-s", "-x", &proxy("socks4"), "-w", counted, &http, &http],
        ),
        beside_curl(
            tls,
            &curl,
            poolcurl,
            &[
                "-s",
                "--socks4",
                &format!("127.0.0.1:{port}"),
                "--cacert",
                &ca,
                "-w",
                " %{http_version}",
                &https,
            ],
        ),
        beside_curl(
            five,
            &curl,
            poolcurl,
            &["-s", "-x", &proxy("socks5"), "-w", counted, &http],
        ),
        beside_curl_exiting(
            refused,
            &curl,
            poolcurl,
            &["-s", "-x", &proxy("socks4"), &unreachable],
            97,
        ),
    ]
}
