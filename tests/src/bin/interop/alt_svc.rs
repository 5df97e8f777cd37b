//! nginx naming an alternative service (`add_header Alt-Svc`) over TLS h2, beside curl:
//! `--alt-svc` with a redirect that goes to the alternative in the same transfer, and each tool
//! reading the cache file the other wrote (entries learned over h2). One nginx `server` listens on two TLS ports, the origin's and the
//! alternative's, and answers with the port that took the request and the `Alt-Used` it
//! carried, so the output says where each request went.

use std::path::Path;

use crate::Nginx;
use crate::proxy::{beside_curl, run_cli};
use crate::report::Row;

/// The `server` block: `origin` and `alternative` listen for it over TLS with ALPN h2 (`h2`:
/// the `listen` parameter and the `server` directive that turn it on, by nginx's version), every
/// response names `alternative` in `Alt-Svc`, `/start` redirects to `/end`, anything else
/// answers `PORT ALT-USED`.
pub(crate) fn alt_svc_server(
    dir: &Path,
    (origin, alternative): (u16, u16),
    (listen_h2, h2_on): (&str, &str),
) -> String {
    let d = dir.display();
    format!(
        "server {{
        listen 127.0.0.1:{origin} ssl{listen_h2};
        listen 127.0.0.1:{alternative} ssl{listen_h2}; {h2_on}
        ssl_certificate {d}/server.pem;
        ssl_certificate_key {d}/server.key;
        add_header Alt-Svc 'h2=\"127.0.0.1:{alternative}\"; ma=600' always;
        location = /start {{ return 302 /end; }}
        location / {{ return 200 \"$server_port $http_alt_used\\n\"; }}
    }}"
    )
}

/// The checks: a redirect to the alternative, beside curl (`--alt-svc ""`: the transfer's own
/// cache); then poolcurl following a file curl wrote, and curl one poolcurl wrote.
pub(crate) fn nginx_alt_svc(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let checks = [
        "curl vs poolcurl --alt-svc to nginx, a redirect to the alternative",
        "poolcurl --alt-svc follows the file curl wrote, and curl the file poolcurl wrote",
    ];
    let (ports, curl) = match crate::nginx_and_curl(checks, started) {
        Ok(found) => found,
        Err(rows) => return rows,
    };
    let (origin, alternative) = (ports[10], ports[11]);
    let ca = dir.join("ca.pem").display().to_string();
    let start = format!("https://localhost:{origin}/start");
    let end = format!("https://localhost:{origin}/end");
    let redirect = [
        "-s",
        "--cacert",
        &ca,
        "--alt-svc",
        "",
        "-L",
        "-w",
        "%{http_version} %{num_connects}\n",
        &start,
    ];
    let mut rows = vec![beside_curl(
        checks[0].to_string(),
        &curl,
        poolcurl,
        &redirect,
    )];
    let want = format!("{alternative} 127.0.0.1:{alternative}\n");
    let entry = format!("h2 localhost {origin} h2 127.0.0.1 {alternative} \"");
    rows.push(each_reads_the_other(
        checks[1].to_string(),
        (&curl, poolcurl),
        (&start, &end),
        (&ca, dir),
        (&entry, &want),
    ));
    rows
}

/// Each tool learns the alternative from `start` into a file of its own, whose one entry must
/// start with `entry` (learned over h2, in curl's format); the other then reads that file and
/// asks for `end`, which must answer `want` (the alternative's port and the `Alt-Used` it was
/// sent).
fn each_reads_the_other(
    check: String,
    (curl, poolcurl): (&Path, &Path),
    (start, end): (&str, &str),
    (ca, dir): (&str, &Path),
    (entry, want): (&str, &str),
) -> Row {
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (writer, reader, file) in [
        (curl, poolcurl, "alt-svc-by-curl.txt"),
        (poolcurl, curl, "alt-svc-by-poolcurl.txt"),
    ] {
        let file = dir.join(file).display().to_string();
        let learn = [
            "-s",
            "--cacert",
            ca,
            "--alt-svc",
            &file,
            "-o",
            "/dev/null",
            start,
        ];
        let follow = ["-s", "--cacert", ca, "--alt-svc", &file, end];
        let runs =
            run_cli(writer, &learn, &[]).and_then(|w| Ok((w, run_cli(reader, &follow, &[])?)));
        let (wrote, read) = match runs {
            Ok(runs) => runs,
            Err(e) => return Row::broken(check, &e),
        };
        let name = |p: &Path| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into())
        };
        let (writer, reader) = (name(writer), name(reader));
        if wrote.status.and_then(|s| s.code()) != Some(0) {
            problems.push(format!(
                "{writer} writing {file} failed: {}",
                wrote.stderr.trim()
            ));
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let entries: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        if entries.len() != 1 || !entries[0].starts_with(entry) {
            problems.push(format!(
                "{writer}'s file holds {entries:?}, not one entry starting {entry:?}"
            ));
        }
        if read.stdout != want {
            problems.push(format!(
                "{reader} reading {writer}'s file printed {:?}, not {want:?} (stderr: {})",
                read.stdout,
                read.stderr.trim()
            ));
        }
        seen.push(format!("{reader} after {writer}: {:?}", read.stdout));
    }
    let mut row = Row::new(check, Some(problems.is_empty()));
    row.details = if problems.is_empty() { seen } else { problems };
    row
}
