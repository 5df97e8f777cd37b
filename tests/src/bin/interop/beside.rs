//! curl and poolcurl side by side on nginx's listeners: its Unix socket, its PROXY-line
//! listeners, and a listener with a self-signed certificate made as a CA; and on h2c-only
//! nghttpd: asked for HTTP/1.1 (a server that speaks first), and allowing no stream at all.

use std::path::Path;

use crate::Nginx;
use crate::process::find_binary;
use crate::proxy::{beside_curl, beside_curl_exiting};
use crate::report::Row;

/// curl and poolcurl through nginx's Unix socket listener (`--unix-socket`) with two URLs:
/// the same bytes (nginx's body, the status and `%{num_connects}`, 1 then 0 as the connection
/// is reused) and the same exit code.
pub(crate) fn nginx_unix_socket(poolcurl: &Path, started: &Nginx, dir: &Path) -> Row {
    let check = "curl vs poolcurl --unix-socket to nginx, 2 URLs".to_string();
    eprintln!("interop: {check} ...");
    if let Err(e) = started {
        return Row::broken(check, e);
    }
    let Some(curl) = find_binary("curl") else {
        return Row::skipped(format!("skipped: curl not found ({check})"), None);
    };
    let socket = dir.join("nginx.sock").display().to_string();
    let args = [
        "-s",
        "--unix-socket",
        &socket,
        "-w",
        " %{http_code} %{num_connects}",
        "http://localhost/",
        "http://localhost/",
    ];
    beside_curl(check, &curl, poolcurl, &args)
}

/// curl and poolcurl asking an h2c-only nghttpd (`url`) for HTTP/1.1, five URLs: nghttpd sends
/// its SETTINGS as soon as it accepts, before the request, and both read those bytes as the
/// response: `Received HTTP/0.9 when not allowed`, exit 1, every time (each URL a new
/// connection, whichever of the request and the bytes comes first).
pub(crate) fn nghttpd_speaking_first(poolcurl: &Path, url: &str) -> Row {
    let check = "curl vs poolcurl, HTTP/1.1 to h2c-only nghttpd (speaks first), 5 URLs".to_string();
    eprintln!("interop: {check} ...");
    let Some(curl) = find_binary("curl") else {
        return Row::skipped(format!("skipped: curl not found ({check})"), None);
    };
    let args = ["-sS", url, url, url, url, url];
    beside_curl_exiting(check, &curl, poolcurl, &args, 1)
}

/// The name of [`nghttpd_allowing_no_streams`]'s check.
pub(crate) const ALLOWING_NO_STREAMS: &str =
    "curl vs poolcurl, h2c to nghttpd allowing no streams (-m 0), 2 URLs";

/// curl and poolcurl with prior knowledge to an nghttpd that allows no stream at all
/// (`SETTINGS_MAX_CONCURRENT_STREAMS` 0), two URLs: curl retries the refused stream on new
/// connections and gives up, exit 56; poolcurl re-sends within its budget, each time on a new
/// connection, and gives up the same way, where it once waited for ever.
pub(crate) fn nghttpd_allowing_no_streams(poolcurl: &Path, url: &str) -> Row {
    let check = ALLOWING_NO_STREAMS.to_string();
    eprintln!("interop: {check} ...");
    let Some(curl) = find_binary("curl") else {
        return Row::skipped(format!("skipped: curl not found ({check})"), None);
    };
    let args = [
        "-s",
        "--http2-prior-knowledge",
        "-m",
        "20",
        "-w",
        "%{http_code}\n",
        url,
        url,
    ];
    beside_curl_exiting(check, &curl, poolcurl, &args, 56)
}

/// curl and poolcurl with `--haproxy-protocol` to nginx's `proxy_protocol` listeners, over
/// HTTP/1.1 and TLS (the line goes before the handshake): the same bytes (the address nginx
/// read from the line, the status) and the same exit code.
pub(crate) fn nginx_proxy_protocol(poolcurl: &Path, started: &Nginx, dir: &Path) -> Row {
    let check = "curl vs poolcurl --haproxy-protocol to nginx, HTTP/1.1 and TLS".to_string();
    eprintln!("interop: {check} ...");
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return Row::broken(check, e),
    };
    let Some(curl) = find_binary("curl") else {
        return Row::skipped(format!("skipped: curl not found ({check})"), None);
    };
    let ca = dir.join("ca.pem").display().to_string();
    let (http, tls) = (ports[6], ports[7]);
    let resolve = format!("localhost:{tls}:127.0.0.1");
    let (http_url, tls_url) = (
        format!("http://127.0.0.1:{http}/"),
        format!("https://localhost:{tls}/"),
    );
    let args = [
        "-s",
        "--haproxy-protocol",
        "--cacert",
        &ca,
        "--resolve",
        &resolve,
        "-w",
        "%{http_code}\n",
        &http_url,
        &tls_url,
    ];
    beside_curl(check, &curl, poolcurl, &args)
}

/// curl and poolcurl with `--cacert` naming the listener's own self-signed certificate, made as
/// a CA (`openssl req -x509`'s kind): trusted for its name (the body, the status and
/// `%{ssl_verify_result}` 0), and exit 60 for a name it does not carry.
pub(crate) fn nginx_self_signed(poolcurl: &Path, started: &Nginx, dir: &Path) -> [Row; 2] {
    let checks = [
        "curl vs poolcurl --cacert with nginx's self-signed CA certificate".to_string(),
        "curl vs poolcurl --cacert with nginx's self-signed CA certificate, another name"
            .to_string(),
    ];
    for check in &checks {
        eprintln!("interop: {check} ...");
    }
    let [trusted, other] = checks;
    let ports = match started {
        Ok((_, _, ports)) => ports,
        Err(e) => return [Row::broken(trusted, e), Row::broken(other, e)],
    };
    let Some(curl) = find_binary("curl") else {
        let skipped =
            |check: String| Row::skipped(format!("skipped: curl not found ({check})"), None);
        return [skipped(trusted), skipped(other)];
    };
    let cert = dir.join("self-signed.pem").display().to_string();
    let port = ports[12];
    let resolve = format!("localhost:{port}:127.0.0.1");
    let url = format!("https://localhost:{port}/");
    let args = [
        "-s",
        "--cacert",
        &cert,
        "--resolve",
        &resolve,
        "-w",
        "%{http_code} %{ssl_verify_result}",
        &url,
    ];
    let resolve_other = format!("other.test:{port}:127.0.0.1");
    let other_url = format!("https://other.test:{port}/");
    let other_args = [
        "-s",
        "--cacert",
        &cert,
        "--resolve",
        &resolve_other,
        &other_url,
    ];
    [
        beside_curl(trusted, &curl, poolcurl, &args),
        beside_curl_exiting(other, &curl, poolcurl, &other_args, 60),
    ]
}
