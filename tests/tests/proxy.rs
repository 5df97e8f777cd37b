//! Through an HTTP proxy: forward requests for `http` origins, `CONNECT` tunnels for `https`
//! ones (HTTP/2 inside, one tunnel for a cold burst), credentials, refusals, a proxy that drops
//! the tunnel, Digest proxy authentication, headers for the proxy alone, the PROXY protocol
//! line inside a tunnel, the no-proxy list, routes that never mix, `connect_to` through a
//! proxy, and a Unix socket that replaces both. Against a scripted proxy; the interop suite
//! runs the same against tinyproxy.

use std::net::SocketAddr;
use std::time::Duration;

use pool::{
    AuthScheme, Challenged, ConnectStep, ConnectTo, ConnectionPool, NoProxy, PartitionStats, Proxy,
    ProxyConfig, PublicKeyPin,
};
use pool_tests::client::{fetch, get, origin, settle};
use pool_tests::events::EventLog;
use pool_tests::h1::{ConnPlan, Reply, ScriptedH1Server};
use pool_tests::h2::{ScriptedH2Server, StreamPlan};
use pool_tests::proxy::{ConnectScript, ScriptedProxy};
use pool_tests::resolve::FixedResolver;
use pool_tests::silent::SilentPeer;
use pool_tests::socks::ScriptedSocks;
use pool_tests::tls::TestPki;
use pool_tests::unix::UnixBridge;
use tokio::task::JoinSet;

/// Real-time bound for tests that wait on other tasks; a hang fails instead of blocking CI.
const LIMIT: Duration = Duration::from_secs(20);

fn via(proxy: &ScriptedProxy) -> ProxyConfig {
    ProxyConfig::new().all(Proxy::parse(&proxy.url()).unwrap())
}

/// An HTTP/2 origin over TLS (ALPN `h2` and `http/1.1`) answering every stream with `body`.
async fn tls_h2_origin(pki: &TestPki, body: &'static str) -> ScriptedH2Server {
    ScriptedH2Server::builder()
        .tls(pki.server_config(&[b"h2", b"http/1.1"]))
        .default_stream(StreamPlan::ok(body))
        .start()
        .await
}

/// An `https://` proxy (its certificate from `pki`) that opens tunnels.
async fn tls_proxy(pki: &TestPki) -> ScriptedProxy {
    ScriptedProxy::start_tls(
        ConnectScript::Tunnel,
        None,
        pki.server_config(&[b"http/1.1"]),
    )
    .await
}

/// A pool through `proxy` that trusts `pki`'s CA only, with an event log.
fn trusting_pool(pki: &TestPki, proxy: &ScriptedProxy) -> (ConnectionPool, EventLog) {
    let events = EventLog::new();
    let pool = ConnectionPool::builder()
        .native_roots(false)
        .add_root_certificates_pem(pki.ca_pem())
        .proxy(via(proxy), false)
        .event_listener(events.clone())
        .build()
        .unwrap();
    (pool, events)
}

/// A request to `url` through `proxy` that must fail; the pool comes back for its stats.
async fn failed_through(proxy: &ScriptedProxy, url: &str) -> (ConnectionPool, pool::Error) {
    failed_with(via(proxy), url).await
}

/// A request to `url` routed by `config` that must fail; the pool comes back for its stats.
async fn failed_with(config: ProxyConfig, url: &str) -> (ConnectionPool, pool::Error) {
    let pool = ConnectionPool::builder()
        .proxy(config, false)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let error = tokio::time::timeout(LIMIT, client.request(get(url)))
        .await
        .expect("in time")
        .expect_err("the request fails");
    (pool, error)
}

/// An `http` origin goes to a forward proxy: absolute-form request lines, the proxy's
/// credentials on every request, and the connection to the proxy reused like any other.
#[tokio::test]
async fn http_origins_use_a_forward_proxy_with_absolute_form_and_credentials() {
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, Some("Basic dTpwYXNz")).await;
    let events = EventLog::new();
    let config = ProxyConfig::new().http(
        Proxy::parse(&proxy.url())
            .unwrap()
            .with_credentials("u", "pass"),
    );
    let pool = ConnectionPool::builder()
        .proxy(config, false)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://origin.test:8080/a?b=1";

    let (first, body) = fetch(&client, url).await;
    assert_eq!(body, "via-proxy");
    settle(&pool, &origin(url), |s| s.h1_idle == 1).await;
    let (second, _) = fetch(&client, url).await;
    assert_eq!(second.id(), first.id(), "the proxy connection is reused");
    assert_eq!(proxy.connections(), 1);

    let requests = proxy.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.line, "GET http://origin.test:8080/a?b=1 HTTP/1.1");
        assert_eq!(
            request.proxy_authorization.as_deref(),
            Some("Basic dTpwYXNz")
        );
        assert_eq!(request.host.as_deref(), Some("origin.test:8080"));
    }
    let info = &events.created()[0];
    let route = info.proxy().expect("the connection says it is proxied");
    assert!(!route.tunnel);
    assert_eq!(route.proxy, proxy.url());
}

/// With `share_forward_proxy_connections`, origins forwarded to one proxy share its
/// connections, as curl and Go share them: each request keeps its own absolute-form target and
/// `Host`, the stats of either origin read the route's cell, and the bound counts the proxy.
/// Without it (the default) each origin has a connection of its own.
#[tokio::test]
async fn origins_forwarded_to_one_proxy_share_its_connections_when_asked() {
    let (a, b) = ("http://a.test/x", "http://b.test:8080/y?z");
    for share in [false, true] {
        let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
        let pool = ConnectionPool::builder()
            .proxy(via(&proxy), false)
            .share_forward_proxy_connections(share)
            .build()
            .unwrap();
        let client = pool.client().unwrap();
        let (first, body) = fetch(&client, a).await;
        assert_eq!(body, "via-proxy");
        settle(&pool, &origin(a), |s| s.h1_idle == 1).await;
        let (second, _) = fetch(&client, b).await;
        assert_eq!(second.id() == first.id(), share, "shared: {share}");
        assert_eq!(second.is_reused(), share);
        assert_eq!(proxy.connections(), if share { 1 } else { 2 });
        let requests = proxy.requests();
        assert_eq!(requests[0].line, "GET http://a.test/x HTTP/1.1");
        assert_eq!(requests[0].host.as_deref(), Some("a.test"));
        assert_eq!(requests[1].line, "GET http://b.test:8080/y?z HTTP/1.1");
        assert_eq!(requests[1].host.as_deref(), Some("b.test:8080"));
        // One idle connection each: the same one when shared (one connection in all).
        let idle = |url| pool.stats(url).total().h1_idle;
        settle(&pool, &origin(b), |s| s.h1_idle == 1).await;
        assert_eq!((idle(a), idle(b)), (1, 1));
        assert_eq!(pool.origins(), [origin(a), origin(b)]);
    }

    // A bound of one connection per host is one connection to the proxy for both origins,
    // however many requests run at once.
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let pool = ConnectionPool::builder()
        .proxy(via(&proxy), false)
        .share_forward_proxy_connections(true)
        .max_connections_per_host(1)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let mut requests = JoinSet::new();
    for i in 0..8 {
        let (client, url) = (client.clone(), if i % 2 == 0 { a } else { b });
        requests.spawn(async move { fetch(&client, url).await.1 });
    }
    let bodies = tokio::time::timeout(LIMIT, requests.join_all())
        .await
        .unwrap();
    assert!(bodies.iter().all(|body| body == "via-proxy"));
    assert_eq!(proxy.connections(), 1);
    assert_eq!(proxy.requests().len(), 8);
}

/// Headers for the proxy alone (curl's `--proxy-header`) go on the `CONNECT` of a tunnel and
/// on each request through a forward proxy, and never through a tunnel to the origin; the
/// proxy's user agent goes on the `CONNECT` only. A proxy header named `Proxy-Authorization`
/// replaces the proxy's credentials on both.
#[tokio::test]
async fn proxy_headers_reach_the_proxy_and_not_the_origin() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("origin"))).await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let config = ProxyConfig::new()
        .all(
            Proxy::parse(&proxy.url())
                .unwrap()
                .with_credentials("u", "pass"),
        )
        .with_header(
            http::HeaderName::from_static("x-for-proxy"),
            http::HeaderValue::from_static("1"),
        )
        .with_header(
            http::header::PROXY_AUTHORIZATION,
            http::HeaderValue::from_static("Bearer t"),
        )
        .with_user_agent(http::HeaderValue::from_static("connect-agent/1"));
    let forward = ConnectionPool::builder()
        .proxy(config.clone(), false)
        .build()
        .unwrap();
    let (_, body) = fetch(&forward.client().unwrap(), "http://origin.test:8080/").await;
    assert_eq!(body, "via-proxy");
    // Tunnel `http://` origins too, so the origin's side of the tunnel can be read.
    let tunnelled = ConnectionPool::builder()
        .proxy(config, true)
        .build()
        .unwrap();
    let url = format!("http://{}/", server.addr());
    let (_, body) = fetch(&tunnelled.client().unwrap(), &url).await;
    assert_eq!(body, "origin");

    let requests = proxy.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].line.starts_with("GET http://origin.test:8080/"));
    assert!(requests[1].line.starts_with("CONNECT "));
    for request in &requests {
        assert!(
            request
                .head
                .to_ascii_lowercase()
                .contains("\r\nx-for-proxy: 1\r\n"),
            "{}",
            request.head
        );
    }
    for request in &requests {
        let head = request.head.to_ascii_lowercase();
        assert_eq!(head.matches("proxy-authorization").count(), 1, "{head}");
        assert!(
            head.contains("\r\nproxy-authorization: bearer t\r\n"),
            "{head}"
        );
    }
    // The `CONNECT` head writes names in title case, its own and the proxy headers alike.
    assert!(
        requests[1].head.contains("\r\nX-For-Proxy: 1\r\n"),
        "{}",
        requests[1].head
    );
    // The `CONNECT` carries the proxy's user agent; a forwarded request keeps its own (none).
    assert!(
        requests[1]
            .head
            .contains("\r\nUser-Agent: connect-agent/1\r\n"),
        "{}",
        requests[1].head
    );
    assert!(
        !requests[0].head.to_ascii_lowercase().contains("user-agent"),
        "{}",
        requests[0].head
    );
    let at_origin = server.requests();
    assert_eq!(at_origin.len(), 1);
    assert!(at_origin[0].headers.get("x-for-proxy").is_none());
    assert!(at_origin[0].headers.get("user-agent").is_none());
}

/// An `https` origin goes through one `CONNECT` tunnel with TLS and ALPN to the origin inside:
/// a cold burst of 50 to an HTTP/2 origin costs one tunnel and one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_origins_tunnel_with_http2_inside_one_tunnel_for_a_cold_burst() {
    let pki = TestPki::new();
    let server = tls_h2_origin(&pki, "tunnelled").await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let (pool, events) = trusting_pool(&pki, &proxy);
    let client = pool.client().unwrap();
    let url = server.url("/");

    let mut tasks = JoinSet::new();
    for _ in 0..50 {
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move { fetch(&client, &url).await });
    }
    let mut ids = std::collections::HashSet::new();
    while let Some(done) = tokio::time::timeout(LIMIT, tasks.join_next())
        .await
        .expect("in time")
    {
        let (handle, body) = done.unwrap();
        assert_eq!(body, "tunnelled");
        ids.insert(handle.id());
    }
    assert_eq!(ids.len(), 1, "one HTTP/2 connection");
    assert_eq!(proxy.connections(), 1, "one tunnel");
    assert_eq!(server.accepted(), 1);
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].line,
        format!("CONNECT {} HTTP/1.1", server.authority())
    );
    let info = &events.created()[0];
    assert!(info.proxy().expect("proxied").tunnel);
    assert_eq!(
        info.tls().and_then(|t| t.alpn),
        Some("h2"),
        "ALPN inside the tunnel"
    );
}

/// A proxy that refuses the tunnel: the error says it was the proxy, with its status and its
/// answer's head; `407` is an authentication failure. Nothing stays counted.
#[tokio::test]
async fn refused_tunnels_name_the_proxy_and_its_status() {
    for (status, auth) in [(403, false), (407, true)] {
        let proxy = ScriptedProxy::start(ConnectScript::Refuse(status), None).await;
        let (pool, error) = failed_through(&proxy, "https://refused.test/").await;
        assert!(error.is_connect() && error.is_proxy(), "{error}");
        assert!(error.is_proxy_tunnel(), "{error}");
        assert_eq!(error.proxy_status(), Some(status));
        let answer = format!("HTTP/1.1 {status} Refused\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(error.proxy_response(), Some(answer.as_str()));
        assert_eq!(error.is_proxy_auth(), auth, "{error}");
        assert!(
            format!("{error:#}").contains(&status.to_string()),
            "{error:#}"
        );
        assert_eq!(
            pool.stats(&origin("https://refused.test/")).total(),
            pool::PartitionStats::default()
        );
    }
}

/// Credentials the proxy does not accept on a tunnel: `407`, reported as such.
#[tokio::test]
async fn wrong_credentials_get_407_from_the_proxy() {
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, Some("Basic right")).await;
    let config = ProxyConfig::new().all(
        Proxy::parse(&proxy.url())
            .unwrap()
            .with_credentials("someone", "wrong"),
    );
    let pool = ConnectionPool::builder()
        .proxy(config, false)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let error = client
        .request(get("https://guarded.test/"))
        .await
        .expect_err("407");
    assert!(error.is_proxy_auth(), "{error}");
    let sent = proxy.requests()[0].proxy_authorization.clone();
    assert!(sent.is_some_and(|v| v.starts_with("Basic ")));
}

/// A proxy that answers Digest (`AuthScheme::Digest`): the tunnel's first `CONNECT` goes
/// without credentials, its `407` is answered once, on the same connection when the proxy
/// keeps it open and on a new one when it closes it. The connection's record keeps the
/// challenge; a wrong password ends in the proxy's second `407`, with nothing left counted.
#[tokio::test]
async fn a_digest_proxy_s_challenge_to_a_tunnel_is_answered_on_the_same_or_a_new_connection() {
    let pki = TestPki::new();
    let server = tls_h2_origin(&pki, "tunnelled").await;
    let url = server.url("/");
    for keep_open in [true, false] {
        let proxy =
            ScriptedProxy::start_digest(ConnectScript::Tunnel, ("u", "secret"), keep_open).await;
        let events = EventLog::new();
        let config = via(&proxy)
            .with_credentials("u", "secret")
            .with_auth(AuthScheme::Digest);
        let pool = ConnectionPool::builder()
            .native_roots(false)
            .add_root_certificates_pem(pki.ca_pem())
            .proxy(config, false)
            .event_listener(events.clone())
            .build()
            .unwrap();
        let client = pool.client().unwrap();
        let (_, body) = tokio::time::timeout(LIMIT, fetch(&client, &url))
            .await
            .expect("in time");
        assert_eq!(body, "tunnelled");
        let requests = proxy.requests();
        assert_eq!(requests.len(), 2, "keep_open {keep_open}");
        assert_eq!(requests[0].proxy_authorization, None, "nothing up front");
        let answer = requests[1].proxy_authorization.clone().unwrap_or_default();
        assert!(answer.starts_with("Digest username=\"u\""), "{answer}");
        let connect = format!("CONNECT {} HTTP/1.1", server.authority());
        assert!(requests.iter().all(|r| r.line == connect));
        let expected_connections = if keep_open { 1 } else { 2 };
        assert_eq!(proxy.connections(), expected_connections);
        assert_eq!(requests[1].conn, expected_connections - 1);
        let created = events.created();
        let route = created[0].proxy().expect("proxied");
        let challenge = route.connect_challenge.as_deref().unwrap_or_default();
        assert!(challenge.starts_with("HTTP/1.1 407 "), "{challenge}");
        assert_eq!(route.connect_redialed, !keep_open);
        assert!(
            route
                .connect_authorization
                .as_ref()
                .is_some_and(|v| v.is_sensitive())
        );
        assert!(
            !format!("{route:?}").contains("Digest username"),
            "{route:?}"
        );
        drop(pool);

        // A wrong password: the answer is refused and not tried again.
        let proxy =
            ScriptedProxy::start_digest(ConnectScript::Tunnel, ("u", "secret"), keep_open).await;
        let config = via(&proxy)
            .with_credentials("u", "wrong")
            .with_auth(AuthScheme::Any);
        let (pool, error) = failed_with(config, &url).await;
        assert!(error.is_proxy_auth(), "{error}");
        assert_eq!(error.proxy_status(), Some(407));
        assert_eq!(proxy.requests().len(), 2);
        // The refusal answered a challenge: both 407s are kept, the first as the challenge.
        let challenge = error.proxy_challenge().unwrap_or_default();
        assert!(
            challenge.starts_with("HTTP/1.1 407 ") && challenge.contains("Digest"),
            "{challenge}"
        );
        assert!(
            error
                .proxy_response()
                .is_some_and(|r| r.starts_with("HTTP/1.1 407 "))
        );
        assert_eq!(
            pool.stats(&origin(&url)).total(),
            pool::PartitionStats::default()
        );
    }
}

/// A proxy that authenticates with NTLM (`AuthScheme::Ntlm`): the tunnel's first `CONNECT`
/// carries the negotiate message, the `407`'s challenge is answered with the authenticate
/// message on the same connection (the proxy checks both, and that the answer came on the
/// challenge's connection), NTLMv2 or NTLMv1 as the challenge asks, with a domain in the user
/// name. A wrong password ends in the proxy's second `407`, with nothing left counted.
#[tokio::test]
async fn an_ntlm_proxy_s_challenge_to_a_tunnel_is_answered_on_the_same_connection() {
    let pki = TestPki::new();
    let server = tls_h2_origin(&pki, "tunnelled").await;
    let url = server.url("/");
    for v2 in [true, false] {
        let proxy = ScriptedProxy::start_ntlm(ConnectScript::Tunnel, "secret", v2).await;
        let config = via(&proxy)
            .with_credentials("CORP\\u", "secret")
            .with_auth(AuthScheme::Ntlm);
        let pool = ConnectionPool::builder()
            .native_roots(false)
            .add_root_certificates_pem(pki.ca_pem())
            .proxy(config, false)
            .build()
            .unwrap();
        let client = pool.client().unwrap();
        let (_, body) = tokio::time::timeout(LIMIT, fetch(&client, &url))
            .await
            .expect("in time");
        assert_eq!(body, "tunnelled", "v2 {v2}");
        let requests = proxy.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(
            ntlm_kinds(&requests),
            [Some(1), Some(3)],
            "negotiate, then authenticate"
        );
        assert_eq!(proxy.connections(), 1);
        let (_, answer) = requests[1]
            .proxy_authorization
            .as_deref()
            .and_then(pool_tests::ntlm::message)
            .expect("an authenticate message");
        let who = pool_tests::ntlm::verify(&answer, v2, "secret");
        let version = if v2 { 2 } else { 1 };
        assert_eq!(
            who.as_deref(),
            Some(format!("CORP\\u from WORKSTATION, v{version}").as_str())
        );
        drop(pool);
    }

    // A wrong password: the answer is refused and not tried again.
    let proxy = ScriptedProxy::start_ntlm(ConnectScript::Tunnel, "secret", true).await;
    let config = via(&proxy)
        .with_credentials("u", "wrong")
        .with_auth(AuthScheme::Ntlm);
    let (pool, error) = failed_with(config, &url).await;
    assert!(error.is_proxy_auth(), "{error}");
    assert_eq!(error.proxy_status(), Some(407));
    assert_eq!(proxy.requests().len(), 2);
    assert!(
        error
            .proxy_challenge()
            .is_some_and(|c| c.contains("NTLM TlRMTVNTUAAC")),
        "the challenge is kept"
    );
    assert_eq!(
        pool.stats(&origin(&url)).total(),
        pool::PartitionStats::default()
    );
}

/// `AuthScheme::upfront` and `answer` for a caller that speaks NTLM to a server itself: the
/// negotiate message first, the authenticate message for a `401`'s challenge, none for a
/// response that offers no NTLM challenge.
#[test]
fn ntlm_s_messages_for_a_caller() {
    let negotiate = AuthScheme::Ntlm
        .upfront(("u", "p"))
        .expect("a negotiate message");
    assert_eq!(
        pool_tests::ntlm::message(negotiate.to_str().unwrap()).map(|(kind, _)| kind),
        Some(1)
    );
    assert_eq!(AuthScheme::Digest.upfront(("u", "p")), None);
    let challenge = http::HeaderValue::from_str(&pool_tests::ntlm::challenge(true)).unwrap();
    let request = Challenged {
        method: "GET",
        target: "/",
        body: b"",
    };
    let answer = AuthScheme::Ntlm
        .answer([&challenge], request, ("u", "p"))
        .expect("an answer");
    assert_eq!(answer.scheme, "NTLM");
    assert!(answer.value.is_sensitive());
    let (kind, message) = pool_tests::ntlm::message(answer.value.to_str().unwrap()).unwrap();
    assert_eq!(kind, 3);
    assert!(pool_tests::ntlm::verify(&message, true, "p").is_some());
    let bare = http::HeaderValue::from_static("NTLM");
    assert_eq!(AuthScheme::Ntlm.answer([&bare], request, ("u", "p")), None);
}

/// Sends `GET http://origin.test:8080/a?b=1` through the forward proxy `proxy`, with the user
/// `u` and the password `secret` presented as `auth`: the `407` is the request's response;
/// `Proxy::answer_challenge` answers it, and the same request, sent again with that
/// `Proxy-Authorization` (the challenge's body read to its end first, so its connection is idle
/// for the answer), must pass. Returns the scheme that answered.
async fn answer_a_forward_proxy(proxy: &ScriptedProxy, auth: AuthScheme) -> &'static str {
    let chosen = Proxy::parse(&proxy.url())
        .unwrap()
        .with_credentials("u", "secret")
        .with_auth(auth);
    let pool = ConnectionPool::builder()
        .proxy(ProxyConfig::new().http(chosen.clone()), false)
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://origin.test:8080/a?b=1";
    let challenged = client.request(get(url)).await.expect("a response");
    assert_eq!(challenged.status(), 407);
    let request = Challenged {
        method: "GET",
        target: "/a?b=1",
        body: b"",
    };
    let answer = chosen
        .answer_challenge(challenged.headers(), request)
        .expect("a challenge to answer");
    let _ = http_body_util::BodyExt::collect(challenged.into_body()).await;
    let mut again = get(url);
    again
        .headers_mut()
        .insert(http::header::PROXY_AUTHORIZATION, answer.value);
    let response = client.request(again).await.expect("a response");
    assert_eq!(response.status(), 200);
    answer.scheme
}

/// Through a forward proxy that answers Digest, the pool sends no credentials and the `407` is
/// the request's response; `Proxy::answer_challenge` answers it and the same request, sent
/// again with that `Proxy-Authorization`, passes (the pool does not replace it).
#[tokio::test]
async fn a_forward_proxy_s_digest_challenge_is_answered_by_the_caller() {
    let proxy = ScriptedProxy::start_digest(ConnectScript::Tunnel, ("u", "secret"), true).await;
    let scheme = answer_a_forward_proxy(&proxy, AuthScheme::Digest).await;
    assert_eq!(scheme, "Digest");
    let requests = proxy.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].proxy_authorization, None);
    assert!(
        requests[1]
            .proxy_authorization
            .as_deref()
            .is_some_and(|v| v.contains("uri=\"/a?b=1\""))
    );
}

/// Through a forward proxy that authenticates with NTLM, the pool sends the negotiate message
/// with the request and the `407` carrying the challenge is the response;
/// `Proxy::answer_challenge` answers it and the same request, sent again with that
/// `Proxy-Authorization`, passes on the same connection (the proxy checks both).
#[tokio::test]
async fn a_forward_proxy_s_ntlm_challenge_is_answered_by_the_caller_on_the_same_connection() {
    let proxy = ScriptedProxy::start_ntlm(ConnectScript::Tunnel, "secret", true).await;
    let scheme = answer_a_forward_proxy(&proxy, AuthScheme::Ntlm).await;
    assert_eq!(scheme, "NTLM");
    let requests = proxy.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(ntlm_kinds(&requests), [Some(1), Some(3)]);
    assert_eq!(
        proxy.connections(),
        1,
        "the answer went on the challenge's connection"
    );
}

/// The NTLM message type each request's `Proxy-Authorization` carried (1 negotiate, 3
/// authenticate), `None` for none.
fn ntlm_kinds(requests: &[pool_tests::proxy::ProxyRequest]) -> Vec<Option<u8>> {
    requests
        .iter()
        .map(|r| {
            let value = r.proxy_authorization.as_deref().unwrap_or_default();
            pool_tests::ntlm::message(value).map(|(kind, _)| kind)
        })
        .collect()
}

/// A proxy that accepts the tunnel and then closes it: the origin's TLS handshake fails, the
/// request gets a connect error, and the pool's accounting returns to zero.
#[tokio::test]
async fn a_proxy_that_closes_the_tunnel_fails_the_connection_cleanly() {
    let proxy = ScriptedProxy::start(ConnectScript::CloseAfterAccept, None).await;
    let url = "https://dropped.test/";
    let (pool, error) = failed_through(&proxy, url).await;
    assert!(error.is_connect(), "{error}");
    assert_eq!(
        pool.stats(&origin(url)).total(),
        pool::PartitionStats::default()
    );
}

/// The no-proxy list sends an origin direct, in the same pool where another origin goes
/// through the proxy; their connections never mix.
#[tokio::test]
async fn no_proxy_origins_go_direct_and_routes_never_share_connections() {
    let server = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("direct"))).await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let events = EventLog::new();
    let config = via(&proxy).no_proxy(NoProxy::parse("127.0.0.1, .internal.test"));
    let pool = ConnectionPool::builder()
        .proxy(config, false)
        .event_listener(events.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();

    let (direct, body) = fetch(&client, &server.url("/")).await;
    assert_eq!(body, "direct");
    let (proxied, body) = fetch(&client, "http://public.test/").await;
    assert_eq!(body, "via-proxy");
    assert_ne!(direct.id(), proxied.id());
    assert_eq!(server.accepted(), 1);
    assert_eq!(proxy.connections(), 1);
    assert_eq!(
        proxy.requests().len(),
        1,
        "the bypassed origin never reached the proxy"
    );
    let created = events.created();
    let by_id = |id| created.iter().find(|i| i.id() == id).unwrap();
    assert!(by_id(direct.id()).proxy().is_none());
    assert!(by_id(proxied.id()).proxy().is_some());
}

/// `connect_to` through a proxy, as curl does it: a tunnel asks the proxy for the rule's
/// target while TLS inside it still checks the origin's name; a forward proxy is sent the
/// origin itself.
#[tokio::test]
async fn a_tunnel_asks_for_the_connect_to_target_and_a_forward_proxy_for_the_origin() {
    let pki = TestPki::new();
    let server = tls_h2_origin(&pki, "moved").await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let port = server.addr().port();
    let rules = ConnectTo::new().rule(Some("localhost"), Some(1), Some("127.0.0.1"), Some(port));
    let pool = ConnectionPool::builder()
        .native_roots(false)
        .add_root_certificates_pem(pki.ca_pem())
        .proxy(via(&proxy), false)
        .connect_to(rules)
        .build()
        .unwrap();
    let client = pool.client().unwrap();

    let (_, body) = fetch(&client, "https://localhost:1/").await;
    assert_eq!(body, "moved");
    let (_, body) = fetch(&client, "http://localhost:1/").await;
    assert_eq!(body, "via-proxy");
    let lines: Vec<_> = proxy.requests().into_iter().map(|r| r.line).collect();
    assert_eq!(
        lines,
        [
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1"),
            "GET http://localhost:1/ HTTP/1.1".to_owned()
        ]
    );
    assert_eq!(server.accepted(), 1);
}

/// An `https://` proxy: TLS to the proxy first, then the tunnel and the origin's own TLS
/// inside it (TLS in TLS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_proxy_is_reached_over_tls() {
    let pki = TestPki::new();
    let server = tls_h2_origin(&pki, "inside").await;
    let proxy = tls_proxy(&pki).await;
    let (pool, events) = trusting_pool(&pki, &proxy);
    let client = pool.client().unwrap();
    let (handle, body) = tokio::time::timeout(LIMIT, fetch(&client, &server.url("/")))
        .await
        .expect("in time");
    assert_eq!(body, "inside");
    assert_eq!(handle.protocol(), pool::Protocol::Http2);
    let info = &events.created()[0];
    let route = info.proxy().expect("proxied");
    assert!(route.tunnel);
    assert!(
        route.proxy.starts_with("https://localhost:"),
        "{}",
        route.proxy
    );
    assert_eq!(proxy.requests().len(), 1);
}

/// An `https://` proxy's key is pinned by its own TLS settings (curl's `--proxy-pinnedpubkey`):
/// its key passes, another pin fails the connection as a proxy failure; the origins' pins
/// never apply to it.
#[tokio::test]
async fn an_https_proxy_s_key_is_pinned_by_its_own_settings() {
    let pki = TestPki::new();
    let server = tls_h2_origin(&pki, "inside").await;
    let proxy = tls_proxy(&pki).await;
    let key = PublicKeyPin::of_spki_der(&pki.server_public_key_der());
    let other = PublicKeyPin::from_sha256([1; 32]);
    // The origin is pinned to its key (the same PKI's), the proxy to `proxy_pin`.
    for (proxy_pin, passes) in [(key, true), (other, false)] {
        let proxy_tls = pool::TlsOptions {
            native_roots: false,
            extra_roots_pem: vec![pki.ca_pem().into_bytes()],
            pinned_public_keys: vec![proxy_pin],
            ..pool::TlsOptions::default()
        };
        let pool = ConnectionPool::builder()
            .native_roots(false)
            .add_root_certificates_pem(pki.ca_pem())
            .pin_public_key(key)
            .proxy(via(&proxy), false)
            .proxy_tls(proxy_tls)
            .build()
            .unwrap();
        let client = pool.client().unwrap();
        let result = tokio::time::timeout(LIMIT, client.request(get(&server.url("/"))))
            .await
            .expect("in time");
        match result {
            Ok(_) => assert!(passes),
            Err(error) => {
                assert!(!passes, "{error}");
                assert!(
                    error.is_pinned_key_mismatch() && error.is_proxy(),
                    "{error}"
                );
            }
        }
    }
    // An origin pin that is not the proxy's key does not reach the proxy (no proxy_tls).
    let pool = ConnectionPool::builder()
        .native_roots(false)
        .add_root_certificates_pem(pki.ca_pem())
        .pin_public_key(other)
        .proxy(via(&proxy), false)
        .build()
        .unwrap();
    let error = tokio::time::timeout(LIMIT, pool.client().unwrap().request(get(&server.url("/"))))
        .await
        .expect("in time")
        .expect_err("the origin's key is not pinned");
    assert!(
        error.is_pinned_key_mismatch() && !error.is_proxy(),
        "{error}"
    );
}

/// A Unix socket instead of the network: `http` and `https` origins are dialed through the
/// path, keep their names (`Host`, and SNI with the certificate check over TLS), reuse one
/// connection per origin, and bypass the configured proxy, as curl's `--unix-socket` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_carries_every_origin_under_its_own_name() {
    let pki = TestPki::new();
    let h1 = ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("unix"))).await;
    let h1_path = UnixBridge::start(h1.addr()).await;
    let h2 = tls_h2_origin(&pki, "unix-tls").await;
    let h2_path = UnixBridge::start(h2.addr()).await;
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let events = EventLog::new();
    let through = |path: &std::path::Path| {
        ConnectionPool::builder()
            .native_roots(false)
            .add_root_certificates_pem(pki.ca_pem())
            .proxy(via(&proxy), false)
            .unix_socket(Some(path.to_owned()))
            .event_listener(events.clone())
            .build()
            .unwrap()
    };

    let pool = through(h1_path.path());
    let client = pool.client().unwrap();
    let url = "http://daemon.test/containers";
    let (first, body) = tokio::time::timeout(LIMIT, fetch(&client, url))
        .await
        .expect("in time");
    assert_eq!(body, "unix");
    // Back in the idle set first: a request that came while the connection was still on its
    // way home would rightly start a second one.
    settle(&pool, &origin(url), |s| s.h1_idle == 1).await;
    let (second, _) = fetch(&client, url).await;
    assert_eq!(first.id(), second.id(), "one connection, reused");
    assert_eq!(h1_path.accepted(), 1);
    let seen = h1.requests();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|r| r.host() == Some("daemon.test")));
    assert!(
        seen.iter().all(|r| r.is_origin_form()),
        "not sent as to a proxy"
    );
    let info = &events.created()[0];
    assert_eq!(info.unix_socket(), Some(h1_path.path()));
    assert_eq!((info.local_addr(), info.remote_addr()), (None, None));
    assert!(info.proxy().is_none());

    // TLS inside the socket still checks the origin's name, and ALPN still finds h2.
    let pool = through(h2_path.path());
    let client = pool.client().unwrap();
    let (handle, body) = tokio::time::timeout(LIMIT, fetch(&client, "https://localhost/"))
        .await
        .expect("in time");
    assert_eq!(body, "unix-tls");
    assert_eq!(handle.protocol(), pool::Protocol::Http2);
    let info = &events.created()[1];
    assert_eq!(info.unix_socket(), Some(h2_path.path()));
    assert!(info.tls().is_some());
    assert_eq!(proxy.connections(), 0, "the proxy is never dialed");
}

/// A socket path nothing listens on fails the request as a connect error that names the
/// path, and leaves nothing counted.
#[tokio::test]
async fn a_missing_unix_socket_is_a_connect_error() {
    let dir = pool_tests::tls::TempDir::new("no-socket");
    let path = dir.path().join("absent.sock");
    let pool = ConnectionPool::builder()
        .unix_socket(Some(path.clone()))
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let url = "http://daemon.test/";
    let error = tokio::time::timeout(LIMIT, client.request(get(url)))
        .await
        .expect("in time")
        .expect_err("nothing listens there");
    assert!(error.is_connect(), "{error:#}");
    assert!(
        format!("{error:#}").contains(&path.display().to_string()),
        "{error:#}"
    );
    assert_eq!(
        pool.stats(&origin(url)).total(),
        pool::PartitionStats::default()
    );
}

/// `proxy_tls`: the proxy and the origin each trusted by their own CA, as curl's
/// `--proxy-cacert` and `--cacert` keep them apart; without it the proxy is checked with the
/// origin's trust (and fails here), and the origin's `danger_accept_invalid_certs` does not
/// reach a proxy that has TLS settings of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_with_tls_settings_of_its_own_is_trusted_apart_from_origins() {
    let (origin_pki, proxy_pki) = (TestPki::new(), TestPki::new());
    let server = tls_h2_origin(&origin_pki, "inside").await;
    let proxy = ScriptedProxy::start_tls(
        ConnectScript::Tunnel,
        None,
        proxy_pki.server_config(&[b"http/1.1"]),
    )
    .await;
    let proxy_roots = pool::TlsOptions {
        native_roots: false,
        extra_roots_pem: vec![proxy_pki.ca_pem().into_bytes()],
        ..pool::TlsOptions::default()
    };
    let origin_trust = || {
        ConnectionPool::builder()
            .native_roots(false)
            .add_root_certificates_pem(origin_pki.ca_pem())
            .proxy(via(&proxy), false)
    };
    let url = server.url("/");

    let pool = origin_trust()
        .proxy_tls(proxy_roots.clone())
        .build()
        .unwrap();
    let client = pool.client().unwrap();
    let (_, body) = tokio::time::timeout(LIMIT, fetch(&client, &url))
        .await
        .expect("in time");
    assert_eq!(body, "inside");

    let refused = |pool: ConnectionPool| {
        let url = url.clone();
        async move {
            let client = pool.client().unwrap();
            let error = tokio::time::timeout(LIMIT, client.request(get(&url)))
                .await
                .expect("in time")
                .expect_err("the proxy is not trusted");
            assert!(error.is_certificate() && error.is_proxy(), "{error:#}");
            assert_eq!(
                pool.stats(&origin(&url)).total(),
                pool::PartitionStats::default()
            );
        }
    };
    refused(origin_trust().build().unwrap()).await;
    let insecure_origins = origin_trust()
        .danger_accept_invalid_certs(true)
        .proxy_tls(pool::TlsOptions::default())
        .build()
        .unwrap();
    refused(insecure_origins).await;
}

/// Unusable proxy TLS settings fail `build`, naming the setting.
#[test]
fn unusable_proxy_tls_settings_fail_the_build() {
    let proxy = ProxyConfig::new().all(Proxy::parse("https://proxy.test:3129").unwrap());
    let options = pool::TlsOptions {
        extra_roots_pem: vec![b"not a certificate".to_vec()],
        ..pool::TlsOptions::default()
    };
    let error = ConnectionPool::builder()
        .proxy(proxy, false)
        .proxy_tls(options)
        .build()
        .expect_err("no certificate in the bundle");
    assert_eq!(error.setting(), "proxy_tls");
}

/// A pool through the SOCKS5 proxy at `url`, resolving `socks.test` to `origin` itself (any
/// other name it would have to resolve fails), trusting `pki`'s CA, with an event log.
fn socks_pool(url: &str, origin: SocketAddr, pki: &TestPki) -> (ConnectionPool, EventLog) {
    let events = EventLog::new();
    let v6 = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, origin.port()));
    let pool = ConnectionPool::builder()
        .native_roots(false)
        .add_root_certificates_pem(pki.ca_pem())
        .resolver(FixedResolver::new([
            ("socks.test", vec![origin]),
            ("v6.test", vec![v6]),
            ("mixed.test", vec![v6, origin]),
        ]))
        .proxy(ProxyConfig::new().all(Proxy::parse(url).unwrap()), false)
        .event_listener(events.clone())
        .build()
        .unwrap();
    (pool, events)
}

/// `socks5://` and `socks4://` ask the proxy for the address the pool resolved (SOCKS4 the
/// first IPv4 one), `socks5h://` and `socks4a://` for the name (the pool never resolves it;
/// SOCKS4a sends even an address literal as a name, as curl does); either way the tunnel
/// carries origin-form requests, is reused, and the connection's route names what was asked
/// for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks_asks_for_the_resolved_address_or_for_the_name() {
    let server =
        ScriptedH1Server::start_with(ConnPlan::serve_forever(Reply::ok("via socks"))).await;
    let port = server.addr().port();
    let pki = TestPki::new();
    let cases = [
        (
            "socks5",
            "socks.test",
            format!("127.0.0.1:{port}"),
            false,
            5,
        ),
        ("socks5h", "localhost", format!("localhost:{port}"), true, 5),
        (
            "socks4",
            "mixed.test",
            format!("127.0.0.1:{port}"),
            false,
            4,
        ),
        ("socks4a", "localhost", format!("localhost:{port}"), true, 4),
        ("socks4a", "127.0.0.1", format!("127.0.0.1:{port}"), true, 4),
    ];
    for (scheme, host, asked, by_name, version) in &cases {
        let proxy = ScriptedSocks::start().await;
        let (pool, events) =
            socks_pool(&format!("{scheme}://{}", proxy.addr()), server.addr(), &pki);
        let client = pool.client().unwrap();
        let url = format!("http://{host}:{port}/x");
        for _ in 0..2 {
            let (_, body) = tokio::time::timeout(LIMIT, fetch(&client, &url))
                .await
                .expect("in time");
            assert_eq!(body, "via socks");
            settle(&pool, &origin(&url), |s| s.h1_idle == 1).await;
        }
        let requests = proxy.requests();
        assert_eq!(requests.len(), 1, "{scheme}: one tunnel, reused");
        let request = &requests[0];
        assert_eq!(
            (request.target.as_str(), request.by_name, request.version),
            (asked.as_str(), *by_name, *version),
            "{scheme} to {host}"
        );
        let route = events.created()[0].proxy().expect("proxied").clone();
        assert!(route.tunnel && route.connect_response.is_none());
        assert_eq!(route.socks_target.as_deref(), Some(asked.as_str()));
    }
    let targets: Vec<String> = server.requests().into_iter().map(|r| r.target).collect();
    assert_eq!(
        targets,
        vec!["/x"; 2 * cases.len()],
        "origin-form inside the tunnel"
    );
}

/// Credentials in the proxy URL go to the proxy (RFC 1929; SOCKS4's user id), TLS and ALPN
/// h2 run inside the tunnel; a refused target, refused credentials, an IPv6 address for SOCKS4
/// and an origin name that does not resolve for `socks5://` are SOCKS failures of the proxy,
/// and nothing stays counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks_credentials_tls_inside_and_refusals() {
    let pki = TestPki::new();
    let server = tls_h2_origin(&pki, "secret place").await;
    let proxy = ScriptedSocks::with_credentials("alice", "s3cret").await;
    let good = format!("socks5h://alice:s3cret@{}", proxy.addr());
    let (pool, events) = socks_pool(&good, server.addr(), &pki);
    let client = pool.client().unwrap();
    let (_, body) = tokio::time::timeout(LIMIT, fetch(&client, &server.url("/")))
        .await
        .expect("in time");
    assert_eq!(body, "secret place");
    assert_eq!(proxy.requests()[0].user.as_deref(), Some("alice"));
    assert_eq!(events.created()[0].tls().and_then(|t| t.alpn), Some("h2"));

    let refusing = ScriptedSocks::refusing(5).await;
    let wrong = format!("socks5h://alice:nope@{}", proxy.addr());
    let refused = [
        (wrong, "socks.test", "SOCKS handshake with socks5h"),
        (
            format!("socks5://{}", refusing.addr()),
            "socks.test",
            "SOCKS handshake with socks5",
        ),
        (
            format!("socks4://{}", refusing.addr()),
            "socks.test",
            "SOCKS handshake with socks4",
        ),
        (
            format!("socks4://{}", proxy.addr()),
            "socks.test",
            "SOCKS handshake with socks4",
        ),
        (
            format!("socks4://{}", refusing.addr()),
            "v6.test",
            "IPv6 address (::1)",
        ),
        (
            format!("socks5://{}", refusing.addr()),
            "nowhere.test",
            "failed to resolve nowhere.test",
        ),
    ];
    for (url, host, says) in refused {
        let (pool, _) = socks_pool(&url, server.addr(), &pki);
        let client = pool.client().unwrap();
        let target = format!("https://{host}/");
        let error = tokio::time::timeout(LIMIT, client.request(get(&target)))
            .await
            .expect("in time")
            .expect_err("refused");
        assert!(error.is_proxy() && error.is_proxy_socks(), "{error:#}");
        assert!(
            !error.is_proxy_tunnel(),
            "no CONNECT was involved: {error:#}"
        );
        assert_eq!(error.is_resolve(), host == "nowhere.test", "{error:#}");
        assert!(format!("{error:#}").contains(says), "{says}: {error:#}");
        assert_eq!(
            error.proxy(),
            Some(url.replace("alice:nope@", "").as_str()),
            "never with credentials"
        );
        assert_eq!(
            pool.stats(&origin(&target)).total(),
            pool::PartitionStats::default()
        );
    }
    // A SOCKS5 user name without a password offers no authentication (tokio-socks cannot send
    // an empty password), so a proxy that needs none still serves it.
    let through = |url: String| {
        let (pool, _) = socks_pool(&url, server.addr(), &pki);
        let client = pool.client().unwrap();
        let target = server.url("/");
        async move {
            tokio::time::timeout(LIMIT, fetch(&client, &target))
                .await
                .expect("in time")
                .1
        }
    };
    let open = ScriptedSocks::start().await;
    assert_eq!(
        through(format!("socks5h://bob@{}", open.addr())).await,
        "secret place"
    );
    assert_eq!(open.requests()[0].user, None);
    // A SOCKS4 user id is the URL's user name (the password is not sent); the proxy above
    // checks it.
    assert_eq!(
        through(format!("socks4a://alice:x@{}", proxy.addr())).await,
        "secret place"
    );
    let last = proxy.requests().pop().expect("asked");
    assert_eq!((last.version, last.user.as_deref()), (4, Some("alice")));
}

/// HAProxy's PROXY line goes where curl writes it: inside a `CONNECT` tunnel, so the origin
/// reads it first (the proxy sees a plain `CONNECT`), naming the pool's socket to the proxy.
#[tokio::test]
async fn the_proxy_protocol_line_goes_inside_a_tunnel() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin_addr = listener.local_addr().unwrap();
    // An origin that reads the PROXY line, then one request head, and answers it.
    let origin = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut tcp = tokio::io::BufReader::new(tcp);
        let mut first = String::new();
        tcp.read_line(&mut first).await.unwrap();
        let mut line = String::new();
        while line != "\r\n" {
            line.clear();
            tcp.read_line(&mut line).await.unwrap();
        }
        tcp.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\norigin")
            .await
            .unwrap();
        first
    });
    let proxy = ScriptedProxy::start(ConnectScript::Tunnel, None).await;
    let pool = ConnectionPool::builder()
        .proxy(via(&proxy), true)
        .proxy_protocol(true)
        .build()
        .unwrap();
    let (handle, body) = fetch(&pool.client().unwrap(), &format!("http://{origin_addr}/")).await;
    assert_eq!(body, "origin");
    let (local, remote) = (
        handle.info().local_addr().unwrap(),
        handle.info().remote_addr().unwrap(),
    );
    assert_eq!(
        remote.port(),
        proxy
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .parse::<u16>()
            .unwrap()
    );
    assert_eq!(
        tokio::time::timeout(LIMIT, origin).await.unwrap().unwrap(),
        format!(
            "PROXY TCP4 127.0.0.1 127.0.0.1 {} {}\r\n",
            local.port(),
            remote.port()
        )
    );
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].line.starts_with("CONNECT "),
        "{}",
        requests[0].line
    );
}

/// A connect timeout names the step it ended, so that a server that never finishes its TLS
/// handshake, a proxy that never answers its `CONNECT` and one that never answers its SOCKS
/// greeting read differently from an address that does not answer (that step, `Dial`, is
/// checked where the kernel can drop a SYN: `pool_tests::vanish`) and a name server that does
/// not (`connect_timeout_covers_resolution`). One listener plays every silent peer: it accepts
/// and never sends a byte. The loopback connect under it takes microseconds, far inside the
/// 500 ms timeout, so the step that times out is the one after it.
#[tokio::test]
async fn a_connect_timeout_names_the_step_it_ended() {
    let silent = SilentPeer::start().await;
    let at = silent.addr();
    let limit = Duration::from_millis(500);
    let timed_out = async |config: Option<ProxyConfig>, url: &str| {
        let mut builder = ConnectionPool::builder().connect_timeout(Some(limit));
        if let Some(config) = config {
            builder = builder.proxy(config, false);
        }
        let pool = builder.build().unwrap();
        let error = tokio::time::timeout(LIMIT, pool.client().unwrap().request(get(url)))
            .await
            .expect("in time")
            .expect_err("nothing answers");
        assert!(error.is_connect_timeout(), "{error:?}");
        settle(&pool, &origin(url), |s| *s == PartitionStats::default()).await;
        error
    };
    let proxy = |scheme: &str| {
        Some(ProxyConfig::new().all(Proxy::parse(&format!("{scheme}://{at}")).unwrap()))
    };
    let tls = timed_out(None, &format!("https://localhost:{}/", at.port())).await;
    assert_eq!(tls.connect_timed_out_during(), Some(ConnectStep::Tls));
    assert!(
        format!("{tls:#}").ends_with(&format!(
            "connection to https://localhost:{} timed out after 500ms during the TLS handshake",
            at.port()
        )),
        "{tls:#}"
    );
    assert_eq!(tls.proxy(), None);
    let tunnel = timed_out(proxy("http"), "https://origin.test/").await;
    assert_eq!(tunnel.connect_timed_out_during(), Some(ConnectStep::Tunnel));
    assert_eq!(tunnel.proxy(), Some(format!("http://{at}").as_str()));
    assert!(
        format!("{tunnel:#}").ends_with(&format!(
            "while the proxy opened the tunnel (through http://{at})"
        )),
        "{tunnel:#}"
    );
    let socks = timed_out(proxy("socks5h"), "http://origin.test/").await;
    assert_eq!(socks.connect_timed_out_during(), Some(ConnectStep::Socks));
}
