//! Re-sending what the server did not process: one test per proof (hyper's unsent hand-back,
//! HTTP/2 GOAWAY, REFUSED_STREAM, a reused HTTP/1 or HTTP/2 connection closed before the
//! response), the cases that must not be re-sent (a non-idempotent request, a streaming body, a
//! response that had begun, a fresh connection), the re-send bound and the races it does not
//! count, the policies, the close reason of a request cancelled mid-exchange, and the stage a
//! re-sent request shows its caller.
//!
//! HTTP/1 cases run over in-memory transports on one thread, so the order of "the server read
//! the request" and "the server closed" is exact. GOAWAY cases use a frame-level peer that can
//! leave opened streams above the GOAWAY's last stream id.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Empty, Full};
use pool::{
    CloseReason, ConnectionHandle, ConnectionId, ConnectionPool, Partition, PartitionId,
    ProtocolPolicy, RequestStage, ResendReason, RetryPolicy, TokioDriverSpawner,
};
use pool_tests::client::{Chunks, Stalled, eventually, fetch, followed, get, origin, settle};
use pool_tests::duplex::{DuplexConnector, answer_one, read_request};
use pool_tests::events::EventLog;
use pool_tests::gate::{Gate, Signal};
use pool_tests::gated::{GatedConnector, Gates};
use pool_tests::h2::{Reason, ScriptedH2Server, StreamPlan};
use pool_tests::h2frames::{FramePeer, GoAwayScript};
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc::UnboundedReceiver;

/// Real-time bound for tests that wait on other tasks; a hang fails instead of blocking CI.
const LIMIT: Duration = Duration::from_secs(20);

/// A pool over in-memory transports, with an event log.
fn duplex_pool(policy: RetryPolicy) -> (ConnectionPool, UnboundedReceiver<DuplexStream>, EventLog) {
    let (connector, ends) = DuplexConnector::new();
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .connector(connector)
        .event_listener(events.clone())
        .retry_policy(policy)
        .build()
        .unwrap();
    (pool, ends, events)
}

/// Serves one request on a new connection and returns the server end, now idle in the pool.
async fn warm(
    client: &pool::Client,
    pool: &ConnectionPool,
    ends: &mut UnboundedReceiver<DuplexStream>,
    url: &str,
) -> DuplexStream {
    let (_, end) = tokio::join!(fetch(client, url), async {
        let mut end = ends.recv().await.unwrap();
        answer_one(&mut end, "warm").await;
        end
    });
    settle(pool, &origin(url), |s| s.h1_idle >= 1).await;
    end
}

/// The keep-alive race, exactly: the request reaches a reused connection, the server reads it
/// and closes without a byte of response (an upstream restarting). A GET is idempotent, so the
/// pool sends it again on a new connection.
#[tokio::test(flavor = "current_thread")]
async fn a_get_on_a_reused_connection_closed_before_the_response_is_sent_again() {
    let (pool, mut ends, events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://race.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let ((handle, body), (first, second)) = tokio::join!(fetch(&client, url), async {
        let (first, _) = read_request(&mut stale).await;
        drop(stale);
        let mut fresh = ends.recv().await.unwrap();
        let second = answer_one(&mut fresh, "again").await;
        tokio::task::yield_now().await;
        drop(fresh);
        (first, second)
    });
    assert_eq!(body, "again");
    assert!(!handle.is_reused(), "the re-send ran on a new connection");
    // A GET without headers of its own is re-sent from the pool's copy as it first went out:
    // the same request line and `Host`, nothing added or lost.
    assert!(first.starts_with("GET / HTTP/1.1\r\n"), "{first}");
    assert_eq!(second, first);
    let counters = pool.counters();
    assert_eq!(counters.resends.get(ResendReason::ClosedBeforeResponse), 1);
    assert_eq!(counters.transparent_retries, 1);
    let resent = events.resent();
    assert_eq!(resent.len(), 1);
    assert_eq!(
        (resent[0].1, resent[0].2),
        (ResendReason::ClosedBeforeResponse, 1)
    );
    assert_ne!(
        resent[0].0,
        handle.id(),
        "the event names the connection that failed"
    );
}

/// A request the pool sends again stays at `RequestStage::Exchange` for its caller while the
/// re-send waits for its new connection: its first attempt went out (the server read it and
/// closed), so a caller who gives up then must not take it for unsent. A request that had no
/// connection yet reads the establishment launched for it, `Connecting(None)` through a
/// connector that notes no steps.
#[tokio::test(flavor = "current_thread")]
async fn a_re_sent_request_stays_at_its_exchange_for_its_caller() {
    // A pool whose connection `n` waits at the dial until the gate opens.
    let held_at_dial = |n: usize| {
        let (connector, ends) = DuplexConnector::new();
        let dial = Gate::new();
        let pool = ConnectionPool::builder()
            .connector(connector.gate_dial(n, dial.clone()))
            .build()
            .unwrap();
        (pool, ends, dial)
    };
    let (pool, mut ends, dial) = held_at_dial(1);
    let client = pool.client().unwrap();
    let url = "http://race.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;
    let (request, resent) = followed(get(url));
    let resending = client.request(request);
    let (response, ()) = tokio::join!(resending, async {
        read_request(&mut stale).await;
        drop(stale);
        // The re-send's connection waits at the gate.
        dial.wait_arrived(1).await;
        assert_eq!(resent.stage(), RequestStage::Exchange);
        dial.open();
        answer_one(&mut ends.recv().await.unwrap(), "again").await;
    });
    let body = response.unwrap().into_body().collect().await.unwrap();
    assert_eq!(body.to_bytes(), "again");
    assert_eq!(resent.stage(), RequestStage::Exchange);

    let (pool, mut ends, dial) = held_at_dial(0);
    let (request, fresh) = followed(get(url));
    let client = pool.client().unwrap();
    let (response, ()) = tokio::join!(client.request(request), async {
        dial.wait_arrived(1).await;
        assert_eq!(fresh.stage(), RequestStage::Connecting(None));
        dial.open();
        answer_one(&mut ends.recv().await.unwrap(), "fresh").await;
    });
    assert_eq!(response.unwrap().status(), 200);
    assert_eq!(fresh.stage(), RequestStage::Exchange);
}

/// The same race for a POST: the server may have processed it, so it is not sent again, and
/// the error does not claim it is safe to repeat. The server saw its body exactly once.
#[tokio::test(flavor = "current_thread")]
async fn a_post_on_a_reused_connection_closed_before_the_response_is_not_sent_again() {
    let (pool, mut ends, events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://race.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let post = Request::post(url)
        .body(Full::new(Bytes::from_static(b"charge-once")))
        .unwrap();
    let (result, body) = tokio::join!(client.request(post), async {
        let (_, body) = read_request(&mut stale).await;
        drop(stale);
        body
    });
    let error = result.expect_err("the POST fails");
    assert_eq!(body, b"charge-once");
    assert!(error.is_incomplete_message(), "{error}");
    assert!(
        !error.is_retryable(),
        "a POST that may have run is not safe to repeat"
    );
    assert!(
        ends.try_recv().is_err(),
        "no connection was opened to send it again"
    );
    assert_eq!(pool.counters().transparent_retries, 0);
    assert!(events.resent().is_empty());
}

/// An `Idempotency-Key` makes a POST safe to repeat, as in Go's Transport.
#[tokio::test(flavor = "current_thread")]
async fn a_post_with_an_idempotency_key_is_sent_again() {
    let (pool, mut ends, _events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://race.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let post = Request::post(url)
        .header("x-a", "1")
        .header("idempotency-key", "order-42")
        .header("x-a", "2")
        .body(Full::new(Bytes::from_static(b"order")))
        .unwrap();
    let (result, sent) = tokio::join!(client.request(post), async {
        let first = read_request(&mut stale).await;
        drop(stale);
        let mut fresh = ends.recv().await.unwrap();
        let second = read_request(&mut fresh).await;
        tokio::io::AsyncWriteExt::write_all(
            &mut fresh,
            b"HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n",
        )
        .await
        .unwrap();
        (first, second, fresh)
    });
    let response = result.expect("the re-sent POST succeeds");
    assert_eq!(response.status(), 201);
    let ((first_head, first_body), (second_head, second_body)) = (sent.0, sent.1);
    assert_eq!(
        (first_body.as_slice(), second_body.as_slice()),
        (&b"order"[..], &b"order"[..])
    );
    // The re-send is built from the pool's copy of the request: the same head, header
    // for header in the same order (the key included, a repeated name's values together), not
    // just the same body.
    assert!(first_head.contains("idempotency-key: order-42\r\n"));
    assert!(first_head.contains("x-a: 1\r\nx-a: 2\r\n"), "{first_head}");
    assert_eq!(second_head, first_head);
    assert_eq!(
        pool.counters()
            .resends
            .get(ResendReason::ClosedBeforeResponse),
        1
    );
}

/// A streaming body is never buffered for a replay: the GET fails, but its error says it is
/// safe to send again, so the caller can.
#[tokio::test(flavor = "current_thread")]
async fn a_streaming_body_is_not_replayed_but_its_error_is_retryable() {
    let (pool, mut ends, _events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://race.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let request = Request::get(url)
        .header("content-length", "8")
        .body(Chunks::new([Bytes::from_static(b"streamed")]))
        .unwrap();
    let (result, ()) = tokio::join!(client.request(request), async {
        read_request(&mut stale).await;
        drop(stale);
    });
    let error = result.expect_err("not replayed");
    assert!(error.is_retryable(), "{error}");
    // The server read the request before it closed: safe to send again because the request
    // is idempotent, not because the server provably left it alone.
    let message = error.to_string();
    assert!(
        message.contains("idempotent: it is safe to send again")
            && !message.contains("did not process"),
        "{message}"
    );
    assert!(ends.try_recv().is_err());
    assert_eq!(pool.counters().transparent_retries, 0);
}

/// hyper hands back a request it never wrote (the peer closed the idle connection before the
/// pool's pick; see `h1.rs`'s stale test). When the pool holds no copy (a streaming body, or the
/// `unsent_only` policy, which keeps none) the request hyper handed back is what goes again: the
/// second connection reads the same head, custom header included, and the whole body.
#[tokio::test(flavor = "current_thread")]
async fn a_request_hyper_hands_back_goes_again_when_no_copy_is_held() {
    for (policy, streamed) in [
        (RetryPolicy::default(), true),
        (RetryPolicy::unsent_only(), false),
        (RetryPolicy::default(), false),
    ] {
        let (pool, mut ends, _events) = duplex_pool(policy);
        let client = pool.client().unwrap();
        let url = "http://handed-back.test/upload";
        let mut idle = warm(&client, &pool, &mut ends, url).await;
        idle.shutdown().await.unwrap();
        drop(idle);

        let request = Request::put(url)
            .header("content-length", "8")
            .header("x-trace", "handed back");
        let (result, (head, body)) = if streamed {
            let body = Chunks::new([Bytes::from_static(b"stre"), Bytes::from_static(b"amed")]);
            answer_on_a_new_connection(&client, &mut ends, request.body(body).unwrap()).await
        } else {
            let body = Full::new(Bytes::from_static(b"streamed"));
            answer_on_a_new_connection(&client, &mut ends, request.body(body).unwrap()).await
        };
        let response = result.unwrap_or_else(|e| panic!("{policy:?}: {e}"));
        assert_eq!(response.status(), 204);
        assert!(head.starts_with("PUT /upload HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("x-trace: handed back\r\n"), "{head}");
        assert_eq!(body, b"streamed", "{policy:?}, streamed {streamed}");
        let counters = pool.counters();
        assert_eq!(counters.resends.get(ResendReason::Unsent), 1, "{policy:?}");
        assert_eq!(counters.transparent_retries, 1);
    }
}

/// Sends `request` and answers `204` to what the next new connection reads.
async fn answer_on_a_new_connection<B>(
    client: &pool::Client,
    ends: &mut UnboundedReceiver<DuplexStream>,
    request: Request<B>,
) -> (
    Result<http::Response<pool::Body>, pool::Error>,
    (String, Vec<u8>),
)
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // The server's end outlives the exchange: closing it at once could race the head.
    let (result, (seen, _fresh)) = tokio::join!(client.request(request), async {
        let mut fresh = ends.recv().await.unwrap();
        let seen = read_request(&mut fresh).await;
        fresh
            .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
            .await
            .unwrap();
        (seen, fresh)
    });
    (result, seen)
}

/// Once a byte of the response arrived the server was answering: not sent again.
#[tokio::test(flavor = "current_thread")]
async fn a_response_that_had_begun_is_not_sent_again() {
    let (pool, mut ends, _events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://race.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let (result, ()) = tokio::join!(client.request(get(url)), async {
        read_request(&mut stale).await;
        tokio::io::AsyncWriteExt::write_all(&mut stale, b"HTTP/1.1 200 OK\r\ncont")
            .await
            .unwrap();
        drop(stale);
    });
    let error = result.expect_err("a truncated head fails");
    assert!(!error.is_retryable(), "{error}");
    assert!(ends.try_recv().is_err());
    assert_eq!(pool.counters().transparent_retries, 0);
}

/// A new connection that closes before answering its first request says something about the
/// origin, not about a stale connection: the request fails and nothing is dialed again.
#[tokio::test(flavor = "current_thread")]
async fn a_fresh_connection_that_closes_before_the_response_is_not_sent_again() {
    let (pool, mut ends, _events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://fresh.test/";

    let (result, ()) = tokio::join!(client.request(get(url)), async {
        let mut end = ends.recv().await.unwrap();
        read_request(&mut end).await;
        drop(end);
    });
    let error = result.expect_err("the only connection closed");
    assert!(!error.is_retryable(), "{error}");
    assert!(ends.try_recv().is_err(), "nothing was dialed again");
    assert_eq!(pool.counters().transparent_retries, 0);
}

/// HTTP/1's keep-alive race does not spend the budget: each of its re-sends costs one
/// connection that had delivered a response, so they end when the stale connections do. With
/// `max_resends(1)`, a request that meets three stale connections in a row (a server that
/// closes after every response) still succeeds, on the fourth connection, a new one.
/// Nor do they wait: the budget's pace (see the next tests) is for counted re-sends only, and
/// on the paused clock the request with three re-sends takes no time at all.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn http1_keep_alive_races_do_not_spend_the_budget() {
    let (pool, mut ends, events) = duplex_pool(RetryPolicy::unprocessed().max_resends(1));
    let client = pool.client().unwrap();
    let url = "http://stale.test/";
    let (_, _, _, (a, b, c)) = tokio::join!(
        fetch(&client, url),
        fetch(&client, url),
        fetch(&client, url),
        async {
            let mut a = ends.recv().await.unwrap();
            let mut b = ends.recv().await.unwrap();
            let mut c = ends.recv().await.unwrap();
            for end in [&mut a, &mut b, &mut c] {
                answer_one(end, "warm").await;
            }
            (a, b, c)
        }
    );
    settle(&pool, &origin(url), |s| s.h1_idle == 3).await;

    // Each idle connection closes unanswered once it has read the request; the pool takes
    // them in its own order, so each waits for its own turn.
    let stale = |mut end: DuplexStream| async move {
        read_request(&mut end).await;
        drop(end);
    };
    let started = tokio::time::Instant::now();
    let ((handle, body), (), (), (), ()) =
        tokio::join!(fetch(&client, url), stale(a), stale(b), stale(c), async {
            let mut fresh = ends.recv().await.unwrap();
            answer_one(&mut fresh, "fresh").await;
            tokio::task::yield_now().await;
            drop(fresh);
        });
    assert_eq!(body, "fresh");
    assert_eq!(started.elapsed(), Duration::ZERO, "no re-send waited");
    assert!(
        !handle.is_reused(),
        "the last attempt ran on a new connection"
    );
    assert_eq!(pool.counters().transparent_retries, 3);
    let resent = three_resends_after_closes(&events);
    let failed: std::collections::HashSet<_> = resent.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(failed.len(), 3, "each stale connection failed it once");
    assert!(ends.try_recv().is_err(), "one new connection, no more");
}

/// A `GET` to an h2c server that refuses every stream (`REFUSED_STREAM`), through a pool with
/// `policy` and `events`: the server, the pool and the request's error.
async fn refused_every_time(
    policy: RetryPolicy,
    events: &EventLog,
) -> (ScriptedH2Server, ConnectionPool, pool::Error) {
    let server = ScriptedH2Server::builder()
        .default_stream(StreamPlan::reset(Reason::REFUSED_STREAM))
        .start()
        .await;
    let pool = ConnectionPool::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .retry_policy(policy)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let error = tokio::time::timeout(LIMIT, client.request(get(&server.url("/"))))
        .await
        .expect("in time")
        .expect_err("every stream is refused");
    (server, pool, error)
}

/// The bound, where it counts: `REFUSED_STREAM` on every attempt. With `max_resends(1)` the
/// request goes twice and then fails, refused and marked retryable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_sends_stop_at_the_policy_bound() {
    let events = EventLog::new();
    let (server, pool, error) =
        refused_every_time(RetryPolicy::unprocessed().max_resends(1), &events).await;
    assert!(error.is_refused_stream(), "{error}");
    assert!(error.is_retryable(), "{error}");
    assert_eq!(server.requests().len(), 2, "the first send and one re-send");
    assert_eq!(pool.counters().transparent_retries, 1);
    assert_eq!(events.resent().len(), 1);
}

/// Asserts that the request was re-sent three times, each after its connection closed before
/// the response; returns the re-send events.
fn three_resends_after_closes(events: &EventLog) -> Vec<(ConnectionId, ResendReason, u32)> {
    let resent = events.resent();
    let attempts: Vec<_> = resent.iter().map(|(_, reason, n)| (*reason, *n)).collect();
    assert_eq!(
        attempts,
        (1..=3)
            .map(|n| (ResendReason::ClosedBeforeResponse, n))
            .collect::<Vec<_>>()
    );
    resent
}

/// A peer whose first `failing` connections each send their SETTINGS, read one request and
/// are reset under it, with no GOAWAY (Apache httpd in the first milliseconds of a graceful
/// restart); later connections serve. Returns it with an h2c pool re-sending at `policy`'s
/// pace under `read_timeout`, and the pool's event log.
async fn connections_lost_one_after_another(
    failing: usize,
    policy: RetryPolicy,
    read_timeout: Option<Duration>,
) -> (FramePeer, ConnectionPool, EventLog) {
    let script = GoAwayScript {
        streams: 1,
        last_stream_id: 0,
        goaway: false,
        reset: true,
        silent: false,
    };
    let peer = FramePeer::start_scripted(script, failing).await;
    let events = EventLog::new();
    let pool = h2c_builder(&events)
        .retry_policy(policy)
        .read_timeout(read_timeout)
        // No idle expiry: on the paused clock the only timers are then the test's own (the
        // waits and the read deadline), so time moves only to them.
        .idle_timeout(None)
        .build()
        .unwrap();
    (peer, pool, events)
}

/// The pace of counted re-sends: a GET whose connections are lost one after another goes again
/// at once the first time, then waits the policy's backoff before its second re-send and twice
/// that before its third, and is served on the fourth connection. Sent at once, the re-sends
/// spent the budget inside a restart's first milliseconds.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn each_later_re_send_of_a_request_waits_twice_as_long_as_the_one_before() {
    let backoff = Duration::from_secs(1);
    let policy = RetryPolicy::unprocessed().backoff(backoff);
    let (peer, pool, events) = connections_lost_one_after_another(3, policy, None).await;
    let client = pool.client().unwrap();
    let (handle, body) = fetch(&client, &peer.url("/")).await;
    assert!(body.is_empty(), "{body:?}");
    let accepted = peer.accepted();
    assert_eq!(
        accepted.len(),
        4,
        "three lost connections and the one that served"
    );
    assert_eq!(
        accepted[3] - accepted[2],
        backoff * 2,
        "before the third re-send"
    );
    assert_eq!(accepted[2] - accepted[1], backoff, "before the second");
    assert_eq!(accepted[1], accepted[0], "the first re-send went at once");
    let resent = three_resends_after_closes(&events);
    assert!(resent.iter().all(|(id, ..)| *id != handle.id()));
    // Each lost connection's close event says what the transport met: the reset.
    let closes = events.closes();
    let reset = |error: &str| {
        ["reading from", "writing to"]
            .iter()
            .any(|way| error.starts_with(&format!("{way} the connection failed: ")))
    };
    assert!(
        closes.len() == 3
            && closes.iter().all(|(reason, error)| {
                *reason == CloseReason::ProtocolClosed && error.as_deref().is_some_and(reset)
            }),
        "{closes:?}"
    );
}

/// The waits count against the read timeout, as the attempts do: with a 1 s backoff and a
/// 1.5 s read timeout, the GET times out in the wait before its third re-send, 1.5 s after it
/// was first sent, without opening a fourth connection.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn waiting_to_re_send_counts_against_the_read_timeout() {
    let policy = RetryPolicy::unprocessed().backoff(Duration::from_secs(1));
    let timeout = Duration::from_millis(1_500);
    let (peer, pool, events) = connections_lost_one_after_another(3, policy, Some(timeout)).await;
    let client = pool.client().unwrap();
    let started = tokio::time::Instant::now();
    let error = client
        .request(get(&peer.url("/")))
        .await
        .expect_err("the read timeout ends the waits");
    assert!(error.is_read_timeout(), "{error}");
    assert_eq!(started.elapsed(), timeout);
    assert_eq!(peer.connections(), 3, "no fourth connection");
    assert_eq!(events.resent().len(), 3, "the third re-send was decided");
}

/// A request sent again keeps its place in line. Under a bound of one connection, GET /a
/// holds the connection while /b and then /c wait behind it; the connection closes under /a
/// (the keep-alive race), so /a goes again and waits with them. The next connection serves /a
/// before /c, as it would have had /a never failed (it may serve /b first: a new HTTP/1
/// connection goes to the request that asked for it). A re-sent request that went to the back
/// of the line could be refused again and again by a server that stops each connection after
/// N requests.
#[tokio::test(flavor = "current_thread")]
async fn a_re_sent_request_goes_ahead_of_requests_that_came_after_it() {
    let dial = Gate::new();
    let (connector, mut ends) = DuplexConnector::new();
    let pool = ConnectionPool::builder()
        .connector(connector.gate_dial(1, dial.clone()))
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://line.test/";
    let key = origin(url);
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let (a, b, c, order) = tokio::join!(
        fetch(&client, "http://line.test/a"),
        fetch(&client, "http://line.test/b"),
        fetch(&client, "http://line.test/c"),
        async {
            let (head, _) = read_request(&mut stale).await;
            assert!(head.starts_with("GET /a "), "{head}");
            settle(&pool, &key, |s| s.waiting_requests == 2).await;
            // /a's connection closes before its response: /a goes again. The next connection
            // waits at the gate until /a waits with the others.
            drop(stale);
            dial.wait_arrived(1).await;
            settle(&pool, &key, |s| s.waiting_requests == 3).await;
            dial.open();
            let mut fresh = ends.recv().await.unwrap();
            let mut order = Vec::new();
            for _ in 0..3 {
                let (head, _) = read_request(&mut fresh).await;
                let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let response = format!("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{path}");
                fresh.write_all(response.as_bytes()).await.unwrap();
                order.push(path);
            }
            order
        }
    );
    let position = |path: &str| order.iter().position(|p| p == path).unwrap();
    assert!(position("/a") < position("/c"), "{order:?}");
    assert_eq!(
        [a.1, b.1, c.1],
        [Bytes::from("/a"), Bytes::from("/b"), Bytes::from("/c")]
    );
    assert_eq!(pool.counters().transparent_retries, 1);
}

/// A re-send does not get a fresh read timeout: the first attempt waited 6 s before its
/// connection closed, so the re-sent request times out 10 s after the first dispatch, not 16.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn re_sends_share_the_first_attempts_read_timeout() {
    let (connector, mut ends) = DuplexConnector::new();
    let pool = ConnectionPool::builder()
        .connector(connector)
        .read_timeout(Some(Duration::from_secs(10)))
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://slow.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let started = tokio::time::Instant::now();
    let (result, _silent) = tokio::join!(client.request(get(url)), async {
        read_request(&mut stale).await;
        tokio::time::sleep(Duration::from_secs(6)).await;
        drop(stale);
        let mut fresh = ends.recv().await.unwrap();
        read_request(&mut fresh).await;
        fresh
    });
    let error = result.expect_err("the re-sent request times out");
    assert!(error.is_read_timeout(), "{error}");
    assert_eq!(pool.counters().transparent_retries, 1);
    assert_eq!(started.elapsed(), Duration::from_secs(10));
}

/// `RetryPolicy::never()` turns off even hyper's unsent hand-back; the error still says the
/// request was not processed.
#[tokio::test(flavor = "current_thread")]
async fn the_never_policy_re_sends_nothing() {
    let (pool, mut ends, _events) = duplex_pool(RetryPolicy::never());
    let client = pool.client().unwrap();
    let url = "http://never.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;
    tokio::io::AsyncWriteExt::shutdown(&mut stale)
        .await
        .unwrap();
    drop(stale);

    let error = client
        .request(get(url))
        .await
        .expect_err("nothing is re-sent");
    assert!(error.is_retryable(), "{error}");
    assert_eq!(pool.counters().transparent_retries, 0);
    assert!(ends.try_recv().is_err());
}

/// `RetryPolicy::unsent_only()` keeps hyper's hand-back and nothing else: the keep-alive race
/// reaches the caller, marked retryable for an idempotent request.
#[tokio::test(flavor = "current_thread")]
async fn the_unsent_only_policy_leaves_the_keep_alive_race_to_the_caller() {
    let (pool, mut ends, _events) = duplex_pool(RetryPolicy::unsent_only());
    let client = pool.client().unwrap();
    let url = "http://sdk.test/";
    let mut stale = warm(&client, &pool, &mut ends, url).await;

    let (result, ()) = tokio::join!(client.request(get(url)), async {
        read_request(&mut stale).await;
        drop(stale);
    });
    let error = result.expect_err("left to the caller");
    assert!(error.is_retryable(), "{error}");
    assert_eq!(pool.counters().transparent_retries, 0);
}

/// A request dropped by its caller while its exchange is in progress closes the connection as
/// `request_canceled`: the peer did nothing wrong.
#[tokio::test(flavor = "current_thread")]
async fn a_request_cancelled_mid_exchange_closes_its_connection_as_canceled() {
    let (pool, mut ends, events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://cancel.test/";
    let mut end = warm(&client, &pool, &mut ends, url).await;

    tokio::select! {
        _ = client.request(get(url)) => panic!("the server never answers"),
        _ = read_request(&mut end) => {}
    }
    events.wait_for_closed(1).await;
    assert_eq!(
        events.closed_with(CloseReason::RequestCanceled),
        1,
        "{events:?}"
    );
    assert_eq!(
        events.closed_with(CloseReason::ProtocolClosed),
        0,
        "{events:?}"
    );
    drop(end);
}

fn h2c_pool(events: &EventLog) -> ConnectionPool {
    h2c_builder(events).build().unwrap()
}

/// A prior-knowledge HTTP/2 pool's builder, reporting to `events`.
fn h2c_builder(events: &EventLog) -> pool::Builder {
    ConnectionPool::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .event_listener(events.clone())
}

/// `REFUSED_STREAM` proves the stream was not processed (RFC 9113 §8.7), whatever the method:
/// the POST goes again, on the same generation, which still accepts streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_stream_is_sent_again_whatever_the_method() {
    let server = ScriptedH2Server::builder()
        .conn_plan(
            pool_tests::h2::H2ConnPlan::new()
                .stream(StreamPlan::reset(Reason::REFUSED_STREAM))
                .default_stream(StreamPlan::ok("accepted")),
        )
        .start()
        .await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let post = Request::post(server.url("/orders"))
        .body(Full::new(Bytes::from_static(b"one order")))
        .unwrap();
    let response = tokio::time::timeout(LIMIT, client.request(post))
        .await
        .expect("in time")
        .expect("the refused POST is re-sent");
    let handle = response.body().connection().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "accepted");
    assert_eq!(server.accepted(), 1, "the same generation took the re-send");
    assert_eq!(pool.counters().resends.get(ResendReason::RefusedStream), 1);
    assert_eq!(
        events.resent(),
        vec![(handle.id(), ResendReason::RefusedStream, 1)]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path() == "/orders"));
}

/// Without re-sends, a refused stream reaches the caller as exactly that: refused, not a
/// GOAWAY, and safe to send again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_stream_the_policy_does_not_re_send_says_so() {
    let (_server, pool, error) =
        refused_every_time(RetryPolicy::unsent_only(), &EventLog::new()).await;
    assert!(error.is_refused_stream(), "{error}");
    assert_eq!(
        error.http2_error_code(),
        Some(0x7),
        "REFUSED_STREAM: {error}"
    );
    assert!(!error.is_go_away(), "{error}");
    assert!(error.is_retryable(), "{error}");
    assert_eq!(pool.counters().transparent_retries, 0);
}

/// A frame-level peer whose first connection sends GOAWAY(last stream id 1) once three
/// requests are open, and an h2c pool recording events.
async fn goaway_rig() -> (FramePeer, ConnectionPool, EventLog) {
    let peer = FramePeer::start(GoAwayScript {
        streams: 3,
        last_stream_id: 1,
        goaway: true,
        reset: false,
        silent: false,
    })
    .await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    (peer, pool, events)
}

/// Sends a body-less `method` request to `url` on a task of `tasks`, which reads the whole
/// response and returns the connection that served it.
fn spawn_exchange(
    tasks: &mut tokio::task::JoinSet<Result<ConnectionHandle, pool::Error>>,
    client: &pool::Client,
    url: &str,
    method: Method,
) {
    let (client, url) = (client.clone(), url.to_owned());
    tasks.spawn(async move {
        let request = Request::builder()
            .method(method)
            .uri(url)
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = client.request(request).await?;
        let handle = response.body().connection().clone();
        response.into_body().collect().await?;
        Ok(handle)
    });
}

/// The connections that served every task of `tasks`, which must all succeed.
async fn all_served(
    tasks: tokio::task::JoinSet<Result<ConnectionHandle, pool::Error>>,
) -> Vec<ConnectionHandle> {
    join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("every request succeeds"))
        .collect()
}

/// Every task's output, each join bounded in real time.
async fn join_all<T: 'static>(mut tasks: tokio::task::JoinSet<T>) -> Vec<T> {
    let mut outputs = Vec::new();
    while let Some(result) = tokio::time::timeout(LIMIT, tasks.join_next())
        .await
        .expect("in time")
    {
        outputs.push(result.expect("task"));
    }
    outputs
}

/// GOAWAY with a last stream id below streams already opened: those streams were not
/// processed (RFC 9113 §6.8) and go again on a new connection; the stream at the last id is
/// answered on the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_above_the_goaway_last_stream_id_are_sent_again_on_a_new_connection() {
    let (peer, pool, events) = goaway_rig().await;
    let client = pool.client().unwrap();
    let url = peer.url("/");

    let mut tasks = tokio::task::JoinSet::new();
    for method in [Method::GET, Method::POST, Method::DELETE] {
        spawn_exchange(&mut tasks, &client, &url, method);
    }
    let handles = all_served(tasks).await;
    assert_eq!(peer.connections(), 2);
    let streams = peer.streams();
    assert_eq!(
        streams[0].len(),
        3,
        "three streams opened on the first connection"
    );
    assert_eq!(streams[1].len(), 2, "the two above the last id went again");
    assert_eq!(pool.counters().resends.get(ResendReason::GoAway), 2);
    let ids: std::collections::HashSet<_> = handles.iter().map(|h| h.id()).collect();
    assert_eq!(
        ids.len(),
        2,
        "one request on the old connection, two on the new one"
    );
    assert!(
        events
            .resent()
            .iter()
            .all(|(_, reason, attempt)| *reason == ResendReason::GoAway && *attempt == 1)
    );
}

/// Apache Traffic Server 9.2 follows a `GOAWAY(ENHANCE_YOUR_CALM, last = n)` at once with a
/// `GOAWAY(NO_ERROR)` naming the highest stream id there is. h2 takes the raise as the protocol
/// error it is and ends the connection under the streams at or below `n`, none answered yet:
/// for them the connection is gone before their response, as after a reset, so the idempotent
/// ones go again (`closed_before_response`) and the POST fails, retryable only by its caller's
/// judgement. The streams above `n` go again as `go_away`, whatever the method. Before, the
/// GETs at or below `n` failed with h2's "unspecific protocol error".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_h2_ends_on_a_raised_goaway_sends_its_unanswered_gets_again() {
    let script = GoAwayScript {
        streams: 5,
        last_stream_id: 5,
        goaway: true,
        reset: false,
        silent: false,
    };
    let peer = FramePeer::start_raising(script, ENHANCE_YOUR_CALM).await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let url = peer.url("/");

    // Stream 1 (the POST, dispatched first) and 3 and 5 are at or below the last id; 7 and 9
    // are above it.
    let mut tasks = tokio::task::JoinSet::new();
    spawn_exchange(&mut tasks, &client, &url, Method::POST);
    peer.wait_headers(1).await;
    for _ in 0..4 {
        spawn_exchange(&mut tasks, &client, &url, Method::GET);
    }
    let outcomes = join_all(tasks).await;
    let failed: Vec<&pool::Error> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert_eq!(failed.len(), 1, "only the POST fails: {failed:?}");
    assert_eq!(failed[0].http2_error_code(), Some(0x1), "PROTOCOL_ERROR");
    assert!(!failed[0].is_retryable(), "{}", failed[0]);
    let streams = peer.streams();
    assert_eq!(
        streams[0].len(),
        5,
        "all five opened on the first connection"
    );
    assert_eq!(streams[1].len(), 4, "the four GETs went again: {streams:?}");
    let resends = &pool.counters().resends;
    assert_eq!(resends.get(ResendReason::GoAway), 2);
    assert_eq!(resends.get(ResendReason::ClosedBeforeResponse), 2);
}

/// A server that serves a fixed number of requests per connection (4 here; nginx's
/// `keepalive_requests`, 1,000 by default) and cuts off the streams opened after that with
/// GOAWAY. The first two connections it cuts off at 4 teach the pool the quota; from then on
/// each new connection carries 4 requests and retires (`request_quota`) before the server
/// could refuse one, so bursts larger than the quota go through without a re-send.
///
/// One thread, so each burst's six requests all queue for the burst's first connection before
/// its handshake completes (with two, a request that arrives after the cut goes to the next
/// connection, which then may see no cut).
#[tokio::test]
async fn a_servers_per_connection_request_quota_is_learnt_and_kept_to() {
    learns_and_keeps_to_the_request_quota(None).await;
}

/// The same under `max_connections_per_host(1)`: a connection retiring at the quota gives its
/// permit back at once (its streams in flight finishing on it), so the next connection opens
/// while they do.
#[tokio::test]
async fn a_request_quota_is_kept_to_under_a_bound_of_one_connection() {
    learns_and_keeps_to_the_request_quota(Some(1)).await;
}

/// See `a_servers_per_connection_request_quota_is_learnt_and_kept_to`; `bound` is the pool's
/// `max_connections_per_host`.
async fn learns_and_keeps_to_the_request_quota(bound: Option<usize>) {
    let peer = FramePeer::start_with_quota(QUOTA).await;
    let events = EventLog::new();
    let mut builder = h2c_builder(&events);
    if let Some(bound) = bound {
        builder = builder.max_connections_per_host(bound);
    }
    let pool = builder.build().unwrap();
    let client = pool.client().unwrap();
    let url = peer.url("/");
    let cut = |pool: &ConnectionPool| pool.counters().resends.get(ResendReason::GoAway);
    let burst =
        |pool: ConnectionPool| quota_burst(pool, client.clone(), url.clone(), events.clone());

    // The first connection takes all six and is cut off after four: two go again.
    assert_eq!(burst(pool.clone()).await, BURST);
    assert_eq!(cut(&pool), 2);
    assert_eq!(
        pool.stats(&url).request_quota(),
        None,
        "one cut is not enough"
    );
    // The second cut at the same count teaches the quota.
    assert_eq!(burst(pool.clone()).await, BURST);
    assert_eq!(cut(&pool), 4);
    assert_eq!(pool.stats(&url).request_quota(), Some(QUOTA as u64));

    // From now on no request meets the cut: each connection carries four, then retires.
    let before = peer.connections();
    for round in 1..=2 {
        assert_eq!(burst(pool.clone()).await, BURST);
        assert_eq!(cut(&pool), 4, "round {round}: nothing was cut off");
    }
    let streams = peer.streams();
    let later = &streams[before..];
    assert!(
        later.iter().all(|conn| conn.len() <= QUOTA),
        "no connection was sent more than the quota: {later:?}"
    );
    let full = later.iter().filter(|conn| conn.len() == QUOTA).count();
    assert_eq!(events.closed_with(CloseReason::RequestQuota), full);
    assert!(full >= 2, "{later:?}");
    assert_eq!(pool.counters().resends.total(), 4);
    assert!(events.failed().is_empty(), "{:?}", events.failed());
    // The two cuts were graceful GOAWAYs: nothing went wrong, so no close carries an error.
    let closes = events.closes();
    assert!(
        closes.iter().all(|(_, error)| error.is_none()),
        "{closes:?}"
    );
    // Each connection that carried its quota had asked for its successor half way (the peer
    // announces no stream limit), except where a flight was already under way or, bounded,
    // no permit was free.
    let ahead = events
        .created()
        .iter()
        .filter(|info| info.open_reason() == pool::OpenReason::QuotaRenewal)
        .count();
    if bound.is_none() {
        assert!(ahead >= 1, "{:?}", events.created());
    } else {
        assert_eq!(ahead, 0, "the one permit is held by the connection itself");
    }
    // Every connection closed: the bound's permits are all back.
    let stats = pool.stats(&url);
    assert_eq!(stats.available_permits(), bound);
}

/// The quota of the peer in the request-quota tests, and the burst each of their rounds sends.
const QUOTA: usize = 4;
const BURST: usize = 6;

/// The HTTP/2 error code `ENHANCE_YOUR_CALM`, as the frame peer's GOAWAYs carry it.
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// One burst of [`BURST`] GET requests through `client`, then every connection it left open
/// closed, so the next burst starts on a new connection and each connection's report to its
/// cell is in. Returns how many were served.
async fn quota_burst(
    pool: ConnectionPool,
    client: pool::Client,
    url: String,
    events: EventLog,
) -> usize {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..BURST {
        spawn_exchange(&mut tasks, &client, &url, Method::GET);
    }
    let served = all_served(tasks).await.len();
    pool.close_idle_connections();
    let settled = events.wait_until(|events| {
        let created = events
            .iter()
            .filter(|e| matches!(e, pool_tests::events::Event::Created(..)))
            .count();
        let closed = events
            .iter()
            .filter(|e| matches!(e, pool_tests::events::Event::Closed(..)))
            .count();
        created == closed
    });
    tokio::time::timeout(LIMIT, settled).await.expect("settled");
    served
}

/// The quota is a fact about the server, not about a partition: what the first partition's
/// connections taught, the second keeps to from its first connection, and nothing is cut off
/// there. With a learner per cell (before), the second partition's first connection took the
/// whole burst and was cut off after four, two more re-sends.
#[tokio::test]
async fn a_request_quota_learnt_in_one_partition_is_kept_in_the_others() {
    let peer = FramePeer::start_with_quota(QUOTA).await;
    let events = EventLog::new();
    let ids = [PartitionId::from_index(0), PartitionId::from_index(1)];
    let pool = ConnectionPool::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .partitions(
            ids.map(|id| Partition::new(id, TokioDriverSpawner::current()))
                .to_vec(),
        )
        .event_listener(events.clone())
        .build()
        .unwrap();
    let [first, second] = ids.map(|id| pool.client_for(id).unwrap());
    let url = peer.url("/");
    let cut = |pool: &ConnectionPool| pool.counters().resends.get(ResendReason::GoAway);
    for round in 1..=2 {
        let served = quota_burst(pool.clone(), first.clone(), url.clone(), events.clone()).await;
        assert_eq!(served, BURST);
        assert_eq!(
            cut(&pool),
            2 * round,
            "the first partition's connections are cut off"
        );
    }
    assert_eq!(pool.stats(&url).request_quota(), Some(QUOTA as u64));

    let before = peer.connections();
    let served = quota_burst(pool.clone(), second.clone(), url.clone(), events.clone()).await;
    assert_eq!(served, BURST);
    assert_eq!(cut(&pool), 4, "nothing was cut off in the second partition");
    let streams = peer.streams();
    let later = &streams[before..];
    assert!(
        later.len() >= 2 && later.iter().all(|conn| conn.len() <= QUOTA),
        "the second partition's connections kept to the quota: {later:?}"
    );
    let second_partition = events
        .created()
        .iter()
        .filter(|info| info.partition() == ids[1])
        .count();
    assert_eq!(second_partition, later.len());
    assert!(events.closed_with(CloseReason::RequestQuota) >= 1);
    assert!(events.failed().is_empty(), "{:?}", events.failed());
}

/// A server that ends every connection after the same count with a GOAWAY carrying an error
/// (here `ENHANCE_YOUR_CALM`, as Tomcat's overhead protection sends it) is not enforcing a
/// request quota: what ended the connection was something sent on it. The streams above the
/// GOAWAY's last id still go again (not processed, whatever the code), but three such cuts at
/// the same count teach no quota, and no connection retires as `request_quota`. Before, the
/// pool learnt Tomcat's steady count as a quota and retired hundreds of connections there.
#[tokio::test]
async fn a_goaway_with_an_error_code_teaches_no_request_quota() {
    let peer = FramePeer::start_cutting_with(QUOTA, ENHANCE_YOUR_CALM).await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let url = peer.url("/");
    for round in 1..=3 {
        let served = quota_burst(pool.clone(), client.clone(), url.clone(), events.clone()).await;
        assert_eq!(served, BURST, "round {round}");
        assert_eq!(
            pool.counters().resends.get(ResendReason::GoAway),
            2 * round,
            "round {round}: the two above the last id went again"
        );
    }
    assert_eq!(pool.stats(&url).request_quota(), None);
    assert_eq!(events.closed_with(CloseReason::RequestQuota), 0);
    // Each round: a connection cut off after four, a second for the two sent again.
    let per_connection: Vec<usize> = peer.streams().iter().map(|conn| conn.len()).collect();
    assert_eq!(per_connection, [QUOTA, BURST - QUOTA].repeat(3));
    assert!(events.failed().is_empty(), "{:?}", events.failed());
    // Each cut connection's close event carries the GOAWAY's code, which says why.
    let closes = events.closes();
    let calmed = closes
        .iter()
        .filter(|(reason, error)| {
            *reason == CloseReason::ProtocolClosed
                && error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("the server sent GOAWAY ENHANCE_YOUR_CALM"))
        })
        .count();
    assert_eq!(calmed, 3, "{closes:?}");
}

/// Jetty ends a connection with `GOAWAY(ENHANCE_YOUR_CALM)` when stream `WINDOW_UPDATE`s
/// reach it faster than it allows (those that cross its `END_STREAM` count against a rate),
/// and h2 sends one near the end of every response of half a stream window or more. Such a
/// GOAWAY with no uploads overlapping on the connection teaches the cell to open its further
/// connections with a 32 MiB stream window, which sends far fewer (pool-h2's `window.rs`): the
/// first connection announces hyper's 2 MiB, the next the larger window. Here the first
/// connection lives on under an upload the server still reads (a single body: nothing
/// overlapped), and the GETs the GOAWAY refused go again on a second connection at once, which
/// must start with the lesson all the same: it is taken where the first refused request reads
/// its outcome as well as where the connection's driver ends (which can come after the
/// second connection's handshake). A window the caller chose stays as chosen, though the
/// lesson is learnt all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calm_goaway_without_overlapping_uploads_opens_further_connections_with_a_larger_window()
{
    /// `SETTINGS_INITIAL_WINDOW_SIZE`.
    const INITIAL_WINDOW_SIZE: u16 = 0x4;
    let window = |parameters: &Vec<(u16, u32)>| {
        let found = parameters.iter().find(|(id, _)| *id == INITIAL_WINDOW_SIZE);
        found.map(|(_, value)| *value)
    };
    for chosen in [None, Some(1 << 20)] {
        // Once four requests are open on the first connection: GOAWAY(ENHANCE_YOUR_CALM)
        // naming the second (stream 3) as the last it processes.
        let script = GoAwayScript {
            streams: 4,
            last_stream_id: 3,
            goaway: true,
            reset: false,
            silent: false,
        };
        let peer = FramePeer::start_scripted_with(script, ENHANCE_YOUR_CALM).await;
        let events = EventLog::new();
        let pool = h2c_builder(&events)
            .http2_initial_stream_window_size(chosen)
            .build()
            .unwrap();
        let client = pool.client().unwrap();
        let url = peer.url("/");
        // Stream 1: an upload whose body waits for `held`, keeping the first connection open.
        let held = Gate::new();
        let upload = spawn_upload(&client, &url, Stalled::new("a", held.clone()));
        tokio::time::timeout(LIMIT, peer.wait_headers(1))
            .await
            .unwrap();
        let mut gets = tokio::task::JoinSet::new();
        for _ in 0..3 {
            spawn_exchange(&mut gets, &client, &url, Method::GET);
        }
        // Stream 3 is answered; 5 and 7, refused by the GOAWAY, go again on a new connection.
        let served = all_served(gets).await;
        assert_eq!(served.len(), 3);
        assert_eq!(peer.connections(), 2, "{chosen:?}");
        assert!(
            !upload.is_finished(),
            "the first connection still carries the upload"
        );
        assert!(pool.stats(&url).larger_stream_window(), "{chosen:?}");
        assert!(!pool.stats(&url).uploads_one_at_a_time());
        // The first connection's close event says why it ended: the server's GOAWAY.
        let closes = events.closes();
        assert!(
            matches!(
                closes.as_slice(),
                [(CloseReason::ProtocolClosed, Some(error))]
                    if error.starts_with("the server sent GOAWAY ENHANCE_YOUR_CALM (last stream processed 3)")
            ),
            "{closes:?}"
        );
        let announced: Vec<Option<u32>> = peer.client_settings().iter().map(window).collect();
        let wanted = match chosen {
            None => [Some(2 << 20), Some(pool::LEARNT_STREAM_WINDOW)],
            Some(chosen) => [Some(chosen); 2],
        };
        assert_eq!(
            announced, wanted,
            "the stream windows of the two connections"
        );
        held.open();
        let status = tokio::time::timeout(LIMIT, upload).await.unwrap().unwrap();
        assert_eq!(
            status.unwrap(),
            http::StatusCode::OK,
            "the server read the upload"
        );
        assert_eq!(pool.counters().resends.get(ResendReason::GoAway), 2);
    }
}

/// What a server teaches by asking for calm is a fact about the server, not about the
/// partition that met it: the pool hands one hint to the origin's cells in every partition
/// (`lesson_book.rs`). Partition 0's connection ends on `GOAWAY(ENHANCE_YOUR_CALM)`, with no
/// upload on it; partition 1, which never met the server before, opens its first connection
/// with the larger stream window. (Jetty does not always send its `GOAWAY`: a partition whose
/// connection it cut without one learns from another's that said why.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lesson_one_partition_learnt_opens_the_other_partitions_connections_with_it() {
    /// `SETTINGS_INITIAL_WINDOW_SIZE`.
    const INITIAL_WINDOW_SIZE: u16 = 0x4;
    // Once the first connection's first request arrived: GOAWAY(ENHANCE_YOUR_CALM), after
    // answering it (stream 1, the last it processes).
    let script = GoAwayScript {
        streams: 1,
        last_stream_id: 1,
        goaway: true,
        reset: false,
        silent: false,
    };
    let peer = FramePeer::start_scripted_with(script, ENHANCE_YOUR_CALM).await;
    let partitions = [0, 1].map(PartitionId::from_index);
    let events = EventLog::new();
    let pool = h2c_builder(&events)
        .partitions(
            partitions
                .map(|id| Partition::new(id, TokioDriverSpawner::current()))
                .to_vec(),
        )
        .build()
        .unwrap();
    let clients = partitions.map(|id| pool.client_for(id).unwrap());
    let url = peer.url("/");
    // `fetch` asserts that the request succeeds.
    fetch(&clients[0], &url).await;
    eventually(
        || pool.stats(&url).larger_stream_window(),
        || "partition 0 never learnt".into(),
    )
    .await;
    fetch(&clients[1], &url).await;
    assert_eq!(peer.connections(), 2);
    let windows: Vec<Option<u32>> = peer
        .client_settings()
        .iter()
        .map(|parameters| {
            let found = parameters.iter().find(|(id, _)| *id == INITIAL_WINDOW_SIZE);
            found.map(|(_, value)| *value)
        })
        .collect();
    assert_eq!(
        windows,
        [Some(2 << 20), Some(pool::LEARNT_STREAM_WINDOW)],
        "partition 1's first connection opens with what partition 0 learnt"
    );
}

/// Spawns an upload of `body` to `url`; its task gives the status once the response body ended.
fn spawn_upload(
    client: &pool::Client,
    url: &str,
    body: Stalled,
) -> tokio::task::JoinHandle<Result<http::StatusCode, pool::Error>> {
    let (client, url) = (client.clone(), url.to_owned());
    tokio::spawn(async move {
        let request = Request::post(url).body(body).unwrap();
        let response = client.request(request).await?;
        let status = response.status();
        response.into_body().collect().await?;
        Ok(status)
    })
}

/// Teaches `pool` that the overlapping-bodies peer behind `url` takes one upload at a time:
/// two uploads whose bodies never end overlap on its first connection, which the peer ends
/// with `GOAWAY(ENHANCE_YOUR_CALM)`; both fail (POSTs, not sent again).
async fn learn_one_upload_at_a_time(pool: &ConnectionPool, peer: &FramePeer, url: &str) {
    let client = pool.client().unwrap();
    assert!(!pool.stats(url).uploads_one_at_a_time());
    let never = Gate::new();
    let first = spawn_upload(&client, url, Stalled::new("a", never.clone()));
    let second = spawn_upload(&client, url, Stalled::new("b", never.clone()));
    for task in [first, second] {
        let outcome = tokio::time::timeout(LIMIT, task).await.unwrap().unwrap();
        assert!(outcome.is_err(), "{outcome:?}");
    }
    assert_eq!(peer.connections(), 1);
    // The lesson is taken when the connection's driver (hyper's dispatch task) ends, which can
    // come after h2's own task, which holds the transport, ended and dropped it: so neither
    // the transport's gauge nor the close event (the failed uploads closed the connection
    // first) says it was taken.
    eventually(
        || pool.stats(url).uploads_one_at_a_time(),
        || "the lesson was never learnt".into(),
    )
    .await;
    assert!(
        !pool.stats(url).larger_stream_window(),
        "the overlapping uploads explain the GOAWAY: the window is not suspected"
    );
    settle(pool, &origin(url), |s| s.physically_live == 0).await;
}

/// After the lesson's two uploads: starts a third upload, whose body waits for the returned
/// gate, and returns once its HEADERS reached the peer.
async fn unfinished_upload(
    client: &pool::Client,
    peer: &FramePeer,
    url: &str,
) -> (
    Gate,
    tokio::task::JoinHandle<Result<http::StatusCode, pool::Error>>,
) {
    let held = Gate::new();
    let unfinished = spawn_upload(client, url, Stalled::new("c", held.clone()));
    tokio::time::timeout(LIMIT, peer.wait_headers(3))
        .await
        .expect("the upload reached the peer");
    (held, unfinished)
}

/// Tomcat ends an HTTP/2 connection with `GOAWAY(ENHANCE_YOUR_CALM)` when uploads overlap on
/// it (its overhead protection meeting the one-byte DATA frames hyper's body pipe sends when
/// uploads share a scarce window; see pool-h2's `uploads.rs`). The first connection's two
/// overlapping uploads fail (POSTs, not sent again) and teach the cell to send one body at a
/// time per connection: on the next connection an upload that comes while another is
/// unfinished waits for that one's response head, so both are served, while a GET beside them
/// does not wait; and while it waits the connection counts as full, so a third upload goes at
/// once on a connection of its own. Without the lesson the second upload goes at once, and the
/// peer ends that connection too; without the connection counting as full, the third would
/// wait behind the second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_that_made_the_server_ask_for_calm_go_one_at_a_time_per_connection() {
    let peer = FramePeer::start_refusing_overlapping_bodies().await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let url = peer.url("/upload");
    let key = origin(&url);
    learn_one_upload_at_a_time(&pool, &peer, &url).await;

    // On the second connection: an upload whose body waits for `held`...
    let (held, unfinished) = unfinished_upload(&client, &peer, &url).await;
    // ...does not hold up a GET...
    let (_, body) = tokio::time::timeout(LIMIT, fetch(&client, &url))
        .await
        .expect("the GET does not wait for the upload");
    assert_eq!(body, "");
    // ...and a second upload takes a stream there, then waits for the first one's response.
    let waiting = spawn_upload(&client, &url, Stalled::new("d", Gate::opened()));
    settle(&pool, &key, |s| {
        s.h2_active_streams == 2 && s.h2_uploads_waiting == 1
    })
    .await;
    // A third goes on a third connection, and is answered while the first is unfinished.
    let third = spawn_upload(&client, &url, Stalled::new("e", Gate::opened()));
    let status = tokio::time::timeout(LIMIT, third).await.unwrap().unwrap();
    assert_eq!(status.unwrap(), 200);
    assert_eq!(peer.connections(), 3);
    held.open();
    for task in [unfinished, waiting] {
        let status = tokio::time::timeout(LIMIT, task).await.unwrap().unwrap();
        assert_eq!(status.unwrap(), 200);
    }
    assert_eq!(peer.connections(), 3);
    let second: Vec<usize> = peer.streams()[1].values().copied().collect();
    assert_eq!(second, [1, 0, 1], "the upload, the GET, the upload");
    let third: Vec<usize> = peer.streams()[2].values().copied().collect();
    assert_eq!(third, [1], "the third upload");
    assert_eq!(pool.counters().transparent_retries, 0);
    assert_eq!(pool.stats(&url).total().h2_uploads_waiting, 0);
}

/// With one HTTP/2 connection allowed per origin, the connection where an upload waits for
/// the permit counts as full, so a third upload waits in the pool; when the waiting upload
/// takes the permit, the connection tells its cell, and the third takes a stream there (then
/// waits for the permit in turn). Without that word from the connection, nothing would wake
/// the third: no stream at the peer's limit ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_that_waited_in_the_pool_takes_the_stream_when_the_permit_moves_on() {
    let peer = FramePeer::start_refusing_overlapping_bodies().await;
    let events = EventLog::new();
    let pool = h2c_builder(&events)
        .http2_max_connections_per_origin(1)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = peer.url("/upload");
    let key = origin(&url);
    learn_one_upload_at_a_time(&pool, &peer, &url).await;

    let (held, unfinished) = unfinished_upload(&client, &peer, &url).await;
    let waiting = spawn_upload(&client, &url, Stalled::new("d", Gate::opened()));
    settle(&pool, &key, |s| {
        s.h2_active_streams == 2 && s.h2_uploads_waiting == 1
    })
    .await;
    let third = spawn_upload(&client, &url, Stalled::new("e", Gate::opened()));
    settle(&pool, &key, |s| s.waiting_requests == 1).await;
    assert_eq!(
        pool.stats(&url).total().h2_active_streams,
        2,
        "the third waits in the pool"
    );
    held.open();
    for task in [unfinished, waiting, third] {
        let status = tokio::time::timeout(LIMIT, task).await.unwrap().unwrap();
        assert_eq!(status.unwrap(), 200);
    }
    assert_eq!(peer.connections(), 2);
    let second: Vec<usize> = peer.streams()[1].values().copied().collect();
    assert_eq!(second, [1, 1, 1], "the three uploads, one after the other");
    assert_eq!(pool.counters().transparent_retries, 0);
    assert_eq!(pool.stats(&url).total().h2_uploads_waiting, 0);
}

/// A server that closes each HTTP/1 connection after one response without saying so (no
/// `Connection: close`; tinyproxy 1.11 does this): the next request sent on it is read and
/// met with the close. Two such cuts after one response each teach the pool the quota 1, as
/// GOAWAY cuts teach it over HTTP/2; from then on each connection retires with its first
/// response (`request_quota`), so a POST, which could not be sent again, never goes out on a
/// connection the server is closing. Before, every reuse there failed or went twice: through
/// tinyproxy, 40% of a one-at-a-time run of POSTs failed.
#[tokio::test(flavor = "current_thread")]
async fn a_server_closing_http1_connections_unannounced_teaches_the_quota() {
    let (pool, mut ends, events) = duplex_pool(RetryPolicy::default());
    let client = pool.client().unwrap();
    let url = "http://unannounced.test/";
    let server = tokio::spawn(async move {
        let mut connections = 0;
        while let Some(mut end) = ends.recv().await {
            connections += 1;
            tokio::spawn(async move {
                answer_one(&mut end, "one").await;
                // The next request's first byte (or the pool's own close) ends the connection.
                let mut byte = [0u8; 1];
                let _ = tokio::io::AsyncReadExt::read(&mut end, &mut byte).await;
            });
        }
        connections
    });

    // Connection 1 answers; the reuse meets the close and goes again on connection 2.
    fetch(&client, url).await;
    let (handle, _) = fetch(&client, url).await;
    assert!(!handle.is_reused());
    assert_eq!(
        pool.stats(url).request_quota(),
        None,
        "one cut is not enough"
    );
    // The second cut after one response teaches the quota; the re-send's connection keeps to
    // it and retires with its response.
    fetch(&client, url).await;
    assert_eq!(pool.stats(url).request_quota(), Some(1));
    assert_eq!(events.closed_with(CloseReason::RequestQuota), 1);
    // A POST goes on a connection of its own, and is answered.
    let post = Request::post(url)
        .body(Full::new(Bytes::from_static(b"once")))
        .unwrap();
    let response = client.request(post).await.expect("the POST is answered");
    let (_, body) = response.into_parts();
    assert_eq!(body.collect().await.unwrap().to_bytes(), "one");
    assert_eq!(events.closed_with(CloseReason::RequestQuota), 2);
    let counters = pool.counters();
    assert_eq!(counters.resends.get(ResendReason::ClosedBeforeResponse), 2);
    assert_eq!(counters.transparent_retries, 2);
    assert!(events.failed().is_empty(), "{:?}", events.failed());
    drop((client, pool));
    assert_eq!(server.await.unwrap(), 4);
}

/// nginx closing a connection on reload: the peer answers stream 1, sends GOAWAY (last stream
/// id 1) and resets the connection while the client is about to send again. The client's next
/// write fails at once, but what the peer sent first is still in its receive buffer: the pool
/// reads on (`pool_h2`'s `ReadPastReset`), so stream 1's response arrives and the streams above
/// the GOAWAY, the one opened before it and the one whose write met the reset, go again on a
/// new connection. Before, h2 failed all three with "stream closed because of a broken pipe".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goaway_sent_before_a_reset_is_still_read() {
    let peer = FramePeer::start(GoAwayScript {
        streams: 2,
        last_stream_id: 1,
        goaway: true,
        reset: true,
        silent: false,
    })
    .await;
    // The first connection reads nothing until the reset is in place and a write met it, so
    // the GOAWAY cannot be read before that write.
    let (reads, write_failures) = (Gate::new(), Signal::new());
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .connector(GatedConnector::new([Gates {
            reads: Some(reads.clone()),
            write_failures: Some(write_failures.clone()),
            ..Gates::default()
        }]))
        .event_listener(events.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = peer.url("/");
    let mut tasks = tokio::task::JoinSet::new();
    spawn_exchange(&mut tasks, &client, &url, Method::GET);
    spawn_exchange(&mut tasks, &client, &url, Method::GET);
    tokio::time::timeout(LIMIT, peer.wait_reset())
        .await
        .expect("the peer answered stream 1, sent GOAWAY and reset");
    spawn_exchange(&mut tasks, &client, &url, Method::GET);
    tokio::time::timeout(LIMIT, write_failures.wait_for(1))
        .await
        .expect("the third request's HEADERS met the reset");
    reads.open();

    let handles = all_served(tasks).await;
    assert_eq!(peer.connections(), 2);
    let streams = peer.streams();
    assert_eq!(
        streams[0].keys().copied().collect::<Vec<_>>(),
        vec![1, 3],
        "the third request never reached the first connection"
    );
    assert_eq!(streams[1].len(), 2, "the two above the last id went again");
    assert_eq!(pool.counters().resends.get(ResendReason::GoAway), 2);
    let mut per_connection = std::collections::HashMap::new();
    for handle in &handles {
        *per_connection.entry(handle.id()).or_insert(0) += 1;
    }
    let mut counts: Vec<usize> = per_connection.into_values().collect();
    counts.sort_unstable();
    assert_eq!(
        counts,
        vec![1, 2],
        "one request on the old connection, two on the new one"
    );
}

/// A frame peer's run: the peer, the pool (its counters), its events, and the requests'
/// outcomes in order.
type Lost = (
    FramePeer,
    ConnectionPool,
    EventLog,
    Vec<Result<ConnectionHandle, pool::Error>>,
);

/// A peer that, once it has read two streams, answers the first and resets the connection
/// without a GOAWAY: what a reloading nginx's abortive close looks like when its kernel drops
/// the GOAWAY it had not sent yet. The second request is `second`, sent once the peer read the
/// first, so its stream goes out on a connection that had served a request. Returns the peer,
/// the pool's counters and events, and both requests' outcomes in order.
async fn lost_under_second_stream(second: Method) -> Lost {
    let peer = FramePeer::start(GoAwayScript {
        streams: 2,
        last_stream_id: 1,
        goaway: false,
        reset: true,
        silent: false,
    })
    .await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let url = peer.url("/");
    let mut first = tokio::task::JoinSet::new();
    spawn_exchange(&mut first, &client, &url, Method::GET);
    tokio::time::timeout(LIMIT, peer.wait_headers(1))
        .await
        .expect("the first request reached the peer");
    let mut later = tokio::task::JoinSet::new();
    spawn_exchange(&mut later, &client, &url, second);
    let mut outcomes = join_all(first).await;
    outcomes.extend(join_all(later).await);
    (peer, pool, events, outcomes)
}

/// HTTP/2's keep-alive race: the connection is reset under a stream that had no response yet,
/// and nothing says whether the server processed it. A GET is safe to repeat (RFC 9110
/// §9.2.2), so the pool sends it again on a new connection, as for HTTP/1; the first stream's
/// response, sent before the reset, still arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_whose_http2_connection_is_lost_before_its_response_is_sent_again() {
    let (peer, pool, events, outcomes) = lost_under_second_stream(Method::GET).await;
    let handles: Vec<ConnectionHandle> = outcomes
        .into_iter()
        .map(|outcome| outcome.expect("both requests succeed"))
        .collect();
    assert_eq!(peer.connections(), 2);
    let streams = peer.streams();
    assert_eq!(streams[0].keys().copied().collect::<Vec<_>>(), vec![1, 3]);
    assert_eq!(streams[1].len(), 1, "only the lost stream went again");
    assert_eq!(handles[0].id(), {
        let resent = events.resent();
        assert_eq!(resent.len(), 1, "{resent:?}");
        assert_eq!(
            (resent[0].1, resent[0].2),
            (ResendReason::ClosedBeforeResponse, 1)
        );
        resent[0].0
    });
    assert_ne!(
        handles[1].id(),
        handles[0].id(),
        "the re-send used a new connection"
    );
    assert_eq!(
        pool.counters()
            .resends
            .get(ResendReason::ClosedBeforeResponse),
        1
    );
}

/// The same race for a POST: the server may have processed it, so it is not sent again and its
/// error does not call it safe to repeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_whose_http2_connection_is_lost_before_its_response_is_not_sent_again() {
    let (peer, pool, events, mut outcomes) = lost_under_second_stream(Method::POST).await;
    let error = outcomes
        .pop()
        .expect("two outcomes")
        .expect_err("the POST fails");
    outcomes
        .pop()
        .expect("two outcomes")
        .expect("the GET answered before the reset succeeds");
    assert!(!error.is_retryable(), "{error}");
    assert!(!error.is_go_away(), "{error}");
    assert_eq!(peer.connections(), 1, "nothing was sent again");
    assert_eq!(pool.counters().transparent_retries, 0);
    assert!(events.resent().is_empty());
}

/// Two GETs sent at once on a new connection, which the peer resets once it has read both,
/// after its SETTINGS or (`silent`) without a byte; returns the peer, the pool's counters and
/// events, and both outcomes.
async fn new_connection_lost_under_two_gets(silent: bool) -> Lost {
    let peer = FramePeer::start(GoAwayScript {
        streams: 2,
        last_stream_id: 0,
        goaway: false,
        reset: true,
        silent,
    })
    .await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let url = peer.url("/");
    let mut tasks = tokio::task::JoinSet::new();
    spawn_exchange(&mut tasks, &client, &url, Method::GET);
    spawn_exchange(&mut tasks, &client, &url, Method::GET);
    let outcomes = join_all(tasks).await;
    (peer, pool, events, outcomes)
}

/// Apache httpd's graceful restart: a new connection the server had begun to serve (its
/// SETTINGS arrived) is lost under both its streams with no GOAWAY. Nothing says whether they
/// were processed, but the server had taken the connection, so its loss is the connection's
/// end: both GETs go again on a new connection, the first one dispatched as well as the
/// second (which of two streams sent at once was dispatched first decides nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_get_on_a_new_http2_connection_lost_after_its_settings_is_sent_again() {
    let (peer, pool, events, outcomes) = new_connection_lost_under_two_gets(false).await;
    let handles: Vec<ConnectionHandle> = outcomes
        .into_iter()
        .map(|outcome| outcome.expect("both requests succeed"))
        .collect();
    assert_eq!(peer.connections(), 2);
    let streams = peer.streams();
    assert_eq!(
        streams[0].len(),
        2,
        "both streams reached the first connection"
    );
    assert_eq!(streams[1].len(), 2, "both went again");
    assert_eq!(
        handles[0].id(),
        handles[1].id(),
        "both on the new connection"
    );
    assert_eq!(
        pool.counters()
            .resends
            .get(ResendReason::ClosedBeforeResponse),
        2
    );
    let resent = events.resent();
    assert_eq!(resent.len(), 2, "{resent:?}");
    assert!(
        resent
            .iter()
            .all(|(id, reason, attempt)| *id != handles[0].id()
                && *reason == ResendReason::ClosedBeforeResponse
                && *attempt == 1)
    );
}

/// A new connection lost before the server sent a byte on it, not even its SETTINGS: the
/// server accepted it and never began HTTP/2 on it, which says something about the origin, not
/// about a stale connection. Neither GET goes again (as on HTTP/1 for a new connection that
/// closes before its response), the second one dispatched no more than the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_get_on_a_new_http2_connection_lost_before_the_server_spoke_is_sent_again() {
    let (peer, pool, events, outcomes) = new_connection_lost_under_two_gets(true).await;
    for outcome in outcomes {
        let error = outcome.expect_err("the request fails");
        assert!(!error.is_go_away(), "{error}");
        assert!(!error.is_refused_stream(), "{error}");
    }
    assert_eq!(peer.connections(), 1, "nothing was sent again");
    assert_eq!(peer.streams()[0].len(), 2, "both streams reached the peer");
    assert_eq!(pool.counters().transparent_retries, 0);
    assert!(events.resent().is_empty());
}

/// Requests with streaming bodies caught by GOAWAY are never sent twice: the peer sees no
/// second connection, and the failures say the server did not process them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_posts_caught_by_goaway_are_not_sent_twice() {
    let (peer, pool, events) = goaway_rig().await;
    let client = pool.client().unwrap();
    let url = peer.url("/upload");

    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..3u8 {
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move {
            let body = Chunks::new([Bytes::from(vec![i; 16])]);
            let request = Request::post(url).body(body).unwrap();
            match client.request(request).await {
                Ok(response) => response.into_body().collect().await.map(|_| true),
                Err(error) => {
                    assert!(error.is_retryable(), "{error}");
                    assert!(error.is_go_away() && !error.is_refused_stream(), "{error}");
                    assert_eq!(error.http2_error_code(), Some(0x0), "NO_ERROR: {error}");
                    let text = error.to_string();
                    assert!(text.contains("closed the connection gracefully"), "{text}");
                    assert!(!text.contains("not a result of an error"), "{text}");
                    Ok(false)
                }
            }
        });
    }
    let served = join_all(tasks)
        .await
        .into_iter()
        .filter(|r| *r.as_ref().expect("no other failure"))
        .count();
    assert_eq!(served, 1, "only the stream at the last id was processed");
    assert_eq!(peer.connections(), 1, "nothing was sent again");
    assert_eq!(pool.counters().transparent_retries, 0);
    assert!(events.resent().is_empty());
}

/// An h2c server that sheds load as Node.js does past its session memory, announcing no stream
/// limit: it holds the first two streams of its connection (nothing is answered until `hold`
/// opens), resets the next `refused` with `ENHANCE_YOUR_CALM` once `shed` opens, and holds
/// every later one until `again` opens. Streams are told apart by their place on the
/// connection, not by the order the handler runs in, which the server's tasks may change.
async fn shedding_server(
    hold: &Gate,
    shed: &Gate,
    again: &Gate,
    refused: usize,
) -> ScriptedH2Server {
    let (hold, shed, again) = (hold.clone(), shed.clone(), again.clone());
    ScriptedH2Server::builder()
        .handler(move |request| {
            let n = request.index + 1;
            if n <= 2 {
                StreamPlan::new().gate(hold.clone()).head(200).data("held")
            } else if n <= 2 + refused {
                StreamPlan::new()
                    .gate(shed.clone())
                    .rst(Reason::ENHANCE_YOUR_CALM)
            } else {
                StreamPlan::new()
                    .gate(again.clone())
                    .head(200)
                    .data("again")
            }
        })
        .start()
        .await
}

/// A server asking for calm (`ENHANCE_YOUR_CALM`) sheds load it never announced as a limit:
/// the pool re-sends the idempotent requests it refused, and from then on opens only as many
/// streams on the connection as the server took (2 of 16), so the re-sends wait in the pool
/// for those to finish rather than being refused again; every request gets its response.
/// (With more than one connection allowed per origin, the capped connection counts as full
/// and the waiting requests open another, as at a stream limit the server announced.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_asking_for_calm_gets_fewer_streams_and_the_requests_it_refused_go_again() {
    let (hold, shed, again) = (Gate::new(), Gate::new(), Gate::new());
    let server = shedding_server(&hold, &shed, &again, 14).await;
    let events = EventLog::new();
    let pool = h2c_builder(&events)
        .http2_max_connections_per_origin(1)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/download");
    let requests: Vec<_> = (0..16)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { fetch(&client, &url).await.1 })
        })
        .collect();
    // Every request has its stream before the server sheds any.
    tokio::time::timeout(LIMIT, server.wait_for_streams(16))
        .await
        .expect("the burst arrives");
    shed.open();
    // The 14 refused wait in the pool while the 2 the server took are open.
    let origin = origin(&url);
    settle(&pool, &origin, |s| s.waiting_requests == 14).await;
    assert_eq!(
        pool.counters().resends.get(ResendReason::EnhanceYourCalm),
        14
    );
    assert_eq!(server.streams_accepted(), 16, "nothing went past the cap");
    assert_eq!(server.streams_in_flight(), vec![2]);
    assert_eq!(pool.stats(&origin).total().h2_active_streams, 2);
    hold.open();
    again.open();
    let mut bodies = Vec::new();
    for request in requests {
        bodies.push(
            tokio::time::timeout(LIMIT, request)
                .await
                .expect("in time")
                .unwrap(),
        );
    }
    assert_eq!(bodies.iter().filter(|b| *b == "held").count(), 2);
    assert_eq!(bodies.iter().filter(|b| *b == "again").count(), 14);
    assert_eq!(
        pool.counters().resends.get(ResendReason::EnhanceYourCalm),
        14
    );
    assert_eq!(server.streams_per_connection(), vec![30], "one connection");
    let most = server.max_concurrent_streams_seen();
    assert_eq!(
        most, 16,
        "the first burst; the re-sends never had more in flight"
    );
    assert_eq!(
        events.closed_with(CloseReason::ProtocolClosed),
        0,
        "{events:?}"
    );
}

/// `ENHANCE_YOUR_CALM` is no proof that the server did not process the stream (RFC 9113 §8.7
/// gives that to `REFUSED_STREAM` and `GOAWAY`): a POST it resets fails, not marked safe to
/// send again, with the code; the connection stays and serves the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_refused_asking_for_calm_fails_and_is_not_sent_again() {
    let (hold, shed, again) = (Gate::opened(), Gate::opened(), Gate::opened());
    let server = shedding_server(&hold, &shed, &again, 1).await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let url = server.url("/orders");
    let (first, _) = fetch(&client, &url).await;
    let (second, _) = fetch(&client, &url).await;
    let post = Request::post(&url)
        .body(Full::new(Bytes::from_static(b"one order")))
        .unwrap();
    let error = tokio::time::timeout(LIMIT, client.request(post))
        .await
        .expect("in time")
        .expect_err("refused asking for calm");
    assert_eq!(error.http2_error_code(), Some(0xb), "{error}");
    assert!(!error.is_retryable(), "{error}");
    assert!(!error.is_refused_stream(), "{error}");
    assert_eq!(pool.counters().transparent_retries, 0);
    let (third, body) = fetch(&client, &url).await;
    assert_eq!(body, "again");
    assert_eq!((first.id(), second.id()), (third.id(), third.id()));
    assert_eq!(server.streams_accepted(), 4, "the POST went once");
}

/// A GET that the server refuses with `ENHANCE_YOUR_CALM` every time fails once its re-sends
/// are spent, marked safe to send again because it is idempotent, and its message says that
/// rather than claiming the server did not process it. Every refusal after the first comes at
/// a cap of one stream, which teaches the pool nothing, so each is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_refused_asking_for_calm_every_time_fails_once_its_re_sends_are_spent() {
    let server = ScriptedH2Server::builder()
        .default_stream(StreamPlan::reset(Reason::ENHANCE_YOUR_CALM))
        .start()
        .await;
    let events = EventLog::new();
    let pool = h2c_pool(&events);
    let client = pool.client().unwrap();
    let error = tokio::time::timeout(LIMIT, client.request(get(&server.url("/"))))
        .await
        .expect("in time")
        .expect_err("every stream is refused");
    assert_eq!(error.http2_error_code(), Some(0xb), "{error}");
    assert!(error.is_retryable(), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("the request is idempotent") && !message.contains("did not process"),
        "{message}"
    );
    assert_eq!(
        pool.counters().resends.get(ResendReason::EnhanceYourCalm),
        u64::from(pool::DEFAULT_MAX_RESENDS) + 1
    );
    assert_eq!(
        server.streams_accepted(),
        5,
        "the first attempt, its re-send after the refusal that set the cap at one stream \
         (not counted), and three counted re-sends"
    );
}

/// A refusal that lowered the connection's stream cap is the pool's doing (it had opened more
/// streams than the server took), and the request it cost goes again without spending its
/// budget. With a budget of one re-send, a GET refused twice so (as the risen cap's probe, then
/// again after the next rise) still gets its response; counted, its second refusal failed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_refused_where_the_pool_overreached_goes_again_without_spending_its_budget() {
    let (first, third) = (Gate::new(), Gate::new());
    // By the stream's place on the connection: the first held until `first`, the second
    // refused, the third held until `third`, the fourth and fifth refused, the rest answered.
    let plans = {
        let (first, third) = (first.clone(), third.clone());
        move |request: &pool_tests::h2::H2Request| match request.index {
            0 => StreamPlan::new().gate(first.clone()).head(200).data("one"),
            2 => StreamPlan::new().gate(third.clone()).head(200).data("two"),
            1 | 3 | 4 => StreamPlan::reset(Reason::ENHANCE_YOUR_CALM),
            _ => StreamPlan::ok("victim"),
        }
    };
    let server = ScriptedH2Server::builder().handler(plans).start().await;
    let pool = ConnectionPool::builder()
        .protocol(ProtocolPolicy::Http2PriorKnowledge)
        .http2_max_connections_per_origin(1)
        .retry_policy(RetryPolicy::unprocessed().max_resends(1))
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = server.url("/");
    let spawn_fetch = |client: &pool::Client| {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move { fetch(&client, &url).await.1 })
    };
    let wait_for = |n| tokio::time::timeout(LIMIT, server.wait_for_streams(n));
    let origin = origin(&url);
    // Stream 1 is held; stream 2 is refused before any cap: the cap falls to one.
    // (Each refusal is handled by its request's task, so the test waits for the refused
    // request to be back in the pool before the next response can raise the cap.)
    let one = spawn_fetch(&client);
    wait_for(1).await.expect("stream 1");
    let two = spawn_fetch(&client);
    settle(&pool, &origin, |s| s.waiting_requests == 1).await;
    // Stream 1's response raises the cap to two; the refused request takes stream 3, held.
    first.open();
    assert_eq!(
        tokio::time::timeout(LIMIT, one).await.unwrap().unwrap(),
        "one"
    );
    wait_for(3).await.expect("stream 3, the re-send");
    // The new request takes the risen cap's second place, stream 4, and is refused there
    // (not counted: the cap falls back to one).
    let victim = spawn_fetch(&client);
    wait_for(4).await.expect("stream 4, the probe");
    settle(&pool, &origin, |s| s.waiting_requests == 1).await;
    third.open();
    assert_eq!(
        tokio::time::timeout(LIMIT, two).await.unwrap().unwrap(),
        "two"
    );
    // Stream 3's response raises the cap again; refused once more on stream 5 (counted: one
    // request's uncounted re-sends are bounded by its budget too), it is answered on stream 6.
    let body = tokio::time::timeout(LIMIT, victim)
        .await
        .expect("in time")
        .expect("the request got its response");
    assert_eq!(body, "victim");
    assert_eq!(server.streams_per_connection(), vec![6], "one connection");
    assert_eq!(
        pool.counters().resends.get(ResendReason::EnhanceYourCalm),
        3,
        "stream 2's request once, the probe's twice"
    );
}
