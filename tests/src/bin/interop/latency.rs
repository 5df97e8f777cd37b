//! A large download from a server 100 ms away, beside curl.
//!
//! Over HTTP/2 one response arrives no faster than its stream's flow-control window per round
//! trip: the server sends a window's worth, then waits for the client's `WINDOW_UPDATE`. hyper's
//! 2 MiB stream window, the library's default, so caps a download from 100 ms away at
//! 20 MiB/s, where curl's 32 MiB lets the network set the pace. Loopback has no distance, so a
//! relay adds it: every byte waits 50 ms in each direction in front of nginx's listeners (a
//! 100 ms round trip; bandwidth stays loopback's, and each side's TCP sees no delay at all, so
//! only HTTP/2's own window loop feels the distance).
//!
//! * **The check:** curl and poolcurl fetch a 32 MiB file over TLS h2 through the relay; both
//!   must get all of it over HTTP/2 and exit 0, and poolcurl's transfer must take at most twice
//!   curl's time plus 0.2 s. curl mode sets curl's 32 MiB window; with the library's 2 MiB it
//!   took five times curl's time (1.98 s against 0.38 s).
//! * **A reference row:** the pool as a library with its default window fetches the same file
//!   over h2c through a relay of its own, and its time is printed (it neither passes nor fails:
//!   it measures the library's default, which stays hyper's, see `http2_initial_stream_window_size`).
//!
//! The relay runs a thread per direction of each connection: the reader stamps each chunk with
//! when it may leave, and the writer sleeps until then. That sleep is the latency being
//! emulated, not a wait for another thread. The relay's threads outlive the check until their
//! sockets close; its listener lives until the program ends.

use super::*;

use std::io::Write as _;
use std::net::Shutdown;

use http_body_util::BodyExt;

/// The file's size: sixteen of hyper's stream windows.
const HUGE: usize = 32 * 1024 * 1024;
/// The delay each direction adds: a 100 ms round trip.
const ONE_WAY: Duration = Duration::from_millis(50);
/// How much longer than curl poolcurl may take: twice curl's time plus this.
const SLACK: Duration = Duration::from_millis(200);

/// The file the checks fetch (`/huge` on nginx's h2c and TLS listeners), written into nginx's
/// directory before nginx starts.
pub(crate) fn write_huge_file(dir: &Path) -> Result<(), String> {
    std::fs::write(dir.join("huge.bin"), vec![b'h'; HUGE])
        .map_err(|e| format!("write huge.bin: {e}"))
}

pub(crate) fn nginx_far_download(poolcurl: &Path, started: &Nginx, dir: &Path) -> Vec<Row> {
    let Some(curl) = find_binary("curl") else {
        return vec![Row::skipped(
            "skipped: curl vs poolcurl from 100 ms away".into(),
            Some("the far download check needs curl"),
        )];
    };
    let [check, reference] = announce([
        "curl vs poolcurl, 32 MiB over TLS h2 from 100 ms away (a relay)",
        "the pool as a library, its default window, the same over h2c (reference)",
    ]);
    let ports = match started {
        Ok((_, _, ports)) => *ports,
        Err(e) => return vec![Row::broken(check, e), Row::broken(reference, e)],
    };
    vec![
        beside_curl_from_afar(check, &curl, poolcurl, ports[2], dir),
        library_from_afar(reference, ports[1]),
    ]
}

/// curl and poolcurl fetch `/huge` over TLS h2 through a relay in front of `tls_port`.
fn beside_curl_from_afar(
    check: String,
    curl: &Path,
    poolcurl: &Path,
    tls_port: u16,
    dir: &Path,
) -> Row {
    let relay = match relay(tls_port) {
        Ok(port) => port,
        Err(e) => return Row::broken(check, &e),
    };
    let cacert = dir.join("ca.pem").display().to_string();
    let resolve = format!("localhost:{relay}:127.0.0.1");
    let url = format!("https://localhost:{relay}/huge");
    // curl takes an option's value as the next argument only.
    let args = [
        "-s",
        "--http2",
        "--cacert",
        &cacert,
        "--resolve",
        &resolve,
        "-o",
        "/dev/null",
        "-w",
        "%{http_version} %{size_download} %{time_total}",
        &url,
    ];
    let mut problems = Vec::new();
    let mut times = Vec::new();
    for (tool, program) in [("curl", curl), ("poolcurl", poolcurl)] {
        match run_cli(program, &args, &[]).map(|run| transfer(&run)) {
            Ok(Ok(seconds)) => times.push((tool, seconds)),
            Ok(Err(e)) | Err(e) => problems.push(format!("{tool}: {e}")),
        }
    }
    if let [(_, curl), (_, ours)] = times[..] {
        let allowed = 2.0 * curl + SLACK.as_secs_f64();
        if ours > allowed {
            problems.push(format!(
                "poolcurl took {ours:.3} s, over twice curl's {curl:.3} s plus {:.1} s",
                SLACK.as_secs_f64()
            ));
        }
    }
    let mut row = Row::new(check, Some(problems.is_empty()));
    row.details = problems;
    row.details.extend(times.iter().map(|(tool, seconds)| {
        format!("{tool}: {seconds:.3} s, {:.0} MiB/s", mib(HUGE) / seconds)
    }));
    row
}

/// The seconds a `-w '%{http_version} %{size_download} %{time_total}'` run took, if it exited
/// 0 and got the whole file over HTTP/2.
fn transfer(run: &Finished) -> Result<f64, String> {
    if run.status.and_then(|s| s.code()) != Some(0) {
        return Err(format!("exited {:?}: {}", run.status, run.stderr.trim()));
    }
    match run.stdout.split_whitespace().collect::<Vec<_>>()[..] {
        ["2", size, seconds] if size == HUGE.to_string() => seconds
            .parse()
            .map_err(|e| format!("time {seconds:?}: {e}")),
        _ => Err(format!("printed {:?}", run.stdout)),
    }
}

/// The pool as a library, with its default windows, fetches `/huge` over h2c through a relay
/// in front of `h2c_port`.
fn library_from_afar(reference: String, h2c_port: u16) -> Row {
    let mut row = Row::new(reference, None);
    let outcome = relay(h2c_port).and_then(|relay| {
        block_on(async move {
            let (_pool, client) = h2c_client(|b| b)?;
            let started = Instant::now();
            let request = get(&format!("http://127.0.0.1:{relay}/huge"))?;
            let response = client
                .request(request)
                .await
                .map_err(|e| format!("request: {e}"))?;
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("body: {e}"))?
                .to_bytes();
            let seconds = started.elapsed().as_secs_f64();
            if body.len() != HUGE {
                return Err(format!("{} bytes of {HUGE}", body.len()));
            }
            Ok(seconds)
        })
    });
    row.details.push(match outcome {
        Ok(seconds) => format!(
            "the library's default window: {seconds:.3} s, {:.0} MiB/s",
            mib(HUGE) / seconds
        ),
        Err(e) => format!("the library's default window: {e}"),
    });
    row
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Starts a relay to `target` on loopback that holds every byte [`ONE_WAY`] in each
/// direction; returns its port.
fn relay(target: u16) -> Result<u16, String> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("relay: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let Ok(server) = TcpStream::connect((Ipv4Addr::LOCALHOST, target)) else {
                continue;
            };
            let (Ok(client_copy), Ok(server_copy)) = (client.try_clone(), server.try_clone())
            else {
                continue;
            };
            delay(client, server_copy);
            delay(server, client_copy);
        }
    });
    Ok(port)
}

/// Copies `from` to `to`, each chunk leaving [`ONE_WAY`] after it arrived; ends `to`'s
/// sending side when `from` ends.
fn delay(mut from: TcpStream, mut to: TcpStream) {
    let (chunks, queued) = mpsc::channel::<(Instant, Option<Vec<u8>>)>();
    thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = from.read(&mut buf).unwrap_or(0);
            let chunk = (n > 0).then(|| buf[..n].to_vec());
            let end = chunk.is_none();
            if chunks.send((Instant::now() + ONE_WAY, chunk)).is_err() || end {
                return;
            }
        }
    });
    thread::spawn(move || {
        for (at, chunk) in queued {
            thread::sleep(at.saturating_duration_since(Instant::now())); // the emulated latency
            match chunk {
                Some(bytes) if to.write_all(&bytes).is_ok() => {}
                _ => {
                    let _ = to.shutdown(Shutdown::Write);
                    return;
                }
            }
        }
    });
}
