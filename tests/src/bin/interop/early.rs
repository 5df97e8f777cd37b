//! nginx refusing an upload before its body has arrived: `/small` takes at most 1 KiB
//! (`client_max_body_size 1k`), and a 1 MiB `--data-binary` upload to it is answered `413` as
//! soon as nginx has the head, while the client is still sending. A second URL follows on the
//! same command line.
//!
//! Over HTTP/1.1 (cleartext, and TLS with ALPN `http/1.1`) curl and poolcurl print the same
//! bytes: the 413, then the second URL on a new connection (nginx closes after the 413). Over
//! HTTP/2 curl 7.88 is no oracle: with h2c it exits 16 ("Error in the HTTP2 framing layer"),
//! and over TLS, tried by hand, it ran at full CPU for ten minutes until killed. So poolcurl
//! alone is checked there: the 413, then the second URL's `200` on the same connection
//! (`%{num_connects}` 0), exit 0.
//!
//! A `-T` upload asks first (`Expect: 100-continue`, curl's rule and poolcurl's): to `/small`
//! nginx answers `413` from the head and neither tool sends any of the body
//! (`%{size_upload}` 0); to `/` nginx says `100 Continue` and the body goes.
//!
//! A 32 MiB `--data-binary` upload without `Expect` (`-H 'Expect:'`) to `/small`: nginx answers
//! `413` from the head and then reads and discards what comes (its lingering close), so nothing
//! but the client itself stops the upload. poolcurl must stop it, as curl does ("HTTP error
//! before end of send"): its `%{size_upload}` under the file's size. curl's figure is printed
//! beside as a reference, not compared: it depends on when the answer arrives, which curl looks
//! for before each 64 KiB it sends and the pool every 512 KiB.
//!
//! `-T -` from a pipe goes chunked (`Transfer-Encoding: chunked`, no length): both tools send
//! 1,000 bytes (one write of `cat`, one chunk) to `/` and print nginx's `200` and the same
//! `%{size_upload}`, the chunk's framing included (1,012).

use super::*;

/// What `-w` prints after each URL.
const WRITE_OUT: &str = "%{http_code} %{http_version} %{num_connects} ";

/// What poolcurl must print over HTTP/2: the 413 (its page goes to `-o /dev/null`), then the
/// second URL's body and figures, on the connection the first opened.
const H2_EXPECTED: &str = "413 2 1 ok\n200 2 0 ";

pub(crate) fn nginx_early_answer(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let mut rows = early_answers(poolcurl, started, dir);
    rows.push(stopped_upload(poolcurl, started, dir));
    rows
}

/// The upload nginx refused part way stops (see the module docs).
fn stopped_upload(poolcurl: &Path, started: &Nginx, dir: &Path) -> Row {
    const LEN: usize = 32 << 20;
    let name = "poolcurl: nginx 413 before a 32 MiB upload ends, which stops".to_owned();
    eprintln!("interop: {name} ...");
    let port = match started {
        Ok((_, _, ports)) => ports[0],
        Err(e) => return Row::broken(name, e),
    };
    let upload = dir.join("upload-32m.bin");
    if let Err(e) = std::fs::write(&upload, vec![b'u'; LEN]) {
        return Row::broken(name, &format!("write {}: {e}", upload.display()));
    }
    let data = format!("@{}", upload.display());
    let url = format!("http://127.0.0.1:{port}/small");
    let args = [
        "-s",
        "-o",
        "/dev/null",
        "-H",
        "Expect:",
        "-w",
        "%{http_code} %{size_upload}",
        "--data-binary",
        &data,
        &url,
    ];
    let figures = |program: &Path| -> Result<(String, u64), String> {
        let run = run_cli(program, &args, &[])?;
        let printed = run.stdout.trim().to_owned();
        let sent = printed
            .split_once(' ')
            .and_then(|(_, sent)| sent.parse().ok())
            .ok_or_else(|| format!("printed {printed:?}; stderr {}", run.stderr.trim()))?;
        Ok((printed, sent))
    };
    let (printed, sent) = match figures(poolcurl) {
        Ok(figures) => figures,
        Err(e) => return Row::broken(name, &e),
    };
    let stopped = printed.starts_with("413 ") && sent < LEN as u64;
    let mut row = Row::new(name, Some(stopped));
    row.details.push(format!(
        "poolcurl printed {printed:?} (status, bytes sent of {LEN})"
    ));
    if let Some(curl) = find_binary("curl") {
        match figures(&curl) {
            Ok((printed, _)) => row.details.push(format!("curl printed {printed:?}")),
            Err(e) => row.details.push(format!("curl: {e}")),
        }
    }
    row
}

fn early_answers(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let names = announce([
        "curl vs poolcurl: nginx 413 before a 1 MiB upload ends, http1.1, 2 URLs",
        "curl vs poolcurl: nginx 413 before a 1 MiB upload ends, TLS http/1.1, 2 URLs",
        "poolcurl: nginx 413 before a 1 MiB upload ends, h2c, 2 URLs on one connection",
        "poolcurl: nginx 413 before a 1 MiB upload ends, TLS h2, 2 URLs on one connection",
        "curl vs poolcurl: -T asks for 100 Continue, nginx 413 gets no body, / gets it",
        "curl vs poolcurl: -T - from a pipe goes chunked to nginx",
    ]);
    let ports = match started {
        Ok((_, _, ports)) => *ports,
        Err(e) => return names.map(|n| Row::broken(n, e)).into(),
    };
    let upload = dir.join("upload.bin");
    if let Err(e) = std::fs::write(&upload, vec![b'u'; 1 << 20]) {
        let why = format!("write {}: {e}", upload.display());
        return names.map(|n| Row::broken(n, &why)).into();
    }
    let data = format!("@{}", upload.display());
    let ca = dir.join("ca.pem").display().to_string();
    let http = |port: u16, path: &str| format!("http://127.0.0.1:{port}{path}");
    let https = |path: &str| format!("https://localhost:{}{path}", ports[2]);
    let common = [
        "-s",
        "-o",
        "/dev/null",
        "-w",
        WRITE_OUT,
        "--data-binary",
        &data,
    ];
    let with = |extra: &[&str], urls: [String; 2]| -> Vec<String> {
        let mut args: Vec<String> = common.iter().map(|a| (*a).to_owned()).collect();
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args.extend(urls);
        args
    };
    // One `-T` upload group, for joining with `--next`.
    let uploaded = upload.display().to_string();
    let put = |url: &str| {
        let write_out = "%{http_code} %{size_upload}|";
        strings(&[
            "-s",
            "-o",
            "/dev/null",
            "-w",
            write_out,
            "-T",
            &uploaded,
            url,
        ])
    };
    let cases = [
        with(&[], [http(ports[0], "/small"), http(ports[0], "/")]),
        with(
            &["--cacert", &ca, "--http1.1"],
            [https("/small"), https("/")],
        ),
        with(
            &["--http2-prior-knowledge"],
            [http(ports[1], "/small"), http(ports[1], "/")],
        ),
        with(&["--cacert", &ca, "--http2"], [https("/small"), https("/")]),
        [put(&http(ports[0], "/small")), put(&http(ports[0], "/"))]
            .join(&["--next".to_owned()][..]),
    ];
    let piped = dir.join("piped.bin");
    if let Err(e) = std::fs::write(&piped, [b'p'; 1000]) {
        let why = format!("write {}: {e}", piped.display());
        return names.map(|n| Row::broken(n, &why)).into();
    }
    let cases = {
        let [a, b, c, d, e] = cases;
        let streamed = strings(&[
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{size_upload}",
            "-T",
            "-",
            &http(ports[0], "/"),
        ]);
        [a, b, c, d, e, streamed]
    };
    let curl = find_binary("curl");
    names
        .into_iter()
        .zip(cases)
        .enumerate()
        .map(|(index, (name, args))| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            match (index, &curl) {
                (5, Some(curl)) => piped_beside_curl(name, (curl, poolcurl), &piped, dir, &args),
                (5, None) => Row::skipped(format!("skipped: curl not found ({name})"), None),
                (0 | 1 | 4, Some(curl)) => beside_curl(name, curl, poolcurl, &args),
                (0 | 1 | 4, None) => {
                    Row::skipped(format!("skipped: curl not found ({name})"), None)
                }
                _ => expect_run(name, poolcurl, &args, 0, H2_EXPECTED, ""),
            }
        })
        .collect()
}

/// [`beside_curl`] with `input` piped to each program's stdin (through `cat`, so that stdin is
/// a pipe, not a file either tool could seek in).
fn piped_beside_curl(
    check: String,
    (curl, poolcurl): (&Path, &Path),
    input: &Path,
    dir: &Path,
    args: &[&str],
) -> Row {
    let wrap = |program: &Path, name: &str| -> Result<PathBuf, String> {
        let script = dir.join(name);
        let text = format!(
            "#!/bin/sh\ncat '{}' | exec '{}' \"$@\"\n",
            input.display(),
            program.display()
        );
        std::fs::write(&script, text).map_err(|e| format!("write {name}: {e}"))?;
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(&script, mode).map_err(|e| format!("chmod {name}: {e}"))?;
        Ok(script)
    };
    match (
        wrap(curl, "piped-curl.sh"),
        wrap(poolcurl, "piped-poolcurl.sh"),
    ) {
        (Ok(curl), Ok(ours)) => beside_curl(check, &curl, &ours, args),
        (Err(e), _) | (_, Err(e)) => Row::broken(check, &e),
    }
}
