//! HTTP/1 pooling through `pool`: reuse, retirement, idle expiry, the stale-reuse retry,
//! timeouts, dialing, upgrades and shutdown, against scripted loopback peers.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use pool::{
    CloseReason, ConnectionHandle, ConnectionPool, Partition, PartitionId, PartitionStats,
    TokioDriverSpawner,
};
use pool_tests::client::{fetch, get, origin, settle};
use pool_tests::duplex::{DuplexConnector, answer_one};
use pool_tests::events::{EventLog, observed};
use pool_tests::gate::Gate;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server, read_head};
use pool_tests::resolve::{FixedResolver, HangingResolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn fully_read_response_returns_the_connection_for_reuse() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("hello"))).await;
    let (pool, client, events) = observed(ConnectionPool::builder());
    let url = server.url("/a");

    let (first, body) = fetch(&client, &url).await;
    assert_eq!(body, "hello");
    assert!(!first.is_reused());
    assert!(
        first.wait_time().is_some(),
        "the first request waited for its connection"
    );
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;

    let (second, body) = fetch(&client, &server.url("/b")).await;
    assert_eq!(body, "hello");
    assert_eq!(second.id(), first.id(), "same connection");
    assert!(second.is_reused());
    assert_eq!(second.wait_time(), None, "a reuse hit does not wait");
    assert_eq!(server.accepted(), 1);
    assert_eq!(events.reused(), vec![first.id()]);
    assert_eq!(events.created().len(), 1);
}

#[tokio::test]
async fn requests_use_origin_form_and_host() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/path/x?q=1");
    fetch(&client, &url).await;
    let post = Request::post(server.url("/submit"))
        .body(Full::new(Bytes::from_static(b"payload")))
        .unwrap();
    let response = client.request(post).await.unwrap();
    response.into_body().collect().await.unwrap();

    let requests = server.requests();
    assert_eq!(requests[0].target, "/path/x?q=1");
    assert!(requests[0].is_origin_form());
    assert_eq!(requests[0].host(), Some(server.authority().as_str()));
    assert_eq!(requests[1].method, "POST");
    assert_eq!(requests[1].body, "payload");
    assert_eq!(requests[1].header("content-length"), Some("7"));
}

/// A [`pool::RequestTarget`] is the request line's target (`OPTIONS *`); `Host` and the
/// connection are still the URI's, and the next request on that connection is unaffected.
#[tokio::test]
async fn a_request_target_extension_replaces_the_uris_target() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    let mut options = Request::options(server.url("/ignored?q"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    options
        .extensions_mut()
        .insert(pool::RequestTarget::asterisk());
    let response = client.request(options).await.unwrap();
    response.into_body().collect().await.unwrap();
    fetch(&client, &server.url("/after")).await;

    let requests = server.requests();
    assert_eq!(requests[0].method, "OPTIONS");
    assert_eq!(requests[0].target, "*");
    assert_eq!(requests[0].host(), Some(server.authority().as_str()));
    assert_eq!(requests[1].target, "/after");
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn body_dropped_before_its_end_retires_the_connection() {
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("a body nobody reads")))
            .await;
    let (_pool, client, events) = observed(ConnectionPool::builder());
    let url = server.url("/");

    let response = client.request(get(&url)).await.unwrap();
    let first = response.body().connection().id();
    drop(response);
    assert_eq!(
        events.closed(),
        vec![(first, CloseReason::IncompleteH1Exchange)]
    );

    let (second, _) = fetch(&client, &url).await;
    assert_ne!(second.id(), first);
    assert!(!second.is_reused());
    assert_eq!(server.accepted(), 2);
}

#[tokio::test]
async fn connection_close_response_is_not_reused() {
    let server =
        ScriptedH1Server::start_with(ConnPlan::new().respond(Reply::ok("bye").connection_close()))
            .await;
    let (_pool, client, events) = observed(ConnectionPool::builder());
    let url = server.url("/");

    let (first, _) = fetch(&client, &url).await;
    let (second, _) = fetch(&client, &url).await;
    assert_ne!(first.id(), second.id());
    assert_eq!(server.accepted(), 2);
    assert!(
        events
            .closed()
            .contains(&(first.id(), CloseReason::ProtocolClosed))
    );
    assert!(server.errors().is_empty(), "{:?}", server.errors());
}

/// `Body::closes_connection` says from the response's head what the pool will do with the
/// connection at the exchange's end, by hyper's keep-alive rule (HTTP/1.1 unless `Connection:
/// close`, HTTP/1.0 only with `Connection: keep-alive`), and after the end what it did; the
/// connection is then reused exactly when it said `false`.
#[tokio::test]
async fn a_response_says_from_its_head_whether_its_connection_closes() {
    // (case, HTTP/1.0 response, the response's `Connection`, the request's, whether the
    // connection closes). Each body is held half-sent at a gate until the head's answer is
    // read, so that hyper cannot have closed the connection by then: the answer at the head
    // is the pool's decision, not what it saw happen.
    let cases = [
        ("HTTP/1.1", false, None, None, false),
        (
            "HTTP/1.1 with Connection: close",
            false,
            Some("Keep-Alive, Close"),
            None,
            true,
        ),
        ("HTTP/1.0", true, None, None, true),
        (
            "HTTP/1.0 with Connection: keep-alive",
            true,
            Some("keep-alive"),
            None,
            false,
        ),
        // hyper closes after a request that says close, whatever the response says.
        (
            "request with Connection: close",
            false,
            None,
            Some("close"),
            true,
        ),
        (
            "request with Connection: keep-alive",
            false,
            None,
            Some("keep-alive"),
            false,
        ),
    ];
    for (case, http_1_0, response_connection, request_connection, closes) in cases {
        let gate = Gate::new();
        let mut reply = Reply::ok_split("x", gate.clone(), "y");
        if http_1_0 {
            reply = reply.http_1_0();
        }
        if let Some(value) = response_connection {
            reply = reply.header("Connection", value);
        }
        let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(reply)).await;
        let (_pool, client, events) = observed(ConnectionPool::builder());
        let url = server.url("/");
        let mut request = get(&url);
        if let Some(value) = request_connection {
            request
                .headers_mut()
                .insert(http::header::CONNECTION, value.parse().unwrap());
        }
        let response = client.request(request).await.unwrap();
        assert_eq!(
            response.body().closes_connection(),
            closes,
            "{case}: at the head"
        );
        gate.open();
        let first = response.body().connection().id();
        let mut body = response.into_body();
        while body.frame().await.is_some() {}
        assert_eq!(body.closes_connection(), closes, "{case}: at the end");
        drop(body);
        let (second, _) = fetch(&client, &url).await;
        assert_eq!(second.is_reused(), !closes, "{case}: reused");
        if closes {
            assert_eq!(
                events.closed().first(),
                Some(&(first, CloseReason::ProtocolClosed)),
                "{case}"
            );
            assert_eq!(server.accepted(), 2, "{case}");
        } else {
            assert_eq!(second.id(), first, "{case}");
        }
    }

    // A connection poisoned while its body is read closes at the end, whatever its head said.
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let (_pool, client, events) = observed(ConnectionPool::builder());
    let response = client.request(get(&server.url("/"))).await.unwrap();
    let body = response.into_body();
    let id = body.connection().id();
    body.connection().poison();
    assert!(body.closes_connection(), "poisoned: at the head");
    let body = body.collect().await.unwrap();
    drop(body);
    fetch(&client, &server.url("/")).await;
    assert_eq!(events.closed(), vec![(id, CloseReason::Poisoned)]);
}

/// An idle connection expires at the pool's idle timeout, or earlier when its server's
/// `Keep-Alive: timeout=N` says so: at N less a second (the pool retires the connection before
/// the server closes it under a request); the pool's own timeout wins when it is shorter;
/// `timeout=0` keeps nothing idle. The next request opens a new connection.
#[tokio::test(start_paused = true)]
async fn idle_connections_expire_at_the_pools_or_the_servers_idle_timeout() {
    let cases = [
        (None, 5, 5_000),
        (Some("5"), 90, 4_000),
        (Some("60"), 5, 5_000),
        (Some("0"), 90, 0),
    ];
    for (hint, pool_timeout, kept_ms) in cases {
        let reply = match hint {
            Some(hint) => Reply::ok("x").header("Keep-Alive", &format!("timeout={hint}, max=100")),
            None => Reply::ok("x"),
        };
        let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(reply)).await;
        let (pool, client, events) = observed(
            ConnectionPool::builder().idle_timeout(Some(Duration::from_secs(pool_timeout))),
        );
        let url = server.url("/");
        let key = origin(&url);
        let (first, _) = fetch(&client, &url).await;
        if kept_ms > 0 {
            settle(&pool, &key, |s| s.h1_idle == 1).await;
            tokio::time::advance(Duration::from_millis(kept_ms - 100)).await;
            settle(&pool, &key, |s| s.h1_idle == 1).await;
            assert!(events.closed().is_empty(), "{hint:?}: kept until then");
            tokio::time::advance(Duration::from_millis(200)).await;
        }
        events.wait_for_closed(1).await;
        assert_eq!(
            events.closed(),
            vec![(first.id(), CloseReason::IdleTimeout)],
            "{hint:?}"
        );
        settle(&pool, &key, |s| *s == PartitionStats::default()).await;
        let (second, _) = fetch(&client, &url).await;
        assert_ne!(second.id(), first.id());
        assert_eq!(server.accepted(), 2);
    }
}

/// A server that closes idle connections after a second without saying so (no `Keep-Alive`
/// header, as HAProxy, lighttpd or nginx without its second `keepalive_timeout` parameter):
/// the first two connections, the first partition's, are closed by the server a second apart,
/// which teaches the pool the timeout; the third, the second partition's, retires half a
/// second after going idle (the timeout less its margin), before the server's close could meet
/// a request, and the next request opens a connection of its own. Without the lesson the
/// third would also wait for the server's close; with a lesson per partition, too.
#[tokio::test(start_paused = true)]
async fn idle_connections_retire_before_a_server_idle_timeout_the_pool_learnt() {
    let second = Duration::from_secs(1);
    let plan = ConnPlan::new()
        .respond(Reply::ok("x"))
        .delay(second)
        .close();
    let server = ScriptedH1Server::builder().default_plan(plan).start().await;
    let partitions = [0, 1].map(PartitionId::from_index);
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions(
            partitions
                .map(|id| Partition::new(id, TokioDriverSpawner::current()))
                .to_vec(),
        )
        .event_listener(events.clone())
        .build()
        .unwrap();
    let clients = partitions.map(|id| pool.client_for(id).unwrap());
    let url = server.url("/");
    let key = origin(&url);
    let mut ids = Vec::new();
    for closed in 1..=3 {
        let client = &clients[usize::from(closed == 3)];
        let (conn, _) = fetch(client, &url).await;
        let idle_at = tokio::time::Instant::now();
        ids.push(conn.id());
        settle(&pool, &key, |s| s.h1_idle == 1).await;
        events.wait_for_closed(closed).await;
        let (id, reason) = events.closed()[closed - 1];
        assert_eq!(id, conn.id());
        if closed < 3 {
            assert_eq!(reason, CloseReason::ProtocolClosed, "the server closed it");
            assert_eq!(idle_at.elapsed(), second);
        } else {
            assert_eq!(
                reason,
                CloseReason::IdleTimeout,
                "the pool retired it first"
            );
            assert_eq!(idle_at.elapsed(), second / 2);
        }
        let learnt = pool.stats(&key).server_idle_timeout();
        assert_eq!(
            learnt,
            (closed >= 2).then_some(second),
            "after {closed} closes"
        );
    }
    let (fourth, body) = fetch(&clients[0], &url).await;
    assert_eq!(body, "x");
    assert!(!ids.contains(&fourth.id()));
    assert_eq!(server.accepted(), 4);
    assert_eq!(pool.counters().transparent_retries, 0);
}

#[tokio::test(start_paused = true)]
async fn disabled_idle_timeout_never_expires() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let (pool, client, events) = observed(ConnectionPool::builder().idle_timeout(None));
    let url = server.url("/");

    let (first, _) = fetch(&client, &url).await;
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
    tokio::time::advance(Duration::from_secs(24 * 3600)).await;
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
    let (second, _) = fetch(&client, &url).await;
    assert_eq!(second.id(), first.id());
    assert!(events.closed().is_empty());
}

/// The peer closes an idle connection and the pool picks it before hyper has read the EOF:
/// hyper hands the request back unsent, and because the connection was reused the pool retries
/// on a fresh one. In-memory transports on one thread make the ordering exact: the server end is
/// dropped and the request dispatched before the connection's driver runs again.
#[tokio::test(flavor = "current_thread")]
async fn stale_reused_connection_is_retried_transparently() {
    let (connector, mut ends) = DuplexConnector::new();
    let (pool, client, events) = observed(ConnectionPool::builder().connector(connector));
    let url = "http://stale.test/";

    let (first, mut server_end) = tokio::join!(fetch(&client, url), async {
        let mut end = ends.recv().await.unwrap();
        answer_one(&mut end, "one").await;
        end
    });
    settle(&pool, &origin(url), |s| s.h1_idle == 1).await;
    // The peer goes away while the pool holds the connection idle.
    server_end.shutdown().await.unwrap();
    drop(server_end);

    let ((second, body), _end) = tokio::join!(fetch(&client, url), async {
        let mut end = ends.recv().await.unwrap();
        answer_one(&mut end, "two").await;
        end
    });
    assert_eq!(body, "two");
    assert_ne!(second.id(), first.0.id());
    assert!(!second.is_reused(), "the retry ran on a fresh connection");
    assert_eq!(pool.counters().transparent_retries, 1);
    // The request was dispatched on the stale connection (a reuse), which closed, and the same
    // request was then answered by a new connection: a transparent retry.
    use pool_tests::events::Event;
    let sequence: Vec<String> = events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Reused(id) => Some(format!("reused {}", id.as_u64())),
            Event::Closed(id, reason, _) => Some(format!("closed {} {reason}", id.as_u64())),
            Event::Created(info) => Some(format!("created {}", info.id().as_u64())),
            _ => None,
        })
        .collect();
    let (a, b) = (first.0.id().as_u64(), second.id().as_u64());
    assert_eq!(
        sequence,
        vec![
            format!("created {a}"),
            format!("reused {a}"),
            format!("closed {a} protocol_closed"),
            format!("created {b}")
        ]
    );
}

/// The same race on a connection that never served a request is not retried: the request
/// fails, and no second connection is opened.
#[tokio::test(flavor = "current_thread")]
async fn unsent_request_on_a_fresh_connection_is_not_retried() {
    let (connector, mut ends) = DuplexConnector::new();
    let pool = ConnectionPool::builder()
        .connector(connector)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://fresh.test/";

    let (result, ()) = tokio::join!(client.request(get(url)), async {
        let end = ends.recv().await.unwrap();
        drop(end);
    });
    let error = result.expect_err("no retry on a fresh connection");
    assert!(error.is_request(), "{error:?}");
    assert!(ends.try_recv().is_err(), "no second connection was opened");
    settle(&pool, &origin(url), |s| s.admitted() == 0).await;
}

#[tokio::test(start_paused = true)]
async fn connect_timeout_covers_resolution() {
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .resolver(HangingResolver)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let client = pool
        .client()
        .unwrap()
        .connect_timeout(Some(Duration::from_secs(2)));
    let url = "http://never.test/";

    let error = client
        .request(get(url))
        .await
        .expect_err("resolution never completes");
    assert!(
        error.is_connect_timeout() && error.is_timeout() && error.is_connect(),
        "{error:?}"
    );
    assert!(
        !error.is_system_timeout(),
        "the pool's own timer: {error:?}"
    );
    assert_eq!(
        error.connect_timed_out_during(),
        Some(pool::ConnectStep::Resolve)
    );
    assert!(
        format!("{error:#}").contains("while resolving the name"),
        "{error:#}"
    );
    assert_eq!(events.failed().len(), 1);
    let stats = pool.stats(&origin(url)).total();
    assert_eq!(
        stats,
        PartitionStats::default(),
        "nothing left establishing or waiting"
    );
}

#[tokio::test]
async fn happy_eyeballs_connects_to_the_address_that_answers() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("up"))).await;
    let port = server.addr().port();
    // Nothing listens on 127.0.0.2 at this port: the first address refuses.
    let refused: SocketAddr = format!("127.0.0.2:{port}").parse().unwrap();
    let resolver = FixedResolver::new([("dual.test", vec![refused, server.addr()])]);
    let pool = ConnectionPool::builder()
        .resolver(resolver)
        .build()
        .unwrap();
    let client = pool.client().unwrap();

    let (handle, body) = fetch(&client, &format!("http://dual.test:{port}/")).await;
    assert_eq!(body, "up");
    assert_eq!(handle.info().remote_addr(), Some(server.addr()));
}

/// hyper hands a transport error to the request in flight and ends its connection future
/// without one, so the driver closed the record with nothing to say; the close event now says
/// what the transport met, as the I/O wrapper noted it.
#[tokio::test]
async fn a_reset_under_a_request_is_named_in_the_close_event() {
    let server = ScriptedH1Server::start_with(ConnPlan::new().read_request().reset()).await;
    let (_pool, client, events) = observed(ConnectionPool::builder());
    let request = Request::post(server.url("/"))
        .body(Full::new(Bytes::from_static(b"payload")))
        .unwrap();
    let error = client
        .request(request)
        .await
        .expect_err("the server reset it");
    events.wait_for_closed(1).await;
    assert!(
        events.closed_once_reading("reset by peer"),
        "{events:?} ({error:#})"
    );
}

/// hyper also ends its connection future without an error when the server closes in the middle
/// of an exchange (the request or its body gets the error): the close event says the server
/// closed, before any response, in the middle of a head and in the middle of a body. A close of
/// an idle connection says the same, and is no failure of anything.
#[tokio::test]
async fn a_server_closing_under_an_exchange_is_named_in_the_close_event() {
    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n";
    let server_closed = || {
        vec![(
            CloseReason::ProtocolClosed,
            Some("the server closed the connection".to_owned()),
        )]
    };
    for (cut, sent) in [
        ("before the response", Vec::new()),
        ("in the head", HEAD[..20].to_vec()),
        ("in the body", [HEAD, b"0123456789"].concat()),
    ] {
        let server =
            ScriptedH1Server::start_with(ConnPlan::new().read_request().write_raw(sent).close())
                .await;
        let (_pool, client, events) = observed(ConnectionPool::builder());
        let failed = match client.request(get(&server.url("/"))).await {
            Ok(response) => response
                .into_body()
                .collect()
                .await
                .err()
                .map(|e| e.to_string()),
            Err(error) => Some(error.to_string()),
        };
        assert!(failed.is_some(), "{cut}: the exchange must fail");
        events.wait_for_closed(1).await;
        assert_eq!(events.closes(), server_closed(), "{cut}: {failed:?}");
    }

    let server = ScriptedH1Server::start_with(
        ConnPlan::new()
            .read_request()
            .reply(Reply::ok("served"))
            .close(),
    )
    .await;
    let (_pool, client, events) = observed(ConnectionPool::builder());
    let (_, body) = fetch(&client, &server.url("/")).await;
    assert_eq!(body, "served");
    events.wait_for_closed(1).await;
    assert_eq!(
        events.closes(),
        server_closed(),
        "an idle connection the server closed"
    );
}

#[tokio::test]
async fn refused_connection_is_a_connect_error_and_leaves_nothing_behind() {
    let refused = pool_tests::refused::RefusedAddr::new();
    let addr = refused.addr();
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    let url = format!("http://{addr}/");
    let error = client
        .request(get(&url))
        .await
        .expect_err("nothing listens");
    assert!(
        error.is_connect() && !error.is_timeout() && !error.is_resolve(),
        "{error:?}"
    );
    assert_eq!(pool.stats(&origin(&url)).total(), PartitionStats::default());
}

#[tokio::test]
async fn switching_protocols_hands_over_the_io_and_closes_the_record() {
    let server = ScriptedH1Server::start_with(
        ConnPlan::new()
            .respond(Reply::switching_protocols("echo"))
            .echo(),
    )
    .await;
    let (pool, client, events) = observed(ConnectionPool::builder());
    let url = server.url("/upgrade");
    let request = Request::get(&url)
        .header("connection", "upgrade")
        .header("upgrade", "echo")
        .body(Empty::<Bytes>::new())
        .unwrap();

    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    let id = response.body().connection().id();
    assert_eq!(events.closed(), vec![(id, CloseReason::Upgraded)]);

    let upgraded = hyper::upgrade::on(response).await.expect("upgrade");
    let mut io = pool_tls::TokioIo::new(upgraded);
    io.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    io.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    let key = origin(&url);
    assert_eq!(
        pool.stats(&key).total().h1_draining,
        1,
        "upgraded I/O is still live"
    );
    drop(io);
    settle(&pool, &key, |s| *s == PartitionStats::default()).await;
}

#[tokio::test]
async fn dropping_the_pool_closes_idle_connections() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let (pool, client, events) = observed(ConnectionPool::builder());
    let url = server.url("/");
    let (idle, _) = fetch(&client, &url).await;
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;

    drop(client);
    drop(pool);
    assert_eq!(events.closed(), vec![(idle.id(), CloseReason::PoolDropped)]);
    server.wait_for_closed(1).await;
}

#[tokio::test]
async fn a_response_in_flight_finishes_after_the_pool_is_dropped() {
    let gate = Gate::new();
    let server = ScriptedH1Server::start_with(ConnPlan::new().respond(Reply::ok_split(
        "hel",
        gate.clone(),
        "lo",
    )))
    .await;
    let (pool, client, events) = observed(ConnectionPool::builder());

    let response = client.request(get(&server.url("/"))).await.unwrap();
    let id = response.body().connection().id();
    drop(client);
    drop(pool);
    assert!(
        events.closed().is_empty(),
        "a busy connection is not closed by the drop"
    );
    gate.open();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello");
    events.wait_for_closed(1).await;
    assert_eq!(
        events.closed(),
        vec![(id, CloseReason::PoolDropped)],
        "it closes instead of idling"
    );
}

/// A spawner that runs futures on the current runtime until [`HoldingSpawner::hold`], then
/// keeps them until [`HoldingSpawner::release`]: a connection's driver can be made to not run
/// yet.
#[derive(Clone, Default)]
struct HoldingSpawner {
    holding: std::sync::Arc<std::sync::atomic::AtomicBool>,
    held: std::sync::Arc<std::sync::Mutex<Vec<pool::BoxFuture>>>,
}

impl HoldingSpawner {
    fn hold(&self) {
        self.holding
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn held(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    fn release(&self) {
        self.holding
            .store(false, std::sync::atomic::Ordering::SeqCst);
        for future in self.held.lock().unwrap().drain(..) {
            tokio::spawn(future);
        }
    }
}

impl std::fmt::Debug for HoldingSpawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoldingSpawner")
            .field("held", &self.held())
            .finish()
    }
}

impl pool::DriverSpawner for HoldingSpawner {
    fn spawn(&self, future: pool::BoxFuture) {
        if self.holding.load(std::sync::atomic::Ordering::SeqCst) {
            self.held.lock().unwrap().push(future);
        } else {
            tokio::spawn(future);
        }
    }
}

/// hyper reports a fresh HTTP/1 connection as not ready until its driver first runs, yet it
/// takes a first request (hyper buffers one). A fresh connection that went idle before its
/// driver ran (its request left while it was being established) is reused, not retired.
#[tokio::test]
async fn a_fresh_idle_connection_whose_driver_has_not_run_yet_is_reused() {
    use pool::{Partition, PartitionId};
    use pool_tests::gated::{GatedConnector, Gates};

    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let url = server.url("/");
    let key = origin(&url);
    let dial = Gate::new();
    let spawner = HoldingSpawner::default();
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .partitions([Partition::new(PartitionId::from_index(0), spawner.clone())])
        .connector(GatedConnector::new([Gates {
            before_dial: Some(dial.clone()),
            ..Gates::default()
        }]))
        .idle_timeout(None)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let client = pool.client_for(PartitionId::from_index(0)).unwrap();

    let leaving = {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move { fetch(&client, &url).await })
    };
    settle(&pool, &key, |s| s.establishing == 1).await;
    leaving.abort();
    settle(&pool, &key, |s| s.waiting_requests == 0).await;
    // From here on, the connection's driver is held back.
    spawner.hold();
    dial.open();
    settle(&pool, &key, |s| s.h1_idle == 1).await;
    assert_eq!(spawner.held(), 1, "the driver has not run");

    let second = {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move { fetch(&client, &url).await })
    };
    settle(&pool, &key, |s| s.h1_active == 1).await;
    assert_eq!(
        pool.stats(&key).total().establishing,
        0,
        "the idle connection was taken, not replaced"
    );
    spawner.release();
    let (handle, body) = tokio::time::timeout(Duration::from_secs(20), second)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body, "x");
    assert_eq!(handle.id(), events.created()[0].id());
    assert_eq!(server.accepted(), 1);
    assert!(events.closed().is_empty(), "nothing was retired");
}

/// A request served by a connection that came back while its own establishment still ran
/// leaves that establishment spare; the next request that misses adopts it instead of dialing
/// again, so requests in flight bound the connections opened.
#[tokio::test]
async fn a_miss_adopts_an_establishment_whose_request_was_served_elsewhere() {
    use pool_tests::gated::{GatedConnector, Gates};

    let hold = Gate::new();
    let plan = {
        let hold = hold.clone();
        ConnPlan::serve_with(move |request| match request.target.as_str() {
            "/held" => Reply::ok("held").gate(hold.clone()),
            _ => Reply::ok("x"),
        })
    };
    let server = ScriptedH1Server::start_with(plan).await;
    let key = origin(&server.url("/"));
    let dial = Gate::new();
    let pool = ConnectionPool::builder()
        .connector(GatedConnector::new([Gates {
            before_dial: Some(dial.clone()),
            ..Gates::default()
        }]))
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let spawn = |path: &str| {
        let (client, url) = (client.clone(), server.url(path));
        tokio::spawn(async move { fetch(&client, &url).await })
    };

    // A's establishment parks before dialing; B's completes and B finishes.
    let a = spawn("/held");
    settle(&pool, &key, |s| s.establishing == 1).await;
    let b = spawn("/quick");
    tokio::time::timeout(Duration::from_secs(20), b)
        .await
        .unwrap()
        .unwrap();
    // B's connection came back and serves A, whose own establishment is still parked.
    tokio::time::timeout(Duration::from_secs(20), hold.wait_arrived(1))
        .await
        .unwrap();
    settle(&pool, &key, |s| s.h1_active == 1 && s.waiting_requests == 0).await;
    assert_eq!(pool.stats(&key).total().establishing, 1);

    // C misses (A holds the only connection) and adopts A's spare establishment.
    let c = spawn("/quick");
    settle(&pool, &key, |s| s.waiting_requests == 1).await;
    assert_eq!(
        pool.stats(&key).total().establishing,
        1,
        "no second establishment was launched"
    );
    dial.open();
    let (_, body) = tokio::time::timeout(Duration::from_secs(20), c)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body, "x");
    hold.open();
    let (_, body) = a.await.unwrap();
    assert_eq!(body, "held");
    assert_eq!(server.accepted(), 2, "two connections for three requests");
}

/// Every response body carries its connection's handle; the response extension exists only
/// when the pool was built to attach it, and then describes the same connection.
#[tokio::test]
async fn the_connection_handle_is_an_extension_only_when_asked() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("x"))).await;
    let url = server.url("/");
    let plain = ConnectionPool::builder().build().unwrap();
    let response = plain.client().unwrap().request(get(&url)).await.unwrap();
    assert!(response.extensions().get::<ConnectionHandle>().is_none());
    assert!(!response.body().connection().is_reused());

    let attaching = ConnectionPool::builder()
        .connection_handle_extension(true)
        .build()
        .unwrap();
    let response = attaching
        .client()
        .unwrap()
        .request(get(&url))
        .await
        .unwrap();
    let extension = response
        .extensions()
        .get::<ConnectionHandle>()
        .expect("attached");
    assert_eq!(extension.id(), response.body().connection().id());
    assert_eq!(extension.protocol(), pool::Protocol::Http1);
}

/// One client alternating between two origins (and two spellings of one): every request goes
/// to its own origin's connections, whatever the client remembered from the request before.
#[tokio::test]
async fn one_client_alternating_origins_reaches_each_origin() {
    let a = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("a"))).await;
    let b = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("b"))).await;
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    let a_upper = a.url("/").replace("127.0.0.1", "LOCALHOST");
    let a_lower = a_upper.to_lowercase();
    for _ in 0..3 {
        assert_eq!(fetch(&client, &a.url("/")).await.1, "a");
        assert_eq!(fetch(&client, &b.url("/")).await.1, "b");
        assert_eq!(fetch(&client, &a_upper).await.1, "a");
        assert_eq!(fetch(&client, &a_lower).await.1, "a");
    }
    assert_eq!(
        a.accepted(),
        2,
        "one connection for 127.0.0.1, one for localhost"
    );
    assert_eq!(b.accepted(), 1);
    assert_eq!(pool.origins().len(), 3);
}

/// `http1_preserve_header_case`: each response carries its own head's names as written, in
/// order (after a `100 Continue`, and on a reused connection); without it, no extension.
#[tokio::test]
async fn raw_header_names_are_the_servers_own_only_when_asked() {
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_with(|req| match req.target.as_str() {
            "/first" => Reply::ok("a")
                .header("Content-Type", "text/plain")
                .header("X-Dup", "1")
                .header("x-other", "o")
                .header("X-DUP", "2"),
            _ => Reply::raw(
                "HTTP/1.1 100 Continue\r\nX-Early: e\r\n\r\n\
             HTTP/1.1 200 OK\r\nETag: \"v\"\r\nContent-Length: 1\r\n\r\nb",
            ),
        }))
        .await;
    let pool = ConnectionPool::builder()
        .http1_preserve_header_case(true)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let names = |response: &http::Response<pool::Body>| -> Vec<(String, String)> {
        let raw = response
            .extensions()
            .get::<pool::RawHeaderNames>()
            .expect("attached");
        raw.in_wire_order(response.headers())
            .map(|(n, v)| (n.to_owned(), v.to_str().unwrap().to_owned()))
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    };

    let first = client.request(get(&server.url("/first"))).await.unwrap();
    assert_eq!(
        names(&first),
        pairs(&[
            ("Content-Type", "text/plain"),
            ("X-Dup", "1"),
            ("x-other", "o"),
            ("X-DUP", "2"),
            ("content-length", "1"),
        ])
    );
    first.into_body().collect().await.unwrap();
    let second = client.request(get(&server.url("/second"))).await.unwrap();
    assert!(second.body().connection().is_reused());
    assert_eq!(
        names(&second),
        pairs(&[("ETag", "\"v\""), ("Content-Length", "1")]),
        "the final head's names, not the 100's nor the previous response's"
    );
    assert_eq!(second.into_body().collect().await.unwrap().to_bytes(), "b");

    let plain = ConnectionPool::builder().build().unwrap();
    let response = plain
        .client()
        .unwrap()
        .request(get(&server.url("/first")))
        .await
        .unwrap();
    assert!(
        response
            .extensions()
            .get::<pool::RawHeaderNames>()
            .is_none()
    );
}

/// `RequestHeaderNames`: on a pool that keeps header names, a request's listed names go as
/// spelled, whatever hyper would write (title case here), on a new and on a reused
/// connection; the rest go as hyper writes them. A pool that does not keep names ignores it.
#[tokio::test]
async fn request_header_names_go_as_spelled_when_the_pool_keeps_names() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("k"))).await;
    let spelled = |pool: &ConnectionPool| {
        let client = pool.client().unwrap();
        let url = server.url("/");
        async move {
            let mut request = get(&url);
            let headers = request.headers_mut();
            headers.insert("x-mixed-case", http::HeaderValue::from_static("1"));
            headers.insert("x-plain", http::HeaderValue::from_static("2"));
            let names: pool::RequestHeaderNames = ["x-Mixed-CASE"].into_iter().collect();
            request.extensions_mut().insert(names);
            let response = client.request(request).await.unwrap();
            response.into_body().collect().await.unwrap();
        }
    };
    let keeping = ConnectionPool::builder()
        .http1_preserve_header_case(true)
        .http1_title_case_headers(true)
        .build()
        .unwrap();
    spelled(&keeping).await;
    spelled(&keeping).await;
    let plain = ConnectionPool::builder().build().unwrap();
    spelled(&plain).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for (i, request) in requests.iter().enumerate() {
        let names: Vec<&str> = request.names.iter().map(String::as_str).collect();
        let expected: &[&str] = if i < 2 {
            &["x-Mixed-CASE", "X-Plain", "Host"]
        } else {
            &["x-mixed-case", "x-plain", "host"]
        };
        assert_eq!(names, expected, "request {i}");
    }
    assert_eq!(
        requests[1].conn_id, requests[0].conn_id,
        "the second reused the first's"
    );
}

/// The parked return, made certain. The reader (this test's thread) polls the body with a
/// waker that holds the thread which wakes it, the driver's worker, until the test releases it:
/// hyper wakes the reader once when it hands over the last byte and once when it drops its end
/// of the body (in the same poll, before it makes the sender ready for another request). The
/// second hold keeps the driver exactly in that window while the reader sees the end, so the
/// connection parks with its driver: it is not idle while the driver is held, and comes home,
/// to be reused, once the driver runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_ends_before_hyper_is_ready_parks_until_the_driver_runs() {
    use http_body::Body as _;
    use std::sync::{Arc, Mutex, mpsc};
    use std::task::{Poll, Wake, Waker};

    /// Wakes the reader, then holds a thread other than the reader's until released.
    struct HoldingWaker {
        reader: Waker,
        reader_thread: std::thread::ThreadId,
        holds: mpsc::Sender<()>,
        release: Arc<Mutex<mpsc::Receiver<()>>>,
    }
    impl Wake for HoldingWaker {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.reader.wake_by_ref();
            if std::thread::current().id() != self.reader_thread {
                let _ = self.holds.send(());
                // Deliberately blocking: this is the driver's worker thread, held mid-poll.
                // The limit only keeps a broken test from hanging.
                let released = self
                    .release
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(20));
                assert!(released.is_ok(), "the test never released the driver");
            }
        }
    }

    let (connector, mut accepted) = DuplexConnector::new();
    let pool = ConnectionPool::builder()
        .connector(connector)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://pool.test/";
    let key = origin(url);
    let (rest, send_rest) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let mut io = accepted.recv().await.expect("a connection");
        pool_tests::duplex::read_request(&mut io).await;
        io.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nx")
            .await
            .unwrap();
        // The last byte goes once the reader has the first and waits for more.
        send_rest.await.unwrap();
        io.write_all(b"y").await.unwrap();
        answer_one(&mut io, "x").await;
        io
    });

    let response = client.request(get(url)).await.unwrap();
    let first = response.body().connection().clone();
    let mut body = response.into_body();
    let start = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(start, "x");

    let (holds, held) = mpsc::channel();
    let (release, released) = mpsc::channel();
    let task = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
    let holding = Waker::from(Arc::new(HoldingWaker {
        reader: task,
        reader_thread: std::thread::current().id(),
        holds,
        release: Arc::new(Mutex::new(released)),
    }));
    // Polls the body once, with the holding waker registered for what comes next.
    let poll_body = |body: &mut pool::Body| {
        std::pin::Pin::new(body).poll_frame(&mut std::task::Context::from_waker(&holding))
    };
    let held_now = || held.recv_timeout(Duration::from_secs(20)).is_ok();

    assert!(poll_body(&mut body).is_pending());
    rest.send(()).unwrap();
    // Hold 1: hyper handed over the last byte.
    let last = std::future::poll_fn(|_| poll_body(&mut body)).await;
    assert_eq!(last.unwrap().unwrap().into_data().unwrap(), "y");
    assert!(
        poll_body(&mut body).is_pending(),
        "hyper still holds its end of the body"
    );
    assert!(
        held_now(),
        "the driver is held in the wake of the last byte"
    );
    release.send(()).unwrap();
    // Hold 2: hyper dropped its end of the body, before it became ready again.
    let end = std::future::poll_fn(|_| poll_body(&mut body)).await;
    assert!(end.is_none(), "the body ended");
    assert!(
        held_now(),
        "the driver is held in the wake of the body's end"
    );
    let stats = pool.stats(&key).total();
    assert_eq!(
        (stats.h1_idle, stats.h1_active),
        (0, 1),
        "parked with its held driver, the connection is not idle yet"
    );
    release.send(()).unwrap();
    settle(&pool, &key, |s| s.h1_idle == 1).await;
    let (second, body) = fetch(&client, url).await;
    assert_eq!(body, "x");
    assert_eq!(
        second.id(),
        first.id(),
        "the parked connection came home and served again"
    );
    drop(server.await.unwrap());
}

/// `max_idle_per_host` keeps that many idle connections and closes the rest as they come
/// back (`IdleLimit`); the kept one is reused. With 0, every connection closes once its
/// response is read, as `pool_max_idle_per_host(0)` does in hyper-util and reqwest.
#[tokio::test]
async fn max_idle_per_host_closes_returning_connections_beyond_it() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("kept"))).await;
    let url = server.url("/");
    for max in [1, 0] {
        let (pool, client, events) = observed(ConnectionPool::builder().max_idle_per_host(max));
        // Three response heads with their bodies unread hold three connections.
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(client.request(get(&url)).await.unwrap());
        }
        for response in held {
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, "kept");
        }
        settle(&pool, &origin(&url), |s| {
            s.h1_idle == max && s.h1_active == 0
        })
        .await;
        assert_eq!(events.created().len(), 3);
        assert_eq!(events.closed_with(CloseReason::IdleLimit), 3 - max);
        let (again, _) = fetch(&client, &url).await;
        assert_eq!(
            again.is_reused(),
            max == 1,
            "the kept connection serves the next request"
        );
    }
    assert_eq!(
        server.accepted(),
        3 + 4,
        "three, then three and one more with max 0"
    );
}

/// hyper's HTTP/1 parser settings, under hyper-util's names: each tolerance turns a response
/// hyper refuses by default into one the caller reads; a head with more lines than
/// `http1_max_headers` or more bytes than `http1_max_buf_size` fails; buffer settings hyper
/// would panic on are a `BuildError`.
#[tokio::test]
async fn http1_parser_settings_are_hypers() {
    type Configure = fn(pool::Builder) -> pool::Builder;
    /// A name, the response, the setting, and a header the response keeps (name as written,
    /// start of its value).
    type Case = (
        &'static str,
        String,
        Configure,
        Option<(&'static str, &'static str)>,
    );
    let big = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Big: {}\r\n\r\nok",
        "b".repeat(20_000)
    );
    let cases: [Case; 6] = [
        (
            "folded header",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Folded: a\r\n b\r\n\r\nok".into(),
            |b| b.http1_allow_obsolete_multiline_headers_in_responses(true),
            Some(("X-Folded", "a")),
        ),
        (
            "invalid header line",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nBad Name: x\r\n\r\nok".into(),
            |b| b.http1_ignore_invalid_headers_in_responses(true),
            None,
        ),
        (
            "space before the colon",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Spaced : v\r\n\r\nok".into(),
            |b| b.http1_allow_spaces_after_header_name_in_responses(true),
            Some(("X-Spaced", "v")),
        ),
        ("HTTP/0.9", "ok".into(), |b| b.http09_responses(true), None),
        // The last two turn a response hyper reads by default into a failure.
        (
            "more header lines than the maximum",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nX-B: 2\r\n\r\nok".into(),
            |b| b.http1_max_headers(2),
            None,
        ),
        (
            "a head over the read buffer",
            big,
            |b| b.http1_max_buf_size(8192),
            None,
        ),
    ];
    for (index, (name, response, configure, header)) in cases.into_iter().enumerate() {
        let tolerant = index < 4;
        // One connection each for the default pool and the configured one; the response is
        // followed by a close (HTTP/0.9's body ends there).
        let plan = ConnPlan::new()
            .read_request()
            .write_raw(response.into_bytes())
            .close();
        let server = ScriptedH1Server::builder()
            .plans([plan.clone(), plan])
            .start()
            .await;
        let url = server.url("/");
        for configured in [false, true] {
            // Header names as written too: their second reading is as tolerant as hyper's.
            let builder = ConnectionPool::builder().http1_preserve_header_case(true);
            let pool = match configured {
                true => configure(builder),
                false => builder,
            }
            .build()
            .unwrap();
            let client = pool.client().unwrap();
            let outcome = client.request(get(&url)).await;
            if configured != tolerant {
                let error = outcome.expect_err(name);
                assert!(!error.is_connect(), "{name}: a response error: {error:#}");
                continue;
            }
            let response = outcome.unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(response.status(), StatusCode::OK, "{name}");
            if let Some((header, starts)) = header {
                let value = response.headers()[header].to_str().unwrap().to_owned();
                assert!(value.starts_with(starts), "{name}: {value:?}");
                let written = response.extensions().get::<pool::RawHeaderNames>();
                assert!(
                    written.is_some_and(|names| names.iter().any(|n| n == header)),
                    "{name}: {written:?}"
                );
            }
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, "ok", "{name}");
        }
    }
    for (builder, says) in [
        (ConnectionPool::builder().http1_max_buf_size(100), "8192"),
        (
            ConnectionPool::builder()
                .http1_max_buf_size(65_536)
                .http1_read_buf_exact_size(Some(4096)),
            "not both",
        ),
    ] {
        let error = builder.build().expect_err("refused");
        assert_eq!(error.setting(), "http1_max_buf_size");
        assert!(error.to_string().contains(says), "{error}");
    }
    ConnectionPool::builder()
        .http1_read_buf_exact_size(Some(4096))
        .build()
        .expect("an exact read buffer alone is fine");
}

/// Each way a response head can break HTTP/1 is named by `Error::malformed`, on an error that
/// is not a connect failure and not retryable (the request was sent), and the connection it
/// came on leaves the pool's gauges at zero. One response per hyper parse kind (or per cause
/// of it), so a hyper release that rewords a kind's description fails here.
#[tokio::test]
async fn malformed_responses_name_the_part_at_fault() {
    use pool::Malformed;
    let many_headers: String = (0..101).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases: [(&str, String, Malformed); 10] = [
        (
            "an HTTP/0.9 reply",
            "just a body\n".into(),
            Malformed::Version,
        ),
        (
            "HTTP/1.2",
            "HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nok".into(),
            Malformed::Version,
        ),
        (
            "letters for a status code",
            "HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nok".into(),
            Malformed::StatusCode,
        ),
        (
            "a status code under 100",
            "HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nok".into(),
            Malformed::StatusCode,
        ),
        (
            "a header line without a colon",
            "HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 2\r\n\r\nok".into(),
            Malformed::Header,
        ),
        (
            "a NUL in a header value",
            "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 2\r\n\r\nok".into(),
            Malformed::Header,
        ),
        (
            "a Content-Length that is not a number",
            "HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nok".into(),
            Malformed::ContentLength,
        ),
        (
            "two different Content-Lengths",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk".into(),
            Malformed::ContentLength,
        ),
        (
            "Transfer-Encoding in an HTTP/1.0 response",
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n".into(),
            Malformed::TransferEncoding,
        ),
        (
            "more than 100 headers",
            format!("HTTP/1.1 200 OK\r\n{many_headers}Content-Length: 2\r\n\r\nok"),
            Malformed::TooLarge,
        ),
    ];
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    for (name, response, part) in cases {
        let server = ScriptedH1Server::builder()
            .plans([ConnPlan::new()
                .read_request()
                .write_raw(response.into_bytes())
                .close()])
            .start()
            .await;
        let url = server.url("/");
        let error = client.request(get(&url)).await.expect_err(name);
        assert_eq!(error.malformed(), Some(part), "{name}: {error:#}");
        assert!(
            error.is_malformed_response() && error.is_request(),
            "{name}: {error:#}"
        );
        assert!(
            !error.is_connect() && !error.is_retryable(),
            "{name}: {error:#}"
        );
        settle(&pool, &origin(&url), |s| *s == PartitionStats::default()).await;
    }
    // Not every failure is a malformed response.
    let server = ScriptedH1Server::builder()
        .plans([ConnPlan::new()
            .read_request()
            .write_raw(Bytes::from_static(
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nok",
            ))
            .close()])
        .start()
        .await;
    let response = client.request(get(&server.url("/"))).await.unwrap();
    let error = response.into_body().collect().await.expect_err("cut short");
    assert!(
        error.is_body() && !error.is_malformed_response(),
        "{error:#}"
    );
}

/// A request's extensions reach hyper: a callback registered with
/// `hyper::ext::on_informational` hears the 1xx heads before the response, through the pool,
/// whose header names as written are kept with the response's when the pool keeps names.
#[tokio::test]
async fn informational_heads_reach_a_callback_registered_on_the_request() {
    let server = ScriptedH1Server::builder()
        .plans(
            [ConnPlan::new().read_request().write_raw(Bytes::from_static(
                b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n\
              HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            ))],
        )
        .start()
        .await;
    let pool = ConnectionPool::builder()
        .http1_preserve_header_case(true)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut request = get(&server.url("/"));
    let log = heard.clone();
    hyper::ext::on_informational(&mut request, move |response| {
        let link = response.headers()["link"].to_str().unwrap().to_owned();
        log.lock().unwrap().push((response.status(), link));
    });
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let written = response.extensions().get::<pool::RawHeaderNames>().unwrap();
    let early: Vec<Vec<&str>> = written
        .informational()
        .iter()
        .map(|names| names.iter().collect())
        .collect();
    assert_eq!(early, [vec!["Link"]]);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "ok");
    assert_eq!(
        *heard.lock().unwrap(),
        [(StatusCode::EARLY_HINTS, "</s.css>".to_owned())]
    );
}

/// A server that ends an idle keep-alive connection with an unsolicited `408 Request Timeout`
/// before closing it (a habit Go's transport and browsers know): the pool retires the
/// connection when the 408 arrives, and the next request goes on a new connection and gets its
/// own response, not the stale 408.
#[tokio::test]
async fn an_unsolicited_408_on_an_idle_connection_retires_it() {
    let timeout = Gate::new();
    let server = ScriptedH1Server::builder()
        .plans([
            ConnPlan::new()
                .respond(Reply::ok("first"))
                .gate(timeout.clone())
                .write_raw(Bytes::from_static(
                    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                ))
                .close(),
            ConnPlan::new().respond(Reply::ok("second")),
        ])
        .start()
        .await;
    let (pool, client, events) = observed(ConnectionPool::builder());
    let url = server.url("/");
    let key = origin(&url);

    let (first, body) = fetch(&client, &url).await;
    assert_eq!(body, "first");
    settle(&pool, &key, |s| s.h1_idle == 1).await;
    timeout.open();
    settle(&pool, &key, |s| *s == PartitionStats::default()).await;
    let (second, body) = fetch(&client, &url).await;
    assert_eq!(body, "second");
    assert_ne!(first.id(), second.id());
    assert_eq!(
        events.closed()[0],
        (first.id(), CloseReason::ProtocolClosed)
    );
}

/// A server that speaks before any request (an SSH banner on a port given by mistake, an
/// h2c-only server's SETTINGS): what it sent is the first request's response, read as a
/// malformed one, whether the connection was dialed for the request or opened ahead and idle
/// when the bytes came (hyper alone ends such a connection when its driver reads them first,
/// and the request then fails as "connection was not ready").
#[tokio::test]
async fn what_a_new_connection_sends_before_the_request_is_its_response() {
    let (connector, mut ends) = DuplexConnector::speaking_first(b"SSH-2.0-OpenSSH_9.2\r\n");
    let pool = ConnectionPool::builder()
        .connector(connector)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://banner.test/";
    let error = client.request(get(url)).await.unwrap_err();
    assert!(error.is_malformed_response(), "{error:?}");
    let _first = ends.recv().await.expect("one connection");

    let key = origin(url);
    client.preconnect(&url.parse().unwrap(), 1).await.unwrap();
    settle(&pool, &key, |s| s.h1_idle == 1).await;
    // The idle connection's driver runs (and reads) before the request.
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    assert_eq!(pool.stats(&key).total().h1_idle, 1, "still idle");
    let error = client.request(get(url)).await.unwrap_err();
    assert!(error.is_malformed_response(), "{error:?}");
    let _second = ends.recv().await.expect("the preconnected one");
    assert!(
        ends.try_recv().is_err(),
        "the request went on the idle connection"
    );
}

/// A server that answers before any request and closes (nginx's `400` to a PROXY line it does
/// not expect, curl's `--haproxy-protocol` against a server without it): the request the
/// connection was dialed for gets that answer, every time, as curl reads it. Before, the close
/// reached hyper with the bytes, and the request failed as an unexpected message (against
/// nginx, two times in five). A connection opened ahead and left idle ends instead, so that no
/// later request is handed its server's answer to nothing.
#[tokio::test]
async fn an_answer_and_a_close_before_the_first_request_are_its_response() {
    let (connector, mut ends) = DuplexConnector::answering_and_closing(
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbad\n",
    );
    let (pool, client, events) = observed(ConnectionPool::builder().connector(connector));
    let url = "http://answers-first.test/";
    let key = origin(url);
    for round in 0..20 {
        let response = client
            .request(get(url))
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e:#}"));
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "bad\n");
    }
    let mut dialled = Vec::new();
    while let Ok(end) = ends.try_recv() {
        dialled.push(end);
    }
    assert_eq!(dialled.len(), 20, "one connection each");
    settle(&pool, &key, |s| *s == PartitionStats::default()).await;

    // Opened ahead, nobody to take it: the held close ends it as it goes idle.
    client.preconnect(&url.parse().unwrap(), 1).await.unwrap();
    settle(&pool, &key, |s| *s == PartitionStats::default()).await;
    assert!(ends.try_recv().is_ok(), "the preconnected one");
    let closed = events.closed();
    assert_eq!(closed.len(), 21);
    assert_eq!(closed[20].1, CloseReason::ProtocolClosed, "{closed:?}");
}

/// A server that answers a request before its body has arrived (`413` and a close, as nginx
/// does over `client_max_body_size`): the caller gets that response, not an error, though its
/// body never finished, and the connection is retired.
#[tokio::test]
async fn an_answer_before_the_request_body_ended_reaches_the_caller() {
    // A peer of its own: the scripted server reads whole requests, and this one must answer
    // after the head alone.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/upload", listener.local_addr().unwrap());
    let peer = tokio::spawn(async move {
        let (mut io, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut buf = [0u8; 4096];
            let n = io.read(&mut buf).await.unwrap();
            assert!(n > 0, "the head arrives");
            head.extend_from_slice(&buf[..n]);
        }
        io.write_all(
            b"HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Length: 10\r\n\r\ntoo large\n",
        )
        .await
        .unwrap();
        io.shutdown().await.unwrap();
        // Keep reading what the client still sends until it gives up on the connection.
        let mut rest = Vec::new();
        let _ = io.read_to_end(&mut rest).await;
    });
    let pool = ConnectionPool::builder().build().unwrap();
    let client = pool.client().unwrap();
    let body = pool_tests::client::Stalled::new(vec![b'x'; 1024], Gate::new());
    let request = Request::post(&url)
        .header("content-length", "1000000")
        .body(pool::RequestBody::new(body))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(10), client.request(request))
        .await
        .expect("an answer, not a hang")
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "too large\n");
    settle(&pool, &origin(&url), |s| *s == PartitionStats::default()).await;
    peer.await.unwrap();
}

/// A peer that reads one request head and runs `then` on the rest of the connection; returns
/// its URL and the head it read.
async fn expect_peer<F, Fut>(then: F) -> (String, tokio::task::JoinHandle<(String, Fut::Output)>)
where
    F: FnOnce(tokio::net::TcpStream, Vec<u8>) -> Fut + Send + 'static,
    Fut: std::future::Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/upload", listener.local_addr().unwrap());
    let peer = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut rest = Vec::new();
        let head = read_head(&mut stream, &mut rest).await;
        let head = head.expect("the client closed before its head ended");
        (head, then(stream, rest).await)
    });
    (url, peer)
}

/// A 64-byte upload that asks for `100 Continue` with the header.
fn upload(url: &str) -> Request<Full<Bytes>> {
    Request::post(url)
        .header("expect", "100-continue")
        .body(Full::new(Bytes::from(vec![b'x'; 64])))
        .unwrap()
}

#[tokio::test]
async fn expect_continue_holds_the_body_until_100_continue() {
    // An hour's wait: only the server's 100 Continue can release the body in this test.
    let builder =
        ConnectionPool::builder().expect_continue_timeout(Some(Duration::from_secs(3600)));
    let (pool, client, _events) = observed(builder);
    let (url, peer) = expect_peer(|mut stream, mut body| async move {
        stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .unwrap();
        while body.len() < 64 {
            let mut chunk = [0u8; 64];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the body never came");
            body.extend_from_slice(&chunk[..n]);
        }
        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        stream.write_all(reply).await.unwrap();
        // Kept open until the client closes, so the connection can go back to the pool.
        let _ = stream.read(&mut [0u8; 16]).await;
        body
    })
    .await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut request = upload(&url);
    let log = seen.clone();
    pool::on_informational(&mut request, move |response| {
        log.lock().unwrap().push(response.status());
    });
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.extensions().get::<pool::BodyWithheld>().is_none());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "ok");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![StatusCode::CONTINUE],
        "the caller's 1xx hook ran"
    );
    settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
    // The last handles: the pool closes its idle connection, and the peer sees the end.
    drop((pool, client));
    let (head, sent) = peer.await.unwrap();
    assert!(head.contains("\r\nexpect: 100-continue\r\n"), "{head}");
    assert_eq!(sent, vec![b'x'; 64]);
}

#[tokio::test]
async fn a_final_response_before_100_continue_keeps_the_body_and_retires_the_connection() {
    let builder =
        ConnectionPool::builder().expect_continue_timeout(Some(Duration::from_secs(3600)));
    let (pool, client, events) = observed(builder);
    let (url, peer) = expect_peer(|mut stream, mut after_head| async move {
        let reply = b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 4\r\n\r\nnope";
        stream.write_all(reply).await.unwrap();
        // Everything the client writes until it closes: none of it may be the body.
        let _ = stream.read_to_end(&mut after_head).await;
        after_head
    })
    .await;
    let response = client.request(upload(&url)).await.unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(response.extensions().get::<pool::BodyWithheld>().is_some());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "nope", "the refusal's body arrives whole");
    let (head, after_head) = peer.await.unwrap();
    assert!(head.starts_with("post /upload http/1.1\r\n"), "{head}");
    assert!(after_head.is_empty(), "the body was sent: {after_head:?}");
    settle(&pool, &origin(&url), |s| {
        s.h1_idle + s.h1_active + s.h1_draining == 0
    })
    .await;
    assert_eq!(events.closed_with(CloseReason::IncompleteH1Exchange), 1);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_sends_100_continue_gets_the_body_when_the_wait_runs_out() {
    // The scripted peer reads whole requests and never answers 100 Continue on its own.
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("done"))).await;
    let pool = ConnectionPool::builder()
        .expect_continue_timeout(Some(Duration::from_secs(2)))
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let started = tokio::time::Instant::now();
    // Asked for with the mark: the pool adds the header on HTTP/1.1.
    let mut request = Request::put(server.url("/file"))
        .body(Full::new(Bytes::from_static(b"payload")))
        .unwrap();
    request.extensions_mut().insert(pool::ExpectContinue);
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the body waited"
    );
    response.into_body().collect().await.unwrap();
    // An empty body never asks.
    let mut empty = Request::put(server.url("/empty"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    empty.extensions_mut().insert(pool::ExpectContinue);
    client
        .request(empty)
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap();

    let requests = server.requests();
    assert_eq!(requests[0].header("expect"), Some("100-continue"));
    assert_eq!(requests[0].body, "payload");
    assert_eq!(requests[1].header("expect"), None);
}

#[tokio::test]
async fn without_a_wait_the_body_goes_with_the_head() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("done"))).await;
    let pool = ConnectionPool::builder()
        .expect_continue_timeout(None)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let request = Request::post(server.url("/x"))
        .header("expect", "100-continue")
        .body(Full::new(Bytes::from_static(b"now")))
        .unwrap();
    let response = client.request(request).await.unwrap();
    response.into_body().collect().await.unwrap();
    assert_eq!(server.requests()[0].body, "now");
    assert_eq!(server.requests()[0].header("expect"), Some("100-continue"));
}

/// What one upload answered with `status` before its body was read came to: the pool's
/// `BodyStopped` count, the body bytes that reached the peer, and the body's length.
async fn answered_early(
    status: u16,
    keep_sending: bool,
) -> (Option<u64>, usize, usize, PartitionStats, EventLog) {
    // Far more than the loopback socket buffers and hyper's write buffer hold together, so
    // that the upload is still going when the answer arrives.
    const LEN: usize = 32 << 20;
    let builder = ConnectionPool::builder().keep_sending_on_error(keep_sending);
    let (pool, client, events) = observed(builder);
    let (drain, drained) = tokio::sync::oneshot::channel::<()>();
    let (url, peer) = expect_peer(move |mut stream, after_head| async move {
        let reply = format!("HTTP/1.1 {status} Early\r\ncontent-length: 4\r\n\r\nnope");
        stream.write_all(reply.as_bytes()).await.unwrap();
        // Nothing of the body is read until the client has the answer: its upload is stuck
        // in full socket buffers meanwhile, wherever the stop finds it.
        let _ = drained.await;
        let mut got = after_head.len();
        let mut buf = vec![0u8; 1 << 16];
        while got < LEN {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        // Open until the client closes, so a connection that went home stays there.
        let _ = stream.read(&mut buf).await;
        got
    })
    .await;
    let request = Request::post(&url)
        .body(pool::RequestBody::full(vec![b'x'; LEN]))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status().as_u16(), status);
    let stopped = response
        .extensions()
        .get::<pool::BodyStopped>()
        .map(pool::BodyStopped::bytes_sent);
    let sending = response
        .extensions()
        .get::<pool::BodyStillSending>()
        .cloned();
    assert_eq!(
        sending.is_some(),
        stopped.is_none(),
        "a body still going is either stopped or going on"
    );
    drain.send(()).unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "nope", "the answer's body arrives whole");
    if let Some(sending) = sending {
        assert_eq!(sending.sent().await, LEN as u64, "the rest went");
    }
    settle(&pool, &origin(&url), |s| {
        s.h1_active + s.h1_draining + s.establishing == 0
    })
    .await;
    let settled = pool.stats(&origin(&url)).total();
    drop((pool, client));
    let (_, got) = peer.await.unwrap();
    (stopped, got, LEN, settled, events)
}

#[tokio::test]
async fn an_error_answer_before_the_upload_ended_stops_the_body() {
    let (stopped, got, len, settled, events) = answered_early(413, false).await;
    let sent = stopped.expect("the response says the body was stopped") as usize;
    assert!(sent < len, "stopped before its end: {sent} of {len}");
    assert!(
        got <= sent,
        "the peer got {got} bytes, more than the {sent} that went"
    );
    assert_eq!(settled.h1_idle, 0, "the connection closed: {settled:?}");
    assert_eq!(events.closed_with(CloseReason::IncompleteH1Exchange), 1);
}

#[tokio::test]
async fn an_upload_answered_early_goes_on_for_a_success_or_when_asked_to() {
    for (status, keep_sending) in [(200, false), (413, true)] {
        let (stopped, got, len, settled, events) = answered_early(status, keep_sending).await;
        assert_eq!(stopped, None, "{status}, keep sending {keep_sending}");
        assert_eq!(got, len, "the whole body went ({status})");
        assert_eq!(settled.h1_idle, 1, "the connection went home ({status})");
        assert_eq!(events.closed_with(CloseReason::IncompleteH1Exchange), 0);
    }
}

/// A peer that vanishes without a word is found: TCP keepalive ends the idle HTTP/1
/// connection and `TCP_USER_TIMEOUT` fails a POST written into one, each close naming the
/// kernel's `ETIMEDOUT` (see `pool_tests::vanish`, which runs it in a network namespace).
#[test]
fn a_peer_that_vanishes_is_found_by_keepalive_and_the_user_timeout() {
    pool_tests::vanish::check(
        "a_peer_that_vanishes_is_found_by_keepalive_and_the_user_timeout",
        pool_tests::vanish::Check::Vanish(pool_tests::vanish::Over::Http1),
    );
}

/// A connect that nothing answers ends at `TCP_USER_TIMEOUT` (Linux applies it to the SYNs),
/// as a connect error that is a timeout, not the pool's connect timeout; without it the kernel
/// would retry its SYN for about two minutes (see `pool_tests::vanish`).
#[test]
fn a_connect_nothing_answers_ends_at_the_user_timeout() {
    pool_tests::vanish::check(
        "a_connect_nothing_answers_ends_at_the_user_timeout",
        pool_tests::vanish::Check::Unanswered,
    );
}
