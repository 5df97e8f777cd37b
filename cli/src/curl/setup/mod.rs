//! The one pool of an invocation and the client every URL goes through, configured from the
//! command line.
//!
//! | flag | pool setting |
//! |------|--------------|
//! | `--http1.1` / `--http2` / `--http2-prior-knowledge` | [`pool::ProtocolPolicy`] `Http1Only` / `Auto` / `Http2PriorKnowledge` (default `Auto`) |
//! | `-k` | `danger_accept_invalid_certs(true)` |
//! | `--cacert FILE` | `add_root_certificates_pem`, and no platform roots (curl replaces its CA bundle) |
//! | `--crlfile FILE` | `add_crl_pem` (an unreadable or malformed file is exit 82, curl's "could not load CRL file") |
//! | `--capath DIR[:DIR...]` | `add_root_certificates_pem` for each OpenSSL hash link (`HASH.N`) of the directories, beside the platform's roots or `--cacert` |
//! | `--resolve` | a [`pool::StaticResolver`] in front of the system resolver (a malformed entry is exit 49) |
//! | `--connect-to` | [`pool::ConnectTo`] rules (see [`super::connect_to`]; a bad target port is exit 49 for the transfers it matches) |
//! | `-4` / `-6` | a resolver that keeps only IPv4 / IPv6 addresses (curl mode) |
//! | (always, curl mode) | `localhost` and `*.localhost` are `127.0.0.1` and `::1` without asking a resolver, as curl answers them ([`super::localhost`]) |
//! | a URL with an IPv6 zone id (`[fe80::1%25eth0]`) | a `--connect-to`-style rule to `ADDRESS%ZONE`, which the resolver answers with the address and the zone's scope ([`super::zone`]) |
//! | `--doh-url`, `--doh-insecure`, `--doh-cert-status` | a [`super::doh::DohResolver`] behind the `--resolve` entries, asking through a pool of its own (curl mode) |
//! | `--dns-servers`, `--dns-ipv4-addr`, `--dns-ipv6-addr` | a [`pool::HickoryResolver`] behind the `--resolve` entries, unless `--doh-url` is given (curl mode; see [`super::dns_servers`]) |
//! | `--http1.0`, `--ntlm` | `Http1Only` (curl mode; `--http1.0`'s requests say HTTP/1.0; NTLM authenticates a connection) |
//! | `--cert` / `--key`, `--cert-type` / `--key-type` | `client_identity_pem`, DER read as PEM (curl mode; unusable files are exit 58, see [`super::client_cert`]) |
//! | `--pinnedpubkey` | `pin_public_key` for each pin (curl mode; see [`super::pinned_key`]: a mismatch is exit 90) |
//! | `--tlsv1`, `--tlsv1.0`..`--tlsv1.2` | nothing: rustls speaks TLS 1.2 and 1.3 only, which satisfies them |
//! | `--tlsv1.3` / `--tls-max 1.2` | `min_tls_version` / `max_tls_version` (curl mode; bounds no TLS can meet fail `https://` transfers, exit 35) |
//! | `--ciphers`, `--tls13-ciphers`, `--curves` | `tls_cipher_suites`, `tls_key_exchange_groups` (curl mode; read as OpenSSL reads them, [`super::ciphers`]; a list that picks nothing fails `https://` transfers, exit 59) |
//! | `--no-alpn`, `--no-sessionid` | `tls_alpn(false)` (and `Http2Only` under `--http2-prior-knowledge`), `tls_session_resumption(false)` (curl mode) |
//! | `--haproxy-protocol` | `proxy_protocol(true)` (curl mode) |
//! | `--keepalive-time`, `--no-keepalive` | `tcp_keepalive` and `tcp_keepalive_interval` (curl mode; 60 s by default, as curl; no probe count or `TCP_USER_TIMEOUT`, as curl) |
//! | `--local-port NUM[-NUM]` | `local_ports` (curl mode; no free port in the range is exit 45; a range from 0 binds nothing, as curl) |
//! | `--interface NAME` | one explicit partition bound to `NAME` |
//! | `--unix-socket PATH`, `--abstract-unix-socket NAME` | `unix_socket`: every URL is dialed through `PATH` (or the abstract `NAME`, a path starting with a NUL byte) and no proxy applies (curl ignores `-x` and the environment then) |
//! | `--connect-timeout` | the client's connect timeout (curl's default: 300 s) |
//! | `-x`, `--noproxy`, `-U`, `-p` | [`pool::ProxyConfig`] (`-x` for every scheme), else the environment's `http_proxy`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY` as curl reads them, read once per group ([`proxy_config`]); `-p` tunnels `http://` URLs too; origins forwarded to one proxy share its connections (`share_forward_proxy_connections`), as curl reuses them |
//! | `--proxy-cacert`, `--proxy-capath`, `--proxy-crlfile`, `--proxy-insecure`, `--proxy-cert` / `--proxy-key`, `--proxy-pinnedpubkey` | `proxy_tls`, set whenever an `https://` proxy is configured, so that `--cacert`, `-k` and the rest stay the origins' (curl's rule); the platform's roots unless `--proxy-cacert` replaces them |
//!
//! `-m` is not a pool setting: the transfer loop bounds each whole transfer itself.
//!
//! [`pool_builder`] applies the flags every pool of this binary shares (protocol, TLS,
//! `--resolve`); `poolcurl load` starts from it and adds its partitions and bounds.

use std::sync::Arc;
use std::time::Duration;

use pool::{
    BuildError, Builder, ConnectionPool, Partition, PartitionId, ProtocolPolicy, ProxyConfig,
    Resolve, ResolveFuture, StaticResolver, SystemResolver,
};

use super::args::parse::parse_resolve;
use super::args::{Bind, ConnectArgs, CurlArgs, ResolveArg};
use super::ca_files::{ca_directories, read_ca_file, read_crl_file};
use super::client_cert;
use super::connect_to::ConnectToArgs;
use super::dns_servers;
use super::doh::DohResolver;
use super::exit::CurlError;
use super::localhost::Localhost;
use super::pinned_key;
use super::zone::Zones;

/// curl's connect timeout when `--connect-timeout` is not given (or is 0).
mod proxy;

use proxy::proxy_tls_options;
pub(crate) use proxy::{proxy_config, proxy_keep_alive};

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(300);

/// The partition curl mode uses when `--interface` asks for one.
const INTERFACE_PARTITION: PartitionId = PartitionId::from_index(0);

/// The HTTP version policy the flags ask for.
pub(crate) fn protocol_policy(args: &ConnectArgs) -> ProtocolPolicy {
    if args.http1_1 {
        ProtocolPolicy::Http1Only
    } else if args.http2_prior_knowledge {
        ProtocolPolicy::Http2PriorKnowledge
    } else {
        // `--http2` is curl's meaning of the default: offer h2 by ALPN over TLS.
        ProtocolPolicy::Auto
    }
}

/// A pool builder with the protocol policy, TLS settings and `--resolve` overrides of `args`,
/// the `--connect-to` rules of `connect_to` and the proxies of `proxies` (each read once by the
/// caller, which checks its requests against them too: [`proxy_config`] for the proxies), and
/// title-case HTTP/1 header names, as curl sends them. Partitions, bounds and timeouts are left
/// to the caller.
///
/// # Errors
///
/// Exit 77 when the `--cacert` file cannot be read; exit 49 for a malformed `--resolve`.
pub(crate) fn pool_builder(
    args: &ConnectArgs,
    connect_to: &ConnectToArgs,
    proxies: Option<&ProxyConfig>,
) -> Result<Builder, CurlError> {
    let mut builder = ConnectionPool::builder()
        .protocol(protocol_policy(args))
        .http1_title_case_headers(true);
    if args.insecure {
        builder = builder.danger_accept_invalid_certs(true);
    }
    builder = trust(builder, args)?;
    if let Some(config) = proxies.cloned() {
        // The proxy's own TLS flags, and never the origin's, as in curl.
        if config.uses_tls() {
            builder = builder.proxy_tls(proxy_tls_options(&args.proxy_tls)?);
        }
        // One forward proxy connection serves every `http://` origin sent to it, as curl
        // reuses it.
        builder = builder
            .proxy(config, args.proxytunnel)
            .share_forward_proxy_connections(true);
    }
    if let Some(resolver) = static_resolver(args)? {
        builder = builder.resolver(resolver);
    }
    if !connect_to.rules().is_empty() {
        builder = builder.connect_to(connect_to.rules().clone());
    }
    if let Some(path) = args.unix_socket() {
        builder = builder.unix_socket(Some(path));
    }
    Ok(builder)
}

/// The roots and revocations `builder` verifies servers with: `--cacert` (instead of the
/// platform's roots), `--crlfile`, `--capath`.
///
/// # Errors
///
/// Exit 77 for an unreadable `--cacert`, 82 for an unusable `--crlfile`.
fn trust(mut builder: Builder, args: &ConnectArgs) -> Result<Builder, CurlError> {
    if let Some(path) = &args.cacert {
        builder = builder
            .add_root_certificates_pem(read_ca_file(path)?)
            .native_roots(false);
    }
    if let Some(path) = &args.crlfile {
        builder = builder.add_crl_pem(read_crl_file(path)?);
    }
    if let Some(dirs) = &args.capath {
        for pem in ca_directories(dirs) {
            builder = builder.add_root_certificates_pem(pem);
        }
    }
    Ok(builder)
}

/// The `--resolve` overrides in front of the system resolver; `None` without `--resolve`.
///
/// # Errors
///
/// Exit 49 for an entry that does not parse.
fn static_resolver(args: &ConnectArgs) -> Result<Option<StaticResolver>, CurlError> {
    static_resolver_over(args, Arc::new(SystemResolver))
}

/// The `--resolve` overrides in front of `fallback`; `None` without `--resolve`.
///
/// # Errors
///
/// Exit 49 for an entry that does not parse.
fn static_resolver_over(
    args: &ConnectArgs,
    fallback: Arc<dyn Resolve>,
) -> Result<Option<StaticResolver>, CurlError> {
    if args.resolve.is_empty() {
        return Ok(None);
    }
    let mut resolver = StaticResolver::new(fallback);
    for text in &args.resolve {
        let entry = parse_resolve(text).map_err(CurlError::bad_resolve)?;
        match entry {
            Some(ResolveArg {
                host,
                port,
                addrs: Some(addrs),
            }) => resolver.insert(&host, port, addrs),
            Some(ResolveArg { host, port, .. }) => resolver.remove(&host, port),
            None => {}
        }
    }
    Ok(Some(resolver))
}

/// How curl mode finds a host's addresses: the `--resolve` entries, then an IPv6 address with
/// its zone ([`Zones`]), then curl's `localhost` rule ([`Localhost`]), then `names`.
///
/// # Errors
///
/// Exit 49 for a `--resolve` entry that does not parse.
fn curl_names(args: &ConnectArgs, names: Arc<dyn Resolve>) -> Result<Arc<dyn Resolve>, CurlError> {
    let names: Arc<dyn Resolve> = Arc::new(Zones {
        inner: Arc::new(Localhost { inner: names }),
    });
    Ok(match static_resolver_over(args, names.clone())? {
        Some(resolver) => Arc::new(resolver),
        None => names,
    })
}

/// `--doh-url`: the resolver that asks the DoH server, through a pool of its own that trusts
/// what the transfers trust (not `-k`: `--doh-insecure`), with `--doh-cert-status` and the
/// `--resolve` entries; `None` without the flag.
///
/// # Errors
///
/// As [`pool_builder`]'s for the CA and CRL files and `--resolve`.
fn doh_resolver(args: &CurlArgs) -> Result<Option<DohResolver>, CurlError> {
    let Some(url) = &args.net.doh_url else {
        return Ok(None);
    };
    let mut builder = trust(ConnectionPool::builder(), &args.connect)?
        .danger_accept_invalid_certs(args.net.doh_insecure)
        .tls_require_certificate_status(args.net.doh_cert_status);
    builder = builder.resolver(CurlResolver {
        inner: curl_names(&args.connect, Arc::new(SystemResolver))?,
        only_ipv6: None,
    });
    let pool = builder
        .build()
        .map_err(|e| build_error(&args.connect, &e))?;
    let client = pool
        .client()
        .map_err(|e| CurlError::new(2, e.to_string()))?
        .connect_timeout(Some(connect_timeout(
            &args.connect,
            DEFAULT_CONNECT_TIMEOUT,
        )));
    // curl asks for A always, and for AAAA unless -4 says IPv4 only.
    Ok(Some(DohResolver::new(client, url, !args.net.ipv4)))
}

/// curl mode's HTTP version policy: `--http1.0` and `--ntlm` are HTTP/1 only too, and
/// `--http2-prior-knowledge` with `--no-alpn` speaks HTTP/2 over TLS without asking.
pub(crate) fn curl_protocol_policy(args: &CurlArgs) -> ProtocolPolicy {
    // NTLM authenticates a connection, which HTTP/2 shares between requests: curl speaks
    // HTTP/1.1 for it.
    if args.net.http1_0 || args.send.ntlm {
        ProtocolPolicy::Http1Only
    } else if args.net.tls.no_alpn && args.connect.http2_prior_knowledge {
        ProtocolPolicy::Http2Only
    } else {
        protocol_policy(&args.connect)
    }
}

/// curl mode's resolver: `--doh-url`'s, `--dns-servers`'s or the system's behind curl's
/// `localhost` rule ([`Localhost`]) and the `--resolve` entries, keeping only the addresses of
/// one family under `-4` / `-6`.
struct CurlResolver {
    /// The resolver asked.
    inner: Arc<dyn Resolve>,
    /// Keep only IPv6 addresses (`Some(true)`, `-6`) or only IPv4 ones (`Some(false)`, `-4`).
    only_ipv6: Option<bool>,
}

impl std::fmt::Debug for CurlResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CurlResolver")
            .field("only_ipv6", &self.only_ipv6)
            .finish_non_exhaustive()
    }
}

impl Resolve for CurlResolver {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        let lookup = self.inner.resolve(host, port);
        let Some(ipv6) = self.only_ipv6 else {
            return lookup;
        };
        Box::pin(async move {
            let kept: Vec<_> = lookup
                .await?
                .into_iter()
                .filter(|addr| addr.is_ipv6() == ipv6)
                .collect();
            if kept.is_empty() {
                let family = if ipv6 { "IPv6" } else { "IPv4" };
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no {family} address"),
                ));
            }
            Ok(kept)
        })
    }
}

/// The most header lines curl mode reads in one response head. hyper sets aside room for this
/// many on every response it parses (64 bytes each), so it is a bound rather than curl's
/// byte limit alone; a head with more is a 56, as a head over hyper's buffer is.
const MAX_RESPONSE_HEADERS: usize = 1000;

/// curl's HTTP/2 stream window (7.88's `HTTP2_HUGE_WINDOW_SIZE`, 32 MiB). One response arrives
/// no faster than its stream window per round trip, so hyper's 2 MiB, the library's default,
/// capped a download from a server 100 ms away at 20 MiB/s, where curl's window lets TCP set
/// the pace (five times curl's time through interop's 100 ms relay). curl mode runs a transfer
/// (or `-Z`'s few) at a time, so the memory a window lets a slow reader hold is curl's too.
const STREAM_WINDOW: u32 = 32 << 20;

/// The curl-only connection flags on top of [`pool_builder`]'s: `-4`/`-6`, `--http1.0`,
/// `--expect100-timeout`,
/// `--cert`/`--key`, `--happy-eyeballs-timeout-ms`, `--http0.9`, curl's tolerance of
/// response heads, and curl's HTTP/2 stream window.
fn curl_builder(
    args: &CurlArgs,
    connect_to: &ConnectToArgs,
    proxies: Option<&ProxyConfig>,
) -> Result<Builder, CurlError> {
    // Read before the CA files, as curl's TLS setup loads the client certificate first: with
    // both unusable, the error is the certificate's (58).
    let identity = identity_files(args)
        .map(|files| client_cert::read_identity(&files))
        .transpose()?;
    // Header names as the server wrote them, for `-i`, `-I`, `-D` and `-v` (as curl prints them).
    let mut builder = pool_builder(&args.connect, connect_to, proxies)?
        .protocol(curl_protocol_policy(args))
        .http1_preserve_header_case(true)
        // What curl reads and hyper refuses unless told: a space before a header's colon,
        // folded header lines, and more than 100 headers (curl counts bytes instead: 300 KB).
        .http1_allow_spaces_after_header_name_in_responses(true)
        .http1_allow_obsolete_multiline_headers_in_responses(true)
        .http1_max_headers(MAX_RESPONSE_HEADERS)
        .http2_initial_stream_window_size(Some(STREAM_WINDOW))
        .http09_responses(args.net.http0_9);
    builder = builder
        .proxy_protocol(args.net.haproxy_protocol)
        // curl sets the probes' interval to the idle time and leaves their count and
        // TCP_USER_TIMEOUT to the OS; the library's own defaults (15 s, 3, 30 s) are not curl's.
        .tcp_keepalive(args.net.tcp_keepalive())
        .tcp_keepalive_interval(args.net.tcp_keepalive())
        .tcp_keepalive_retries(None)
        .tcp_user_timeout(None)
        .local_ports(args.net.local_ports());
    if let Some(wait) = args.send.expect100_timeout {
        builder = builder.expect_continue_timeout(Some(wait));
    }
    // Conflicting or unspeakable versions fail each `https://` transfer instead (exit 35).
    if let Ok((min, max)) = args.net.tls_versions() {
        builder = builder.min_tls_version(min).max_tls_version(max);
    }
    // Lists that pick nothing fail each `https://` transfer instead (exit 59).
    let tls = &args.net.tls;
    if let Ok(choices) = tls.choices() {
        builder = builder
            .tls_cipher_suites(choices.suites)
            .tls_key_exchange_groups(choices.groups);
    }
    builder = builder
        .tls_alpn(!tls.no_alpn)
        .tls_session_resumption(!tls.no_sessionid)
        .tls_require_certificate_status(tls.cert_status)
        // `-v` (and the traces) show the server's certificate and `-w '%{certs}'` its chain;
        // curl collects the chain whenever `-w` is given, and so does this.
        .tls_keep_peer_certificates(
            args.verbose || args.trace().is_some() || args.write_out.is_some(),
        );
    if let Some(ms) = args.net.happy_eyeballs_timeout_ms {
        builder = builder.happy_eyeballs_delay(Some(Duration::from_millis(ms)));
    }
    // curl asks DoH instead of its resolver when both are set.
    let names: Option<Arc<dyn Resolve>> = match doh_resolver(args)? {
        Some(doh) => Some(Arc::new(doh)),
        None => dns_servers::resolver(&args.net)?.map(|r| Arc::new(r) as Arc<dyn Resolve>),
    };
    let names = names.unwrap_or_else(|| Arc::new(SystemResolver));
    let inner = curl_names(&args.connect, names)?;
    let only_ipv6 = (args.net.ipv4 || args.net.ipv6).then_some(args.net.ipv6);
    builder = builder.resolver(CurlResolver { inner, only_ipv6 });
    if let Some((chain, key)) = identity {
        builder = builder.client_identity_pem(chain, key);
    }
    for pin in args
        .net
        .pinnedpubkey
        .as_deref()
        .map(pinned_key::pins)
        .unwrap_or_default()
    {
        builder = builder.pin_public_key(pin);
    }
    Ok(builder)
}

/// Maps a setting the pool rejected to curl's error: a `--cacert` (or `--proxy-cacert`) file
/// without a usable certificate is exit 77, an unusable `--proxy-cert` 58, anything else
/// exit 2.
pub(crate) fn build_error(args: &ConnectArgs, error: &BuildError) -> CurlError {
    let named =
        |cacert: &Option<std::path::PathBuf>, capath: &Option<String>| match (cacert, capath) {
            (Some(path), _) => Some(path.display().to_string()),
            (None, Some(dirs)) => Some(dirs.clone()),
            (None, None) => None,
        };
    let proxy = &args.proxy_tls;
    match error.setting() {
        "tls" => match named(&args.cacert, &args.capath) {
            Some(named) => CurlError::ca_file(&named, error),
            None => CurlError::new(2, error.to_string()),
        },
        "proxy_tls" => match (
            named(&proxy.proxy_cacert, &proxy.proxy_capath),
            &proxy.proxy_cert,
        ) {
            (Some(named), _) => CurlError::ca_file(&named, error),
            (None, Some(cert)) => CurlError::new(
                58,
                format!(
                    "unable to use client certificate {}: {error}",
                    cert.display()
                ),
            ),
            (None, None) => CurlError::new(2, error.to_string()),
        },
        _ => CurlError::new(2, error.to_string()),
    }
}

/// What `--cert`, `--key` and their types and passphrase name; `None` without `--cert`.
fn identity_files(args: &CurlArgs) -> Option<client_cert::IdentityFiles<'_>> {
    let net = &args.net;
    Some(client_cert::IdentityFiles {
        cert: net.cert.as_deref()?,
        key: net.key.as_deref(),
        cert_type: net.cert_type.as_deref(),
        key_type: net.key_type.as_deref(),
        pass: net.pass.as_deref(),
    })
}

/// `--connect-timeout`, or `default` when it is not given (or is 0).
pub(crate) fn connect_timeout(args: &ConnectArgs, default: Duration) -> Duration {
    args.connect_timeout
        .filter(|t| !t.is_zero())
        .unwrap_or(default)
}

/// [`build_client`] for a group's transfers, where an origin TLS file that cannot be used
/// (`--cacert`, `--crlfile`, `--cert`/`--key`: exit 77, 82 or 58) is no reason to fail an
/// `http://` transfer: as curl, such a file fails the `https://` transfers only. The second
/// value is that error; the client is then built without those files (it verifies with the
/// platform's roots and has no certificate to present, which no `https://` transfer of the
/// group reaches, as each fails first).
///
/// # Errors
///
/// As [`build_client`], for anything else.
pub(crate) fn build_client_for_transfers(
    args: &CurlArgs,
    connect_to: &ConnectToArgs,
    proxies: Option<&ProxyConfig>,
) -> Result<(pool::Client, Option<CurlError>), CurlError> {
    let error = match build_client(args, connect_to, proxies) {
        Ok(client) => return Ok((client, None)),
        Err(error) => error,
    };
    let mut plain = args.clone();
    plain.connect.cacert = None;
    plain.connect.crlfile = None;
    plain.net.cert = None;
    plain.net.key = None;
    if plain.connect == args.connect && plain.net == args.net {
        return Err(error);
    }
    match build_client(&plain, connect_to, proxies) {
        Ok(client) => Ok((client, Some(error))),
        Err(_) => Err(error),
    }
}

/// Builds the pool and its client.
///
/// Must run inside the tokio runtime the transfers run on: an `--interface` partition spawns
/// its connections there.
///
/// # Errors
///
/// Exit 77 when the `--cacert` file cannot be read or holds no usable certificate; exit 58 for
/// unusable `--cert`/`--key` files; exit 49 for a malformed `--resolve`; exit 2 for any other
/// setting the pool rejects.
pub(crate) fn build_client(
    args: &CurlArgs,
    connect_to: &ConnectToArgs,
    proxies: Option<&ProxyConfig>,
) -> Result<pool::Client, CurlError> {
    let connect = &args.connect;
    let mut builder = curl_builder(args, connect_to, proxies)?;
    let device = match connect.bind() {
        Some(Bind::Device(name)) => Some(name),
        Some(Bind::Address(address)) => {
            builder = builder.local_address(Some(address));
            None
        }
        None => None,
    };
    if let Some(name) = device {
        let partition = Partition::new(INTERFACE_PARTITION, pool::TokioDriverSpawner::current())
            .interface(name);
        builder = builder.partitions([partition]);
    }
    let pool =
        builder
            .build()
            .map_err(|e| match (e.client_identity_part(), identity_files(args)) {
                (Some(part), Some(files)) => client_cert::unusable(&files, part, &e),
                _ => build_error(connect, &e),
            })?;
    let client = match device {
        Some(_) => pool.client_for(INTERFACE_PARTITION),
        None => pool.client(),
    }
    .map_err(|e| CurlError::new(2, e.to_string()))?;
    let timeout = connect_timeout(connect, DEFAULT_CONNECT_TIMEOUT);
    Ok(client.connect_timeout(Some(timeout)))
}
