//! Downloads from Eclipse Jetty over HTTP/2, whose rate control ends a connection with
//! `GOAWAY(ENHANCE_YOUR_CALM)` once too many stream `WINDOW_UPDATE`s arrive for streams it has
//! already closed (128 a second per connection), which h2 sends near the end of every
//! response of half a stream window or more.
//!
//! * **1 MiB downloads over h2c, `-z 4s -c 32`** of a static file: the first connection of
//!   each partition ends under its downloads (those fail: Jetty had begun them), and teaches
//!   the pool to open further connections with a 32 MiB stream window
//!   (`pool-h2/src/window.rs`), whose responses under 16 MiB send no `WINDOW_UPDATE`. Check:
//!   the run settles (a second with successes, no failure and no connection closed) and
//!   nothing fails and Jetty ends no connection after that; before it, at most `-c` failures
//!   per connection Jetty ended; every connection h2; the summary lists the origin under
//!   `larger_stream_window`. Before the pool learnt this, the same run failed 42 and 65
//!   requests with 31 and 40 connections ended, spread over the whole run: it never settles.
//!
//! Why the check counts seconds, not ended connections: Jetty does not always say why it
//! ends a connection. Its log (Jetty 9.4.57, `HTTP2Session` at debug) shows the same steps
//! each time: "Sending GoAwayFrame" with `enhance_your_calm_error`, then at once "Terminating"
//! and "Disconnecting". When its socket can take the queued frames (the client reads fast),
//! the `GOAWAY` goes out before the close and the pool learns from it; when the client
//! reads slowly (a loaded machine) and Jetty's writes are pending, the close drops what was
//! queued, and the client reads the end of the stream in the middle of a DATA frame, with no
//! `GOAWAY` at all. Traced with a byte-level frame reader under h2 (scratch build, one core
//! kept busy): 16 of the 92 connections Jetty ended over 50 runs ended so, and two runs with
//! one partition had two such ends in a row (three connections ended, which the old bound of
//! two per partition failed now and then in `cargo xtask ci`).
//! The pool cannot learn from such an end (a server that vanishes mid-frame gave no reason),
//! so a run may end two or three connections before the lesson; each fails at most the
//! `-c` requests it carried, and all of it happens in the first second or so.
//!
//! Jetty runs from Debian's `jetty9` (`jetty.home` `/usr/share/jetty9`) with a `jetty.base` of
//! its own in the temp dir: the `http`, `http2c` and `deploy` modules, and the file in the
//! root web application, served by Jetty's default servlet. Without Jetty (or Java) the check
//! is one "skip" row. `.ci/run` installs `jetty9`.

use super::*;

/// The check, in table order.
const CHECKS: [&str; 1] = ["Jetty h2c, 1 MiB GETs, -z 4s -c 32: a larger stream window"];

/// Concurrent downloads in the run.
const CONCURRENCY: u64 = 32;

/// Where Debian's `jetty9` keeps Jetty (`start.jar`, `modules/`, `lib/`).
const JETTY_HOME: &str = "/usr/share/jetty9";

/// The size of the file downloaded: a response this long sends a stream `WINDOW_UPDATE` near
/// its end under hyper's 2 MiB window, and none under the learnt one.
const FILE_SIZE: usize = 1 << 20;

/// The Jetty check.
pub(crate) fn jetty_checks(poolcurl: &Path, dir: &Path) -> Vec<Row> {
    let start_jar = Path::new(JETTY_HOME).join("start.jar");
    if !start_jar.is_file() || find_binary("java").is_none() {
        return vec![Row::skipped(
            "skipped: Jetty".into(),
            Some("the Jetty check needs Debian's jetty9 and java"),
        )];
    }
    let [name] = announce(CHECKS);
    let (_server, port) = match start_jetty(&start_jar, dir) {
        Ok(started) => started,
        Err(e) => return vec![Row::broken(name, &e)],
    };
    let url = format!("http://127.0.0.1:{port}/big.bin");
    let c = CONCURRENCY.to_string();
    let args = strings(&["-z", "4s", "-c", &c, "--http2-prior-knowledge", &url]);
    let run = Running::spawn(poolcurl, &args).map(Running::finish);
    let learnt = move |json: &Value| lesson_problems(json, port);
    vec![Row::judge_lesson(name, run, "h2", CONCURRENCY, &learnt)]
}

/// What the run's summary says against the lesson: it must list the Jetty on `port` under
/// `larger_stream_window`, and Jetty must have ended no connection after the run settled
/// ([`settled_second`]; the failures are judged by `judge_lesson`).
fn lesson_problems(json: &Value, port: u16) -> Vec<String> {
    let mut problems: Vec<String> = unlisted_lesson(json, "larger_stream_window", port)
        .into_iter()
        .collect();
    let seconds = json["timeline"].as_array().cloned().unwrap_or_default();
    if let Some(settled) = settled_second(&seconds) {
        let late: u64 = seconds[settled..]
            .iter()
            .map(|s| count(s, "connections_closed"))
            .sum();
        if late > 0 {
            problems.push(format!(
                "Jetty ended {late} connections after the run settled in second {}",
                settled + 1
            ));
        }
    }
    problems
}

/// Writes the `jetty.base` into `dir`, starts Jetty on a free port and waits until it
/// listens.
fn start_jetty(start_jar: &Path, dir: &Path) -> Result<(Server, u16), String> {
    let [port] = free_ports::<1>()?;
    for sub in ["start.d", "webapps/ROOT"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
    }
    let ini = format!(
        "--module=server,http,http2c,deploy\njetty.http.host=127.0.0.1\njetty.http.port={port}\n"
    );
    let write = |path: PathBuf, bytes: &[u8]| {
        std::fs::write(&path, bytes).map_err(|e| format!("write {}: {e}", path.display()))
    };
    write(dir.join("start.d/base.ini"), ini.as_bytes())?;
    write(dir.join("webapps/ROOT/big.bin"), &vec![b'x'; FILE_SIZE])?;
    let mut cmd = Command::new("java");
    cmd.arg("-jar")
        .arg(start_jar)
        .arg(format!("jetty.home={JETTY_HOME}"))
        .arg(format!("jetty.base={}", dir.display()))
        .current_dir(dir);
    let log = dir.join("jetty.log");
    let mut server = Server::start("jetty", cmd, log.clone(), &log)?;
    // `start.jar` runs Jetty in its own JVM (no `--exec`): a SIGTERM stops it cleanly.
    server.stop_with_sigterm();
    server.wait_ready(&[port])?;
    Ok((server, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jetty_may_end_connections_only_before_the_run_settles() {
        let port = 8080;
        let json = |late_close: u64| {
            json!({
                "connections": {"larger_stream_window": ["http://127.0.0.1:8080"]},
                "timeline": [
                    {"window_s": 1.0, "successes": 900, "failures": 31, "connections_closed": 3},
                    {"window_s": 1.0, "successes": 2000, "failures": 0, "connections_closed": 0},
                    {"window_s": 1.0, "successes": 2000, "failures": 0,
                        "connections_closed": late_close},
                ],
            })
        };
        assert!(lesson_problems(&json(0), port).is_empty());
        let problems = lesson_problems(&json(1), port);
        assert_eq!(
            problems,
            ["Jetty ended 1 connections after the run settled in second 2"]
        );
        let unlisted = lesson_problems(&json(0), 9090);
        assert_eq!(unlisted.len(), 1, "{unlisted:?}");
    }
}
