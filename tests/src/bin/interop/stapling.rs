//! nginx stapling an OCSP response (`ssl_stapling_file`), beside curl: `--cert-status` to a
//! listener whose staple says the certificate is good, and to one whose staple says it is
//! revoked. The responses come from the test PKI's CA (`pool_tests::ocsp`); nginx only sends
//! them, and curl (through OpenSSL) and poolcurl each judge them.

use std::path::Path;

use pool_tests::ocsp::{Staple, Status};
use pool_tests::tls::TestPki;

use crate::Nginx;
use crate::proxy::{beside_curl, beside_curl_exiting};
use crate::report::Row;

/// The files the stapling listeners read, written into nginx's directory: the server's chain
/// (its certificate, then the CA's, from which OpenSSL computes the response's certificate ID)
/// and a good and a revoked response.
pub(crate) fn write_staples(pki: &TestPki, dir: &Path) -> Result<(), String> {
    let write = |file: &str, bytes: Vec<u8>| {
        std::fs::write(dir.join(file), bytes).map_err(|e| format!("write {file}: {e}"))
    };
    write(
        "chain.pem",
        format!("{}{}", pki.server_cert_pem(), pki.ca_pem()).into_bytes(),
    )?;
    write("ocsp-good.der", Staple::new(Status::Good).response(pki))?;
    write(
        "ocsp-revoked.der",
        Staple::new(Status::Revoked).response(pki),
    )
}

/// The stapling listeners' `server` blocks, for ports `good` and `revoked`.
pub(crate) fn stapling_servers(dir: &Path, (good, revoked): (u16, u16), ok: &str) -> String {
    let d = dir.display();
    let server = |port: u16, file: &str| {
        format!(
            "server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {d}/chain.pem;
        ssl_certificate_key {d}/server.key;
        ssl_stapling on;
        ssl_stapling_file {d}/{file};
        {ok}
    }}"
        )
    };
    format!(
        "{}\n    {}",
        server(good, "ocsp-good.der"),
        server(revoked, "ocsp-revoked.der")
    )
}

/// curl and poolcurl with `--cert-status` to both listeners: the same bytes and exit codes (0,
/// then 91).
pub(crate) fn nginx_stapling(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let checks = [
        "curl vs poolcurl --cert-status to nginx stapling a good status",
        "curl vs poolcurl --cert-status to nginx stapling a revoked status (91)",
    ];
    let (ports, curl) = match crate::nginx_and_curl(checks, started) {
        Ok(found) => found,
        Err(rows) => return rows,
    };
    let ca = dir.join("ca.pem").display().to_string();
    let run = |port: u16| {
        let resolve = format!("localhost:{port}:127.0.0.1");
        let url = format!("https://localhost:{port}/");
        vec![
            "-s".to_owned(),
            "--cert-status".to_owned(),
            "--cacert".to_owned(),
            ca.clone(),
            "--resolve".to_owned(),
            resolve,
            "-w".to_owned(),
            "%{http_code}\n".to_owned(),
            url,
        ]
    };
    let (good, revoked) = (run(ports[8]), run(ports[9]));
    let (good, revoked): (Vec<&str>, Vec<&str>) = (
        good.iter().map(String::as_str).collect(),
        revoked.iter().map(String::as_str).collect(),
    );
    vec![
        beside_curl(checks[0].to_string(), &curl, poolcurl, &good),
        beside_curl_exiting(checks[1].to_string(), &curl, poolcurl, &revoked, 91),
    ]
}
