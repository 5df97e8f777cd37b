//! End-to-end behaviour of `HttpConnector` through the public API, against loopback peers only:
//! plain TCP listeners and a tokio-rustls server with an rcgen certificate authority.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pool_core::{AsyncSleep, CertificateCheck, OriginKey, Scheme, Sleep};
use pool_tls::{
    AlpnOffer, Connect, ConnectError, ConnectStep, ConnectTarget, ConnectTo, Connected,
    DialOptions, HttpConnector, Io, Negotiated, PublicKeyPin, Resolve, ResolveFuture,
    StaticResolver, TlsConnector, TlsOptions, TlsVersion,
};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, PublicKeyData};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

// ---- fixtures ----------------------------------------------------------------------------

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A test certificate authority, a server leaf for `localhost` and 127.0.0.1, and a client leaf.
struct Pki {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: PrivateKeyDer<'static>,
    /// The server key's DER SubjectPublicKeyInfo, as rcgen writes it.
    server_spki: Vec<u8>,
    client_cert_pem: String,
    client_key_pem: String,
}

impl Pki {
    fn new() -> Pki {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

        let server_key = KeyPair::generate().unwrap();
        let server_cert = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&server_key, &ca)
            .unwrap();

        let client_key = KeyPair::generate().unwrap();
        let client_cert = CertificateParams::new(vec!["client.test".into()])
            .unwrap()
            .signed_by(&client_key, &ca)
            .unwrap();

        Pki {
            ca_pem: ca.pem(),
            ca_der: ca.der().clone(),
            server_chain: vec![server_cert.der().clone()],
            server_key: PrivatePkcs8KeyDer::from(server_key.serialize_der()).into(),
            server_spki: server_key.subject_public_key_info(),
            client_cert_pem: client_cert.pem(),
            client_key_pem: client_key.serialize_pem(),
        }
    }

    fn trusting_options(&self) -> TlsOptions {
        TlsOptions {
            native_roots: false,
            extra_roots_pem: vec![self.ca_pem.clone().into_bytes()],
            ..TlsOptions::default()
        }
    }
}

/// Serves the leaf certificate and records the SNI name of every ClientHello.
#[derive(Debug)]
struct RecordingCert {
    key: Arc<CertifiedKey>,
    server_names: Mutex<Vec<Option<String>>>,
}

impl ResolvesServerCert for RecordingCert {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.server_names
            .lock()
            .unwrap()
            .push(hello.server_name().map(str::to_owned));
        Some(self.key.clone())
    }
}

/// What the TLS server saw on one connection.
#[derive(Debug)]
struct Accepted {
    /// The handshake completed and the client presented a certificate.
    client_certificate: bool,
}

/// A tokio-rustls server on 127.0.0.1 that completes handshakes and then holds the connection
/// until the client goes away.
struct TlsServer {
    addr: SocketAddr,
    cert: Arc<RecordingCert>,
    accepted: mpsc::UnboundedReceiver<Result<Accepted, io::Error>>,
}

impl TlsServer {
    async fn start(pki: &Pki, alpn: &[&[u8]], require_client_cert: bool) -> TlsServer {
        TlsServer::start_speaking(pki, alpn, require_client_cert, rustls::DEFAULT_VERSIONS).await
    }

    /// A server that speaks only `versions`.
    async fn start_speaking(
        pki: &Pki,
        alpn: &[&[u8]],
        require_client_cert: bool,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> TlsServer {
        let key = CertifiedKey::from_der(
            pki.server_chain.clone(),
            pki.server_key.clone_key(),
            &provider(),
        )
        .unwrap();
        let cert = Arc::new(RecordingCert {
            key: Arc::new(key),
            server_names: Mutex::default(),
        });

        let builder = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(versions)
            .unwrap();
        let builder = if require_client_cert {
            let mut roots = RootCertStore::empty();
            roots.add(pki.ca_der.clone()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder.with_cert_resolver(cert.clone());
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let (tx, accepted) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match acceptor.accept(tcp).await {
                        Ok(mut tls) => {
                            let client_certificate = tls.get_ref().1.peer_certificates().is_some();
                            let _ = tx.send(Ok(Accepted { client_certificate }));
                            let mut sink = Vec::new();
                            let _ = tls.read_to_end(&mut sink).await;
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                });
            }
        });
        TlsServer {
            addr,
            cert,
            accepted,
        }
    }

    fn server_names(&self) -> Vec<Option<String>> {
        self.cert.server_names.lock().unwrap().clone()
    }
}

/// A resolver that must not be consulted.
#[derive(Debug)]
struct NoResolver;

impl Resolve for NoResolver {
    fn resolve(&self, host: &str, _port: u16) -> ResolveFuture {
        let err = io::Error::other(format!("unexpected lookup of {host}"));
        Box::pin(std::future::ready(Err(err)))
    }
}

/// A resolver whose answer never comes.
#[derive(Debug)]
struct HangingResolver;

impl Resolve for HangingResolver {
    fn resolve(&self, _host: &str, _port: u16) -> ResolveFuture {
        Box::pin(std::future::pending())
    }
}

/// A resolver that answers, but with no address.
#[derive(Debug)]
struct EmptyResolver;

impl Resolve for EmptyResolver {
    fn resolve(&self, _host: &str, _port: u16) -> ResolveFuture {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
}

/// A connector that resolves `localhost` (at `addr`'s port) to `addr` and nothing else.
fn connector_to(addr: SocketAddr, tls: TlsOptions) -> HttpConnector {
    let resolver =
        StaticResolver::new(Arc::new(NoResolver)).with("localhost", addr.port(), vec![addr]);
    HttpConnector::new(
        Arc::new(resolver),
        DialOptions::default(),
        TlsConnector::new(tls).unwrap(),
    )
}

fn target(scheme: Scheme, host: &str, port: u16) -> ConnectTarget {
    ConnectTarget::new(OriginKey::new(scheme, host, port).unwrap())
}

fn https(host: &str, port: u16, alpn: AlpnOffer) -> ConnectTarget {
    ConnectTarget {
        alpn,
        ..target(Scheme::Https, host, port)
    }
}

async fn connect(
    connector: &HttpConnector,
    target: ConnectTarget,
) -> Result<(Io, Connected), ConnectError> {
    connector.connect(target).await
}

// ---- cleartext ---------------------------------------------------------------------------

#[tokio::test]
async fn cleartext_connect_reports_addresses_and_no_tls() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connector = connector_to(addr, TlsOptions::default());

    let (mut io, connected) = connect(&connector, target(Scheme::Http, "localhost", addr.port()))
        .await
        .unwrap();
    assert!(!connected.is_tls());
    assert!(connected.tls.is_none() && connected.alpn.is_none());
    assert_eq!(connected.remote_addr, addr);
    assert!(connected.local_addr.ip().is_loopback());
    assert!(connected.timings.resolve <= connected.timings.connect);
    assert!(connected.timings.tls.is_none());

    let (mut server, peer) = listener.accept().await.unwrap();
    assert_eq!(peer, connected.local_addr);
    io.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    let mut got = [0; 18];
    server.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"GET / HTTP/1.1\r\n\r\n");
}

#[tokio::test]
async fn ip_literal_hosts_skip_the_resolver() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connector = HttpConnector::new(
        Arc::new(NoResolver),
        DialOptions::default(),
        TlsConnector::new(TlsOptions::default()).unwrap(),
    );

    let (_io, connected) = connect(&connector, target(Scheme::Http, "127.0.0.1", addr.port()))
        .await
        .unwrap();
    assert_eq!(connected.remote_addr, addr);
}

#[tokio::test]
async fn static_resolver_override_is_used_case_insensitively() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resolver =
        StaticResolver::new(Arc::new(NoResolver)).with("API.Example.TEST", addr.port(), vec![addr]);
    let connector = HttpConnector::new(
        Arc::new(resolver),
        DialOptions::default(),
        TlsConnector::new(TlsOptions::default()).unwrap(),
    );

    // The origin is canonicalized to lower case; the override still matches, and the
    // fallback (which fails every lookup) is never asked.
    let (_io, connected) = connect(
        &connector,
        target(Scheme::Http, "api.example.test", addr.port()),
    )
    .await
    .unwrap();
    assert_eq!(connected.remote_addr, addr);
}

#[tokio::test]
async fn resolver_error_is_a_resolve_error_naming_the_host() {
    let connector = HttpConnector::new(
        Arc::new(NoResolver),
        DialOptions::default(),
        TlsConnector::new(TlsOptions::default()).unwrap(),
    );
    let err = connect(&connector, target(Scheme::Http, "nowhere.test", 80))
        .await
        .unwrap_err();
    assert!(err.is_resolve(), "{err}");
    assert!(!err.is_connect() && !err.is_timeout());
    assert_eq!(err.to_string(), "failed to resolve nowhere.test");
    assert_eq!(
        format!("{err:#}"),
        "failed to resolve nowhere.test: unexpected lookup of nowhere.test"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[tokio::test]
async fn empty_resolution_is_a_resolve_error() {
    let connector = HttpConnector::new(
        Arc::new(EmptyResolver),
        DialOptions::default(),
        TlsConnector::new(TlsOptions::default()).unwrap(),
    );
    let err = connect(&connector, target(Scheme::Http, "empty.test", 80))
        .await
        .unwrap_err();
    assert!(err.is_resolve(), "{err}");
}

#[tokio::test]
async fn refused_connection_is_a_connect_error_with_the_address() {
    // Bound but not listening: refused, and no test running in parallel can be given the port
    // (a dropped listener's port is free for the next bind).
    let reserved = tokio::net::TcpSocket::new_v4().unwrap();
    reserved.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = reserved.local_addr().unwrap();
    let connector = connector_to(addr, TlsOptions::default());

    let err = connect(&connector, target(Scheme::Http, "localhost", addr.port()))
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err}");
    assert_eq!(err.addr(), Some(addr));
}

#[tokio::test]
async fn nonexistent_interface_is_an_interface_and_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connector = connector_to(addr, TlsOptions::default());

    let target = ConnectTarget {
        interface: Some(Arc::from("pool-none0")),
        ..target(Scheme::Http, "localhost", addr.port())
    };
    let err = connect(&connector, target).await.unwrap_err();
    assert!(err.is_interface() && err.is_connect(), "{err}");
}

/// A sleep that completes at once and records what it was asked for.
#[derive(Debug, Default)]
struct InstantSleep(Mutex<Vec<Duration>>);

impl AsyncSleep for InstantSleep {
    fn sleep(&self, duration: Duration) -> Sleep {
        self.0.lock().unwrap().push(duration);
        Box::pin(std::future::ready(()))
    }
}

/// The timeout covers a resolution that never ends, measured by tokio's timer (the paused
/// clock moves by the limit) or, when the target names one, by its sleep (the clock does not
/// move: that sleep ended the wait).
#[tokio::test(start_paused = true)]
async fn connect_timeout_covers_resolution_on_tokios_timer_or_the_targets_sleep() {
    let connector = HttpConnector::new(
        Arc::new(HangingResolver),
        DialOptions::default(),
        TlsConnector::new(TlsOptions::default()).unwrap(),
    );
    let limit = Duration::from_millis(1500);
    let instant = Arc::new(InstantSleep::default());
    for (sleep, elapsed) in [
        (None, limit),
        (Some(instant.clone() as Arc<dyn AsyncSleep>), Duration::ZERO),
    ] {
        let target = ConnectTarget {
            connect_timeout: Some(limit),
            sleep,
            ..target(Scheme::Https, "slow.test", 443)
        };
        let start = tokio::time::Instant::now();
        let err = connect(&connector, target).await.unwrap_err();
        assert!(err.is_timeout(), "{err}");
        assert_eq!(start.elapsed(), elapsed);
        assert_eq!(err.timed_out_during(), Some(ConnectStep::Resolve));
        assert_eq!(
            err.to_string(),
            "connection to https://slow.test timed out after 1.5s while resolving the name"
        );
    }
    assert_eq!(*instant.0.lock().unwrap(), [limit]);
}

// ---- TLS ---------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn connect_timeout_covers_the_tls_handshake() {
    // A peer that accepts TCP, reads the ClientHello, and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (hello_tx, hello_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut buf = [0; 1024];
        let n = tcp.read(&mut buf).await.unwrap();
        let _ = hello_tx.send(n);
        std::future::pending::<()>().await;
    });

    let connector = connector_to(
        addr,
        TlsOptions {
            native_roots: false,
            ..TlsOptions::default()
        },
    );
    connector.tls().preflight().unwrap();
    let target = ConnectTarget {
        connect_timeout: Some(Duration::from_secs(5)),
        ..https("localhost", addr.port(), AlpnOffer::Both)
    };
    let start = tokio::time::Instant::now();
    let err = connect(&connector, target).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    // TCP was up and the handshake had begun: the peer received a ClientHello record.
    let hello_len = hello_rx.await.unwrap();
    assert!(hello_len > 0);
}

#[tokio::test]
async fn untrusted_server_certificate_is_a_certificate_error() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"h2", b"http/1.1"], false).await;
    let connector = connector_to(
        server.addr,
        TlsOptions {
            native_roots: false,
            ..TlsOptions::default()
        },
    );

    let err = connect(
        &connector,
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap_err();
    assert!(err.is_certificate(), "{err}");
    assert_eq!(
        err.certificate_check(),
        Some(CertificateCheck::UnknownIssuer)
    );
    assert!(!err.is_tls());
    assert_eq!(err.addr(), Some(server.addr));
    assert_eq!(
        format!("{err:#}"),
        "server certificate for localhost rejected: invalid peer certificate: UnknownIssuer"
    );
}

#[tokio::test]
async fn extra_root_makes_the_server_trusted_and_reports_tls_parameters() {
    let pki = Pki::new();
    let mut server = TlsServer::start(&pki, &[b"h2", b"http/1.1"], false).await;
    let connector = connector_to(server.addr, pki.trusting_options());

    let (_io, connected) = connect(
        &connector,
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap();
    assert!(connected.is_tls());
    let tls = connected.tls.as_ref().unwrap();
    assert_eq!(tls.version, "TLSv1.3");
    assert_eq!(tls.peer_certificates, 1);
    assert_eq!(tls.certificate, CertificateCheck::Valid);
    assert!(
        tls.cipher_suite.starts_with("TLS13_"),
        "{}",
        tls.cipher_suite
    );
    assert_eq!(connected.remote_addr, server.addr);
    let tls_time = connected.timings.tls.unwrap();
    assert!(connected.timings.resolve <= connected.timings.connect);
    assert!(connected.timings.connect <= tls_time);
    assert!(server.accepted.recv().await.unwrap().is_ok());
}

/// The versions offered are the pool's to bound: a minimum of TLS 1.3 fails against a
/// server that speaks only 1.2 (a TLS failure, not a certificate one), a maximum of 1.2 gets
/// 1.2 from a server that prefers 1.3, and a minimum above the maximum is refused up front.
#[tokio::test]
async fn tls_versions_are_bounded_as_configured() {
    let pki = Pki::new();
    let old = TlsServer::start_speaking(&pki, &[], false, &[&rustls::version::TLS12]).await;
    let options = TlsOptions {
        min_version: TlsVersion::Tls13,
        ..pki.trusting_options()
    };
    let connector = connector_to(old.addr, options);
    let err = connect(
        &connector,
        https("localhost", old.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap_err();
    assert!(err.is_tls() && !err.is_certificate(), "{err:#}");

    let server = TlsServer::start(&pki, &[], false).await;
    let options = TlsOptions {
        max_version: TlsVersion::Tls12,
        ..pki.trusting_options()
    };
    let connector = connector_to(server.addr, options);
    let (_io, connected) = connect(
        &connector,
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap();
    assert_eq!(connected.tls.unwrap().version, "TLSv1.2");
    let (_io, connected) = connect(
        &connector_to(server.addr, pki.trusting_options()),
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap();
    assert_eq!(connected.tls.unwrap().version, "TLSv1.3");

    let upside_down = TlsOptions {
        min_version: TlsVersion::Tls13,
        max_version: TlsVersion::Tls12,
        ..TlsOptions::default()
    };
    assert!(TlsConnector::new(upside_down).is_err());
}

#[tokio::test]
async fn alpn_result_follows_the_offer() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"h2", b"http/1.1"], false).await;
    let connector = connector_to(server.addr, pki.trusting_options());
    let port = server.addr.port();

    let cases = [
        (AlpnOffer::Both, Negotiated::Http2),
        (AlpnOffer::Http1Only, Negotiated::Http1),
        (AlpnOffer::Http2Only, Negotiated::Http2),
    ];
    for (offer, expected) in cases {
        let (_io, connected) = connect(&connector, https("localhost", port, offer))
            .await
            .unwrap();
        assert_eq!(connected.alpn, Some(expected), "offer {offer:?}");
    }
}

#[tokio::test]
async fn server_without_alpn_negotiates_nothing() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[], false).await;
    let connector = connector_to(server.addr, pki.trusting_options());

    let (_io, connected) = connect(
        &connector,
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap();
    assert!(connected.is_tls());
    assert_eq!(connected.alpn, None);
}

/// The suites and groups offered are the ones a server following the client's order picks;
/// suites of TLS 1.2 alone leave TLS 1.3 unoffered, and suites the server's key cannot use
/// fail the handshake.
#[tokio::test]
async fn offered_cipher_suites_and_groups_are_the_ones_negotiated() {
    use pool_tls::{CipherSuite, NamedGroup};
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"http/1.1"], false).await;
    let port = server.addr.port();
    let cases = [
        (
            vec![CipherSuite::TLS13_CHACHA20_POLY1305_SHA256],
            vec![NamedGroup::secp384r1],
            ("TLSv1.3", "TLS13_CHACHA20_POLY1305_SHA256", "secp384r1"),
        ),
        (
            vec![
                CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
                CipherSuite::TLS13_AES_128_GCM_SHA256,
            ],
            vec![NamedGroup::secp256r1, NamedGroup::X25519],
            ("TLSv1.3", "TLS13_AES_128_GCM_SHA256", "secp256r1"),
        ),
        (
            vec![CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384],
            vec![],
            (
                "TLSv1.2",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                "X25519",
            ),
        ),
    ];
    for (suites, groups, (version, suite, group)) in cases {
        let options = TlsOptions {
            cipher_suites: suites.clone(),
            key_exchange_groups: groups,
            ..pki.trusting_options()
        };
        let connector = connector_to(server.addr, options);
        let (_io, connected) = connect(&connector, https("localhost", port, AlpnOffer::Both))
            .await
            .unwrap();
        let tls = connected.tls.unwrap();
        assert_eq!(
            (tls.version, tls.cipher_suite, tls.key_exchange),
            (version, suite, Some(group)),
            "{suites:?}"
        );
    }
    // The server's key is ECDSA: an RSA suite alone has nothing in common with it.
    let options = TlsOptions {
        cipher_suites: vec![CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256],
        ..pki.trusting_options()
    };
    let connector = connector_to(server.addr, options);
    let error = connect(&connector, https("localhost", port, AlpnOffer::Both))
        .await
        .unwrap_err();
    assert!(error.is_tls(), "{error}");
}

/// Without ALPN the handshake names no protocol, even with a server that would pick h2.
#[tokio::test]
async fn without_alpn_nothing_is_negotiated() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"h2", b"http/1.1"], false).await;
    let options = TlsOptions {
        alpn: false,
        ..pki.trusting_options()
    };
    let connector = connector_to(server.addr, options);
    for offer in [AlpnOffer::Both, AlpnOffer::Http2Only] {
        let (_io, connected) = connect(&connector, https("localhost", server.addr.port(), offer))
            .await
            .unwrap();
        assert_eq!(connected.alpn, None, "{offer:?}");
        assert!(!connected.tls.unwrap().alpn_offered);
    }
    let connector = connector_to(server.addr, pki.trusting_options());
    let (_io, connected) = connect(
        &connector,
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap();
    assert!(connected.tls.unwrap().alpn_offered);
}

/// A connector's second handshake with a server resumes the first one's session, unless
/// resumption is off. TLS 1.2 keeps the test to the handshake itself: its session is stored
/// when the handshake ends, where TLS 1.3's tickets come after it.
#[tokio::test]
async fn sessions_resume_unless_resumption_is_off() {
    let pki = Pki::new();
    let server =
        TlsServer::start_speaking(&pki, &[b"http/1.1"], false, &[&rustls::version::TLS12]).await;
    for resumption in [true, false] {
        let options = TlsOptions {
            session_resumption: resumption,
            max_version: TlsVersion::Tls12,
            ..pki.trusting_options()
        };
        let connector = connector_to(server.addr, options);
        let mut resumed = Vec::new();
        for _ in 0..2 {
            let (_io, connected) = connect(
                &connector,
                https("localhost", server.addr.port(), AlpnOffer::Both),
            )
            .await
            .unwrap();
            resumed.push(connected.tls.unwrap().resumed);
        }
        assert_eq!(resumed, [false, resumption]);
    }
}

/// With the PROXY protocol on, a connection's first bytes are the line naming its two ends,
/// and TLS follows it.
#[tokio::test]
async fn the_proxy_protocol_line_comes_first_and_tls_after_it() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"http/1.1"], false).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Reads the line, then pipes the rest to the TLS server.
    let front = tokio::spawn(async move {
        let mut lines = Vec::new();
        for _ in 0..2 {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut tcp = tokio::io::BufReader::new(tcp);
            let mut line = String::new();
            tokio::io::AsyncBufReadExt::read_line(&mut tcp, &mut line)
                .await
                .unwrap();
            lines.push(line);
            let mut back = tokio::net::TcpStream::connect(server.addr).await.unwrap();
            tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut back).await;
            });
        }
        lines
    });
    let resolver =
        StaticResolver::new(Arc::new(NoResolver)).with("localhost", addr.port(), vec![addr]);
    let connector = HttpConnector::new(
        Arc::new(resolver),
        DialOptions {
            proxy_protocol: true,
            ..DialOptions::default()
        },
        TlsConnector::new(pki.trusting_options()).unwrap(),
    );
    let mut locals = Vec::new();
    for scheme in [Scheme::Http, Scheme::Https] {
        let (_io, connected) = connect(&connector, target(scheme, "localhost", addr.port()))
            .await
            .unwrap();
        assert_eq!(connected.is_tls(), scheme == Scheme::Https);
        locals.push(connected.local_addr.port());
    }
    let expected: Vec<String> = locals
        .iter()
        .map(|local| format!("PROXY TCP4 127.0.0.1 127.0.0.1 {local} {}\r\n", addr.port()))
        .collect();
    assert_eq!(front.await.unwrap(), expected);
}

#[tokio::test]
async fn danger_accept_invalid_certs_accepts_an_untrusted_server() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"http/1.1"], false).await;
    let options = TlsOptions {
        native_roots: false,
        danger_accept_invalid_certs: true,
        ..TlsOptions::default()
    };
    let connector = connector_to(server.addr, options);

    let (_io, connected) = connect(
        &connector,
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap();
    assert!(connected.is_tls());
    assert_eq!(connected.alpn, Some(Negotiated::Http1));
    // Accepted, and still checked: no root was trusted at all. The leaf names itself as its
    // issuer (rcgen's default name for both it and its CA) but the CA signed it: not
    // self-signed.
    let tls = connected.tls.as_ref().unwrap();
    assert_eq!(tls.certificate, CertificateCheck::UnknownIssuer);
    assert_eq!(tls.peer_certificates, 1);
}

/// A pinned public key (curl's `--pinnedpubkey`): the server's key passes, verified or not;
/// any other pin fails the connection after the handshake, whether certificates are verified
/// or not, and the pin of the certificate is the pin of the key it carries.
#[tokio::test]
async fn only_a_pinned_public_key_passes_verified_or_not() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"http/1.1"], false).await;
    let right = PublicKeyPin::of_spki_der(&pki.server_spki);
    assert_eq!(
        PublicKeyPin::of_certificate_der(&pki.server_chain[0]),
        Some(right)
    );
    let wrong = PublicKeyPin::from_sha256([9; 32]);
    for insecure in [false, true] {
        for (pins, passes) in [
            (vec![right], true),
            (vec![wrong, right], true),
            (vec![wrong], false),
        ] {
            let options = TlsOptions {
                danger_accept_invalid_certs: insecure,
                pinned_public_keys: pins.clone(),
                ..pki.trusting_options()
            };
            let connector = connector_to(server.addr, options);
            let result = connect(
                &connector,
                https("localhost", server.addr.port(), AlpnOffer::Both),
            )
            .await;
            match result {
                Ok(_) => assert!(passes, "{pins:?} insecure {insecure}"),
                Err(error) => {
                    assert!(!passes, "{pins:?} insecure {insecure}: {error}");
                    assert!(error.is_pinned_key_mismatch(), "{error}");
                    assert!(!error.is_certificate() && !error.is_tls(), "{error}");
                    assert!(error.to_string().contains("pinned public key"), "{error}");
                }
            }
        }
    }
}

/// With verification off, the connection is made whatever the certificate, and what
/// verification against the roots that would have been trusted finds is still reported.
#[tokio::test]
async fn an_unverified_connection_still_says_what_verification_would_have_found() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"http/1.1"], false).await;
    let options = TlsOptions {
        danger_accept_invalid_certs: true,
        ..pki.trusting_options()
    };
    let port = server.addr.port();
    let resolver = StaticResolver::new(Arc::new(NoResolver))
        .with("localhost", port, vec![server.addr])
        .with("other.test", port, vec![server.addr]);
    let connector = HttpConnector::new(
        Arc::new(resolver),
        DialOptions::default(),
        TlsConnector::new(options).unwrap(),
    );
    for (host, expected) in [
        ("localhost", CertificateCheck::Valid),
        ("127.0.0.1", CertificateCheck::Valid),
        ("other.test", CertificateCheck::WrongName),
    ] {
        let (_io, connected) = connect(&connector, https(host, port, AlpnOffer::Both))
            .await
            .unwrap();
        assert_eq!(connected.tls.unwrap().certificate, expected, "{host}");
    }
}

#[tokio::test]
async fn sni_is_sent_for_names_but_not_for_ip_literals() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"h2"], false).await;
    let connector = connector_to(server.addr, pki.trusting_options());
    let port = server.addr.port();

    connect(&connector, https("localhost", port, AlpnOffer::Both))
        .await
        .unwrap();
    // The certificate's IP address SAN is what makes this one trusted.
    connect(&connector, https("127.0.0.1", port, AlpnOffer::Both))
        .await
        .unwrap();

    assert_eq!(
        server.server_names(),
        vec![Some("localhost".to_owned()), None]
    );
}

/// `connect_to` moves the socket only: the dial goes to the rule's address (an IP literal, so
/// no lookup), while SNI and the certificate check keep the origin's name.
#[tokio::test]
async fn connect_to_dials_elsewhere_and_keeps_the_origin_for_tls() {
    let pki = Pki::new();
    let server = TlsServer::start(&pki, &[b"h2"], false).await;
    let rules = ConnectTo::new().rule(
        Some("localhost"),
        Some(443),
        Some("127.0.0.1"),
        Some(server.addr.port()),
    );
    let connector = HttpConnector::new(
        Arc::new(NoResolver),
        DialOptions::default(),
        TlsConnector::new(pki.trusting_options()).unwrap(),
    )
    .with_connect_to(rules);

    let (_io, connected) = connect(&connector, https("localhost", 443, AlpnOffer::Both))
        .await
        .unwrap();
    assert_eq!(connected.remote_addr, server.addr);
    assert_eq!(connected.alpn, Some(Negotiated::Http2));
    assert_eq!(server.server_names(), vec![Some("localhost".to_owned())]);
}

/// A Unix socket replaces the network for every origin: nothing is resolved (the resolver
/// here fails every lookup), the connection names the path and has no addresses, bytes flow,
/// and a path nothing listens on is a connect error naming it.
#[tokio::test]
async fn a_unix_socket_is_dialed_instead_of_the_origin() {
    let dir = std::env::temp_dir().join(format!("pool-tls-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("daemon.sock");
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let connector = HttpConnector::new(
        Arc::new(NoResolver),
        DialOptions::default(),
        TlsConnector::new(TlsOptions::default()).unwrap(),
    )
    .with_unix_socket(&path);

    let (mut io, connected) = connect(&connector, target(Scheme::Http, "daemon.test", 80))
        .await
        .unwrap();
    assert_eq!(connected.unix_socket.as_deref(), Some(path.as_path()));
    assert!(!connected.is_tls() && connected.proxy.is_none());
    assert!(connected.timings.tls.is_none());
    let (mut server, _) = listener.accept().await.unwrap();
    io.write_all(b"ping").await.unwrap();
    let mut got = [0; 4];
    server.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"ping");

    drop(listener);
    std::fs::remove_file(&path).unwrap();
    let err = connect(&connector, target(Scheme::Http, "daemon.test", 80))
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:#}");
    assert_eq!(
        err.to_string(),
        format!("failed to connect to {}", path.display())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A named dial target goes through the resolver (so `--resolve` overrides apply to it); an
/// origin no rule matches dials itself.
#[tokio::test]
async fn connect_to_names_are_resolved_and_unmatched_origins_dial_themselves() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let resolver = StaticResolver::new(Arc::new(NoResolver)).with("backend.test", 8080, vec![addr]);
    let rules = ConnectTo::new().rule(Some("Origin.TEST"), None, Some("backend.test"), Some(8080));
    let connector = HttpConnector::new(
        Arc::new(resolver),
        DialOptions::default(),
        TlsConnector::new(TlsOptions::default()).unwrap(),
    )
    .with_connect_to(rules);

    let (_io, connected) = connect(&connector, target(Scheme::Http, "origin.test", 80))
        .await
        .unwrap();
    assert_eq!(connected.remote_addr, addr);

    let error = connect(&connector, target(Scheme::Http, "other.test", 80))
        .await
        .unwrap_err();
    assert!(error.is_resolve(), "{error:#}");
    assert!(format!("{error:#}").contains("other.test"), "{error:#}");
}

#[tokio::test]
async fn client_identity_is_accepted_by_a_server_requiring_client_auth() {
    let pki = Pki::new();
    let mut server = TlsServer::start(&pki, &[b"h2"], true).await;
    let options = TlsOptions {
        client_identity_pem: Some((
            pki.client_cert_pem.clone().into_bytes(),
            pki.client_key_pem.clone().into_bytes(),
        )),
        ..pki.trusting_options()
    };
    let connector = connector_to(server.addr, options);

    let (_io, connected) = connect(
        &connector,
        https("localhost", server.addr.port(), AlpnOffer::Both),
    )
    .await
    .unwrap();
    assert!(connected.is_tls());
    // In TLS 1.3 the client finishes first; the server's verdict is what proves acceptance.
    let accepted = server
        .accepted
        .recv()
        .await
        .unwrap()
        .expect("server accepted the handshake");
    assert!(accepted.client_certificate);
}
