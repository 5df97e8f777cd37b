//! curl mode end to end: the built `poolcurl` binary against scripted loopback servers.
//!
//! Every test starts its servers on the test's multi-thread runtime, which keeps serving while
//! the child process runs; the child is awaited with `tokio::process` and bounded by a
//! timeout. Nothing sleeps: a server that must stay silent parks at a gate that never opens.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use pool_tests::gate::Gate;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server, read_head};
use pool_tests::h2::{ScriptedH2Server, StreamPlan};
use pool_tests::proxy::{ConnectScript, ScriptedProxy};
use pool_tests::refused::RefusedAddr;
use pool_tests::socks::ScriptedSocks;
use pool_tests::tls::{TempDir, TestPki};
use pool_tests::unix::UnixBridge;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Upper bound for one poolcurl run; runs take milliseconds.
const LIMIT: Duration = Duration::from_secs(30);

/// What one run of the binary produced.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Asserts that the run exited with `code` and said `message` on stderr.
    #[track_caller]
    fn assert_exit(&self, code: i32, message: &str) {
        assert_eq!(self.code, code, "{}", self.stderr);
        assert!(self.stderr.contains(message), "{}", self.stderr);
    }
}

async fn poolcurl(args: &[&str]) -> Run {
    let child = common::poolcurl_command().args(args).output();
    let out = tokio::time::timeout(LIMIT, child)
        .await
        .expect("poolcurl finished in time")
        .expect("poolcurl ran");
    Run {
        code: out.status.code().expect("poolcurl exited normally"),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// As [`poolcurl`], with `input` on its stdin.
async fn poolcurl_with_stdin(args: &[&str], input: &'static [u8]) -> Run {
    let mut child = common::poolcurl_command()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("poolcurl started");
    let mut stdin = child.stdin.take().unwrap();
    // Written while poolcurl runs: it reads stdin as the upload goes. A run that ends before
    // it reads (a refusal before any transfer) closes the pipe first, and the write then meets
    // a broken pipe whenever poolcurl wins that race: not the test's failure.
    let feed = tokio::spawn(async move {
        match stdin.write_all(input).await {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            written => written.unwrap(),
        }
    });
    let out = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("poolcurl finished in time")
        .expect("poolcurl ran");
    feed.await.unwrap();
    Run {
        code: out.status.code().expect("poolcurl exited normally"),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A file `name` holding `contents` in a new temporary directory named after `prefix`: the
/// directory (removed when dropped) and the file's path.
fn temp_file(prefix: &str, name: &str, contents: impl AsRef<[u8]>) -> (TempDir, PathBuf) {
    let dir = TempDir::new(prefix);
    let file = dir.path().join(name);
    std::fs::write(&file, contents).unwrap();
    (dir, file)
}

/// An H1 server answering every request with `reply` on kept-alive connections (and an
/// upload's `Expect: 100-continue` with `100 Continue`, as nginx does).
async fn serving(reply: Reply) -> ScriptedH1Server {
    ScriptedH1Server::builder()
        .continue_expected()
        .default_plan(ConnPlan::serve_forever(reply))
        .start()
        .await
}

/// An HTTP/1.1 server over TLS (ALPN http/1.1) answering every request with `reply`, its
/// certificate from a CA of its own, written to `ca.pem` in a new directory named after
/// `prefix`: the PKI, the directory, the CA file's path and the server.
async fn tls_serving(prefix: &str, reply: Reply) -> (TestPki, TempDir, String, ScriptedH1Server) {
    let pki = TestPki::new();
    let dir = TempDir::new(prefix);
    let ca = pki.write_ca_pem(dir.path()).unwrap();
    let ca = ca.to_str().unwrap().to_owned();
    let server = ScriptedH1Server::builder()
        .tls(pki.server_config(&[b"http/1.1"]))
        .continue_expected()
        .default_plan(ConnPlan::serve_forever(reply))
        .start()
        .await;
    (pki, dir, ca, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn body_bytes_are_written_unmodified() {
    let server = serving(Reply::ok("hello\n")).await;
    let run = poolcurl(&["--no-progress-meter", &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, b"hello\n");
    assert!(run.stderr.is_empty(), "nothing on stderr: {}", run.stderr);

    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let server = serving(Reply::ok(Bytes::from(binary.clone()))).await;
    let run = poolcurl(&["--no-progress-meter", &server.url("/blob")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout == binary, "binary body differs");
}

/// `--max-filesize` and a body of unannounced length: the transfer stops once the body would
/// pass the limit (exit 63), as curl does since 8.4, with no more than the limit written. A body
/// within the limit is written whole.
#[tokio::test(flavor = "multi_thread")]
async fn max_filesize_stops_a_chunked_body_at_the_limit() {
    let reply = Reply::new(200)
        .chunked()
        .body_data("0123456789")
        .body_data("abcdefghij")
        .body_data("KLMNOPQRST");
    let server = serving(reply).await;
    let run = poolcurl(&["--max-filesize", "15", &server.url("/")]).await;
    assert_eq!(run.code, 63, "{}", run.stderr);
    // How much is written depends on how the chunks arrive; never more than the limit.
    let body = b"0123456789abcdefghijKLMNOPQRST";
    assert!(
        run.stdout.len() <= 15 && body.starts_with(&run.stdout),
        "{:?}",
        run.stdout_text()
    );
    assert!(
        run.stderr.contains("(63) Maximum file size exceeded"),
        "{}",
        run.stderr
    );

    let run = poolcurl(&["--max-filesize", "30", &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "0123456789abcdefghijKLMNOPQRST");
}

#[tokio::test(flavor = "multi_thread")]
async fn include_writes_the_status_line_and_headers_first() {
    let server = serving(Reply::ok("hello").header("x-test", "yes")).await;
    let run = poolcurl(&["-i", &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        "HTTP/1.1 200 OK\r\nx-test: yes\r\ncontent-length: 5\r\n\r\nhello"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn head_sends_head_and_writes_only_the_head() {
    let server = serving(Reply::ok("hello")).await;
    let run = poolcurl(&["-I", &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"
    );
    assert_eq!(server.requests()[0].method, http::Method::HEAD);
}

/// `-C -` against a server that ignores ranges: the offset is the output file's size and goes
/// out as `Range`; a whole response is exit 33 with the file untouched, unless the file already
/// holds exactly that many bytes (the download is complete: exit 0, as curl decides). Without
/// a file there is nothing to resume and no `Range`.
#[tokio::test(flavor = "multi_thread")]
async fn continue_at_resumes_or_says_the_server_cannot() {
    let server = serving(Reply::ok("hello")).await;
    let dir = TempDir::new("poolcurl-resume");
    let file = dir.path().join("out");
    let path = file.to_str().unwrap();
    let url = server.url("/");
    let args = ["-s", "-C", "-", "-o", path, &url];
    let holding = |contents: Option<&str>| match contents {
        Some(text) => std::fs::write(&file, text).unwrap(),
        None => drop(std::fs::remove_file(&file)),
    };
    let range = |i: usize| {
        let requests = server.requests();
        let value = requests[i].headers.get(http::header::RANGE);
        value.map(|v| v.to_str().unwrap().to_owned())
    };

    holding(Some("hel"));
    let run = poolcurl(&args).await;
    assert_eq!(run.code, 33, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hel");
    assert_eq!(range(0).as_deref(), Some("bytes=3-"));

    holding(Some("hello"));
    let run = poolcurl(&args).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
    assert_eq!(range(1).as_deref(), Some("bytes=5-"));

    holding(None);
    let run = poolcurl(&args).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
    assert_eq!(range(2), None);
}

/// `-X HEAD` without `-I`: curl's two-line warning (not under `-s`, not with `-I`). curl then
/// waits for the announced body; poolcurl sends HEAD, reads no body and ends.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_notes_an_unnecessary_request_method_as_curl_does() {
    let server = serving(Reply::ok("hello")).await;
    let url = server.url("/");
    let note = |method: &str| {
        format!("Note: Unnecessary use of -X or --request, {method} is already inferred.\n")
    };
    for (args, method) in [
        (vec!["-v", "-X", "GET"], Some("GET")),
        (vec!["-v", "-X", "get"], Some("GET")),
        (vec!["-v", "-X", "POST", "-d", "x"], Some("POST")),
        (vec!["-v", "-I", "-X", "HEAD"], Some("HEAD")),
        // curl infers POST for data even with -G, so a GET there is not noted.
        (vec!["-v", "-G", "-d", "a=b", "-X", "GET"], None),
        (vec!["-v", "-X", "PUT"], None),
        (vec!["-X", "GET"], None),
        (vec!["-sv", "-X", "GET"], None),
    ] {
        let run = poolcurl(&[&args[..], &["-o", "/dev/null", &url]].concat()).await;
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let first = run.stderr.lines().next().map(|l| format!("{l}\n"));
        match method {
            Some(method) => assert_eq!(first, Some(note(method)), "{args:?}"),
            None => assert!(
                !run.stderr.contains("Unnecessary"),
                "{args:?}: {}",
                run.stderr
            ),
        }
    }
}

/// Origins forwarded to one proxy share its connection, as curl shares it: the second URL's
/// `%{num_connects}` is 0, and `-v` says the connection was re-used "with proxy".
#[tokio::test(flavor = "multi_thread")]
async fn origins_through_one_forward_proxy_reuse_its_connection() {
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let run = poolcurl(&[
        "-sv",
        "-x",
        &proxy.url(),
        "http://a.test/",
        "http://b.test:8080/",
        "-w",
        " %{num_connects}\n",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "via-proxy 1\nvia-proxy 0\n");
    assert_eq!(proxy.connections(), 1);
    let hosts: Vec<_> = proxy.requests().into_iter().map(|r| r.host).collect();
    assert_eq!(
        hosts,
        [Some("a.test".to_owned()), Some("b.test:8080".to_owned())]
    );
    assert!(
        run.stderr
            .contains("* Re-using existing connection #1 with proxy 127.0.0.1 (partition"),
        "{}",
        run.stderr
    );
}

/// Through a forward proxy, `-v` shows the request head byte for byte as the proxy read it:
/// the whole URL as the target, then the proxy's credentials and `--proxy-header`s, which the
/// pool adds after the request's own headers.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_shows_a_forward_proxied_request_as_sent() {
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, Some("Basic dTpw")).await;
    let run = poolcurl(&[
        "-v",
        "-x",
        &proxy.url(),
        "-U",
        "u:p",
        "--proxy-header",
        "X-For-Proxy: 1",
        "-H",
        "X-For-Origin: 2",
        "http://origin.test/a?b",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "via-proxy");
    let shown: String = run
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("> "))
        .map(|l| format!("{}\n", l.trim_end_matches('\r')))
        .collect();
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].head.replace("\r\n", "\n");
    // `-v` ends the head with an empty `> ` line; the wire ends it with a blank line.
    assert_eq!(shown, sent, "-v:\n{shown}\nwire:\n{sent}");
    assert!(
        sent.starts_with("GET http://origin.test/a?b HTTP/1.1\n"),
        "{sent}"
    );
    assert!(
        sent.contains("X-For-Proxy: 1\n") || sent.contains("x-for-proxy: 1\n"),
        "{sent}"
    );
}

/// `--unix-socket`: `-v` and `%{remote_ip}` name the socket's path whole (curl 7.88 cuts it at
/// 45 characters), with the URL's port; the request keeps the URL's host.
#[tokio::test(flavor = "multi_thread")]
async fn unix_socket_is_named_in_verbose_and_write_out() {
    let server = serving(Reply::ok("over-unix")).await;
    let bridge = UnixBridge::start(server.addr()).await;
    let path = bridge.path().to_string_lossy().into_owned();
    let run = poolcurl(&[
        "-v",
        "--unix-socket",
        &path,
        "-w",
        "\n%{remote_ip} %{remote_port} [%{local_ip}] %{local_port}",
        "http://daemon.test:8080/x",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), format!("over-unix\n{path} 8080 [] 0"));
    let connected = format!("* Connected to daemon.test ({path}) port 8080 ");
    assert!(run.stderr.contains(&connected), "{}", run.stderr);
    assert_eq!(server.requests()[0].host(), Some("daemon.test:8080"));
    assert_eq!(bridge.accepted(), 1);
}

/// `--abstract-unix-socket`: a name in Linux's abstract namespace, shown as nothing (as curl
/// shows it), and one connection for both URLs (curl 7.88 opens one per URL there).
#[tokio::test(flavor = "multi_thread")]
async fn an_abstract_unix_socket_is_reused() {
    let server = serving(Reply::ok("abstract")).await;
    let bridge = UnixBridge::start_abstract(server.addr()).await;
    let name = bridge.name().expect("an abstract name");
    let run = poolcurl(&[
        "-v",
        "--abstract-unix-socket",
        name,
        "-w",
        " [%{remote_ip}] %{num_connects}",
        "http://daemon.test/a",
        "http://daemon.test/b",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "abstract [] 1abstract [] 0");
    assert!(
        run.stderr
            .contains("* Connected to daemon.test () port 80 "),
        "{}",
        run.stderr
    );
    assert_eq!(bridge.accepted(), 1);
}

/// `--stderr FILE`: the `-v` trace and the error go to the file and nothing to stderr but
/// `%{stderr}`, which curl keeps there; a usage error after the option goes to the file too.
#[tokio::test(flavor = "multi_thread")]
async fn stderr_sends_the_trace_and_errors_to_a_file() {
    let server = serving(Reply::ok("body")).await;
    let dir = TempDir::new("stderr-file");
    let file = dir.path().join("err.txt");
    let file_arg = file.to_str().unwrap();
    let closed = RefusedAddr::new();
    let run = poolcurl(&[
        "-v",
        "--stderr",
        file_arg,
        "-w",
        "%{stderr}[w]",
        &server.url("/"),
        &format!("http://{}/", closed.addr()),
    ])
    .await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "body");
    assert_eq!(run.stderr, "[w][w]", "only write-out's %{{stderr}} stays");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("> GET / HTTP/1.1"), "{written}");
    assert!(written.contains("< HTTP/1.1 200"), "{written}");
    assert!(
        written.contains("poolcurl: (7) Failed to connect"),
        "{written}"
    );

    let run = poolcurl(&["--stderr", file_arg, "--bogus"]).await;
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.starts_with("poolcurl: option --bogus: is unknown\n"),
        "{written}"
    );
}

/// Whether `line` starts with `--trace-time`'s `HH:MM:SS.micros ` and has more after it.
fn time_stamped(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 16
        && [0, 1, 3, 4, 6, 7, 9, 10, 11, 12, 13, 14]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && (b[2], b[5], b[8], b[15]) == (b':', b':', b'.', b' ')
}

/// `--trace-time`: every `-v` line starts with `HH:MM:SS.micros `; without `-v` nothing prints.
#[tokio::test(flavor = "multi_thread")]
async fn trace_time_stamps_every_verbose_line() {
    let server = serving(Reply::ok("t")).await;
    let url = server.url("/");
    let run = poolcurl(&["--no-progress-meter", "-v", "--trace-time", &url, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stamped =
        |line: &str| time_stamped(line) && matches!(line.as_bytes()[16], b'*' | b'>' | b'<' | b'{');
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(lines.len() > 10, "{}", run.stderr);
    assert!(lines.iter().all(|l| stamped(l)), "{}", run.stderr);
    assert!(
        run.stderr.contains("* Re-using existing connection"),
        "{}",
        run.stderr
    );
    let quiet = poolcurl(&["--no-progress-meter", "--trace-time", &url]).await;
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
}

/// `--trace-ascii FILE`: every block in the file (the request head, its data, each response
/// header line, the body), nothing on stderr; `--trace-time` stamps each block's title and
/// not its dump lines.
#[tokio::test(flavor = "multi_thread")]
async fn trace_ascii_writes_every_block_to_its_file() {
    let server = serving(Reply::ok("body")).await;
    let url = server.url("/");
    let dir = TempDir::new("trace-file");
    let file = dir.path().join("trace.txt");
    let file_arg = file.to_str().unwrap();
    let run = poolcurl(&[
        "--no-progress-meter",
        "--trace-ascii",
        file_arg,
        "--trace-time",
        "-d",
        "a=b",
        &url,
        &url,
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "bodybody");
    assert_eq!(run.stderr, "", "the trace replaces -v's lines");
    let trace = std::fs::read_to_string(&file).unwrap();
    let mut unstamped = String::new();
    for line in trace.lines() {
        let rest = if time_stamped(line) {
            &line[16..]
        } else {
            line
        };
        let title = ["== ", "=> ", "<= "].iter().any(|t| rest.starts_with(t));
        assert_eq!(
            time_stamped(line),
            title,
            "only titles are stamped: {line:?}"
        );
        unstamped.push_str(rest);
        unstamped.push('\n');
    }
    for block in [
        "=> Send header, ",
        "0000: POST / HTTP/1.1\n",
        "=> Send data, 3 bytes (0x3)\n0000: a=b\n",
        "<= Recv header, 17 bytes (0x11)\n0000: HTTP/1.1 200 OK\n",
        "<= Recv data, 4 bytes (0x4)\n0000: body\n",
        "== Info: Re-using existing connection",
        "== Info: Connection #1 to host 127.0.0.1 left intact\n",
    ] {
        assert!(unstamped.contains(block), "{block:?} in\n{trace}");
    }
}

/// `--trace %` and a trace file that cannot be made both send the trace to stderr, as curl
/// does; a connection that fails still has its `Info` lines.
#[tokio::test(flavor = "multi_thread")]
async fn trace_goes_to_stderr_with_percent_or_an_unusable_file() {
    let server = serving(Reply::ok("x")).await;
    let url = server.url("/");
    for target in ["%", "/nonexistent-poolcurl-dir/trace.txt"] {
        let run = poolcurl(&["--trace", target, &url]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout_text(), "x");
        assert!(
            run.stderr
                .contains("<= Recv data, 1 bytes (0x1)\n0000: 78 "),
            "{target}: {}",
            run.stderr
        );
    }
    let closed = RefusedAddr::new();
    let dir = TempDir::new("trace-refused");
    let file = dir.path().join("t.txt");
    let run = poolcurl(&[
        "-s",
        "--trace-ascii",
        file.to_str().unwrap(),
        &format!("http://{}/", closed.addr()),
    ])
    .await;
    assert_eq!(run.code, 7);
    let trace = std::fs::read_to_string(&file).unwrap();
    assert!(trace.starts_with("== Info: "), "{trace}");
    assert!(!trace.contains("=> Send"), "{trace}");
}

/// Over HTTP/2 the trace shows the request head as curl does (`HTTP/2`, `Host` from
/// `:authority`) and each response header line.
#[tokio::test(flavor = "multi_thread")]
async fn trace_shows_an_http2_exchange() {
    let pki = TestPki::new();
    let dir = TempDir::new("trace-h2");
    let ca = pki.write_ca_pem(dir.path()).unwrap();
    let server = ScriptedH2Server::builder()
        .tls(pki.server_config(&[b"h2"]))
        .default_stream(StreamPlan::status(200))
        .start()
        .await;
    let run = poolcurl(&[
        "--trace-ascii",
        "-",
        "--cacert",
        ca.to_str().unwrap(),
        &server.url("/"),
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let trace = run.stdout_text();
    assert!(trace.contains("0000: GET / HTTP/2\n"), "{trace}");
    assert!(
        trace.contains("== Info: ALPN: server accepted h2\n"),
        "{trace}"
    );
    assert!(
        trace.contains("<= Recv header, 13 bytes (0xd)\n0000: HTTP/2 200 \n"),
        "{trace}"
    );
}

/// `POOLCURL_LOG` puts the libraries' own log on stderr: with `h2=debug`, the HTTP/2 frames
/// h2 sends and receives (the SETTINGS exchange and the request's HEADERS), and nothing of
/// hyper's, which the filter leaves out. Unset, the same run's stderr is empty; a filter that
/// does not parse is said in one line and the transfer still succeeds.
#[tokio::test(flavor = "multi_thread")]
async fn poolcurl_log_shows_the_libraries_events_when_asked() {
    let server = ScriptedH2Server::start_with(StreamPlan::status(200)).await;
    let url = server.url("/");
    let args = ["-s", "--http2-prior-knowledge", url.as_str()];
    let with = |filter: &'static str| {
        let mut command = common::poolcurl_command();
        command.args(args).env("POOLCURL_LOG", filter);
        async move {
            let out = tokio::time::timeout(LIMIT, command.output())
                .await
                .expect("poolcurl finished in time")
                .expect("poolcurl ran");
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(0), "{stderr}");
            stderr
        }
    };

    let log = with("h2=debug").await;
    let frames: Vec<&str> = log.lines().filter(|l| l.contains(" DEBUG ")).collect();
    assert!(
        frames.iter().any(|l| l.contains("send frame=Settings")),
        "{log}"
    );
    assert!(
        frames.iter().any(|l| l.contains("received frame=Settings")),
        "{log}"
    );
    assert!(
        frames
            .iter()
            .any(|l| l.contains("send frame=Headers { stream_id: StreamId(1)")),
        "{log}"
    );
    assert!(!log.contains("hyper::"), "{log}");

    let quiet = poolcurl(&args).await;
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert_eq!(quiet.stderr, "");

    let bad = with("h2=loud").await;
    assert!(
        bad.starts_with("poolcurl: POOLCURL_LOG: ") && bad.ends_with("going on without the log\n"),
        "{bad}"
    );
    assert_eq!(bad.lines().count(), 1, "{bad}");
}

/// `-v` notes request data and the body's first block (`} [N bytes data]`, `{ [...]`) where
/// the body does not go to a terminal, and says a `-T` upload is complete.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_notes_the_data_and_a_complete_upload() {
    let server = serving(Reply::ok("done")).await;
    let (_dir, file) = temp_file("verbose-upload", "up.txt", "12345");
    let run = poolcurl(&["-v", "-T", file.to_str().unwrap(), &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    let at = |text: &str| {
        lines
            .iter()
            .position(|l| *l == text)
            .unwrap_or_else(|| panic!("{text:?} in\n{}", run.stderr))
    };
    let (sent, uploaded) = (
        at("} [5 bytes data]"),
        at("* We are completely uploaded and fine"),
    );
    let (status, received) = (at("< HTTP/1.1 200 OK"), at("{ [4 bytes data]"));
    // The upload asked for the go-ahead, and the server gave it before the data went.
    let (expect, go_ahead) = (at("> Expect: 100-continue"), at("< HTTP/1.1 100 Continue"));
    assert!(
        expect < go_ahead
            && go_ahead < sent
            && sent < uploaded
            && uploaded < status
            && status < received,
        "{}",
        run.stderr
    );
    assert_eq!(server.requests()[0].body, "12345");
}

/// curl writes `-d`'s data with the request head below 64 KiB over HTTP/1, and says nothing
/// of it; from 64 KiB, and over HTTP/2 always, it sends the data as an upload and says when
/// that ended, as for `-T`.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_says_data_of_64_kib_and_more_went_as_an_upload() {
    let server = serving(Reply::ok("done")).await;
    for (len, said) in [(64 * 1024 - 1, false), (64 * 1024, true)] {
        let (_dir, file) = temp_file("verbose-data", "data.bin", vec![b'd'; len]);
        let data = format!("@{}", file.display());
        let run = poolcurl(&["-v", "--data-binary", &data, &server.url("/")]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let uploaded = run.stderr.find("* We are completely uploaded and fine\n");
        assert_eq!(uploaded.is_some(), said, "{len} bytes: {}", run.stderr);
        if let Some(uploaded) = uploaded {
            let status = run.stderr.find("< HTTP/1.1 200").expect("the status line");
            assert!(uploaded < status, "sent before the answer: {}", run.stderr);
        }
    }
    let h2 = ScriptedH2Server::start_with(StreamPlan::status(200)).await;
    let url = format!("http://127.0.0.1:{}/", h2.addr().port());
    let run = poolcurl(&["-v", "--http2-prior-knowledge", "-d", "x", &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let said = "} [1 bytes data]\n* We are completely uploaded and fine\n< HTTP/2 200";
    assert!(run.stderr.contains(said), "{}", run.stderr);
}

/// A server that never says `100 Continue` (the scripted peer reads the body without a word):
/// the upload waits `--expect100-timeout`, then goes, and `-v` says so as curl does.
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_goes_when_the_wait_for_100_continue_runs_out() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("kept"))).await;
    let (_dir, file) = temp_file("waited-out", "up.txt", "12345");
    let file = file.to_str().unwrap();
    let url = server.url("/");
    let run = poolcurl(&["-v", "--expect100-timeout", "0.2", "-T", file, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "kept");
    let lines: Vec<&str> = run.stderr.lines().collect();
    let at = |text: &str| lines.iter().position(|l| *l == text);
    let (done, sent) = (
        at("* Done waiting for 100-continue"),
        at("} [5 bytes data]"),
    );
    assert!(done.is_some() && done < sent, "{}", run.stderr);
    assert_eq!(server.requests()[0].header("expect"), Some("100-continue"));
    assert_eq!(server.requests()[0].body, "12345");
}

/// `-H` names go on the wire as typed, as curl sends them, and in curl's place: a `-H` that
/// replaces a default (`User-Agent`) goes with the other `-H` headers; the rest in title case.
#[tokio::test(flavor = "multi_thread")]
async fn header_names_go_as_typed() {
    let server = serving(Reply::ok("ok")).await;
    let run = poolcurl(&[
        "-H",
        "x-Mixed-CASE: 1",
        "-H",
        "user-agent: typed",
        "-H",
        "X-Title: 2",
        "-H",
        "x-dup: 1",
        "-H",
        "X-DUP: 2",
        "-H",
        "host: typed.test",
        &server.url("/"),
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let request = &server.requests()[0];
    // Each field of one name as its own -H typed it; Host as curl writes it.
    assert_eq!(
        request.names,
        [
            "Host",
            "Accept",
            "x-Mixed-CASE",
            "user-agent",
            "X-Title",
            "x-dup",
            "X-DUP"
        ]
    );
    assert_eq!(request.host(), Some("typed.test"));
}

/// `-T -` streams stdin chunked, as curl does: `Transfer-Encoding: chunked`, no length,
/// `%{size_upload}` counting the chunks' framing (curl's 21 for these 11 bytes), `-v` showing
/// the last chunk; and `-T` pairs with the first URL only, the second is a plain GET.
#[tokio::test(flavor = "multi_thread")]
async fn stdin_uploads_go_chunked_to_their_own_url_only() {
    let server = serving(Reply::ok("ok")).await;
    let (a, b) = (server.url("/a"), server.url("/b"));
    let args = ["-v", "-w", " %{size_upload}\n", "-T", "-", &a, &b];
    let run = poolcurl_with_stdin(&args, b"stdin-data\n").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "ok 21\nok 0\n");
    let requests = server.requests();
    let (put, get) = (&requests[0], &requests[1]);
    assert_eq!((put.method.as_str(), put.target.as_str()), ("PUT", "/a"));
    assert_eq!(put.header("transfer-encoding"), Some("chunked"));
    assert_eq!(put.header("content-length"), None);
    assert_eq!(put.header("expect"), Some("100-continue"));
    assert_eq!(put.body, "stdin-data\n");
    assert_eq!((get.method.as_str(), get.target.as_str()), ("GET", "/b"));
    assert!(get.body.is_empty());
    let lines: Vec<&str> = run.stderr.lines().collect();
    let at = |text: &str| lines.iter().position(|l| *l == text);
    let (te, chunk, end, last) = (
        at("> Transfer-Encoding: chunked"),
        at("} [16 bytes data]"),
        at("* Signaling end of chunked upload via terminating chunk."),
        at("} [5 bytes data]"),
    );
    assert!(
        te.is_some() && te < chunk && chunk < end && end < last,
        "{}",
        run.stderr
    );
}

/// A stream goes once: a redirect that keeps the method needs it again and fails with curl's
/// 65 (a 303 turns it into a GET that needs nothing); `--http1.0` cannot chunk, curl's 25,
/// before anything is sent.
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_must_go_again_fails_and_http10_refuses_it() {
    let kept = serving(Reply::new(307).header("location", "/again")).await;
    let run = poolcurl_with_stdin(&["-L", "-T", "-", &kept.url("/")], b"once").await;
    run.assert_exit(65, "(65) seek callback returned error 2");
    assert_eq!(kept.requests()[0].body, "once");

    let server = serving(Reply::ok("ok")).await;
    let run = poolcurl_with_stdin(&["--http1.0", "-T", "-", &server.url("/")], b"x").await;
    run.assert_exit(25, "Chunky upload is not supported by HTTP 1.0");
    assert!(server.requests().is_empty());
}

/// `--create-file-mode` is taken and changes nothing here: curl sets it on files it creates
/// remotely (SFTP, SCP, FILE), never on an HTTP transfer's output file.
#[tokio::test(flavor = "multi_thread")]
async fn create_file_mode_leaves_output_files_as_they_would_be() {
    use std::os::unix::fs::PermissionsExt as _;
    let server = serving(Reply::ok("ok")).await;
    let dir = TempDir::new("poolcurl-file-mode");
    let (plain, moded) = (dir.path().join("plain"), dir.path().join("moded"));
    let run = poolcurl(&["-o", plain.to_str().unwrap(), &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let args = ["--create-file-mode", "0600", "-o", moded.to_str().unwrap()];
    let run = poolcurl(&[&args[..], &[server.url("/").as_str()]].concat()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&moded), mode(&plain));
    let run = poolcurl(&["--create-file-mode", "999", &server.url("/")]).await;
    assert_eq!(run.code, 2, "not octal: {}", run.stderr);
}

/// A streamed upload whose source fails to read (here a directory: it opens, and each read
/// is EISDIR) is a local read failure, exit 26, not the peer's (56). (curl 7.88 takes the
/// failed read for the end of the file and uploads nothing.)
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_that_fails_to_read_is_a_local_read_failure() {
    let server = serving(Reply::ok("ok")).await;
    let dir = TempDir::new("poolcurl-upload-dir");
    let run = poolcurl(&["-sS", "-T", dir.path().to_str().unwrap(), &server.url("/")]).await;
    run.assert_exit(
        26,
        "(26) Failed to open/read local data from file/application: Is a directory",
    );
}

/// curl opens a `-T` file when its transfer starts: the transfers before it run, and one that
/// cannot be opened ends the run with 26 (no later URL is requested).
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_that_cannot_be_opened_ends_the_run() {
    let server = serving(Reply::ok("ok")).await;
    let (_dir, file) = temp_file("unopened-upload", "up.txt", "12345");
    let missing = file.with_file_name("missing.txt");
    let run = poolcurl(&[
        "-T",
        file.to_str().unwrap(),
        &server.url("/a/"),
        "-T",
        missing.to_str().unwrap(),
        &server.url("/b/"),
        &server.url("/c"),
    ])
    .await;
    assert_eq!(run.code, 26, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "ok");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    // The file's name is appended to a URL that ends in a slash.
    assert_eq!(requests[0].target, "/a/up.txt");
    assert!(
        run.stderr
            .contains(&format!("Can't open '{}'!", missing.display())),
        "{}",
        run.stderr
    );
}

/// A peer for `connections` connections that reads each request's head and, when `early`
/// has an answer for it, writes that at once without reading a body; otherwise it reads the
/// body and answers `200` with `got BODY`. It returns what arrived after each early-answered
/// head until the client closed (none of the body may have).
async fn head_first_peer(
    connections: usize,
    early: fn(&str) -> Option<&'static [u8]>,
) -> (String, tokio::task::JoinHandle<Vec<Vec<u8>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/up", listener.local_addr().unwrap());
    let peer = tokio::spawn(async move {
        let mut after_early = Vec::new();
        for _ in 0..connections {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut read = Vec::new();
            while let Some(head) = read_head(&mut stream, &mut read).await {
                if let Some(answer) = early(&head) {
                    stream.write_all(answer).await.unwrap();
                    let _ = stream.read_to_end(&mut read).await;
                    after_early.push(read);
                    break;
                }
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                while read.len() < length {
                    let mut chunk = [0u8; 1024];
                    let n = stream.read(&mut chunk).await.unwrap();
                    assert!(n > 0, "the body never came");
                    read.extend_from_slice(&chunk[..n]);
                }
                let body: Vec<u8> = read.drain(..length).collect();
                let text = format!("got {}", String::from_utf8_lossy(&body));
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{text}",
                    text.len()
                );
                stream.write_all(reply.as_bytes()).await.unwrap();
            }
        }
        after_early
    });
    (url, peer)
}

/// A server that answers an upload's head without asking for its body (`413` before `100
/// Continue`): the body is never sent, `-v` shows no data going out and says why,
/// `%{size_upload}` is 0, and the transfer succeeds with the server's answer, as with curl.
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_the_server_refuses_before_100_continue_is_not_sent() {
    let (url, peer) = head_first_peer(1, |_| {
        Some(b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 5\r\n\r\nlarge")
    })
    .await;
    let (_dir, file) = temp_file("refused-upload", "up.txt", "12345");
    let file = file.to_str().unwrap();
    let run = poolcurl(&["-v", "-w", "|%{size_upload}", "-T", file, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "large|0");
    assert!(
        run.stderr.contains("> Expect: 100-continue"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("} ["), "data went out: {}", run.stderr);
    // curl's words for it, and the connection, whose request never ended, closes.
    for line in [
        "* HTTP error before end of send, stop sending\n< \r\n",
        "* Closing connection 1",
    ] {
        assert!(run.stderr.contains(line), "no {line:?} in {}", run.stderr);
    }
    let after_head = peer.await.unwrap();
    assert_eq!(
        after_head,
        vec![Vec::<u8>::new()],
        "the body reached the server"
    );
}

/// A peer for one connection that reads a request head, writes `answer` at once, and then,
/// once `read_after` resolves, reads the body until `len` bytes or the connection's end.
/// Returns its URL and the body bytes it got.
async fn answering_early(
    answer: &'static [u8],
    len: usize,
    read_after: impl std::future::Future<Output = ()> + Send + 'static,
) -> (String, tokio::task::JoinHandle<usize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/up", listener.local_addr().unwrap());
    let peer = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut read = Vec::new();
        read_head(&mut stream, &mut read).await.expect("a head");
        stream.write_all(answer).await.unwrap();
        read_after.await;
        let mut got = read.len();
        let mut buf = vec![0u8; 1 << 16];
        while got < len {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        got
    });
    (url, peer)
}

/// A server that answers `200` to an upload's head and then reads the body: curl's transfer
/// ends only once its upload has, so poolcurl waits for the rest before it ends (and exits)
/// and counts all of it, where it used to leave with the upload cut short.
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_answered_before_its_end_goes_whole_before_the_transfer_ends() {
    const LEN: usize = 64 << 20;
    let (_dir, file) = temp_file("early-ok-upload", "up.bin", vec![b'x'; LEN]);
    let data = format!("@{}", file.display());
    // Data (`--data-binary`), and a file (`-T`, which curl says it uploaded in its own words).
    for upload in ["--data-binary", "-T"] {
        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        let (url, peer) = answering_early(answer, LEN, async {}).await;
        let file = if upload == "-T" { &data[1..] } else { &data };
        let args = [
            "-v",
            "-H",
            "Expect:",
            "-w",
            "|%{size_upload}",
            upload,
            file,
            &url,
        ];
        let run = poolcurl(&args).await;
        assert_eq!(run.code, 0, "{upload}: {}", run.stderr);
        assert_eq!(run.stdout_text(), format!("ok|{LEN}"), "{upload}");
        let done = "* We are completely uploaded and fine\n* Connection #1 to host";
        assert!(run.stderr.contains(done), "{upload}: {}", run.stderr);
        let said = run.stderr.matches("completely uploaded").count();
        assert_eq!(
            said, 1,
            "{upload}: said once, after the answer: {}",
            run.stderr
        );
        let got = peer.await.unwrap();
        assert_eq!(got, LEN, "{upload}: the whole body reached the server");
    }
}

/// An HTTP/2 server that answers before the upload ended and resets the stream with
/// `NO_ERROR`: the upload ends there, and `%{size_upload}` counts what went, not the file.
#[tokio::test(flavor = "multi_thread")]
async fn an_http2_upload_the_server_stops_counts_what_went() {
    const LEN: usize = 4 << 20;
    let peer = pool_tests::h2early::EarlyAnswerPeer::start().await;
    let (_dir, file) = temp_file("h2-stopped-upload", "up.bin", vec![b'x'; LEN]);
    let data = format!("@{}", file.display());
    let url = peer.url("/upload");
    let args = [
        "--http2-prior-knowledge",
        "-w",
        "|%{http_code} %{size_upload}",
        "--data-binary",
        &data,
        &url,
    ];
    let run = poolcurl(&args).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stdout = run.stdout_text();
    let (_, figures) = stdout.split_once('|').expect("the -w line");
    let (status, sent) = figures.split_once(' ').unwrap();
    assert_eq!(status, "413");
    let sent: usize = sent.parse().unwrap();
    assert!(sent < LEN, "the whole file counted as sent");
}

/// A server that answers an upload's head with `413` and reads none of its body (curl's
/// "HTTP error before end of send"): poolcurl stops sending, as curl does, says so under `-v`,
/// closes the connection, and counts in `%{size_upload}` only what went before the stop.
#[tokio::test(flavor = "multi_thread")]
async fn an_upload_refused_part_way_stops_as_curls_does() {
    const LEN: usize = 32 << 20;
    let (drain, drained) = tokio::sync::oneshot::channel::<()>();
    let answer = b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 5\r\n\r\nlarge";
    // Nothing is read until poolcurl has exited: it cannot send more than the socket buffers
    // hold, far less than the file, whenever it reads the answer.
    let read_after = async {
        let _ = drained.await;
    };
    let (url, peer) = answering_early(answer, LEN, read_after).await;
    let (_dir, file) = temp_file("stopped-upload", "up.bin", vec![b'x'; LEN]);
    let data = format!("@{}", file.display());
    let args = [
        "-v",
        "-H",
        "Expect:",
        "-w",
        "|%{size_upload}",
        "--data-binary",
        &data,
        &url,
    ];
    let run = poolcurl(&args).await;
    drain.send(()).unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stdout = run.stdout_text();
    let (body, sent) = stdout.split_once('|').expect("the -w line");
    assert_eq!(body, "large");
    let sent: usize = sent.parse().unwrap();
    assert!(sent < LEN, "all {LEN} bytes counted as sent");
    for line in [
        "* HTTP error before end of send, stop sending\n< \r\n",
        "* Closing connection",
    ] {
        assert!(run.stderr.contains(line), "no {line:?} in {}", run.stderr);
    }
    assert!(
        !run.stderr.contains("completely uploaded"),
        "{}",
        run.stderr
    );
    let got = peer.await.unwrap();
    assert!(
        got <= sent,
        "the server got {got} bytes of the body, more than {sent}"
    );
}

/// `417 Expectation Failed` to an upload that asked for `100 Continue`: as curl does, the
/// same request goes again without `Expect` (counted as a redirect), and `-i` shows both heads.
#[tokio::test(flavor = "multi_thread")]
async fn expectation_failed_sends_the_upload_again_without_asking() {
    let (url, peer) = head_first_peer(2, |head| {
        let refusal = b"HTTP/1.1 417 Expectation Failed\r\ncontent-length: 3\r\n\r\nno\n";
        head.contains("\r\nexpect: 100-continue\r\n")
            .then_some(&refusal[..])
    })
    .await;
    let (_dir, file) = temp_file("expectation-failed", "up.txt", "12345");
    let file = file.to_str().unwrap();
    let write_out = "|%{num_redirects} %{size_upload}";
    let run = poolcurl(&["-v", "-i", "-w", write_out, "-T", file, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        "HTTP/1.1 417 Expectation Failed\r\ncontent-length: 3\r\n\r\n\
         HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\ngot 12345|1 5"
    );
    for said in [
        "* Got 417 while waiting for a 100".to_owned(),
        "* Ignoring the response-body".to_owned(),
        format!("* Issue another request to this URL: '{url}'"),
    ] {
        assert!(run.stderr.contains(&said), "{said:?} in {}", run.stderr);
    }
    let asked = run.stderr.matches("> Expect: 100-continue").count();
    assert_eq!(asked, 1, "{}", run.stderr);
    let after_head = peer.await.unwrap();
    assert_eq!(
        after_head,
        vec![Vec::<u8>::new()],
        "the first body was sent"
    );
}

/// `-v` through a SOCKS proxy names the proxy and what it was asked for, as curl words it (the
/// resolved address with `--socks5` and `--socks4`, the name with `--socks4a`); `load` goes
/// through it too; an origin name that does not resolve for `socks5://` is curl's 97.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_and_load_go_through_a_socks_proxy() {
    let server = serving(Reply::ok("s")).await;
    let proxy = ScriptedSocks::start().await;
    let socks = proxy.addr().to_string();
    let port = server.addr().port();
    let run = poolcurl(&[
        "--no-progress-meter",
        "-v",
        "--socks5",
        &socks,
        &server.url("/"),
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    for line in [
        format!(
            "* Connected to 127.0.0.1 (127.0.0.1) port {}",
            proxy.addr().port()
        ),
        format!(
            "* SOCKS5 connect to IPv4 127.0.0.1:{port} (locally resolved)\n\
             * SOCKS5 request granted.\n> GET / HTTP/1.1"
        ),
    ] {
        assert!(run.stderr.contains(&line), "{line:?} in\n{}", run.stderr);
    }
    for (flag, host, lines) in [
        (
            "--socks4",
            "127.0.0.1",
            "* SOCKS4 connect to IPv4 127.0.0.1 (locally resolved)\n* SOCKS4 request granted.",
        ),
        ("--socks4a", "localhost", "* SOCKS4a request granted."),
    ] {
        let url = format!("http://{host}:{port}/");
        let run = poolcurl(&["--no-progress-meter", "-v", flag, &socks, &url]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let line = format!("* SOCKS4 communication to {host}:{port}\n{lines}\n> GET / HTTP/1.1");
        assert!(run.stderr.contains(&line), "{line:?} in\n{}", run.stderr);
    }
    let run = poolcurl(&[
        "--no-progress-meter",
        "-x",
        &format!("socks5://{socks}"),
        "http://nonexistent.invalid/",
    ])
    .await;
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            97,
            "poolcurl: (97) Could not resolve host: nonexistent.invalid\n"
        )
    );
    let mut load = common::poolcurl_command();
    load.args([
        "load",
        "-n",
        "20",
        "-c",
        "2",
        "--no-progress",
        "-x",
        &format!("socks5h://{socks}"),
        &format!("http://localhost:{port}/"),
    ]);
    let out = tokio::time::timeout(LIMIT, load.output())
        .await
        .expect("in time")
        .expect("ran");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let asked: Vec<String> = proxy
        .requests()
        .into_iter()
        .skip(3)
        .map(|r| r.target)
        .collect();
    assert!(!asked.is_empty());
    assert!(
        asked.iter().all(|t| *t == format!("localhost:{port}")),
        "{asked:?}"
    );
    assert_eq!(
        server.requests().len(),
        23,
        "three runs of one request, then 20"
    );
}

/// `-v` through a `CONNECT` tunnel shows the `CONNECT` as the proxy read it, byte for byte,
/// and the proxy's answer, before the request inside the tunnel; a reused tunnel shows none.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_shows_the_connect_exchange_of_a_new_tunnel() {
    let server = serving(Reply::ok("x")).await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, Some("Basic dTpw")).await;
    let url = server.url("/");
    let run = poolcurl(&[
        "-v",
        "-p",
        "-x",
        &proxy.url(),
        "-U",
        "u:p",
        "--proxy-header",
        "X-For-Proxy: 1",
        &url,
        &url,
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (lines, connect) = verbose_connect(&run.stderr);
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1, "one tunnel for both transfers");
    assert_eq!(connect, requests[0].head.replace("\r\n", "\n"));
    let answer: Vec<&str> = lines
        .iter()
        .skip_while(|l| !l.starts_with("< HTTP/1.1 200 Connection established"))
        .take(4)
        .copied()
        .collect();
    assert_eq!(
        answer,
        [
            "< HTTP/1.1 200 Connection established",
            "< ",
            "* CONNECT phase completed",
            "* CONNECT tunnel established, response 200",
        ]
    );
    let shown = lines.iter().filter(|l| l.starts_with("> CONNECT ")).count();
    assert_eq!(
        shown, 1,
        "the reused tunnel shows no CONNECT:\n{}",
        run.stderr
    );
}

/// `--proxy1.0 HOST:PORT` is `-x` with HTTP/1.0 `CONNECT`s: the proxy reads one (and `-v`
/// shows it as sent), while a forwarded request keeps HTTP/1.1, as with curl.
#[tokio::test(flavor = "multi_thread")]
async fn proxy10_asks_for_tunnels_in_http10() {
    let server = serving(Reply::ok("x")).await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let url = server.url("/");
    let host_port = proxy.url().trim_start_matches("http://").to_owned();
    let run = poolcurl(&["-v", "-p", "--proxy1.0", &host_port, &url]).await;
    assert_eq!(
        (run.code, &run.stdout[..]),
        (0, &b"x"[..]),
        "{}",
        run.stderr
    );
    let run = poolcurl(&["--proxy1.0", &host_port, "http://origin.test/y"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = proxy.requests();
    assert_eq!(
        requests[0].line,
        format!(
            "CONNECT {} HTTP/1.0",
            url.trim_start_matches("http://").trim_end_matches('/')
        )
    );
    assert_eq!(requests[1].line, "GET http://origin.test/y HTTP/1.1");
}

/// `-v`'s stderr as lines without their CR, and the `CONNECT` request among them (the `>`
/// lines from the first `> CONNECT`, without the `> `, each ending in `\n`).
fn verbose_connect(stderr: &str) -> (Vec<&str>, String) {
    let lines: Vec<&str> = stderr.lines().map(|l| l.trim_end_matches('\r')).collect();
    let connect = lines
        .iter()
        .skip_while(|l| !l.starts_with("> CONNECT "))
        .take_while(|l| l.starts_with("> "))
        .map(|l| format!("{}\n", &l[2..]))
        .collect();
    (lines, connect)
}

/// A tunnel the proxy refuses: `-v` shows the `CONNECT` as the proxy read it (with `-A`'s
/// user agent) and the proxy's answer before the error, as curl does.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_shows_a_refused_connect_before_the_error() {
    let proxy = ScriptedProxy::start(ConnectScript::Refuse(407), None).await;
    let run = poolcurl(&[
        "-v",
        "-x",
        &proxy.url(),
        "-A",
        "agent/1",
        "https://refused.test/",
    ])
    .await;
    assert_eq!(run.code, 56, "{}", run.stderr);
    let (lines, connect) = verbose_connect(&run.stderr);
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(connect, requests[0].head.replace("\r\n", "\n"));
    assert!(connect.contains("\nUser-Agent: agent/1\n"), "{connect}");
    let answer: Vec<&str> = lines
        .iter()
        .skip_while(|l| !l.starts_with("< HTTP/1.1 407"))
        .take(4)
        .copied()
        .collect();
    assert_eq!(
        answer,
        [
            "< HTTP/1.1 407 Refused",
            "< content-length: 0",
            "< ",
            "* CONNECT tunnel failed, response 407",
        ],
        "{}",
        run.stderr
    );
}

/// Through a proxy, `-A` is a connection flag across `--next`: a tunnel's `CONNECT` carries
/// it, so a group with another `-A` opens its own tunnel, and one with the same reuses it.
#[tokio::test(flavor = "multi_thread")]
async fn next_groups_with_another_agent_open_their_own_tunnel() {
    let server = serving(Reply::ok("x")).await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let url = server.url("/");
    let proxy_url = proxy.url();
    let group = |agent: &'static str| ["-p", "-x", proxy_url.as_str(), "-A", agent, url.as_str()];
    let mut args = vec!["-s"];
    args.extend(group("one/1"));
    args.push("--next");
    args.extend(group("one/1"));
    args.push("--next");
    args.extend(group("two/2"));
    let run = poolcurl(&args).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "xxx");
    let agents: Vec<String> = proxy
        .requests()
        .iter()
        .map(|r| {
            let line = r.head.lines().find(|l| l.starts_with("User-Agent: "));
            line.unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(agents, ["User-Agent: one/1", "User-Agent: two/2"]);
}

/// `--request-target`: `-v` shows the target sent; one poolcurl cannot send (neither `*` nor
/// starting with `/`, which curl would send as written) is a usage error before any transfer.
#[tokio::test(flavor = "multi_thread")]
async fn request_target_shows_in_verbose_and_a_target_it_cannot_send_is_refused() {
    let server = serving(Reply::ok("x")).await;
    let url = server.url("/ignored");
    let run = poolcurl(&["-sv", "-X", "OPTIONS", "--request-target", "*", &url]).await;
    run.assert_exit(0, "> OPTIONS * HTTP/1.1\r\n");
    let run = poolcurl(&["-sS", "--request-target", "no-slash", &url]).await;
    run.assert_exit(2, "option --request-target: \"no-slash\" cannot be sent");
    assert_eq!(server.accepted(), 1, "the refused target sent nothing");
}

/// An `https://` proxy whose certificate is not trusted: exit 60, and the problem is the
/// proxy's (`%{proxy_ssl_verify_result}` 20, unknown issuer), not the origin's.
/// An `https://` proxy is trusted by its own flags, as in curl: `--proxy-cacert` and
/// `--proxy-insecure` reach it, `--cacert` and `-k` (the origin's) do not; an unreadable
/// `--proxy-cacert` is exit 77 before anything is dialed.
#[tokio::test(flavor = "multi_thread")]
async fn an_https_proxy_takes_its_own_tls_flags_and_not_the_origins() {
    let (pki, dir, ca, _server) = tls_serving("proxy-tls", Reply::ok("unused")).await;
    let proxy = ScriptedProxy::start_tls(ConnectScript::Tunnel, None, pki.server_config(&[])).await;
    let url = proxy.url();
    let through = |flags: &'static [&'static str]| {
        let (url, ca) = (url.clone(), ca.clone());
        async move {
            let mut args: Vec<&str> = flags
                .iter()
                .map(|f| if *f == "CA" { ca.as_str() } else { f })
                .collect();
            args.extend([
                "-s",
                "-x",
                &url,
                "-w",
                " %{proxy_ssl_verify_result}",
                "http://origin.test/",
            ]);
            poolcurl(&args).await
        }
    };
    for flags in [&["--proxy-cacert", "CA"][..], &["--proxy-insecure"][..]] {
        let run = through(flags).await;
        assert_eq!(run.code, 0, "{flags:?}: {}", run.stderr);
        assert_eq!(run.stdout_text(), "via-proxy 0", "{flags:?}");
    }
    for flags in [&["--cacert", "CA"][..], &["-k"][..]] {
        let run = through(flags).await;
        assert_eq!(run.code, 60, "{flags:?}: {}", run.stderr);
        assert_eq!(run.stdout_text(), " 20", "{flags:?}");
    }
    let missing = dir.path().join("absent.pem");
    let run = poolcurl(&[
        "-x",
        &url,
        "--proxy-cacert",
        missing.to_str().unwrap(),
        "http://origin.test/",
    ])
    .await;
    assert_eq!(run.code, 77, "{}", run.stderr);
    assert_eq!(
        proxy.requests().len(),
        2,
        "only the trusted runs reached the proxy"
    );

    // A proxy that asks for a client certificate gets `--proxy-cert`'s, never `--cert`'s.
    let (cert_pem, key_pem) = pki.client_identity_pem();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, cert_pem).unwrap();
    std::fs::write(&key, key_pem).unwrap();
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let asking = ScriptedProxy::start_tls(
        ConnectScript::Tunnel,
        None,
        pki.server_config_with_client_auth(&[]),
    )
    .await;
    let url = asking.url();
    let with = |identity: [&'static str; 2]| {
        let mut args = vec!["-s", "--proxy-cacert", &ca, "-x", &url];
        args.extend([identity[0], cert, identity[1], key, "http://origin.test/"]);
        args
    };
    let run = poolcurl(&with(["--proxy-cert", "--proxy-key"])).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "via-proxy");
    let run = poolcurl(&with(["--cert", "--key"])).await;
    assert_ne!(run.code, 0, "the origin's certificate is not the proxy's");
    assert_eq!(asking.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_https_proxy_is_the_proxys_certificate_problem() {
    let pki = TestPki::new();
    let proxy = ScriptedProxy::start_tls(ConnectScript::Tunnel, None, pki.server_config(&[])).await;
    let run = poolcurl(&[
        "-s",
        "-x",
        &proxy.url(),
        "-w",
        "%{proxy_ssl_verify_result} %{ssl_verify_result}",
        "https://origin.test/",
    ])
    .await;
    assert_eq!(run.code, 60, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "20 0");
}

/// `%{http_connect}`: the proxy's answer to the CONNECT this transfer opened; `000` for a
/// transfer that reused the tunnel, and the refusal's status when the proxy refused.
#[tokio::test(flavor = "multi_thread")]
async fn http_connect_is_the_proxys_answer_to_this_transfers_tunnel() {
    let server = serving(Reply::ok("x")).await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let url = server.url("/");
    let run = poolcurl(&[
        "-s",
        "-p",
        "-x",
        &proxy.url(),
        "-w",
        " %{http_connect}",
        &url,
        &url,
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "x 200x 000");
    let refusing = ScriptedProxy::start(ConnectScript::Refuse(403), None).await;
    let run = poolcurl(&[
        "-s",
        "-p",
        "-x",
        &refusing.url(),
        "-w",
        "%{http_connect}",
        &url,
    ])
    .await;
    assert_eq!(run.code, 56, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "403");
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_spaces_the_starts_of_transfers() {
    let server = serving(Reply::ok("x")).await;
    let url = server.url("/");
    let started = std::time::Instant::now();
    // 20 per second: the third transfer cannot start before 100 ms have passed. (A lower
    // bound only: a slow machine makes the run longer, never shorter.)
    let run = poolcurl(&["-s", "--rate", "20/s", &url, &url, &url]).await;
    let elapsed = started.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "xxx");
    assert!(
        elapsed >= std::time::Duration::from_millis(100),
        "{elapsed:?}"
    );
    let run = poolcurl(&["-s", "--rate", "0", &url]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_time_gives_the_file_the_last_modified_time() {
    let modified = "Wed, 21 Oct 2015 07:28:00 GMT";
    let server = serving(Reply::ok("dated").header("last-modified", modified)).await;
    let dir = TempDir::new("poolcurl-remote-time");
    let file = dir.path().join("out");
    let url = server.url("/");
    let run = poolcurl(&["-s", "-R", "-o", file.to_str().unwrap(), &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let time = std::fs::metadata(&file).unwrap().modified().unwrap();
    let since_epoch = time.duration_since(std::time::UNIX_EPOCH).unwrap();
    // 2015-10-21T07:28:00Z.
    assert_eq!(since_epoch.as_secs(), 1_445_412_480);
    // Without -R the file keeps the time it was written.
    let run = poolcurl(&["-s", "-o", file.to_str().unwrap(), &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let time = std::fs::metadata(&file).unwrap().modified().unwrap();
    assert!(
        time.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            > 1_445_412_480
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_head_method_warns_as_curl_does() {
    let server = serving(Reply::ok("hello")).await;
    let warning = "Warning: Setting custom HTTP method to HEAD with -X/--request may not work \
                   the \nWarning: way you want. Consider using -I/--head instead.\n";
    let run = poolcurl(&["--no-progress-meter", "-X", "HEAD", &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, warning);
    assert!(run.stdout.is_empty(), "no body: {:?}", run.stdout_text());
    assert_eq!(server.requests()[0].method, http::Method::HEAD);

    let run = poolcurl(&["--no-progress-meter", "-s", "-X", "head", &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.is_empty(), "-s keeps it quiet: {}", run.stderr);

    let run = poolcurl(&["--no-progress-meter", "-I", "-X", "HEAD", &server.url("/")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.is_empty(), "-I needs no hint: {}", run.stderr);
    assert!(run.stdout_text().starts_with("HTTP/1.1 200 OK\r\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn same_origin_urls_share_one_connection() {
    let server = serving(Reply::new(200)).await;
    let url = server.url("/");
    let run = poolcurl(&[&url, &url, &url, "-w", "%{num_connects} "]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "1 0 0 ");
    assert_eq!(server.accepted(), 1);

    let run = poolcurl(&[&url, &url, &url, "-w", "%{conn_id} %{conn_reused}\\n"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<(String, String)> = run
        .stdout_text()
        .lines()
        .map(|l| {
            let (id, reused) = l.split_once(' ').expect("two fields");
            (id.to_owned(), reused.to_owned())
        })
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].0.parse::<u64>().is_ok(), "{lines:?}");
    assert!(lines.iter().all(|(id, _)| *id == lines[0].0), "{lines:?}");
    let reused: Vec<&str> = lines.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(reused, ["0", "1", "1"]);
    assert_eq!(server.accepted(), 2, "one connection per invocation");
}

#[tokio::test(flavor = "multi_thread")]
async fn next_groups_share_a_pool_only_with_the_same_connection_flags() {
    let server = serving(Reply::new(200)).await;
    let url = server.url("/");
    let w = "%{num_connects} ";
    // Request flags differ (-d, -H): one pool, one connection.
    let run = poolcurl(&[
        "-w", w, &url, "--next", "-w", w, "-d", "x", &url, "--next", "-w", w, "-H", "A: 1", &url,
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "1 0 0 ");
    assert_eq!(server.accepted(), 1);
    // A connection flag differs (-k): the second group has a pool of its own.
    let run = poolcurl(&["-w", w, &url, "--next", "-k", "-w", w, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "1 1 ");
    assert_eq!(server.accepted(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn verbose_names_the_new_and_the_reused_connection() {
    let server = serving(Reply::ok("x")).await;
    let url = server.url("/");
    let run = poolcurl(&["-v", &url, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let connected = run
        .stderr
        .find("* Connected to 127.0.0.1 (127.0.0.1) port ")
        .expect("Connected to line");
    let reused = run
        .stderr
        .find("* Re-using existing connection #")
        .expect("Re-using line");
    assert!(connected < reused, "{}", run.stderr);
    assert!(run.stderr.contains("(partition anonymous, connection #"));
    assert!(run.stderr.contains("> GET / HTTP/1.1\r\n"));
    assert!(run.stderr.contains("> User-Agent: poolcurl/"));
    assert!(run.stderr.contains("< HTTP/1.1 200 OK\r\n"));
    assert!(run.stderr.contains("left intact"));
    assert_eq!(run.stdout, b"xx");
}

#[tokio::test(flavor = "multi_thread")]
async fn private_ca_needs_cacert_or_insecure() {
    let (_pki, _dir, ca, server) = tls_serving("poolcurl-ca", Reply::ok("secret")).await;
    let ca = ca.as_str();
    let url = server.url("/");
    assert!(url.starts_with("https://localhost:"), "{url}");

    let run = poolcurl(&["--no-progress-meter", &url]).await;
    assert_eq!(run.code, 60, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("poolcurl: (60) SSL certificate problem: "),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());

    let run = poolcurl(&[
        "--no-progress-meter",
        "--cacert",
        ca,
        &url,
        "-w",
        " %{http_version} %{time_appconnect}",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.stdout_text();
    assert!(out.starts_with("secret 1.1 "), "{out}");
    assert_ne!(
        out.rsplit(' ').next(),
        Some("0.000000"),
        "TLS took time: {out}"
    );

    let run = poolcurl(&["--no-progress-meter", "-k", &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, b"secret");
}

/// `--tls-max 1.2` and `--tlsv1.3` bound the TLS version the connection negotiates (as `-v`
/// shows it); bounds no TLS connection can meet fail `https://` transfers with exit 35.
#[tokio::test(flavor = "multi_thread")]
async fn tls_version_flags_bound_the_negotiated_version() {
    let (_pki, _dir, ca, server) = tls_serving("poolcurl-tls-versions", Reply::ok("x")).await;
    let ca = ca.as_str();
    let url = server.url("/");
    for (flags, version) in [
        (&["--tls-max", "1.2"][..], "TLSv1.2"),
        (&["--tlsv1.3"][..], "TLSv1.3"),
    ] {
        let mut args = vec!["-sv", "--cacert", ca, url.as_str()];
        args.extend_from_slice(flags);
        let run = poolcurl(&args).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let shown = format!("* SSL connection using {version} / ");
        assert!(run.stderr.contains(&shown), "{flags:?}: {}", run.stderr);
    }
    let accepted = server.accepted();
    for flags in [
        &["--tls-max", "1.1"][..],
        &["--tlsv1.3", "--tls-max", "1.2"][..],
    ] {
        let mut args = vec!["-sS", "--cacert", ca, url.as_str()];
        args.extend_from_slice(flags);
        let run = poolcurl(&args).await;
        assert_eq!(run.code, 35, "{flags:?}: {}", run.stderr);
    }
    assert_eq!(server.accepted(), accepted, "nothing was dialed");
}

/// `--capath`: the certificates of a directory's OpenSSL hash links (`HASH.N`) are trusted,
/// and no other file there, as OpenSSL looks them up; a hash link that looks like a
/// certificate but is not one is exit 77.
#[tokio::test(flavor = "multi_thread")]
async fn capath_trusts_the_certificates_of_a_directory() {
    let (_pki, dir, ca, server) = tls_serving("poolcurl-capath", Reply::ok("trusted")).await;
    std::fs::write(dir.path().join("README"), "not a certificate\n").unwrap();
    let url = server.url("/");
    let capath = dir.path().to_str().unwrap();
    // The CA as a plain file only: OpenSSL would not find it.
    let run = poolcurl(&["-sS", "--capath", capath, &url]).await;
    assert_eq!(run.code, 60, "{}", run.stderr);
    std::fs::copy(&ca, dir.path().join("0123abcd.0")).unwrap();
    let run = poolcurl(&["-sS", "--capath", capath, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "trusted");
    let empty = TempDir::new("poolcurl-capath-empty");
    let run = poolcurl(&["-sS", "--capath", empty.path().to_str().unwrap(), &url]).await;
    assert_eq!(run.code, 60, "{}", run.stderr);
    let broken = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
    std::fs::write(dir.path().join("broken.pem"), broken).unwrap();
    let run = poolcurl(&["-sS", "--capath", capath, &url]).await;
    assert_eq!(
        run.code, 0,
        "a file that is no hash link is not read: {}",
        run.stderr
    );
    std::fs::write(dir.path().join("0123abcd.1"), broken).unwrap();
    let run = poolcurl(&["-sS", "--capath", capath, &url]).await;
    assert_eq!(run.code, 77, "{}", run.stderr);
}

/// `--crlfile`: a CRL of the CA that revokes the server's certificate makes it exit 60 with
/// `%{ssl_verify_result}` 23; one that revokes nothing changes nothing; an unusable file is
/// curl's exit 82.
#[tokio::test(flavor = "multi_thread")]
async fn crlfile_rejects_a_revoked_server_certificate() {
    let (pki, dir, ca, server) = tls_serving("poolcurl-crl", Reply::ok("x")).await;
    let ca = ca.as_str();
    let revoking = dir.path().join("revoking.crl");
    std::fs::write(&revoking, pki.crl_pem(true)).unwrap();
    let empty = dir.path().join("empty.crl");
    std::fs::write(&empty, pki.crl_pem(false)).unwrap();
    let url = server.url("/");
    let with_crl = |crl: &std::path::Path| {
        let crl = crl.to_str().unwrap().to_owned();
        let url = url.clone();
        let ca = ca.to_owned();
        async move {
            poolcurl(&[
                "-sS",
                "--cacert",
                &ca,
                "--crlfile",
                &crl,
                "-w",
                " %{ssl_verify_result}",
                &url,
            ])
            .await
        }
    };
    let run = with_crl(&revoking).await;
    assert_eq!(run.code, 60, "{}", run.stderr);
    assert_eq!(run.stdout_text(), " 23");
    assert!(run.stderr.contains("certificate revoked"), "{}", run.stderr);
    let run = with_crl(&empty).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "x 0");
    let run = with_crl(std::path::Path::new(ca)).await;
    assert_eq!(run.code, 82, "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn http2_prior_knowledge_speaks_h2c() {
    let server = ScriptedH2Server::start_with(StreamPlan::status(200)).await;
    let url = format!("http://127.0.0.1:{}/", server.addr().port());
    let run = poolcurl(&["--http2-prior-knowledge", &url, "-w", "%{http_version}"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "2");
    assert_eq!(server.streams_accepted(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn alpn_h2_over_tls_is_shared_by_several_urls() {
    let pki = TestPki::new();
    let dir = TempDir::new("poolcurl-h2");
    let ca = pki.write_ca_pem(dir.path()).unwrap();
    let server = ScriptedH2Server::builder()
        .tls(pki.server_config(&[b"h2"]))
        .default_stream(StreamPlan::status(200))
        .start()
        .await;
    let url = server.url("/");
    let run = poolcurl(&[
        "-v",
        "--cacert",
        ca.to_str().unwrap(),
        &url,
        &url,
        "-w",
        "%{http_version}\\n",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "2\n2\n");
    assert_eq!(server.accepted(), 1);
    assert_eq!(server.streams_accepted(), 2);
    assert!(
        run.stderr.contains("* ALPN: server accepted h2"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("* SSL connection using TLSv1."),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("> GET / HTTP/2"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn http2_flag_over_cleartext_uses_http1_and_says_so() {
    let server = serving(Reply::ok("plain")).await;
    let run = poolcurl(&["--http2", "-v", &server.url("/"), "-w", " %{http_version}"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "plain 1.1");
    assert!(
        run.stderr.contains("--http2 over cleartext"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn url_errors_exit_3_and_1() {
    let run = poolcurl(&["-g", "http://[::1"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (3) URL using bad/illegal format or missing URL\n"
    );
    // Globbing on, the unclosed bracket is a range that does not parse, as curl reads it.
    let run = poolcurl(&["http://[::1"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (3) bad range specification in URL position 9:\nhttp://[::1\n        ^\n"
    );
    let run = poolcurl(&["ftp://x/"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (1) Protocol \"ftp\" not supported or disabled in libcurl\n"
    );
    // A port that does not fit in 16 bits is a bad URL, not a request to port 80.
    let run = poolcurl(&["http://127.0.0.1:99999/"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
}

/// curl sends `<`, `>` and `` ` `` in a URL's path and query as typed; `http::Uri` takes none
/// of them, so poolcurl sends them percent-encoded rather than refusing the URL.
#[tokio::test(flavor = "multi_thread")]
async fn a_url_with_angle_brackets_goes_percent_encoded() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("ok"))).await;
    let run = poolcurl(&["-s", &server.url("/a<b>?q=`x`")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "ok");
    assert_eq!(server.requests()[0].target, "/a%3cb%3e?q=%60x%60");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_port_exits_7() {
    let refused = RefusedAddr::new();
    let port = refused.port();
    let run = poolcurl(&[
        "--no-progress-meter",
        &format!("http://127.0.0.1:{port}/"),
        "-w",
        "%{http_code}",
    ])
    .await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "poolcurl: (7) Failed to connect to 127.0.0.1 port {port} after "
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.ends_with("ms: Couldn't connect to server\n"));
    assert_eq!(run.stdout_text(), "000");

    // `-v` ends as curl's does: the address tried and why it failed, the message, the close.
    let run = poolcurl(&["-sv", &format!("http://127.0.0.1:{port}/")]).await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stderr);
    assert_eq!(lines[0], format!("*   Trying 127.0.0.1:{port}..."));
    assert_eq!(
        lines[1],
        format!("* connect to 127.0.0.1 port {port} failed: Connection refused")
    );
    assert!(
        lines[2].starts_with(&format!(
            "* Failed to connect to 127.0.0.1 port {port} after "
        )),
        "{}",
        run.stderr
    );
    assert_eq!(lines[3], "* Closing connection");
}

/// A TLS handshake that fails says, as curl's `-v` does, where the connection went and what
/// ALPN offered before the error.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_shows_the_connection_a_failed_handshake_was_on() {
    let pki = TestPki::new();
    let server = ScriptedH2Server::builder()
        .tls(pki.server_config(&[b"h2"]))
        .default_stream(StreamPlan::status(200))
        .start()
        .await;
    let port = server.addr().port();
    // The run's CA is not trusted by the system: the certificate check fails.
    let run = poolcurl(&["-sv", &format!("https://localhost:{port}/")]).await;
    assert_eq!(run.code, 60, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().take(5).collect();
    assert_eq!(
        lines,
        [
            format!("*   Trying 127.0.0.1:{port}...").as_str(),
            &format!("* Connected to localhost (127.0.0.1) port {port}"),
            "* ALPN: poolcurl offers h2,http/1.1",
            "* SSL certificate problem: unable to get local issuer certificate",
            "* Closing connection",
        ],
        "{}",
        run.stderr
    );
}

/// A response `-f` refuses ends `-v`'s trace with curl's message before the close.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_ends_a_refused_response_with_the_reason() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::new(404))).await;
    let run = poolcurl(&["-sfv", &server.url("/gone")]).await;
    assert_eq!(run.code, 22, "{}", run.stderr);
    assert!(
        run.stderr
            .ends_with("* The requested URL returned error: 404\n* Closing connection 1\n"),
        "{}",
        run.stderr
    );
}

/// `--connect-to` moves the socket only: TLS still verifies the URL's host and `Host` names
/// it, `-v` says where the connection went, and a failed dial names the target dialed.
#[tokio::test(flavor = "multi_thread")]
async fn connect_to_keeps_tls_on_the_url_host_and_names_the_dial_target() {
    let pki = TestPki::new();
    let dir = TempDir::new("poolcurl-connect-to");
    let ca = pki.write_ca_pem(dir.path()).unwrap();
    let server = ScriptedH1Server::builder()
        .tls(pki.server_config(&[b"http/1.1"]))
        .default_plan(ConnPlan::serve_forever(Reply::ok("moved")))
        .start()
        .await;
    let port = server.addr().port();
    let rule = format!("localhost:1:127.0.0.1:{port}");
    let run = poolcurl(&[
        "--no-progress-meter",
        "-v",
        "--cacert",
        ca.to_str().unwrap(),
        "--connect-to",
        &rule,
        "https://localhost:1/",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, b"moved");
    assert!(
        run.stderr.starts_with(&format!(
            "* Connecting to hostname: 127.0.0.1\n* Connecting to port: {port}\n\
             *   Trying 127.0.0.1:{port}...\n* Connected to localhost (127.0.0.1) port {port} "
        )),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests()[0].host(), Some("localhost:1"));

    let refused = RefusedAddr::new();
    let rule = format!("a.test:80:127.0.0.1:{}", refused.port());
    let run = poolcurl(&[
        "--no-progress-meter",
        "--connect-to",
        &rule,
        "http://a.test/",
    ])
    .await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    let expected = format!(
        "poolcurl: (7) Failed to connect to 127.0.0.1 port {} after ",
        refused.port()
    );
    assert!(run.stderr.starts_with(&expected), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn unresolvable_names_exit_6_and_resolve_overrides_them() {
    let run = poolcurl(&["--no-progress-meter", "http://nonexistent.invalid/"]).await;
    assert_eq!(run.code, 6, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (6) Could not resolve host: nonexistent.invalid\n"
    );

    let server = serving(Reply::ok("resolved")).await;
    let port = server.addr().port();
    let run = poolcurl(&[
        "--no-progress-meter",
        "--resolve",
        &format!("nonexistent.invalid:{port}:127.0.0.1"),
        &format!("http://nonexistent.invalid:{port}/"),
        "-w",
        " %{remote_ip}",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "resolved 127.0.0.1");
    assert_eq!(
        server.requests()[0].host(),
        Some(format!("nonexistent.invalid:{port}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fail_on_404_exits_22_without_output() {
    let server = serving(Reply::new(404).body("not here")).await;
    let run = poolcurl(&[
        "--no-progress-meter",
        "-f",
        &server.url("/missing"),
        "-w",
        "%{http_code}",
    ])
    .await;
    assert_eq!(run.code, 22, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "404");
    assert_eq!(
        run.stderr,
        "poolcurl: (22) The requested URL returned error: 404\n"
    );

    let run = poolcurl(&["--no-progress-meter", "-s", "-f", &server.url("/missing")]).await;
    assert_eq!((run.code, run.stderr.as_str()), (22, ""));
    let run = poolcurl(&["--no-progress-meter", "-sS", "-f", &server.url("/missing")]).await;
    assert_eq!(run.code, 22);
    assert!(run.stderr.contains("(22)"));

    let run = poolcurl(&["--no-progress-meter", &server.url("/missing")]).await;
    assert_eq!(run.code, 0, "without -f an error status is a success");
    assert_eq!(run.stdout, b"not here");
}

/// `--limit-rate` holds a body to its average rate: 2048 bytes at 4K take half a second at
/// least (a lower bound only; a slow machine makes it longer, never shorter).
#[tokio::test(flavor = "multi_thread")]
async fn limit_rate_paces_the_body() {
    let server = serving(Reply::ok(vec![b'x'; 2048])).await;
    let started = std::time::Instant::now();
    let run = poolcurl(&[
        "-s",
        "--limit-rate",
        "4K",
        "-w",
        "%{size_download}",
        &server.url("/"),
    ])
    .await;
    let elapsed = started.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout_text().ends_with("2048"), "{}", run.stdout_text());
    assert!(
        elapsed >= std::time::Duration::from_millis(500),
        "{elapsed:?}"
    );
}

/// `--limit-rate` paces a `-T` upload too: 2048 bytes at 4K, in blocks of 409, go out over
/// 0.4 s at least (the last block once 1,636 bytes are due); the server gets every byte.
#[tokio::test(flavor = "multi_thread")]
async fn limit_rate_paces_an_upload() {
    let server = serving(Reply::ok("stored")).await;
    let (_dir, file) = temp_file("limit-upload", "up.bin", vec![b'u'; 2048]);
    let started = std::time::Instant::now();
    let run = poolcurl(&[
        "-s",
        "--limit-rate",
        "4K",
        "-T",
        file.to_str().unwrap(),
        &server.url("/"),
    ])
    .await;
    let elapsed = started.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "stored");
    let received = server.requests();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body.len(), 2048);
    assert!(
        elapsed >= std::time::Duration::from_millis(399),
        "{elapsed:?}"
    );
}

/// `-Y`/`-y`: a body that stalls, and a head that never comes, abort with curl's exit 28 once
/// a window has brought less than the limit; what arrived stays written.
#[tokio::test(flavor = "multi_thread")]
async fn speed_limit_aborts_a_stalled_transfer() {
    let never = Gate::new();
    let stalls = serving(Reply::ok_split("begun", never.clone(), "never")).await;
    let run = poolcurl(&["-sS", "-Y", "100", "-y", "1", &stalls.url("/")]).await;
    assert_eq!(run.code, 28, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (28) Operation too slow. Less than 100 bytes/sec transferred the last 1 seconds\n"
    );
    assert_eq!(run.stdout_text(), "begun");
    let silent = serving(Reply::ok("late").gate(never.clone())).await;
    let run = poolcurl(&["-sS", "-y", "1", &silent.url("/")]).await;
    assert_eq!(run.code, 28, "{}", run.stderr);
    assert!(run.stdout.is_empty());
    drop(never);
}

#[tokio::test(flavor = "multi_thread")]
async fn max_time_bounds_the_whole_transfer() {
    let never = Gate::new();
    let server = serving(Reply::ok("late").gate(never.clone())).await;
    let run = poolcurl(&["--no-progress-meter", "-m", "0.3", &server.url("/")]).await;
    assert_eq!(run.code, 28, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("poolcurl: (28) Operation timed out after "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .ends_with(" milliseconds with 0 bytes received\n")
    );
    // A body of announced length that stalls: what came of how much, as curl says it.
    let stalls = serving(Reply::ok_split("begun", never.clone(), "never")).await;
    let run = poolcurl(&["-sS", "-m", "0.3", &stalls.url("/")]).await;
    assert_eq!(run.code, 28, "{}", run.stderr);
    assert!(
        run.stderr
            .ends_with(" milliseconds with 5 out of 10 bytes received\n"),
        "{}",
        run.stderr
    );
    drop(never);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_reply_exits_52() {
    let server = ScriptedH1Server::start_with(ConnPlan::new().read_request().close()).await;
    let run = poolcurl(&["--no-progress-meter", &server.url("/")]).await;
    assert_eq!(run.code, 52, "{}", run.stderr);
    assert_eq!(run.stderr, "poolcurl: (52) Empty reply from server\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_flag_is_a_usage_error() {
    let run = poolcurl(&["--no-such-flag", "http://127.0.0.1/"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: option --no-such-flag: is unknown\n\
         poolcurl: try 'poolcurl --help' for more information\n"
    );
    let run = poolcurl(&["http://127.0.0.1/", "-X"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("poolcurl: option -X: requires parameter\n"),
        "{}",
        run.stderr
    );
    // A blank value where a file or name is needed: curl 8.6's words, the option as typed.
    // Names as well as files: as in curl 8.x, whose --interface, --dns-servers and
    // --request-target deny a blank too.
    for flag in ["-c", "--interface", "--dns-servers", "--request-target"] {
        let run = poolcurl(&[flag, "", "http://127.0.0.1/"]).await;
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert_eq!(
            run.stderr,
            format!(
                "poolcurl: option {flag}: blank argument where content is expected\n\
                 poolcurl: try 'poolcurl --help' for more information\n"
            )
        );
    }
    // No arguments at all (and no ~/.curlrc in the test's home): curl's hint alone.
    let run = poolcurl(&[]).await;
    assert_eq!(run.code, 2, "a URL is required");
    assert_eq!(
        run.stderr,
        "poolcurl: try 'poolcurl --help' for more information\n"
    );
    let run = poolcurl(&["-s"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("poolcurl: no URL specified!\n"),
        "{}",
        run.stderr
    );
}

/// `--digest`: the first request carries no credentials and no data (`Content-Length: 0`),
/// the challenge is answered on the same connection with the data, and `-v` says so.
#[tokio::test(flavor = "multi_thread")]
async fn digest_answers_the_challenge_once_on_the_same_connection() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_with(|req| {
        common::digest_reply(req, Reply::ok("in"))
    }))
    .await;
    let credentials = format!("alice:{}", common::DIGEST_PASSWORD);
    let run = poolcurl(&[
        "-v",
        "--digest",
        "-u",
        &credentials,
        "-d",
        "hello",
        &server.url("/secret"),
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "in");
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (
            seen[0].header("authorization"),
            seen[0].header("content-length")
        ),
        (None, Some("0"))
    );
    assert!(seen[0].body.is_empty());
    let form = Some("application/x-www-form-urlencoded");
    assert_eq!(
        (
            seen[0].header("content-type"),
            seen[1].header("content-type")
        ),
        (form, form)
    );
    assert!(
        seen[1]
            .header("authorization")
            .is_some_and(|a| a.starts_with("Digest username=\"alice\""))
    );
    assert_eq!(&seen[1].body[..], b"hello");
    assert_eq!(
        seen[0].conn_id, seen[1].conn_id,
        "the challenge's connection is reused"
    );
    for line in [
        "* Server auth using Digest with user 'alice'",
        "* Ignoring the response-body",
        "* Issue another request to this URL: '",
    ] {
        assert!(run.stderr.contains(line), "{line}: {}", run.stderr);
    }
}

/// `--local-port`: the connection's local port comes from the range; a range whose only port
/// is taken is exit 45 with the bind's error in curl's words, and a malformed range exit 2.
#[tokio::test(flavor = "multi_thread")]
async fn local_port_binds_within_the_range_or_exits_45() {
    let server = serving(Reply::ok("p")).await;
    let url = server.url("/");
    let run = poolcurl(&["--local-port", "43000-43999", "-w", " %{local_port}", &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let port: u16 = run.stdout_text()[2..].parse().unwrap();
    assert!((43000..=43999).contains(&port), "{port}");

    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = held.local_addr().unwrap().port().to_string();
    let run = poolcurl(&["-sS", "--local-port", &taken, &url]).await;
    assert_eq!(run.code, 45, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (45) bind failed with errno 98: Address already in use\n"
    );
    let run = poolcurl(&["--local-port", "9-3", &url]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        server.requests().len(),
        1,
        "only the first run reached the server"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deliberately_unsupported_flags_say_why() {
    let run = poolcurl(&["--negotiate", "-u", "a:b", "http://127.0.0.1/"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: option --negotiate: is not supported by poolcurl (Basic (-u), Digest \
         (--digest) and NTLM (--ntlm) authentication only)\n\
         poolcurl: try 'poolcurl --help' for more information\n"
    );
    let help = poolcurl(&["--help"]).await;
    assert_eq!(help.code, 0);
    assert!(
        help.stdout_text()
            .contains("Not supported (using one exits 2")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn config_files_add_options_and_urls() {
    let server = serving(Reply::ok("configured")).await;
    let dir = TempDir::new("poolcurl-config");
    let file = dir.path().join("poolcurl.cfg");
    std::fs::write(
        &file,
        format!(
            "# a comment\nsilent\nwrite-out = \" %{{http_code}}\"\nurl = \"{}\"\n",
            server.url("/k")
        ),
    )
    .unwrap();
    let run = poolcurl(&["-K", file.to_str().unwrap()]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "configured 200");
    let run = poolcurl(&["-K", "/nonexistent/poolcurl.cfg", &server.url("/")]).await;
    assert_eq!(run.code, 26, "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_transfers_share_one_pool() {
    let server = serving(Reply::ok("p")).await;
    let url = server.url("/[1-4]");
    let run = poolcurl(&[
        "-Z",
        "--parallel-max",
        "2",
        &url,
        "-w",
        "|%{urlnum}:%{url}\n",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut done: Vec<String> = run
        .stdout_text()
        .lines()
        .filter_map(|line| line.split_once('|').map(|(_, done)| done.to_owned()))
        .collect();
    done.sort();
    // Every transfer of the glob ran once; they share their URL's %{urlnum}, as in curl.
    let expected: Vec<String> = (1..=4)
        .map(|n| format!("0:{}", server.url(&format!("/{n}"))))
        .collect();
    assert_eq!(done, expected);
    assert!(
        server.accepted() <= 2,
        "at most two connections at once, reused"
    );
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(targets.len(), 4);
}

/// An IPv6 zone id (`[::1%25lo]`, or `%` alone, or the interface's number): the URL's host
/// is the address (in `Host`), the connection goes to it with the zone's scope, and
/// `%{url_effective}` shows the zone as curl does. Skipped where IPv6 is not available.
#[tokio::test(flavor = "multi_thread")]
async fn an_ipv6_zone_id_is_dialed_and_left_out_of_host() {
    let Ok(server) = ScriptedH1Server::builder()
        .bind_addr((std::net::Ipv6Addr::LOCALHOST, 0).into())
        .default_plan(ConnPlan::serve_forever(Reply::ok("zoned")))
        .try_start()
        .await
    else {
        eprintln!("skipped: no IPv6 loopback to bind");
        return;
    };
    let port = server.addr().port();
    for zone in ["%25lo", "%lo"] {
        let url = format!("http://[::1{zone}]:{port}/z");
        let run = poolcurl(&["-s", &url, "-w", " %{url_effective}"]).await;
        assert_eq!(run.code, 0, "{url}: {}", run.stderr);
        assert_eq!(
            run.stdout_text(),
            format!("zoned http://[::1%25lo]:{port}/z")
        );
    }
    let hosts: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|r| r.host().map(str::to_owned))
        .collect();
    assert_eq!(hosts, [format!("[::1]:{port}"), format!("[::1]:{port}")]);
}

/// `-V` prints curl's four lines (what it is, the release date, the protocols and the
/// features), so that scripts reading `curl -V` read poolcurl's too; a URL beside it is not
/// fetched.
#[tokio::test(flavor = "multi_thread")]
async fn version_prints_what_curl_prints() {
    let run = poolcurl(&["-V", "http://127.0.0.1:1/"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = run.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].starts_with(concat!("poolcurl ", env!("CARGO_PKG_VERSION"), " (")),
        "{text}"
    );
    assert_eq!(lines[1], "Release-Date: [unreleased]");
    assert_eq!(lines[2], "Protocols: http https");
    let features: Vec<&str> = lines[3]
        .strip_prefix("Features: ")
        .unwrap()
        .split(' ')
        .collect();
    for feature in [
        "HTTP2",
        "HTTPS-proxy",
        "UnixSockets",
        "libz",
        "brotli",
        "zstd",
    ] {
        assert!(features.contains(&feature), "{feature} in {text}");
    }
}

/// `-v` says what curl says around a connection: the address it tries, an HTTP/1.0 answer's
/// "assume close" (and a keep-alive one's), a redirect to another port that clears
/// credentials, and the closing connection's number without `#`.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_notes_the_dial_http10_and_port_changes_as_curl_does() {
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_with(|req| match req.target.as_str() {
            "/old" => Reply::raw("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold"),
            "/kept" => Reply::raw(
                "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 4\r\n\r\nkept",
            ),
            _ => Reply::ok("new"),
        }))
        .await;
    let port = server.addr().port();
    let run = poolcurl(&["-sv", &server.url("/old")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let infos: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(infos[0], format!("*   Trying 127.0.0.1:{port}..."));
    assert!(
        infos[1].starts_with("* Connected to 127.0.0.1 "),
        "{infos:?}"
    );
    assert_eq!(
        infos[2..],
        [
            "* HTTP 1.0, assume close after body",
            "* Closing connection 1"
        ]
    );
    let note = run.stderr.find("* HTTP 1.0").unwrap();
    assert!(
        note < run.stderr.find("< HTTP/1.0 200 OK").unwrap(),
        "before the status line"
    );

    let run = poolcurl(&["-sv", &server.url("/kept")]).await;
    assert!(
        run.stderr
            .contains("* HTTP/1.0 connection set to keep alive\n< Connection: Keep-Alive"),
        "{}",
        run.stderr
    );

    let refused = RefusedAddr::new();
    let moved = ScriptedH1Server::start_with(ConnPlan::serve_forever(
        Reply::new(302).header("location", &format!("http://127.0.0.1:{}/", refused.port())),
    ))
    .await;
    let run = poolcurl(&["-sv", "-L", &moved.url("/")]).await;
    let note = format!(
        "* Clear auth, redirects to port from {} to {}\n* Issue another request",
        moved.addr().port(),
        refused.port()
    );
    assert!(run.stderr.contains(&note), "{}", run.stderr);
}

/// curl's progress meter: with the output not on a terminal (a pipe here), the two header lines,
/// a line of zeros when the transfer starts, and each request's last line with a line break
/// (a followed redirect ends one); the line is one `\r` redraw of fixed columns. Nothing with
/// `-s` or `--no-progress-meter`; `-#` draws its bar instead, `-Z` one meter for the run.
#[tokio::test(flavor = "multi_thread")]
async fn the_progress_meter_is_drawn_as_curl_draws_it() {
    const HEADER: &str = "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  \
                          Current\n                                 Dload  Upload   Total   \
                          Spent    Left  Speed\n";
    const ZEROS: &str =
        "\r  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0";
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_with(|req| match req.target.as_str() {
            "/moved" => Reply::new(302).header("location", "/body"),
            "/busy" => Reply::new(503).header("retry-after", "0").body("busy\n"),
            _ => Reply::ok("hello\n"),
        }))
        .await;
    let url = server.url("/body");
    let run = poolcurl(&[&url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, b"hello\n");
    let rest = run
        .stderr
        .strip_prefix(&format!("{HEADER}{ZEROS}"))
        .unwrap_or_else(|| panic!("header and zeros first: {:?}", run.stderr));
    // The last line: 6 of 6 bytes received, none sent, times unknown for so short a transfer.
    let last = rest.rsplit('\r').next().unwrap();
    assert!(
        last.starts_with("100     6  100     6    0     0 "),
        "{last:?}"
    );
    assert!(
        last.ends_with('\n') && last.len() == ZEROS.len(),
        "{last:?}"
    );

    // A redirect ends its request's line; the next request's follows on a line of its own.
    let run = poolcurl(&["-L", &server.url("/moved")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.strip_prefix(HEADER).unwrap().lines().collect();
    assert_eq!(lines.len(), 2, "{:?}", run.stderr);
    assert!(
        lines[1].starts_with("\r100     6  100     6 "),
        "{:?}",
        run.stderr
    );

    // A retry draws a meter of its own under the transfer's one header, after the warning.
    let run = poolcurl(&["--retry", "1", &server.url("/busy")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr.matches("% Total").count(), 1, "{:?}", run.stderr);
    assert_eq!(run.stderr.matches(ZEROS).count(), 2, "{:?}", run.stderr);
    assert!(
        run.stderr.contains("retries left.\n\r  0 "),
        "{:?}",
        run.stderr
    );

    // A failed transfer draws its meter before the error, as curl's does.
    let refused = RefusedAddr::new();
    let run = poolcurl(&[&format!("http://127.0.0.1:{}/", refused.port())]).await;
    assert_eq!(run.code, 7, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with(&format!("{HEADER}{ZEROS}{ZEROS}\npoolcurl: (7) ")),
        "{:?}",
        run.stderr
    );

    for quiet in [&["-s"][..], &["--no-progress-meter"], &["-Z", "-s"]] {
        let run = poolcurl(&[quiet, &[url.as_str()][..]].concat()).await;
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{quiet:?}");
    }
    // -Z: one meter for the run, its first line counting the two transfers that start, its
    // last line when both are done.
    let run = poolcurl(&["-Z", &url, &server.url("/moved")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rest = run
        .stderr
        .strip_prefix(
            "DL% UL%  Dled  Uled  Xfers  Live Total     Current  Left    Speed\n\
             \r--  --      0     0     2     2  --:--:-- --:--:-- --:--:--     0      ",
        )
        .unwrap_or_else(|| panic!("the -Z meter: {:?}", run.stderr));
    let last = rest.rsplit('\r').next().unwrap();
    assert!(
        last.starts_with("100 --      6     0     2     0 "),
        "{last:?}"
    );
    assert!(last.ends_with("     \n"), "{last:?}");
    let bar = poolcurl(&["-#", &url]).await;
    assert!(bar.stderr.ends_with("100.0%\n"), "{:?}", bar.stderr);
    // COLUMNS sets the bar's width (less seven for the percentage); a failed transfer's bar
    // ends after the error, as curl's does.
    let narrow = common::poolcurl_command()
        .env("COLUMNS", "40")
        .args(["-#", url.as_str()])
        .output()
        .await
        .unwrap();
    let line = format!("\r{} 100.0%\n", "#".repeat(33));
    assert_eq!(String::from_utf8_lossy(&narrow.stderr), line);
    let refused = RefusedAddr::new();
    let bar = poolcurl(&["-#", &format!("http://127.0.0.1:{}/", refused.port())]).await;
    assert!(
        bar.stderr.starts_with("poolcurl: (7) ") && bar.stderr.ends_with("server\n\n"),
        "{:?}",
        bar.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn location_follows_a_302_to_another_path() {
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_with(|req| match req.target.as_str() {
            "/old/page" => Reply::new(302).header("location", "../new"),
            "/new" => Reply::ok("moved here"),
            _ => Reply::new(404),
        }))
        .await;
    let url = server.url("/old/page");
    let run = poolcurl(&["-L", &url, "-w", " %{num_redirects} %{url_effective}"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout_text(),
        format!("moved here 1 {}", server.url("/new"))
    );
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(targets, ["/old/page", "/new"]);
    assert_eq!(server.accepted(), 1, "the redirect reused the connection");

    let run = poolcurl(&[&url, "-w", "%{http_code} %{redirect_url}"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), format!("302 {}", server.url("/new")));
}

/// `-n` reads `$HOME/.netrc` and looks up each request's host: a redirect to another host
/// sends that host's entry, not the first host's; a host the file does not name is said so
/// under `-v` and goes without credentials.
#[tokio::test(flavor = "multi_thread")]
async fn netrc_gives_each_host_of_a_transfer_its_own_entry() {
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_with(|req| match req.target.as_str() {
            "/first" => {
                let port = req.header("host").and_then(|h| h.rsplit(':').next());
                let location = format!("http://localhost:{}/second", port.unwrap_or_default());
                Reply::new(302).header("location", &location)
            }
            _ => Reply::ok("here"),
        }))
        .await;
    let port = server.addr().port();
    let home = TempDir::new("netrc-home");
    std::fs::write(
        home.path().join(".netrc"),
        "machine 127.0.0.1 login alice password one\nmachine localhost login lh password two\n",
    )
    .unwrap();
    let run = |args: Vec<String>| {
        let mut command = common::poolcurl_command();
        command.env("HOME", home.path()).args(args);
        async move { command.output().await.expect("poolcurl ran") }
    };
    let out = run(vec![
        "-n".into(),
        "-L".into(),
        "--resolve".into(),
        format!("localhost:{port}:127.0.0.1"),
        server.url("/first"),
    ])
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"here");
    let sent: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    // `alice:one` and `lh:two` in base64.
    let basic = |token: &str| Some(format!("Basic {token}"));
    assert_eq!(sent, [basic("YWxpY2U6b25l"), basic("bGg6dHdv")]);

    let out = run(vec![
        "-n".into(),
        "-v".into(),
        format!("http://127.0.0.2:{port}/x"),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let netrc = home.path().join(".netrc");
    assert!(
        stderr.contains(&format!(
            "* Couldn't find host 127.0.0.2 in the {} file; using defaults",
            netrc.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("> Authorization"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn too_many_redirects_exit_47() {
    let server = serving(Reply::new(301).header("location", "/again")).await;
    let run = poolcurl(&[
        "--no-progress-meter",
        "-L",
        "--max-redirs",
        "2",
        &server.url("/"),
    ])
    .await;
    assert_eq!(run.code, 47, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (47) Maximum (2) redirects followed\n"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn data_sends_a_form_post() {
    let server = serving(Reply::ok("ok")).await;
    let run = poolcurl(&["-d", "a=1", "-d", "b=2", &server.url("/form")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let request = &server.requests()[0];
    assert_eq!(request.method, http::Method::POST);
    assert_eq!(
        request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(request.body, "a=1&b=2");

    let (dir, file) = temp_file("poolcurl-data", "payload.bin", b"line1\r\nline2\n\x00\xff");
    let at_file = format!("@{}", file.display());
    let run = poolcurl(&["--data-binary", &at_file, &server.url("/raw")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.requests()[1].body, &b"line1\r\nline2\n\x00\xff"[..]);
    let run = poolcurl(&["-d", &at_file, &server.url("/text")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // As text, as curl 7.88 reads it: line ends go, and a line stops at a NUL.
    assert_eq!(server.requests()[2].body, &b"line1line2"[..]);

    // A file that does not open fails in curl 8.3's words (7.88 sent an empty POST).
    let missing = dir.path().join("missing");
    let run = poolcurl(&["-d", &format!("@{}", missing.display()), &server.url("/")]).await;
    assert_eq!(run.code, 26, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("poolcurl: Failed to open ")
            && run
                .stderr
                .contains("poolcurl: option -d: error encountered when reading a file\n"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn header_flags_add_and_remove_headers() {
    let server = serving(Reply::ok("ok")).await;
    let run = poolcurl(&[
        "-H",
        "X-Custom: 42",
        "-H",
        "User-Agent:",
        "-X",
        "PUT",
        &server.url("/h"),
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let request = &server.requests()[0];
    assert_eq!(request.method, http::Method::PUT);
    assert_eq!(request.header("x-custom"), Some("42"));
    assert_eq!(request.header("user-agent"), None);
    assert_eq!(request.header("accept"), Some("*/*"));
}

#[tokio::test(flavor = "multi_thread")]
async fn output_files_take_urls_in_order() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_with(|req| {
        Reply::ok(format!("body of {}", req.target))
    }))
    .await;
    let dir = TempDir::new("poolcurl-output");
    let file = dir.path().join("first.txt");
    let run = poolcurl(&[
        "-o",
        file.to_str().unwrap(),
        &server.url("/one"),
        &server.url("/two"),
        "-w",
        "[%{filename_effective}]",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read(&file).unwrap(), b"body of /one");
    assert_eq!(
        run.stdout_text(),
        format!("[{}]body of /two[]", file.display())
    );
}

/// `-x` sends the URL through the proxy (absolute form for `http://`, one connection), `-U`
/// adds credentials; a refused tunnel exits 56 with the proxy's status; an unreachable proxy
/// exits 7, as curl does.
#[tokio::test(flavor = "multi_thread")]
async fn proxies_forward_tunnel_and_fail_with_curls_codes() {
    use pool_tests::proxy::{ConnectScript, ScriptedProxy};
    let proxy = ScriptedProxy::start(ConnectScript::Refuse(403), Some("Basic dTpw")).await;
    let run = poolcurl(&[
        "-s",
        "-x",
        &proxy.url(),
        "-U",
        "u:p",
        "-w",
        " %{num_connects}",
        "http://origin.test/x",
        "http://origin.test/y",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "via-proxy 1via-proxy 0");
    let lines: Vec<String> = proxy.requests().iter().map(|r| r.line.clone()).collect();
    assert_eq!(
        lines,
        [
            "GET http://origin.test/x HTTP/1.1",
            "GET http://origin.test/y HTTP/1.1"
        ]
    );

    let run = poolcurl(&[
        "-sS",
        "-x",
        &proxy.url(),
        "-U",
        "u:p",
        "https://origin.test/",
    ])
    .await;
    assert_eq!(run.code, 56, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "poolcurl: (56) CONNECT tunnel failed, response 403\n"
    );

    let refused = RefusedAddr::new();
    let run = poolcurl(&[
        "-sS",
        "-x",
        &format!("127.0.0.1:{}", refused.port()),
        "http://origin.test/",
    ])
    .await;
    // curl names the proxy it could not reach, and the name that did not resolve.
    run.assert_exit(
        7,
        &format!(
            "(7) Failed to connect to 127.0.0.1 port {} after ",
            refused.port()
        ),
    );

    let run = poolcurl(&[
        "-sS",
        "-x",
        "http://proxy.invalid:3128",
        "http://origin.test/",
    ])
    .await;
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (5, "poolcurl: (5) Could not resolve proxy: proxy.invalid\n")
    );

    // `--noproxy '*'` and `-x ""` both go direct: the origin does not exist, so resolving it
    // fails (6), which proves the proxy was not asked.
    let run = poolcurl(&[
        "-sS",
        "-x",
        &proxy.url(),
        "--noproxy",
        "*",
        "http://origin.invalid/",
    ])
    .await;
    assert_eq!(run.code, 6, "{}", run.stderr);
    let run = poolcurl(&["-sS", "-x", "", "http://origin.invalid/"]).await;
    assert_eq!(run.code, 6, "{}", run.stderr);
}

/// A free loopback port for a child process to bind, outside `taken`. A port found by binding
/// port 0 and letting go comes from the kernel's ephemeral range, from which any parallel test's
/// `bind(0)` or outgoing connection may be given it again before the child binds it; a port
/// below that range is never handed out implicitly, so only an explicit bind (no other test
/// makes one) could take it.
fn port_for_a_child(taken: &[u16]) -> u16 {
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    (1024..ephemeral_start)
        .rev()
        .filter(|port| !taken.contains(port))
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free port below the ephemeral range")
}

/// `poolcurl serve --port P --bind 127.0.0.1` listens where it is told, so the README's
/// curl-mode examples can name the port; curl mode then fetches from it.
#[tokio::test(flavor = "multi_thread")]
async fn serve_listens_on_the_port_it_is_given() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let port = port_for_a_child(&[]);
    let tls_port = port_for_a_child(&[port]);
    // The CA goes to a directory the test removes (the child is killed, not interrupted).
    let dir = TempDir::new("poolcurl-serve");
    let mut serve = common::poolcurl_command()
        .args(["serve", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--ca-dir", dir.path().to_str().unwrap()])
        .args(["--tls-port", &tls_port.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("poolcurl serve starts");
    let mut lines = BufReader::new(serve.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    while printed.len() < 4 {
        let line = tokio::time::timeout(LIMIT, lines.next_line())
            .await
            .expect("serve prints its listeners in time")
            .unwrap()
            .expect("serve keeps running");
        printed.push(line);
    }
    assert_eq!(printed[0], format!("http1  http://127.0.0.1:{port}/"));
    assert_eq!(printed[2], format!("https  https://127.0.0.1:{tls_port}/"));
    let ca = printed[3].trim_start_matches("ca").trim().to_owned();
    let run = poolcurl(&[
        &format!("http://127.0.0.1:{port}/status/201"),
        "-w",
        "%{http_code}",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout_text(), "201\n201");
    let run = poolcurl(&[
        "--cacert",
        &ca,
        &format!("https://localhost:{tls_port}/"),
        "-w",
        " %{http_version}",
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout_text().ends_with(" 2"), "{}", run.stdout_text());
    // HEAD over HTTP/2 (TLS and h2c): the head and its length, no DATA frames after it.
    let h2c = printed[1].trim_start_matches("h2c").trim().to_owned();
    for args in [
        vec![
            "--cacert",
            &ca,
            "-I",
            &format!("https://localhost:{tls_port}/"),
        ],
        vec!["--http2-prior-knowledge", "-I", &h2c],
    ] {
        let run = poolcurl(&args).await;
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let head = run.stdout_text();
        assert!(head.starts_with("HTTP/2 200 \r\n"), "{head}");
        assert!(head.contains("content-length: 37\r\n"), "{head}");
    }
    serve.kill().await.expect("serve stops");
}

/// A DNS server on loopback UDP for `--dns-servers`: `dns.test.` has the A record 127.0.0.1
/// (and no AAAA), every other name is NXDOMAIN. Records the record types it was asked for.
struct ScriptedDns {
    addr: std::net::SocketAddr,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ScriptedDns {
    async fn start() -> ScriptedDns {
        use hickory_proto::op::{Message, MessageType, ResponseCode};
        use hickory_proto::rr::rdata::A;
        use hickory_proto::rr::{Name, RData, Record, RecordType};

        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = asked.clone();
        tokio::spawn(async move {
            let known = Name::from_ascii("dns.test.").unwrap();
            let mut buf = [0u8; 1500];
            while let Ok((n, peer)) = socket.recv_from(&mut buf).await {
                let Ok(query) = Message::from_vec(&buf[..n]) else {
                    continue;
                };
                let mut reply = Message::new();
                reply
                    .set_id(query.id())
                    .set_message_type(MessageType::Response)
                    .set_recursion_desired(query.recursion_desired())
                    .set_recursion_available(true)
                    .add_queries(query.queries().to_vec());
                for q in query.queries() {
                    log.lock().unwrap().push(q.query_type().to_string());
                    if q.name() != &known {
                        reply.set_response_code(ResponseCode::NXDomain);
                    } else if q.query_type() == RecordType::A {
                        let a = RData::A(A::new(127, 0, 0, 1));
                        reply.add_answer(Record::from_rdata(known.clone(), 60, a));
                    }
                }
                let _ = socket.send_to(&reply.to_vec().unwrap(), peer).await;
            }
        });
        ScriptedDns { addr, asked }
    }

    fn queries(&self) -> usize {
        self.asked.lock().unwrap().len()
    }

    /// The record types asked for since the last call, sorted.
    fn take_asked(&self) -> Vec<String> {
        let mut asked = std::mem::take(&mut *self.asked.lock().unwrap());
        asked.sort();
        asked
    }
}

/// `--dns-servers` asks the listed server (and nothing else): a name it knows is fetched, one
/// it does not is curl's 6, a list that does not parse curl's 43 before any query.
/// `--dns-ipv4-addr` sends the queries from that address; `--resolve` still comes first.
#[tokio::test(flavor = "multi_thread")]
async fn dns_servers_are_asked_instead_of_the_systems() {
    let dns = ScriptedDns::start().await;
    let server = serving(Reply::ok("resolved\n")).await;
    let port = server.addr().port();
    let listed = dns.addr.to_string();
    let url = format!("http://dns.test:{port}/");

    let run = poolcurl(&["--dns-servers", &listed, &url]).await;
    assert_eq!(
        (run.code, run.stdout_text().as_str()),
        (0, "resolved\n"),
        "{}",
        run.stderr
    );
    assert_eq!(
        dns.take_asked(),
        ["A", "AAAA"],
        "both families, as curl asks c-ares"
    );
    let run = poolcurl(&["-4", "--dns-servers", &listed, &url]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(dns.take_asked(), ["A"], "-4 asks for IPv4 only");

    let run = poolcurl(&[
        "--dns-servers",
        &listed,
        "--dns-ipv4-addr",
        "127.0.0.1",
        &url,
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);

    let asked = dns.queries();
    let run = poolcurl(&[
        "--dns-servers",
        &listed,
        "--resolve",
        &format!("dns.test:{port}:127.0.0.1"),
        &url,
    ])
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(dns.queries(), asked, "--resolve answered first");

    let run = poolcurl(&[
        "--dns-servers",
        &listed,
        &format!("http://other.test:{port}/"),
    ])
    .await;
    run.assert_exit(6, "Could not resolve host: other.test");

    let asked = dns.queries();
    for bad in [
        vec!["--dns-servers", "dns.example", url.as_str()],
        vec!["--dns-ipv4-addr", "::1", url.as_str()],
    ] {
        let run = poolcurl(&bad).await;
        assert_eq!(run.code, 43, "{bad:?}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("(43) A libcurl function was given a bad argument"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(dns.queries(), asked, "nothing asked for a bad list");
}

/// `-u USER` without a password asks for it as curl does: the prompt on stderr even under `-s`,
/// the answer read once from stdin when there is no terminal, its last byte (the Enter)
/// dropped. A `-u` with a password asks nothing and leaves stdin alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_user_without_a_password_is_asked_for_one() {
    let server = serving(Reply::ok("in")).await;
    let url = server.url("/");
    let run = poolcurl_with_stdin(&["-s", "-u", "bob", &url], b"secret\n").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "Enter host password for user 'bob':\n");
    let run = poolcurl_with_stdin(&["-s", "-u", "bob:given", "-d", "@-", &url], b"body").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let seen = server.requests();
    // base64("bob:secret"), base64("bob:given")
    assert_eq!(
        seen[0].header("authorization"),
        Some("Basic Ym9iOnNlY3JldA==")
    );
    assert_eq!(seen[1].header("authorization"), Some("Basic Ym9iOmdpdmVu"));
    assert_eq!(&seen[1].body[..], b"body", "stdin stayed the upload's");
}

/// The progress meter goes on counting while a transfer waits, as curl's does: a line a second
/// while the response head is awaited and while the body stalls, "Spent" going up with no byte
/// more. The server holds the head, then the rest of the body, until the test has read such
/// lines on poolcurl's stderr: no clock decides the order.
#[tokio::test(flavor = "multi_thread")]
async fn the_meter_counts_on_while_a_transfer_waits() {
    let (head, rest) = (Gate::new(), Gate::new());
    let reply = Reply::ok_split("12345", rest.clone(), "67890").gate(head.clone());
    let server = ScriptedH1Server::start_with(ConnPlan::new().respond(reply)).await;
    let mut child = common::poolcurl_command()
        .arg(server.url("/"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("poolcurl ran");
    let mut stderr = child.stderr.take().expect("piped");
    let mut drawn = String::new();
    // The meter's lines so far as (received, spent) columns, for lines drawn in full.
    type Line = (String, String);
    let lines = |drawn: &str| -> Vec<Line> {
        drawn
            .split(['\r', '\n'])
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .filter(|columns| columns.len() == 12 && columns[0].parse::<u64>().is_ok())
            .map(|columns| (columns[3].to_owned(), columns[9].to_owned()))
            .collect()
    };
    let mut read_until = async |done: &dyn Fn(&[Line]) -> bool| {
        let mut buffer = [0u8; 512];
        while !done(&lines(&drawn)) {
            let n = tokio::time::timeout(LIMIT, stderr.read(&mut buffer))
                .await
                .expect("the meter drew in time")
                .expect("stderr reads");
            assert!(n > 0, "stderr ended early: {drawn:?}");
            drawn.push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    };
    // Nothing came yet: a line with a time spent was drawn by the clock alone.
    read_until(&|lines| {
        lines
            .iter()
            .any(|(got, spent)| got == "0" && spent != "--:--:--")
    })
    .await;
    head.open();
    // Half the body came: two lines at two different seconds with nothing more.
    read_until(&|lines| {
        let mut spent: Vec<&str> = lines
            .iter()
            .filter(|(got, _)| got == "5")
            .map(|(_, spent)| spent.as_str())
            .collect();
        spent.dedup();
        spent.len() >= 2
    })
    .await;
    rest.open();
    let out = tokio::time::timeout(LIMIT, child.wait_with_output())
        .await
        .expect("poolcurl finished in time")
        .expect("poolcurl ran");
    assert!(out.status.success(), "{drawn}");
    assert_eq!(out.stdout, b"1234567890");
}

/// Connects nothing answers end as curl 7.88 ends them: the kernel giving up on the SYNs exits
/// 28 with curl's words for a failed connect (curl counts the kernel's `ETIMEDOUT` as a
/// timeout, any other connect failure as 7), `--connect-timeout` in the TCP connect names the
/// host and port it dialed (the proxy's, through one), and in name resolution says so; `-m`
/// says it ran out while connecting, or resolving. Both
/// tools run in a network namespace of their own (`pool_tests::vanish`) where TEST-NET-1 is
/// routed into `lo`, which nothing there answers for, and the kernel retries a SYN once
/// (`tcp_syn_retries` 1: about 3 s). The resolution case runs poolcurl alone (`--dns-servers`
/// pointing there: Debian's curl has no such option), as does every case without curl.
#[test]
fn connects_nothing_answers_end_as_curls_do() {
    if !pool_tests::vanish::in_own_namespace("connects_nothing_answers_end_as_curls_do") {
        return;
    }
    pool_tests::vanish::ip(&["route", "add", "192.0.2.0/24", "dev", "lo"]);
    if let Err(e) = std::fs::write("/proc/sys/net/ipv4/tcp_syn_retries", "1") {
        eprintln!("skipped: this namespace keeps the host's SYN retries ({e})");
        return;
    }
    let given_up = "TOOL: (28) Failed to connect to 192.0.2.1 port 80 after N ms: \
                    Couldn't connect to server";
    let timed_out = |port| {
        format!(
            "TOOL: (28) Failed to connect to 192.0.2.1 port {port} after N ms: Timeout was reached"
        )
    };
    let expect = |args: &'static [&'static str], expected: String| async move {
        beside_curl_async(
            args,
            || async {},
            |tool, code, said| {
                assert_eq!(
                    (code, masked(said, tool)),
                    (Some(28), expected.clone()),
                    "{tool}: {args:?}"
                );
            },
        )
        .await;
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::join!(
                expect(&["-sS", "http://192.0.2.1/"], given_up.to_owned()),
                expect(
                    &["-sS", "--connect-timeout", "1", "http://192.0.2.1/"],
                    timed_out(80)
                ),
                expect(
                    &[
                        "-sS",
                        "--connect-timeout",
                        "1",
                        "-x",
                        "192.0.2.1:3128",
                        "http://origin.test/"
                    ],
                    timed_out(3128),
                ),
                // `-m` running out in the TCP connect: curl's words for its connect state.
                expect(
                    &["-sS", "-m", "1", "http://192.0.2.1/"],
                    "TOOL: (28) Connection timed out after N milliseconds".to_owned()
                ),
            );
            for limit in ["--connect-timeout", "-m"] {
                let run = poolcurl(&[
                    "-sS",
                    limit,
                    "1",
                    "--dns-servers",
                    "192.0.2.1",
                    "http://name.example/",
                ])
                .await;
                assert_eq!(
                    (run.code, masked(&run.stderr, "poolcurl")),
                    (
                        28,
                        "TOOL: (28) Resolving timed out after N milliseconds".to_owned()
                    ),
                    "{limit}"
                );
            }
        });
}

/// `said` (a tool's stderr) with the tool's name read as `TOOL` and the milliseconds a message
/// counts as `N`: they differ by nature.
fn masked(said: &str, tool: &str) -> String {
    let said = said.trim_end().replacen(&format!("{tool}: "), "TOOL: ", 1);
    let words: Vec<&str> = said.split(' ').collect();
    let counted = |at: usize| {
        words
            .get(at + 1)
            .is_some_and(|unit| unit.starts_with("ms") || unit.starts_with("milliseconds"))
    };
    words
        .iter()
        .enumerate()
        .map(
            |(at, word)| match counted(at) && word.bytes().all(|b| b.is_ascii_digit()) {
                true => "N",
                false => word,
            },
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--connect-timeout` that ends a TLS handshake, a proxy's `CONNECT` or a SOCKS greeting gives
/// curl 7.88's words for each: `SSL connection timeout`, `Proxy CONNECT aborted due to
/// timeout`, and its general `Connection timed out after N milliseconds`. One listener plays
/// every silent peer: it accepts and never sends a byte. Without curl the test checks poolcurl
/// alone.
#[tokio::test(flavor = "multi_thread")]
async fn connect_timeouts_say_which_step_as_curls_do() {
    let silent = pool_tests::silent::SilentPeer::start().await;
    let at = silent.addr();
    let (origin, proxy) = (format!("https://{at}/"), format!("{at}"));
    let socks = format!("socks5h://{at}");
    let cases = [
        (
            vec!["--connect-timeout", "1", origin.as_str()],
            "TOOL: (28) SSL connection timeout",
        ),
        (
            vec![
                "--connect-timeout",
                "1",
                "-x",
                proxy.as_str(),
                "https://origin.test/",
            ],
            "TOOL: (28) Proxy CONNECT aborted due to timeout",
        ),
        (
            vec![
                "--connect-timeout",
                "1",
                "-x",
                socks.as_str(),
                "http://origin.test/",
            ],
            "TOOL: (28) Connection timed out after N milliseconds",
        ),
    ];
    each_exits_28_as_curls_does(["-sS", "-m", "10"], cases).await;
}

/// `-m` running out names what the transfer waited for, as curl 7.88 names its state: the
/// connection while a TLS handshake, a proxy's `CONNECT` or a SOCKS greeting goes unanswered
/// (`Connection timed out after N milliseconds`), the operation once a request went out on a
/// connection, to the origin or to a forward proxy (`Operation timed out after N milliseconds
/// with 0 bytes received`). One listener plays every silent peer. Without curl the test checks
/// poolcurl alone.
#[tokio::test]
async fn max_time_names_what_the_transfer_waited_for_as_curls_does() {
    let silent = pool_tests::silent::SilentPeer::start().await;
    let at = silent.addr();
    let (https, http, proxy) = (
        format!("https://{at}/"),
        format!("http://{at}/"),
        format!("{at}"),
    );
    let socks = format!("socks5h://{at}");
    let connecting = "TOOL: (28) Connection timed out after N milliseconds";
    let exchanging = "TOOL: (28) Operation timed out after N milliseconds with 0 bytes received";
    let cases = [
        (vec![https.as_str()], connecting),
        (
            vec!["-x", proxy.as_str(), "https://origin.test/"],
            connecting,
        ),
        (
            vec!["-x", socks.as_str(), "http://origin.test/"],
            connecting,
        ),
        (vec![http.as_str()], exchanging),
        (
            vec!["-x", proxy.as_str(), "http://origin.test/"],
            exchanging,
        ),
    ];
    each_exits_28_as_curls_does(["-sS", "-m", "1"], cases).await;
}

/// With several URLs, `-m` names each transfer's own wait as curl 7.88 does. One after the
/// other, each transfer to an `https://` origin whose TLS handshake never ends says
/// `Connection timed out after N milliseconds`, the second too, though the pool has it wait
/// for the connection the first one's establishment is still making (curl makes a new one).
/// Under `-Z`, the transfer that waited for the other's connection (curl holds it to see
/// whether the connection multiplexes; the pool joins it to the connection whose ALPN will
/// say) says `Failed to resolve host 'HOST' with timeout after 0 ms`, curl's words for a
/// connect begun with no time left. curl draws its `-Z` meter under `-s` too, so only the
/// error lines are compared, in either order. Without curl the test checks poolcurl alone.
#[tokio::test]
async fn max_time_names_each_transfers_wait_as_curls_does() {
    let silent = pool_tests::silent::SilentPeer::start().await;
    let at = silent.addr();
    let (a, b) = (format!("https://{at}/a"), format!("https://{at}/b"));
    let connecting = "TOOL: (28) Connection timed out after N milliseconds";
    let pending = format!(
        "TOOL: (28) Failed to resolve host '{}' with timeout after N ms",
        at.ip()
    );
    let cases: [(Vec<&str>, Vec<&str>); 3] = [
        (vec!["-Z", &a], vec![connecting]),
        (vec!["-Z", &a, &b], vec![connecting, &pending]),
        (vec![&a, &b], vec![connecting, connecting]),
    ];
    for (urls, expected) in cases {
        let args: Vec<&str> = ["-sS", "-m", "1"].into_iter().chain(urls).collect();
        beside_curl_async(
            &args,
            || async {},
            |tool, code, said| {
                let mut errors: Vec<String> = said
                    .lines()
                    .filter_map(|line| line.find(&format!("{tool}: (")).map(|at| &line[at..]))
                    .map(|error| masked(error, tool))
                    .collect();
                errors.sort();
                let mut expected: Vec<String> = expected.iter().map(|e| e.to_string()).collect();
                expected.sort();
                assert_eq!((code, errors), (Some(28), expected), "{tool}: {args:?}");
            },
        )
        .await;
    }
}

/// Runs each case's arguments after `head` through both tools: each must exit 28 with the
/// case's words (tool name and milliseconds masked).
async fn each_exits_28_as_curls_does<const N: usize>(
    head: [&str; 3],
    cases: [(Vec<&str>, &str); N],
) {
    for (args, expected) in cases {
        let args: Vec<&str> = head.into_iter().chain(args).collect();
        beside_curl_async(
            &args,
            || async {},
            |tool, code, said| {
                assert_eq!(
                    (code, masked(said, tool).as_str()),
                    (Some(28), expected),
                    "{tool}: {args:?}"
                );
            },
        )
        .await;
    }
}

/// A connection the kernel times out while the response is awaited (TCP keepalive: the peer
/// stopped answering, `lo` went down in a namespace of its own) exits 56 with curl's words,
/// `Recv failure: Connection timed out`, as curl 7.88 does: the kernel's `ETIMEDOUT` on a
/// connection that was up is none of curl's timeouts. `--keepalive-time 1` probes after 1 s,
/// every 1 s, the kernel's 9 times: about 11 s. Without curl the test checks poolcurl alone.
#[test]
fn a_connection_the_kernel_times_out_exits_56_as_curls_does() {
    if !pool_tests::vanish::in_own_namespace(
        "a_connection_the_kernel_times_out_exits_56_as_curls_does",
    ) {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The server reads each request and never answers.
    let never = Gate::new();
    let server = runtime.block_on(ScriptedH1Server::start_with(ConnPlan::serve_forever(
        Reply::ok("late").gate(never.clone()),
    )));
    let url = server.url("/");
    let tools = if curl_installed() { 2 } else { 1 };
    let silenced = || async {
        let heard = || server.requests().len() == tools;
        pool_tests::client::eventually(heard, || "both requests reach the server".into()).await;
        pool_tests::vanish::ip(&["link", "set", "lo", "down"]);
    };
    let args = ["-sS", "--keepalive-time", "1", url.as_str()];
    runtime.block_on(beside_curl_async(&args, silenced, |tool, code, said| {
        assert_eq!(
            (code, said),
            (
                Some(56),
                format!("{tool}: (56) Recv failure: Connection timed out\n").as_str()
            ),
            "{tool}"
        );
    }));
    drop(never);
}

/// Whether curl runs here.
fn curl_installed() -> bool {
    std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok()
}

/// Runs poolcurl and, where it is installed, curl with `args` at once, and `meanwhile` while
/// they run; then `check(tool, exit code, stderr)` for each.
async fn beside_curl_async<F: std::future::Future<Output = ()>>(
    args: &[&str],
    meanwhile: impl FnOnce() -> F,
    check: impl Fn(&str, Option<i32>, &str),
) {
    let mut tools = vec![("poolcurl", env!("CARGO_BIN_EXE_poolcurl"))];
    if curl_installed() {
        tools.push(("curl", "curl"));
    } else {
        eprintln!("curl is not installed: poolcurl checked alone");
    }
    let children: Vec<_> = tools
        .iter()
        .map(|(name, program)| {
            let child = common::command(program)
                .args(args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("it runs");
            (*name, child)
        })
        .collect();
    meanwhile().await;
    for (name, child) in children {
        let out = tokio::time::timeout(LIMIT, child.wait_with_output())
            .await
            .expect("the run finished in time")
            .expect("it ran");
        check(
            name,
            out.status.code(),
            &String::from_utf8_lossy(&out.stderr),
        );
    }
}
