//! `poolcurl load` and `poolcurl serve` end to end: the built binary against its own local
//! origin and against scripted loopback servers, with the JSON summary parsed.
//!
//! Scripted servers run on the test's multi-thread runtime while the child process runs; every
//! child is bounded by a timeout. Waiting is on conditions (a server counter reaching a value,
//! a line appearing on the child's stdout), never on sleeps. Volumes are small: the point is
//! the accounting, not the throughput.

mod common;

use std::process::Stdio;
use std::time::Duration;

use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::h2::{ScriptedH2Server, StreamPlan};
use pool_tests::tls::{TempDir, TestPki};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Upper bound for one poolcurl run.
const LIMIT: Duration = Duration::from_secs(60);

/// What one run of the binary produced.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }

    fn assert_no_panic(&self) {
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
    }
}

async fn poolcurl(args: &[&str]) -> Run {
    let child = common::poolcurl_command().args(args).output();
    let out = tokio::time::timeout(LIMIT, child)
        .await
        .expect("poolcurl finished in time")
        .expect("poolcurl ran");
    let run = Run {
        code: out.status.code().expect("poolcurl exited normally"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    run.assert_no_panic();
    run
}

/// `poolcurl load ARGS --output-format json --no-progress`.
async fn load_json(args: &[&str]) -> (Run, Value) {
    let mut argv = vec!["load", "--output-format", "json", "--no-progress"];
    argv.extend_from_slice(args);
    let run = poolcurl(&argv).await;
    let json = run.json();
    (run, json)
}

fn u(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{value} is a count"))
}

fn f(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{value} is a number"))
}

/// Checks what every summary must satisfy, whatever the run.
fn assert_consistent(json: &Value) {
    assert_eq!(json["schema"], "poolcurl.load/1");
    let requests = u(&json["requests"]);
    assert_eq!(u(&json["successes"]) + u(&json["failures"]), requests);
    let errors: u64 = json["errors"].as_object().unwrap().values().map(u).sum();
    assert_eq!(errors, u(&json["failures"]), "every failure has a class");
    for class in [
        "resolve",
        "connect",
        "tls",
        "timeout",
        "saturated",
        "reset",
        "goaway",
        "malformed",
        "io",
        "canceled",
    ] {
        assert!(json["errors"][class].is_u64(), "errors.{class} is present");
    }
    for key in ["latency_ms", "ttfb_ms"] {
        let p = |name: &str| f(&json[key][name]);
        assert!(p("p50") <= p("p90"), "{key}: {}", json[key]);
        assert!(p("p90") <= p("p99"), "{key}: {}", json[key]);
        assert!(p("p99") <= p("p999"), "{key}: {}", json[key]);
        assert!(p("p999") <= p("p9999"), "{key}: {}", json[key]);
        assert!(p("p9999") <= p("max"), "{key}: {}", json[key]);
    }
    assert!(u(&json["latency_ms"]["samples"]) <= requests);
    let timeline = json["timeline"].as_array().unwrap();
    let per_second: u64 = timeline.iter().map(|s| u(&s["requests"])).sum();
    assert_eq!(per_second, requests, "every request ended in one second");
    let failed: u64 = timeline.iter().map(|s| u(&s["failures"])).sum();
    assert_eq!(failed, u(&json["failures"]));
    let origins = json["origins"].as_array().unwrap();
    let by_origin: u64 = origins.iter().map(|o| u(&o["requests"])).sum();
    assert_eq!(by_origin, requests, "every request has an origin");
    assert!(f(&json["ttfb_ms"]["p50"]) <= f(&json["latency_ms"]["p50"]));
    let connections = &json["connections"];
    assert_eq!(
        u(&connections["opened"]),
        u(&connections["h1"]) + u(&connections["h2"])
    );
    let closed: u64 = connections["closed"]
        .as_object()
        .unwrap()
        .values()
        .map(u)
        .sum();
    assert_eq!(closed, u(&connections["closed_total"]));
    // The run's connection events are in its seconds; the warm-up's (opened before the
    // clock started) in none.
    let warmed = json["warmup"]["connections"].as_u64().unwrap_or(0);
    let opened_by_second: u64 = timeline.iter().map(|s| u(&s["connections_opened"])).sum();
    assert_eq!(opened_by_second + warmed, u(&connections["opened"]));
    let closed_by_second: u64 = timeline.iter().map(|s| u(&s["connections_closed"])).sum();
    assert_eq!(
        closed_by_second, closed,
        "no warm-up connection failed in these runs"
    );
    assert!(f(&json["permit_wait_ms"]["p50"]) <= f(&json["permit_wait_ms"]["p99"]));
    let partitions = json["partitions"].as_array().unwrap();
    assert_eq!(partitions.len() as u64, u(&json["config"]["partitions"]));
    let by_partition: u64 = partitions.iter().map(|p| u(&p["requests"])).sum();
    assert_eq!(by_partition, requests);
    let opened: u64 = partitions.iter().map(|p| u(&p["connections_opened"])).sum();
    assert_eq!(opened, u(&connections["opened"]));
    let seconds = f(&json["duration_s"]);
    if requests > 0 && seconds > 0.0 {
        let implied = f(&json["rps"]) * seconds;
        let drift = (implied - requests as f64).abs() / requests as f64;
        assert!(
            drift < 0.1,
            "rps × duration = {implied}, requests = {requests}"
        );
    }
}

/// Waits (bounded) for a scripted server's accept count to reach `n`: a connection the pool
/// opened but never used may still sit in the listen queue when the run ends.
macro_rules! wait_accepted {
    ($server:expr, $n:expr) => {
        tokio::time::timeout(LIMIT, $server.wait_for_accepted($n as usize))
            .await
            .expect("the server accepted every connection the pool opened")
    };
}

/// The README's must-show command: `-c 64` bounds requests in flight, and the pool opens at
/// most one connection per request in flight (a request served by a returning connection
/// leaves its establishment to the next miss), so at most 64 connections, with no bound set.
#[tokio::test(flavor = "multi_thread")]
async fn the_local_must_show_run_opens_at_most_c_connections() {
    let (run, json) = load_json(&["--local", "-n", "20000", "-c", "64", "--partitions", "2"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["requests"]), 20000);
    assert_eq!(u(&json["successes"]), 20000);
    assert_eq!(u(&json["failures"]), 0);
    assert_eq!(u(&json["aborted"]), 0);
    assert_eq!(u(&json["status"]["200"]), 20000);
    let connections = &json["connections"];
    let opened = u(&connections["opened"]);
    let used = u(&connections["used"]);
    assert!((1..=64).contains(&opened), "{connections}");
    assert!(used >= 1 && used <= opened, "{connections}");
    // A response was either its connection's first or a reuse.
    assert_eq!(
        u(&connections["reused_requests"]) + used,
        20000,
        "{connections}"
    );
    assert_eq!(
        u(&connections["open_at_end"]) + u(&connections["closed_total"]),
        opened,
        "{connections}"
    );
    assert!(u(&connections["peak_open"]) <= opened, "{connections}");
    assert_eq!(json["partitions"].as_array().unwrap().len(), 2);
    assert_eq!(json["config"]["local"], true);
    assert!(
        json["local_origin"]["origin"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bounded_local_run_stays_within_its_bound() {
    let (run, json) = load_json(&[
        "--local",
        "-n",
        "2000",
        "-c",
        "64",
        "--partitions",
        "2",
        "--max-connections-per-host",
        "8",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["successes"]), 2000);
    let connections = &json["connections"];
    assert!(
        u(&connections["opened"]) <= 8 + u(&connections["closed_total"]),
        "{connections}"
    );
    assert!(u(&connections["peak_admitted"]) <= 8, "{connections}");
    assert!(u(&connections["open_at_end"]) <= 8, "{connections}");
}

#[tokio::test(flavor = "multi_thread")]
async fn h1_connections_opened_equal_the_servers_accepts() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hello"))).await;
    let url = server.url("/");
    let (run, json) = load_json(&[&url, "-n", "600", "-c", "16", "--partitions", "2"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    let opened = u(&json["connections"]["opened"]);
    wait_accepted!(server, opened);
    assert_eq!(server.accepted() as u64, opened);
    assert_eq!(u(&json["connections"]["h1"]), opened);
    assert_eq!(u(&json["connections"]["h2"]), 0);
    assert_eq!(u(&json["bytes"]), 600 * 5);
    assert!(server.errors().is_empty(), "{:?}", server.errors());
}

/// `load --unix-socket`: the run goes through the path, each connection one the socket
/// accepted.
#[tokio::test(flavor = "multi_thread")]
async fn a_load_through_a_unix_socket_opens_its_connections_there() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hello"))).await;
    let bridge = pool_tests::unix::UnixBridge::start(server.addr()).await;
    let path = bridge.path().to_string_lossy().into_owned();
    let args = [
        "--unix-socket",
        &path,
        "http://daemon.test/",
        "-n",
        "200",
        "-c",
        "4",
    ];
    let (run, json) = load_json(&args).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    let opened = u(&json["connections"]["opened"]);
    assert!((1..=4).contains(&opened), "{opened}");
    assert_eq!(bridge.accepted() as u64, opened);
    assert_eq!(u(&json["bytes"]), 200 * 5);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.host() == Some("daemon.test"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn h2c_connections_opened_equal_the_servers_accepts() {
    let server = ScriptedH2Server::start_with(StreamPlan::ok("hello")).await;
    let url = server.url("/");
    let (run, json) = load_json(&[
        &url,
        "--http2-prior-knowledge",
        "-n",
        "600",
        "-c",
        "16",
        "--partitions",
        "2",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    let opened = u(&json["connections"]["opened"]);
    wait_accepted!(server, opened);
    assert_eq!(server.accepted() as u64, opened);
    assert_eq!(u(&json["connections"]["h2"]), opened);
    assert_eq!(u(&json["connections"]["h1"]), 0);
    assert!(
        opened <= 2,
        "one HTTP/2 connection per partition, got {opened}"
    );
    assert_eq!(json["config"]["protocol"], "http2-prior-knowledge");
}

/// `--http2-stream-window` is the window each connection announces in its SETTINGS (read
/// from h2's own log of the frame, `POOLCURL_LOG=h2=debug`); without it, hyper's 2 MiB.
#[tokio::test(flavor = "multi_thread")]
async fn the_stream_window_flag_goes_into_the_settings() {
    let server = ScriptedH2Server::start_with(StreamPlan::ok("hello")).await;
    let url = server.url("/");
    for (flag, announced) in [
        (
            &["--http2-stream-window", "1M"][..],
            "initial_window_size: 1048576",
        ),
        (&[], "initial_window_size: 2097152"),
    ] {
        let mut command = common::poolcurl_command();
        command
            .args([
                "load",
                "--no-progress",
                "--http2-prior-knowledge",
                "-n",
                "4",
            ])
            .args(["-c", "2", "--partitions", "1", &url])
            .args(flag)
            .env("POOLCURL_LOG", "h2=debug");
        let out = tokio::time::timeout(LIMIT, command.output())
            .await
            .expect("poolcurl finished in time")
            .expect("poolcurl ran");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let settings: Vec<&str> = stderr
            .lines()
            .filter(|line| line.contains("send frame=Settings { flags: (0x0)"))
            .collect();
        assert_eq!(settings.len(), 1, "one connection: {stderr}");
        assert!(settings[0].contains(announced), "{flag:?}: {}", settings[0]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_alpn_connections_opened_equal_the_servers_accepts() {
    let pki = TestPki::new();
    let dir = TempDir::new("load-tls");
    let ca = pki.write_ca_pem(dir.path()).unwrap();
    let server = ScriptedH2Server::builder()
        .tls(pki.server_config(&[b"h2", b"http/1.1"]))
        .default_stream(StreamPlan::ok("hello"))
        .start()
        .await;
    let url = server.url("/");
    let (run, json) = load_json(&[
        &url,
        "--cacert",
        ca.to_str().unwrap(),
        "-n",
        "600",
        "-c",
        "32",
        "--partitions",
        "1",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    let opened = u(&json["connections"]["opened"]);
    wait_accepted!(server, opened);
    assert_eq!(server.accepted() as u64, opened);
    assert_eq!(server.tls_handshakes() as u64, opened);
    assert_eq!(u(&json["connections"]["h2"]), opened, "ALPN chose h2");
    assert_eq!(opened, 1, "a cold burst of 32 costs one TLS handshake");
    assert_eq!(u(&json["connections"]["redundant_handshakes"]), 0);
}

/// `-H 'Connection: close'` loads establishment: every request opens a connection of its own
/// (the README's answer to oha's `--disable-keepalive`).
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_close_header_opens_a_connection_per_request() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hi"))).await;
    let url = server.url("/");
    let (run, json) = load_json(&[&url, "-n", "40", "-c", "4", "-H", "Connection: close"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["successes"]), 40);
    assert_eq!(
        u(&json["connections"]["opened"]),
        40,
        "{}",
        json["connections"]
    );
    assert_eq!(u(&json["connections"]["reused_requests"]), 0);
    let opened: u64 = json["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["connections_opened"]))
        .sum();
    assert_eq!(
        opened, 40,
        "the timeline has every connection the run opened"
    );
    wait_accepted!(server, 40);
    assert_eq!(server.accepted(), 40);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bounded_origin_never_exceeds_its_connections() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hi"))).await;
    let url = server.url("/");
    let (run, json) = load_json(&[
        &url,
        "--max-connections-per-host",
        "4",
        "-c",
        "32",
        "-n",
        "400",
        // One partition: with more, placement may close a connection to move its permit.
        "--partitions",
        "1",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert!(
        server.max_open() <= 4,
        "server saw {} open",
        server.max_open()
    );
    let connections = &json["connections"];
    assert!(u(&connections["opened"]) <= 4, "{connections}");
    assert_eq!(u(&connections["closed_total"]), 0, "{connections}");
    assert!(u(&connections["peak_admitted"]) <= 4, "{connections}");
    assert_eq!(json["config"]["bound"]["max_connections_per_host"], 4);
    let waited = u(&json["permit_wait_ms"]["waited"]);
    assert!(
        waited > 4,
        "32 requests in flight over 4 connections wait: {waited}"
    );
    assert!(f(&json["permit_wait_ms"]["p99"]) > 0.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_pending_queue_fails_requests_as_saturated() {
    let (run, json) = load_json(&[
        "--local",
        "/delay/50",
        "--max-connections-per-host",
        "1",
        "--max-pending-per-host",
        "2",
        "-c",
        "32",
        "-n",
        "200",
    ])
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["requests"]), 200);
    assert!(u(&json["errors"]["saturated"]) > 0, "{}", json["errors"]);
    assert!(u(&json["successes"]) > 0);
    let connections = &json["connections"];
    assert_eq!(u(&connections["opened"]), 1, "{connections}");
    assert_eq!(u(&connections["closed_total"]), 0, "{connections}");
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_close_opens_a_connection_per_request() {
    let (run, json) = load_json(&["--local", "/close", "-n", "100", "-c", "4"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    let connections = &json["connections"];
    // No connection comes back, so every request is served by the establishment it launched.
    assert_eq!(u(&connections["opened"]), 100, "{connections}");
    assert_eq!(u(&connections["used"]), 100, "{connections}");
    // Every connection closed by protocol after its one response; none is left open.
    assert_eq!(
        u(&connections["closed"]["protocol_closed"]),
        100,
        "{connections}"
    );
    assert_eq!(u(&connections["open_at_end"]), 0, "{connections}");
    assert_eq!(u(&connections["reused_requests"]), 0);
    assert_eq!(u(&connections["requests_per_connection"]["max"]), 1);
    assert_eq!(u(&json["local_origin"]["accepted"]), 100);
}

/// `--max-idle-per-host 0`, and `--max-idle-connections 0` (the pool-wide cap, the same with
/// one origin): a connection nobody waits for when it comes back closes (`idle_limit`), so the
/// run opens more than `-c` connections and ends with none idle; the setting is in the
/// summary's config, and the other one is not.
#[tokio::test(flavor = "multi_thread")]
async fn idle_caps_close_connections_nobody_waits_for() {
    for (flag, field, other) in [
        (
            "--max-idle-per-host",
            "max_idle_per_host",
            "max_idle_connections",
        ),
        (
            "--max-idle-connections",
            "max_idle_connections",
            "max_idle_per_host",
        ),
    ] {
        let args = ["--local", "/", "-n", "200", "-c", "4", flag, "0"];
        let (run, json) = load_json(&args).await;
        assert_eq!(run.code, 0, "{flag}: {}", run.stderr);
        assert_consistent(&json);
        assert_eq!(json["config"][field], 0);
        assert_eq!(json["config"][other], Value::Null);
        let connections = &json["connections"];
        let limited = u(&connections["closed"]["idle_limit"]);
        assert!(limited >= 1, "{flag}: {connections}");
        assert!(u(&connections["opened"]) > 4, "{flag}: {connections}");
        assert_eq!(
            u(&connections["opened"]),
            u(&connections["closed_total"]),
            "{flag}: {connections}"
        );
        assert_eq!(
            u(&json["local_origin"]["accepted"]),
            u(&connections["opened"])
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_requests_at_the_deadline_finish_and_count() {
    let (run, json) = load_json(&["--local", "/delay/200", "-z", "300ms", "-c", "4"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert!(u(&json["requests"]) >= 4, "{}", json["requests"]);
    assert_eq!(u(&json["failures"]), 0);
    assert_eq!(u(&json["aborted"]), 0);
    // Every request started before the deadline ended after 200 ms, so the run outlived it.
    assert!(f(&json["duration_s"]) >= 0.3, "{}", json["duration_s"]);
    assert_eq!(json["config"]["z_s"], 0.3);
    assert!(json["config"]["n"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn max_time_turns_slow_requests_into_timeouts() {
    let (run, json) =
        load_json(&["--local", "/delay/5000", "-m", "0.2", "-n", "4", "-c", "2"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["errors"]["timeout"]), 4, "{}", json["errors"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn open_loop_follows_the_schedule() {
    let (run, json) = load_json(&["--local", "--rate", "200", "-n", "50", "-c", "4"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["requests"]), 50);
    assert_eq!(json["schedule"]["mode"], "open");
    assert_eq!(u(&json["schedule"]["slots"]), 50);
    assert_eq!(u(&json["schedule"]["unsent"]), 0);
    // The last slot is due 49 / 200 s after the start.
    assert!(f(&json["duration_s"]) >= 0.245, "{}", json["duration_s"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_url_is_a_summary_of_connect_errors() {
    // A port nothing listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let (run, json) = load_json(&[&url, "-n", "50", "-c", "4"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["requests"]), 50);
    assert_eq!(u(&json["errors"]["connect"]), 50, "{}", json["errors"]);
    assert_eq!(u(&json["connections"]["opened"]), 0);
    assert!(
        json["error_examples"]["connect"]
            .as_str()
            .unwrap()
            .contains("refused")
    );
    // No success: no latency was measured, and the text says so instead of printing zeros.
    assert_eq!(u(&json["latency_ms"]["samples"]), 0);
    assert_eq!(f(&json["success_rps"]), 0.0);
    let (text, code) = poolcurl_text(&[&url, "-n", "50", "-c", "4"]).await;
    assert_eq!(code, 1);
    assert!(
        text.contains("Requests/sec          none: no request succeeded"),
        "{text}"
    );
    assert!(
        text.contains("none measured: no request received a complete response"),
        "{text}"
    );
    // Each request waited for a connection that never came; the wait line does not claim
    // that none waited, as it did when it counted only the answered requests' waits.
    assert!(
        text.contains(
            "Waited                no request that got a response waited (50 failed before one"
        ),
        "{text}"
    );
}

/// A server whose replies break HTTP/1 (a header line without a colon): every request fails as
/// `malformed`, on a connection of its own (each failure closes one), none is sent again, and
/// the example says what was wrong.
#[tokio::test(flavor = "multi_thread")]
async fn replies_that_break_http1_are_malformed_failures() {
    let reply = Reply::raw(&b"HTTP/1.1 200 OK\r\nno colon\r\nContent-Length: 2\r\n\r\nok"[..]);
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(reply)).await;
    let (run, json) = load_json(&[&server.url("/"), "-n", "20", "-c", "2"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["errors"]["malformed"]), 20, "{}", json["errors"]);
    assert_eq!(u(&json["errors"]["io"]), 0, "{}", json["errors"]);
    assert_eq!(u(&json["connections"]["opened"]), 20);
    let example = json["error_examples"]["malformed"].as_str().unwrap();
    assert!(example.contains("invalid HTTP header"), "{example}");
}

/// `--urls-file` adds URLs; requests go round-robin over them, and the summary counts each
/// origin's requests and connections (which its server accepted).
#[tokio::test(flavor = "multi_thread")]
async fn a_urls_file_spreads_requests_over_its_origins() {
    let a = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("a"))).await;
    let b = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("bb"))).await;
    let dir = TempDir::new("urls-file");
    let file = dir.path().join("urls.txt");
    std::fs::write(
        &file,
        format!("# two origins\n{}\n\n{}\n", b.url("/1"), b.url("/2")),
    )
    .unwrap();
    let file = file.display().to_string();
    let (run, json) = load_json(&[
        &a.url("/"),
        "--urls-file",
        &file,
        "-n",
        "300",
        "-c",
        "6",
        "--partitions",
        "2",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(json["config"]["urls"].as_array().unwrap().len(), 3);
    let origins = json["origins"].as_array().unwrap();
    assert_eq!(origins.len(), 2, "{origins:?}");
    assert_eq!(origins[0]["origin"], a.url("").trim_end_matches('/'));
    // Round-robin over [a, b, b]: each worker cycles through the list, so a gets a third of
    // every worker's requests, give or take one per worker (6).
    let to_a = u(&origins[0]["requests"]);
    assert!(to_a.abs_diff(100) <= 6, "{origins:?}");
    assert_eq!(to_a + u(&origins[1]["requests"]), 300);
    assert_eq!(u(&json["bytes"]), to_a + (300 - to_a) * 2);
    for (origin, server) in origins.iter().zip([&a, &b]) {
        let opened = u(&origin["connections_opened"]);
        wait_accepted!(server, opened);
        assert_eq!(server.accepted() as u64, opened, "{origin}");
    }
    let (text, code) = poolcurl_text(&[&a.url("/"), "--urls-file", &file, "-n", "30"]).await;
    assert_eq!(code, 0);
    assert!(
        text.contains("(+2 more, round-robin)") && text.contains("Origins"),
        "{text}"
    );
    let missing = poolcurl(&["load", "--urls-file", "/nonexistent/urls.txt"]).await;
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(missing.stderr.contains("--urls-file"), "{}", missing.stderr);
}

/// An open-loop ramp raises the rate linearly: `--rate 200 --ramp 2s -z 2s` schedules 200
/// requests (half the rate on average), a quarter of them in the first second.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_loop_ramp_starts_slowly() {
    let (run, json) = load_json(&[
        "--local", "--rate", "200", "--ramp", "2s", "-z", "2s", "-c", "16",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(f(&json["config"]["ramp_s"]), 2.0);
    assert_eq!(u(&json["schedule"]["slots"]), 200);
    assert_eq!(u(&json["requests"]), 200);
    let timeline = json["timeline"].as_array().unwrap();
    let first = u(&timeline[0]["requests"]);
    let second = u(&timeline[1]["requests"]);
    // 50 slots are due in the first second and 150 in the next (a flat 200/s would be 200
    // each): no request can end before it is due, and a few may end a second late.
    assert!((30..=50).contains(&first), "{timeline:?}");
    assert!(second >= 120 && first < second, "{timeline:?}");
}

/// `--output-format csv` prints the time series alone: a header and one row per second.
#[tokio::test(flavor = "multi_thread")]
async fn csv_prints_the_run_second_by_second() {
    let run = poolcurl(&[
        "load",
        "--local",
        "-n",
        "300",
        "-c",
        "4",
        "--no-progress",
        "--output-format",
        "csv",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut lines = run.stdout.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("t_s,window_s,requests,successes,failures,rps"),
        "{header}"
    );
    let columns = header.split(',').count();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty(), "{}", run.stdout);
    assert!(rows.iter().all(|r| r.len() == columns), "{}", run.stdout);
    let requests: u64 = rows.iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    assert_eq!(requests, 300);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_flags_exit_2_with_clap_messages() {
    for argv in [
        &["load", "-n", "10x", "http://127.0.0.1:1/"][..],
        &["load", "--bogus", "http://127.0.0.1:1/"],
        &["load", "-c", "0", "http://127.0.0.1:1/"],
        &["load", "-n", "5", "-z", "1s", "http://127.0.0.1:1/"],
        &["load", "--max-pending-per-host", "2", "http://127.0.0.1:1/"],
        &["load", "--reuse-scope", "galaxy", "http://127.0.0.1:1/"],
        &["load", "--http2-stream-window", "2G", "http://127.0.0.1:1/"],
        &["load", "--http2-stream-window", "0", "http://127.0.0.1:1/"],
        &["load"],
        &["load", "--local", "http://127.0.0.1:1/"],
        &["load", "/bytes/10"],
    ] {
        let run = poolcurl(argv).await;
        assert_eq!(run.code, 2, "{argv:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("error: "),
            "{argv:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{argv:?}: {}", run.stdout);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_file_that_does_not_open_stops_the_run_before_its_first_request() {
    let run = poolcurl(&[
        "load",
        "-n",
        "1",
        "-d",
        "@/nonexistent/body",
        "http://127.0.0.1:1/",
    ])
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("option -d: error encountered when reading a file"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn text_and_json_report_the_same_numbers() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hello"))).await;
    let url = server.url("/");
    // One worker: 300 requests over exactly one connection, in either format.
    let args = [url.as_str(), "-n", "300", "-c", "1", "--no-progress"];
    let (_, json) = load_json(&args[..args.len() - 1]).await;
    let mut argv = vec!["load"];
    argv.extend_from_slice(&args);
    let text = poolcurl(&argv).await;
    assert_eq!(text.code, 0, "{}", text.stderr);
    let requests = u(&json["requests"]);
    let opened = u(&json["connections"]["opened"]);
    assert_eq!((requests, opened), (300, 1));
    let out = &text.stdout;
    assert!(
        out.contains(&format!(
            "Requests              {requests} ({requests} succeeded, 0 failed, 0 aborted)"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "Connections opened    {opened} (h1 {opened}, h2 0; {} served requests)",
            u(&json["connections"]["used"])
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("  200  {}", u(&json["status"]["200"]))),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "Reused                {} requests went on a connection that had served before",
            u(&json["connections"]["reused_requests"])
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "Most connections      {} open at once",
            u(&json["connections"]["peak_open"])
        )),
        "{out}"
    );
    assert!(
        out.contains("Latency (ms)") && out.contains("Partitions"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_prints_urls_and_a_socket_that_curl_mode_can_fetch() {
    let dir = TempDir::new("serve");
    let socket = dir.path().join("serve.sock");
    let mut child = common::poolcurl_command()
        .args([
            "serve",
            "--threads",
            "1",
            "--ca-dir",
            dir.path().to_str().unwrap(),
            "--unix-socket",
            socket.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve started");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut printed = std::collections::HashMap::new();
    let read = async {
        while printed.len() < 5 {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("serve keeps printing");
            if let Some((label, value)) = line.split_once(char::is_whitespace) {
                printed.insert(label.to_owned(), value.trim().to_owned());
            }
        }
    };
    tokio::time::timeout(LIMIT, read)
        .await
        .expect("serve printed its URLs");

    let http1 = &printed["http1"];
    let fetched = poolcurl(&[&format!("{http1}bytes/7")]).await;
    assert_eq!(fetched.code, 0, "{}", fetched.stderr);
    assert_eq!(fetched.stdout, "xxxxxxx");

    let h2c = &printed["h2c"];
    let fetched = poolcurl(&["--http2-prior-knowledge", "-w", "%{http_version}", h2c]).await;
    assert_eq!(fetched.code, 0, "{}", fetched.stderr);
    assert!(fetched.stdout.ends_with('2'), "{}", fetched.stdout);

    let https = &printed["https"];
    let ca = &printed["ca"];
    let fetched = poolcurl(&[
        "--cacert",
        ca,
        "-w",
        "%{http_version}",
        &format!("{https}status/201"),
    ])
    .await;
    assert_eq!(fetched.code, 0, "{}", fetched.stderr);
    assert_eq!(fetched.stdout, "201\n2");

    let unix = &printed["unix"];
    assert_eq!(unix, socket.to_str().unwrap());
    let fetched = poolcurl(&["--unix-socket", unix, "http://localhost/bytes/3"]).await;
    assert_eq!(fetched.code, 0, "{}", fetched.stderr);
    assert_eq!(fetched.stdout, "xxx");

    child.kill().await.expect("serve killed");
}

#[tokio::test(flavor = "multi_thread")]
async fn preconnect_warms_the_bound_before_the_run_and_the_run_opens_none() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hi"))).await;
    let url = server.url("/");
    let (run, json) = load_json(&[
        &url,
        "--max-connections-per-host",
        "4",
        "--preconnect",
        "4",
        "-c",
        "8",
        "-n",
        "200",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    let warmup = &json["warmup"];
    assert_eq!(u(&warmup["connections"]), 4, "{warmup}");
    assert_eq!(u(&warmup["failed"]), 0, "{warmup}");
    assert!(f(&warmup["duration_ms"]) > 0.0);
    assert_eq!(u(&json["connections"]["opened"]), 4, "the run opened none");
    assert_eq!(server.accepted(), 4);
    let (plain, _) =
        poolcurl_text(&[&url, "--preconnect", "2", "-n", "4", "--partitions", "1"]).await;
    assert!(
        plain.contains("Warm-up               2 connections ready in"),
        "{plain}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_maximum_lifetime_rotates_connections_without_failures() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hi"))).await;
    let url = server.url("/");
    let (run, json) = load_json(&[
        &url,
        "--max-connection-lifetime",
        "200ms",
        "-c",
        "2",
        "-z",
        "1s",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_consistent(&json);
    assert_eq!(u(&json["failures"]), 0);
    let retired = u(&json["connections"]["closed"]["max_lifetime"]);
    assert!(retired >= 2, "connections retired for their age: {retired}");
    assert_eq!(json["config"]["max_connection_lifetime_s"], 0.2);
}

/// `poolcurl load ARGS --no-progress` (text summary): the exit code and stdout.
async fn poolcurl_text(args: &[&str]) -> (String, i32) {
    let mut argv = vec!["load", "--no-progress"];
    argv.extend_from_slice(args);
    let run = poolcurl(&argv).await;
    (run.stdout, run.code)
}
