//! SOCKS5 beside curl through microsocks, a SOCKS5 server nobody here wrote, to the nginx of
//! the other checks: `socks5h://` with the proxy's user and password (RFC 1929) to HTTP/1.1 on
//! two URLs (the second on the reused tunnel) and to TLS with ALPN h2, and a wrong password
//! (curl's exit 97). Each row is curl and poolcurl on the same command line with the same
//! stdout and exit code.
//!
//! Without microsocks or curl the checks are one "skip" row. `.ci/run` installs Debian's
//! `microsocks`.

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
    let names = CHECKS.map(|c| {
        eprintln!("interop: {c} ...");
        c.to_string()
    });
    let started = origin.and_then(|origin| {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
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
        let log = dir.join("microsocks.log");
        let mut server = Server::start("microsocks", cmd, log.clone(), &log)?;
        server.wait_ready(&[port])?;
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
