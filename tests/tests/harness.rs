//! Self-tests of the scripted peers: every capability the pool's tests rely on, driven by a raw
//! `TcpStream`, `hyper::client::conn` or `h2::client` (never hyper-util). No test sleeps to win
//! a race: gates, signals and the servers' `wait_*` methods order everything, and every test is
//! bounded by a timeout in case the harness itself is broken.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use pool_tests::gate::{Gate, Signal};
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::h2::{H2ConnPlan, Reason, ScriptedH2Server, StreamPlan};
use pool_tests::io::{TokioExecutor, TokioIo};
use pool_tests::tls::TestPki;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upper bound for any test; the tests themselves take milliseconds.
const LIMIT: Duration = Duration::from_secs(20);

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test did not finish in time")
}

/// Polls a future once without waiting.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

type H1Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;
type H2Sender = hyper::client::conn::http2::SendRequest<Empty<Bytes>>;

async fn h1_over<T>(io: T) -> H1Sender
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .expect("h1 handshake");
    tokio::spawn(conn);
    sender
}

async fn h1_client(addr: SocketAddr) -> H1Sender {
    h1_over(TcpStream::connect(addr).await.expect("connect")).await
}

async fn h2_over<T>(io: T) -> H2Sender
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor, TokioIo::new(io))
        .await
        .expect("h2 handshake");
    tokio::spawn(conn);
    sender
}

/// A GET with an origin-form target and a Host header (hyper's conn API adds neither).
fn h1_get(path: &str, host: &str) -> Request<Empty<Bytes>> {
    Request::get(path)
        .header("host", host)
        .body(Empty::new())
        .unwrap()
}

fn h2_get(url: &str) -> Request<Empty<Bytes>> {
    Request::get(url).body(Empty::new()).unwrap()
}

async fn body_string(resp: http::Response<Incoming>) -> String {
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Reads until EOF or an error; returns what was read and whether it ended in an error.
async fn read_to_end(tcp: &mut TcpStream) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tcp.read(&mut buf).await {
            Ok(0) => return (out, false),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (out, true),
        }
    }
}

/// Reads until `needle` has been seen.
async fn read_until(tcp: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !out.windows(needle.len()).any(|w| w == needle) {
        let n = tcp.read(&mut buf).await.expect("read");
        assert!(n > 0, "EOF before {:?}", String::from_utf8_lossy(needle));
        out.extend_from_slice(&buf[..n]);
    }
    out
}

fn h2_reason(err: &hyper::Error) -> Option<Reason> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(h2) = e.downcast_ref::<h2::Error>() {
            return h2.reason();
        }
        source = e.source();
    }
    None
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn h1_plan_exhaustion_surfaces_an_error() {
    within(async {
        let server = ScriptedH1Server::builder()
            .plan(ConnPlan::new().respond(Reply::ok("one")))
            .start()
            .await;
        let host = server.authority();

        // Connection 0: one scripted reply, then an unscripted second request.
        let mut sender = h1_client(server.addr()).await;
        let resp = sender.send_request(h1_get("/1", &host)).await.unwrap();
        assert_eq!(body_string(resp).await, "one");
        sender.ready().await.unwrap();
        let second = sender.send_request(h1_get("/2", &host)).await;
        assert!(second.is_err(), "the server closes instead of answering");
        let errors = server.wait_for_errors(1).await;
        assert!(errors[0].contains("conn 0: plan exhausted"), "{errors:?}");
        assert!(errors[0].contains("GET /2"), "{errors:?}");

        // Connection 1: no plan left and no default plan.
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (bytes, _) = read_to_end(&mut tcp).await;
        assert!(bytes.is_empty());
        let errors = server.wait_for_errors(2).await;
        assert!(errors[1].contains("conn 1: no plan"), "{errors:?}");

        // Only the scripted request was recorded.
        assert_eq!(server.requests().len(), 1);
    })
    .await;
}

#[tokio::test]
async fn h1_malformed_request_is_an_error() {
    within(async {
        let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nbad header\r\n\r\n")
            .await
            .unwrap();
        let (bytes, _) = read_to_end(&mut tcp).await;
        assert!(bytes.is_empty());
        let errors = server.wait_for_errors(1).await;
        assert!(errors[0].contains("malformed request"), "{errors:?}");
    })
    .await;
}

#[tokio::test]
async fn h1_shutdown_cancels_a_connection_parked_at_a_gate() {
    within(async {
        let gate = Gate::new();
        let server = ScriptedH1Server::start_with(
            ConnPlan::new().respond(Reply::ok("never").gate(gate.clone())),
        )
        .await;
        let addr = server.addr();
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        server.wait_for_requests(1).await;
        gate.wait_arrived(1).await;
        assert_eq!(server.open(), 1);

        server.shutdown().await;

        // The parked task is gone and its socket closed: the client sees EOF (or a reset).
        assert!(!gate.is_open());
        let (bytes, _) = read_to_end(&mut tcp).await;
        assert!(bytes.is_empty(), "no reply was written");
        assert_eq!(server.open(), 0);
        assert_eq!(server.closed(), 1);
        assert!(server.connections()[0].closed);
        // No longer accepting.
        assert!(TcpStream::connect(addr).await.is_err());
        // A second shutdown returns at once.
        server.shutdown().await;
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h1_accept_counting_and_connection_ids() {
    within(async {
        let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hi"))).await;
        let host = server.authority();
        let mut senders = Vec::new();
        for i in 0..3 {
            let mut sender = h1_client(server.addr()).await;
            let resp = sender
                .send_request(h1_get(&format!("/{i}"), &host))
                .await
                .unwrap();
            assert_eq!(body_string(resp).await, "hi");
            senders.push(sender);
        }
        let c = server.counters();
        assert_eq!((c.accepted, c.open, c.max_open, c.closed), (3, 3, 3, 0));
        let requests = server.requests();
        let ids: Vec<u64> = requests.iter().map(|r| r.conn_id).collect();
        assert_eq!(ids, [0, 1, 2]);
        assert_eq!(server.requests_on(1)[0].target, "/1");

        // Reuse connection 0: same id, next index.
        senders[0].ready().await.unwrap();
        let resp = senders[0]
            .send_request(h1_get("/again", &host))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        body_string(resp).await;
        let again = &server.wait_for_requests(4).await[3];
        assert_eq!((again.conn_id, again.index), (0, 1));

        // Closing a client connection is counted, not an error.
        drop(senders.remove(2));
        server.wait_for_closed(1).await;
        let c = server.counters();
        assert_eq!((c.accepted, c.open, c.max_open, c.closed), (3, 2, 3, 1));
        assert!(server.connections()[2].closed);
        assert!(server.errors().is_empty(), "{:?}", server.errors());
    })
    .await;
}

#[tokio::test]
async fn h1_close_after_n_requests() {
    within(async {
        let server = ScriptedH1Server::start_with(ConnPlan::close_after(2, Reply::ok("x"))).await;
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        tcp.write_all(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let (bytes, _) = read_to_end(&mut tcp).await;
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 2, "{text}");
        assert_eq!(server.requests().len(), 2);
        server.wait_for_closed(1).await;
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h1_records_request_fields() {
    within(async {
        let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("ok"))).await;
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        tcp.write_all(
            b"POST /upload?x=1 HTTP/1.1\r\nHost: example.test:8080\r\nX-Two: a\r\nX-Two: b\r\n\
              Content-Length: 5\r\n\r\nhello",
        )
        .await
        .unwrap();
        read_until(&mut tcp, b"\r\n\r\nok").await;
        tcp.write_all(
            b"PUT http://example.test/abs HTTP/1.1\r\nHost: example.test\r\n\
              Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\
              X-Trailer: t\r\n\r\n",
        )
        .await
        .unwrap();
        read_until(&mut tcp, b"\r\n\r\nok").await;
        tcp.write_all(b"GET /old HTTP/1.0\r\n\r\n").await.unwrap();
        read_until(&mut tcp, b"\r\n\r\nok").await;

        let reqs = server.wait_for_requests(3).await;
        let post = &reqs[0];
        assert_eq!(post.method, http::Method::POST);
        assert_eq!(post.target, "/upload?x=1");
        assert!(post.is_origin_form());
        assert_eq!(post.host(), Some("example.test:8080"));
        assert_eq!(post.version, http::Version::HTTP_11);
        assert_eq!(post.headers.get_all("x-two").iter().count(), 2);
        assert_eq!(post.body, "hello");
        assert!(!post.chunked);

        let put = &reqs[1];
        assert_eq!(put.method, http::Method::PUT);
        assert_eq!(put.target, "http://example.test/abs");
        assert!(put.is_absolute_form());
        assert!(put.chunked);
        assert_eq!(put.body, "hello world");
        assert_eq!(put.trailers.get("x-trailer").unwrap(), "t");
        assert_eq!((put.conn_id, put.index), (0, 1));

        let old = &reqs[2];
        assert_eq!(old.version, http::Version::HTTP_10);
        assert_eq!(old.host(), None);
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h1_split_body_waits_for_the_gate() {
    within(async {
        let gate = Gate::new();
        let server = ScriptedH1Server::start_with(ConnPlan::new().respond(Reply::ok_split(
            "hello ",
            gate.clone(),
            "world",
        )))
        .await;
        let mut sender = h1_client(server.addr()).await;
        let resp = sender
            .send_request(h1_get("/", &server.authority()))
            .await
            .unwrap();
        assert_eq!(resp.headers()["content-length"], "11");
        let mut body = resp.into_body();
        let mut first = Vec::new();
        while first.len() < 6 {
            let frame = body.frame().await.unwrap().unwrap();
            first.extend_from_slice(&frame.into_data().unwrap());
        }
        assert_eq!(first, b"hello ");
        gate.wait_arrived(1).await;
        // The server is parked at the gate and has not written the rest.
        assert!(poll_once(&mut body.frame()).is_pending());
        gate.open();
        let rest = body.collect().await.unwrap().to_bytes();
        assert_eq!(rest, "world");
    })
    .await;
}

#[tokio::test]
async fn h1_broken_bodies_fail_the_client() {
    within(async {
        let server = ScriptedH1Server::builder()
            .plans([
                ConnPlan::new().respond(Reply::ok("partial").declared_length(100).then_reset()),
                ConnPlan::new().respond(Reply::ok("partial").declared_length(100).then_close()),
                ConnPlan::new().respond(Reply::ok("chunk").chunked().unterminated().then_close()),
            ])
            .start()
            .await;
        for conn in 0..3 {
            let mut sender = h1_client(server.addr()).await;
            let resp = sender
                .send_request(h1_get("/", &server.authority()))
                .await
                .unwrap();
            let err = resp.into_body().collect().await;
            assert!(err.is_err(), "connection {conn}: body must fail");
        }
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h1_reset_step_aborts_the_connection() {
    within(async {
        let server = ScriptedH1Server::start_with(ConnPlan::new().read_request().reset()).await;
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let (bytes, errored) = read_to_end(&mut tcp).await;
        assert!(bytes.is_empty());
        assert!(errored, "a reset is an error, not a clean EOF");
        server.wait_for_closed(1).await;
    })
    .await;
}

#[tokio::test]
async fn h1_half_close_keeps_reading() {
    within(async {
        let server = ScriptedH1Server::start_with(
            ConnPlan::new()
                .respond(Reply::ok("bye"))
                .half_close()
                .read_request(),
        )
        .await;
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        tcp.write_all(b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let (bytes, errored) = read_to_end(&mut tcp).await;
        assert!(!errored);
        assert!(bytes.ends_with(b"\r\n\r\nbye"));
        // The server's write side is shut, its read side is not.
        tcp.write_all(b"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let reqs = server.wait_for_requests(2).await;
        assert_eq!(reqs[1].target, "/2");
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h1_reply_variants() {
    within(async {
        let signal = Signal::new();
        let server = ScriptedH1Server::start_with(
            ConnPlan::new()
                .respond(Reply::new(404).header("x-why", "gone").body("nope"))
                .respond(Reply::ok("chunked").chunked().signal(signal.clone()))
                .respond(Reply::ok("head body"))
                .respond(Reply::switching_protocols("echo"))
                .echo(),
        )
        .await;
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        tcp.write_all(b"GET /missing HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let text = read_until(&mut tcp, b"nope").await;
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"), "{text}");
        assert!(text.contains("x-why: gone\r\n"), "{text}");

        tcp.write_all(b"GET /c HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let text = read_until(&mut tcp, b"0\r\n\r\n").await;
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("transfer-encoding: chunked\r\n\r\n7\r\nchunked\r\n0\r\n\r\n"));
        assert_eq!(signal.count(), 1);

        tcp.write_all(b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let text = read_until(&mut tcp, b"\r\n\r\n").await;
        let text = String::from_utf8(text).unwrap();
        assert!(text.ends_with("content-length: 9\r\n\r\n"), "{text}");

        tcp.write_all(
            b"GET /up HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
        )
        .await
        .unwrap();
        let text = read_until(&mut tcp, b"\r\n\r\n").await;
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
            "{text}"
        );
        assert!(!text.contains("content-length"), "{text}");
        tcp.write_all(b"ping").await.unwrap();
        read_until(&mut tcp, b"ping").await;
        tcp.shutdown().await.unwrap();
        let (rest, _) = read_to_end(&mut tcp).await;
        assert!(rest.is_empty());
        assert!(server.errors().is_empty(), "{:?}", server.errors());
    })
    .await;
}

/// Runs `f` on a current-thread runtime with paused time, bounded in real time (a tokio timeout
/// would be virtual, and auto-advance could fire it while the test waits on real IO).
fn run_paused<F>(f: impl FnOnce() -> F + Send + 'static)
where
    F: Future<Output = ()>,
{
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(f());
        let _ = done_tx.send(());
    });
    done_rx
        .recv_timeout(LIMIT)
        .expect("paused-time test did not finish in time (or panicked)");
}

#[test]
fn h1_delay_follows_paused_time() {
    run_paused(|| async {
        let server = ScriptedH1Server::start_with(
            ConnPlan::new().respond(Reply::ok("late").delay(Duration::from_secs(3600))),
        )
        .await;
        let start = tokio::time::Instant::now();
        let mut sender = h1_client(server.addr()).await;
        let resp = sender
            .send_request(h1_get("/", &server.authority()))
            .await
            .unwrap();
        assert_eq!(body_string(resp).await, "late");
        assert!(start.elapsed() >= Duration::from_secs(3600));
    });
}

#[tokio::test]
async fn h1_accept_gate_holds_new_connections() {
    within(async {
        let gate = Gate::new();
        let server = ScriptedH1Server::builder()
            .accept_gate(gate.clone())
            .default_plan(ConnPlan::serve_forever(Reply::ok("x")))
            .start()
            .await;
        let mut sender = h1_client(server.addr()).await;
        let pending = tokio::spawn(async move {
            let resp = sender.send_request(h1_get("/", "x")).await.unwrap();
            body_string(resp).await
        });
        gate.wait_arrived(1).await;
        assert_eq!(server.accepted(), 1);
        assert!(server.requests().is_empty());
        gate.open();
        assert_eq!(pending.await.unwrap(), "x");
    })
    .await;
}

#[tokio::test]
async fn h1_binds_other_loopback_addresses() {
    within(async {
        let Ok(server) = ScriptedH1Server::builder()
            .bind_addr("[::1]:0".parse().unwrap())
            .default_plan(ConnPlan::serve_forever(Reply::ok("v6")))
            .try_start()
            .await
        else {
            eprintln!("IPv6 loopback unavailable; skipping");
            return;
        };
        assert!(server.url("/x").starts_with("http://[::1]:"));
        assert!(server.url("x").ends_with("/x"));
        let mut sender = h1_client(server.addr()).await;
        let resp = sender
            .send_request(h1_get("/", &server.authority()))
            .await
            .unwrap();
        assert_eq!(body_string(resp).await, "v6");
        assert!(server.connections()[0].peer.is_ipv6());
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------

async fn tls_connect(
    pki: &TestPki,
    addr: SocketAddr,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    tokio_rustls::TlsConnector::from(pki.client_config(alpn))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
}

#[tokio::test]
async fn tls_h1_handshake_is_counted() {
    within(async {
        let pki = TestPki::new();
        let server = ScriptedH1Server::builder()
            .tls(pki.server_config(&[b"http/1.1"]))
            .default_plan(ConnPlan::serve_forever(Reply::ok("secure")))
            .start()
            .await;
        assert!(server.url("/").starts_with("https://localhost:"));
        let tls = tls_connect(&pki, server.addr(), &[b"http/1.1"])
            .await
            .unwrap();
        let mut sender = h1_over(tls).await;
        let resp = sender
            .send_request(h1_get("/", &server.authority()))
            .await
            .unwrap();
        assert_eq!(body_string(resp).await, "secure");
        assert_eq!(server.tls_handshakes(), 1);
        let conn = &server.connections()[0];
        assert!(conn.tls);
        assert_eq!(conn.server_name.as_deref(), Some("localhost"));
        assert_eq!(conn.alpn.as_deref(), Some(&b"http/1.1"[..]));

        // A client trusting another CA fails the handshake; counted, not an error.
        let stranger = TestPki::new();
        assert!(tls_connect(&stranger, server.addr(), &[]).await.is_err());
        server.wait_counters(|c| c.tls_failures == 1).await;
        assert_eq!(server.tls_handshakes(), 1);
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn tls_h2_alpn_handshake_is_counted() {
    within(async {
        let pki = TestPki::new();
        let server = ScriptedH2Server::builder()
            .tls(pki.server_config(&[b"h2"]))
            .default_stream(StreamPlan::ok("secure h2"))
            .start()
            .await;
        let tls = tls_connect(&pki, server.addr(), &[b"h2", b"http/1.1"])
            .await
            .unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let mut sender = h2_over(tls).await;
        let resp = sender
            .send_request(h2_get(&server.url("/s")))
            .await
            .unwrap();
        assert_eq!(body_string(resp).await, "secure h2");
        assert_eq!(server.tls_handshakes(), 1);
        assert_eq!(server.connections()[0].alpn.as_deref(), Some(&b"h2"[..]));
        let req = &server.requests()[0];
        assert_eq!(req.path(), "/s");
        assert_eq!(req.authority(), Some(server.authority().as_str()));
        assert_eq!(req.uri.scheme_str(), Some("https"));
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// HTTP/2
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn h2_max_concurrent_streams_is_advertised_and_honoured() {
    within(async {
        let gate = Gate::new();
        let server = ScriptedH2Server::builder()
            .max_concurrent_streams(2)
            .handler({
                let gate = gate.clone();
                move |req| match req.path() {
                    "/warm" => StreamPlan::ok("warm"),
                    _ => StreamPlan::ok("x").after_gate(gate.clone()),
                }
            })
            .start()
            .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        // One round trip: the server's SETTINGS precede its first response.
        let (warm, _) = client
            .clone()
            .ready()
            .await
            .unwrap()
            .send_request(Request::get(server.url("/warm")).body(()).unwrap(), true)
            .unwrap();
        warm.await.unwrap();
        assert_eq!(client.current_max_send_streams(), 2);

        let mut responses = Vec::new();
        for i in 0..3 {
            let mut sender = client.clone().ready().await.unwrap();
            let req = Request::get(server.url(&format!("/{i}"))).body(()).unwrap();
            responses.push(sender.send_request(req, true).unwrap().0);
        }
        gate.wait_arrived(2).await;
        assert_eq!(server.streams_in_flight(), [2]);
        gate.open();
        for resp in responses {
            let mut body = resp.await.unwrap().into_body();
            assert_eq!(body.data().await.unwrap().unwrap(), "x");
        }
        assert_eq!(server.streams_per_connection(), [4]);
        assert_eq!(server.max_concurrent_streams_seen(), 2);
        assert_eq!(server.accepted(), 1);
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h2_rst_stream_fails_one_stream_and_not_the_other() {
    within(async {
        let server = ScriptedH2Server::builder()
            .handler(|req| match req.path() {
                "/refuse" => StreamPlan::reset(Reason::REFUSED_STREAM),
                _ => StreamPlan::ok("fine").header("x-served", "yes"),
            })
            .start()
            .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let (refused, _) = client
            .send_request(Request::get(server.url("/refuse")).body(()).unwrap(), true)
            .unwrap();
        let mut client = client.ready().await.unwrap();
        let (fine, _) = client
            .send_request(Request::get(server.url("/ok")).body(()).unwrap(), true)
            .unwrap();
        let err = refused.await.unwrap_err();
        assert_eq!(err.reason(), Some(Reason::REFUSED_STREAM));
        let resp = fine.await.unwrap();
        assert_eq!(resp.headers()["x-served"], "yes");
        let mut body = resp.into_body();
        assert_eq!(body.data().await.unwrap().unwrap(), "fine");
        assert_eq!(server.streams_per_connection(), [2]);
        assert_eq!(server.accepted(), 1);
        assert!(server.client_resets().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h2_graceful_goaway_lets_the_in_flight_stream_finish() {
    within(async {
        let gate = Gate::new();
        let server = ScriptedH2Server::builder()
            .conn_plan(
                H2ConnPlan::new()
                    .stream(StreamPlan::ok_split("in ", gate.clone(), "flight"))
                    .graceful_goaway_after(1),
            )
            .start()
            .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor, TokioIo::new(tcp))
                .await
                .unwrap();
        let conn = tokio::spawn(conn);
        let mut sender: H2Sender = sender;
        let resp = sender.send_request(h2_get(&server.url("/"))).await.unwrap();
        gate.wait_arrived(1).await;
        gate.open();
        assert_eq!(body_string(resp).await, "in flight");
        // After the stream, the server closes the connection cleanly.
        conn.await.unwrap().expect("graceful close");
        server.wait_for_closed(1).await;
        assert!(sender.is_closed());
        assert!(server.errors().is_empty(), "{:?}", server.errors());
    })
    .await;
}

#[tokio::test]
async fn h2_abrupt_goaway_fails_the_connection_with_its_code() {
    within(async {
        let gate = Gate::new();
        let server = ScriptedH2Server::builder()
            .default_conn_plan(
                H2ConnPlan::new()
                    .default_stream(StreamPlan::ok("never").after_gate(Gate::new()))
                    .abrupt_goaway_on(gate.clone(), Reason::ENHANCE_YOUR_CALM),
            )
            .start()
            .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        let conn = tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let (resp, _) = client
            .send_request(Request::get(server.url("/")).body(()).unwrap(), true)
            .unwrap();
        server.wait_for_requests(1).await;
        gate.open();
        let err = conn.await.unwrap().unwrap_err();
        assert!(err.is_go_away(), "{err}");
        assert_eq!(err.reason(), Some(Reason::ENHANCE_YOUR_CALM));
        assert!(resp.await.is_err());
        server.wait_for_closed(1).await;
        assert!(server.client_resets().is_empty());
        assert!(server.errors().is_empty(), "{:?}", server.errors());
    })
    .await;
}

#[tokio::test]
async fn h2_dropped_body_is_counted_as_client_cancel() {
    within(async {
        let server = ScriptedH2Server::start_with(
            StreamPlan::new()
                .head(200)
                .data("part")
                .gate(Gate::new()) // never opened: the stream stays open
                .data("never"),
        )
        .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let mut sender = h2_over(tcp).await;
        let resp = sender.send_request(h2_get(&server.url("/"))).await.unwrap();
        let mut body = resp.into_body();
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "part");
        drop(body);
        let resets = server.wait_for_client_resets(1).await;
        assert_eq!(resets[0].reason, Reason::CANCEL);
        assert_eq!((resets[0].conn_id, resets[0].stream_id), (0, 1));
        assert_eq!(server.streams_in_flight(), [0]);
        assert!(server.errors().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h2_stream_plan_exhaustion_surfaces_an_error() {
    within(async {
        let server = ScriptedH2Server::builder()
            .conn_plan(H2ConnPlan::new().stream(StreamPlan::ok("only")))
            .start()
            .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let mut sender = h2_over(tcp).await;
        let resp = sender
            .send_request(h2_get(&server.url("/1")))
            .await
            .unwrap();
        assert_eq!(body_string(resp).await, "only");
        let err = sender
            .send_request(h2_get(&server.url("/2")))
            .await
            .unwrap_err();
        assert_eq!(h2_reason(&err), Some(Reason::INTERNAL_ERROR));
        let errors = server.wait_for_errors(1).await;
        assert!(errors[0].contains("no stream plan"), "{errors:?}");
        assert!(errors[0].contains("/2"), "{errors:?}");
    })
    .await;
}

#[tokio::test]
async fn h2_request_fields_are_recorded() {
    within(async {
        let server = ScriptedH2Server::start_with(StreamPlan::status(204)).await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let req = Request::post(server.url("/submit?q=1"))
            .header("x-test", "1")
            .body(())
            .unwrap();
        let (resp, mut body) = client.send_request(req, false).unwrap();
        body.send_data(Bytes::from_static(b"abc"), false).unwrap();
        body.send_data(Bytes::from_static(b"def"), true).unwrap();
        assert_eq!(resp.await.unwrap().status(), StatusCode::NO_CONTENT);
        let req = &server.requests()[0];
        assert_eq!(req.method, http::Method::POST);
        assert_eq!(req.path(), "/submit?q=1");
        assert_eq!(req.authority(), Some(server.authority().as_str()));
        assert_eq!(req.header("x-test"), Some("1"));
        assert_eq!(req.body, "abcdef");
        assert_eq!((req.conn_id, req.stream_id, req.index), (0, 1, 0));
    })
    .await;
}

#[tokio::test]
async fn h2_shutdown_cancels_gated_streams() {
    within(async {
        let gate = Gate::new();
        let server =
            ScriptedH2Server::start_with(StreamPlan::ok("x").after_gate(gate.clone())).await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor, TokioIo::new(tcp))
                .await
                .unwrap();
        let conn = tokio::spawn(conn);
        let mut sender: H2Sender = sender;
        let pending = tokio::spawn(async move { sender.send_request(h2_get("http://x/")).await });
        gate.wait_arrived(1).await;
        server.shutdown().await;
        assert!(pending.await.unwrap().is_err());
        let _ = conn.await.unwrap();
        assert_eq!(server.open(), 0);
        assert!(server.client_resets().is_empty());
    })
    .await;
}

#[tokio::test]
async fn h2_handshake_gate_and_settings_windows() {
    within(async {
        let hold = Gate::new();
        let server = ScriptedH2Server::builder()
            .initial_window_size(1024)
            .initial_connection_window_size(1 << 20)
            .conn_plan(H2ConnPlan::new().handshake_gate(hold.clone()))
            .default_stream(StreamPlan::ok("after handshake"))
            .start()
            .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let handshake = tokio::spawn(h2_over(tcp));
        hold.wait_arrived(1).await;
        assert_eq!(server.accepted(), 1);
        hold.open();
        let mut sender = handshake.await.unwrap();
        let resp = sender.send_request(h2_get(&server.url("/"))).await.unwrap();
        assert_eq!(body_string(resp).await, "after handshake");

        // A body far larger than the 1 KiB stream window arrives whole: the server releases
        // capacity as it reads.
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let mut client = client.ready().await.unwrap();
        let (resp, mut body) = client
            .send_request(Request::post(server.url("/big")).body(()).unwrap(), false)
            .unwrap();
        body.send_data(Bytes::from(vec![7u8; 100_000]), true)
            .unwrap();
        assert_eq!(resp.await.unwrap().status(), StatusCode::OK);
        let reqs = server.wait_for_requests(2).await;
        assert_eq!(reqs[1].body.len(), 100_000);
    })
    .await;
}

#[tokio::test]
async fn h2_graceful_goaway_on_gate_closes_an_idle_connection() {
    within(async {
        let gate = Gate::new();
        let server = ScriptedH2Server::builder()
            .default_conn_plan(
                H2ConnPlan::new()
                    .default_stream(StreamPlan::ok("before"))
                    .graceful_goaway_on(gate.clone()),
            )
            .start()
            .await;
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor, TokioIo::new(tcp))
                .await
                .unwrap();
        let conn = tokio::spawn(conn);
        let mut sender: H2Sender = sender;
        let resp = sender.send_request(h2_get(&server.url("/"))).await.unwrap();
        assert_eq!(body_string(resp).await, "before");
        assert_eq!(server.open(), 1);
        gate.open();
        conn.await.unwrap().expect("graceful close");
        server.wait_for_closed(1).await;
        assert!(server.errors().is_empty(), "{:?}", server.errors());
    })
    .await;
}

#[tokio::test]
async fn h2_wrong_protocol_is_an_error_and_a_bare_connect_is_not() {
    within(async {
        let server = ScriptedH2Server::start_with(StreamPlan::ok("x")).await;
        // Connect and leave: not an error.
        drop(TcpStream::connect(server.addr()).await.unwrap());
        server.wait_for_closed(1).await;
        assert!(server.errors().is_empty(), "{:?}", server.errors());
        // Speak HTTP/1.1 to it: the handshake fails and that is recorded.
        let mut tcp = TcpStream::connect(server.addr()).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let _ = read_to_end(&mut tcp).await;
        let errors = server.wait_for_errors(1).await;
        assert!(
            errors[0].contains("conn 1: h2 handshake failed"),
            "{errors:?}"
        );
    })
    .await;
}
