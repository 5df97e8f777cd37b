//! From a [`pool::Error`] to curl's code and message: [`classify`] reads the pool's predicates
//! (never message text) and takes details (the rejected certificate's problem, the TLS alert,
//! the system's reason) from the error's `source()` chain; [`failed_step`] says how far a new
//! connection got, for `-v`.

use std::error::Error as StdError;
use std::time::Duration;

use super::{CurlError, strerror};

/// What a failed request was doing, for the message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attempt<'a> {
    /// The URL's host, without IPv6 brackets.
    pub(crate) host: &'a str,
    /// The host the connection was dialed at (the URL's unless `--connect-to` moved it).
    pub(crate) dial_host: &'a str,
    /// The port the connection was dialed at.
    pub(crate) dial_port: u16,
    /// Time since the transfer started.
    pub(crate) elapsed: Duration,
    /// Body bytes of the response being read received so far (curl's count in its
    /// messages).
    pub(crate) received: u64,
    /// Body bytes the response announced (`Content-Length`) and did not deliver yet, when the
    /// error happened while reading a body of known length.
    pub(crate) remaining: Option<u64>,
    /// Whether the request was sent as HTTP/2 with prior knowledge (`--http2-prior-knowledge`
    /// on a cleartext URL).
    pub(crate) prior_knowledge: bool,
    /// `--interface` as given (`eth0`, `if!eth0`, `host!10.0.0.1`), for curl's words when
    /// binding to it failed.
    pub(crate) interface: Option<&'a str>,
}

/// Maps a pool error to curl's exit code and message.
pub(crate) fn classify(error: &pool::Error, attempt: &Attempt<'_>) -> CurlError {
    let ms = attempt.elapsed.as_millis();
    if error.is_invalid_uri() {
        return CurlError::malformed_url();
    }
    // `io::Error` hides a custom error from `source()`: look inside each one.
    let upload = find_all::<std::io::Error>(error).find_map(|e| {
        e.get_ref()?
            .downcast_ref::<crate::curl::upload::UploadReadFailed>()
    });
    if let Some(failed) = upload {
        return CurlError::new(
            26,
            format!(
                "Failed to open/read local data from file/application: {}",
                failed.0
            ),
        );
    }
    if error.is_proxy() {
        if let Some(proxy) = proxy_error(error, attempt) {
            return proxy;
        }
    }
    if error.is_resolve() {
        // A DoH lookup that found nothing: curl says only what the code means.
        if crate::curl::doh::failed(error) {
            return CurlError::new(6, crate::curl::doh::DohFailed.to_string());
        }
        return CurlError::new(6, format!("Could not resolve host: {}", attempt.dial_host));
    }
    if error.is_connect_timeout() {
        return connect_timed_out(error, attempt);
    }
    if error.is_pinned_key_mismatch() {
        return CurlError::new(90, "SSL: public key does not match pinned public key");
    }
    if error.is_certificate_status() {
        let why = find::<pool::CertificateStatusError>(error)
            .map_or_else(|| root_cause(error), ToString::to_string);
        return CurlError::new(91, why);
    }
    if error.is_certificate() {
        return certificate_problem(error, attempt.host);
    }
    if error.is_tls() {
        return CurlError::new(35, format!("TLS connect error: {}", root_cause(error)));
    }
    let bind = find::<pool::ConnectError>(error);
    if let Some(bind) = bind.filter(|e| e.is_local_port() || e.is_local_address()) {
        // curl's words for a local address or port it could not take.
        return match find::<std::io::Error>(error).and_then(|e| Some((e.raw_os_error()?, e))) {
            Some((errno, io)) => CurlError::new(
                45,
                format!("bind failed with errno {errno}: {}", strerror(io)),
            ),
            None => CurlError::new(45, format!("{bind:#}")),
        };
    }
    if error.is_interface() {
        // curl names the device as `--interface` gave it: `if!eth9` is "interface 'eth9'".
        return CurlError::new(
            45,
            match attempt.interface {
                Some(text) => match text.strip_prefix("if!") {
                    Some(name) => format!("Couldn't bind to interface '{name}'"),
                    None => format!(
                        "Couldn't bind to '{}'",
                        text.strip_prefix("host!").unwrap_or(text)
                    ),
                },
                None => find::<pool::ConnectError>(error)
                    .map_or_else(|| root_cause(error), |e| format!("{e:#}")),
            },
        );
    }
    if attempt.prior_knowledge
        && !error.is_body()
        && !error.is_timeout()
        && !error.is_reset()
        && !error.is_refused_stream()
        && find::<pool::ConnectError>(error).is_none()
    {
        // HTTP/2 failed on an open connection before any response: the server does not speak
        // HTTP/2. An HTTP/1.1 server answers the preface in HTTP/1.1 (nginx: 400) and closes,
        // which curl reports as an empty reply. (hyper reports that answer as a protocol error
        // or, when the close wins, as a canceled request; both are the same event here.)
        return CurlError::new(52, "Empty reply from server");
    }
    if error.is_connect() {
        if find::<pool::ConnectError>(error).is_some() {
            return CurlError::new(
                connect_failed_code(error),
                format!(
                    "Failed to connect to {} port {} after {ms} ms: Couldn't connect to server",
                    attempt.dial_host, attempt.dial_port
                ),
            );
        }
        // The transport was up and the HTTP handshake on it failed.
        return receive_failure(error);
    }
    if error.is_timeout() && !error.is_system_timeout() {
        let announced = attempt.remaining.map(|left| left + attempt.received);
        return CurlError::operation_timeout(attempt.elapsed, attempt.received, announced);
    }
    if error.is_unsupported_version() {
        return CurlError::new(1, format!("Unsupported protocol: {}", root_cause(error)));
    }
    if let Some(part) = error.malformed() {
        return malformed_reply(part);
    }
    let body_cut_short = error.is_body()
        && find::<std::io::Error>(error)
            .is_some_and(|e| e.kind() == std::io::ErrorKind::UnexpectedEof);
    if error.is_incomplete_message() || body_cut_short {
        return if error.is_body() {
            match attempt.remaining {
                Some(remaining) => CurlError::new(
                    18,
                    format!("transfer closed with {remaining} bytes remaining to read"),
                ),
                None => CurlError::new(18, "transfer closed with outstanding read data remaining"),
            }
        } else {
            CurlError::new(52, "Empty reply from server")
        };
    }
    if error.is_refused_stream() {
        // curl retries a refused stream on fresh connections and then gives up with this; the
        // pool re-sent it within its budget before the error came here.
        return CurlError::new(
            56,
            if error.http2_error_code() == Some(0x7) {
                "Connection died: the server refused the HTTP/2 stream (REFUSED_STREAM)"
            } else {
                "Connection died: the server allows no HTTP/2 stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)"
            },
        );
    }
    if let Some(code) = error.http2_error_code().filter(|_| error.is_reset()) {
        // curl names the stream too; hyper does not say which it was.
        return CurlError::new(
            92,
            format!(
                "HTTP/2 stream was not closed cleanly: {} (err {code})",
                http2_error_name(code)
            ),
        );
    }
    if error.is_system_timeout() {
        // The kernel ended a connection that was up (TCP keepalive, the TCP user timeout).
        return CurlError::new(56, "Recv failure: Connection timed out");
    }
    if error.is_reset() {
        return CurlError::new(56, "Recv failure: Connection reset by peer");
    }
    receive_failure(error)
}

/// curl 7.88's words for `--connect-timeout` by the step it ended: resolving, the TCP connect
/// (to the origin, or to the proxy it named), the TLS handshake (the origin's or an
/// `https://` proxy's), an HTTP proxy's `CONNECT`; a SOCKS handshake, or a step not known, in
/// its general words.
fn connect_timed_out(error: &pool::Error, attempt: &Attempt<'_>) -> CurlError {
    use pool::ConnectStep;
    let ms = attempt.elapsed.as_millis();
    let message = match error.connect_timed_out_during() {
        Some(ConnectStep::Resolve) => return CurlError::resolve_timeout(attempt.elapsed),
        Some(ConnectStep::Dial) => {
            let proxy = error
                .proxy()
                .and_then(|label| pool::Proxy::parse(label).ok());
            let (host, port) = match &proxy {
                Some(proxy) => (proxy.host(), proxy.port()),
                None => (attempt.dial_host, attempt.dial_port),
            };
            format!("Failed to connect to {host} port {port} after {ms} ms: Timeout was reached")
        }
        Some(ConnectStep::Tls) => "SSL connection timeout".to_owned(),
        Some(ConnectStep::Tunnel) => "Proxy CONNECT aborted due to timeout".to_owned(),
        _ => return CurlError::connection_timeout(attempt.elapsed),
    };
    CurlError::new(28, message)
}

/// curl's code for a connect that failed on its own (not by `--connect-timeout`): 28 when
/// the kernel gave up on it (`ETIMEDOUT`: nothing answered its SYNs), as curl 7.88 says with
/// the words of 7, which it gives every other failure.
fn connect_failed_code(error: &pool::Error) -> u8 {
    if error.is_system_timeout() { 28 } else { 7 }
}

/// curl's 56 for a failure it has no closer words for, with the error's root cause.
fn receive_failure(error: &pool::Error) -> CurlError {
    CurlError::new(
        56,
        format!(
            "Failure when receiving data from the peer: {}",
            root_cause(error)
        ),
    )
}

/// The name RFC 9113 §7 gives an HTTP/2 error code, as curl prints it.
fn http2_error_name(code: u32) -> &'static str {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|at| NAMES.get(at))
        .copied()
        .unwrap_or("unknown")
}

/// curl's code and message for a response head the pool could not read as HTTP/1. curl tells
/// some of these apart further (a header without a colon from one with a NUL byte), which the
/// pool does not; the codes are the same.
fn malformed_reply(part: pool::Malformed) -> CurlError {
    use pool::Malformed;
    match part {
        Malformed::Version => CurlError::new(1, "Received HTTP/0.9 when not allowed"),
        Malformed::StatusCode => CurlError::new(1, "Unsupported response code in HTTP response"),
        Malformed::Header => CurlError::new(8, "Weird server reply: malformed header line"),
        Malformed::ContentLength => CurlError::new(8, "Invalid Content-Length: value"),
        Malformed::TransferEncoding => {
            CurlError::new(8, "Weird server reply: unexpected Transfer-Encoding")
        }
        Malformed::TooLarge => CurlError::new(56, "Too large response headers"),
        _ => CurlError::new(8, "Weird server reply"),
    }
}

/// curl's codes for a failure on the way to or through a proxy: 5 the proxy's name did not
/// resolve, 7 the proxy could not be reached, 56 the `CONNECT` tunnel was refused or broke,
/// 97 the SOCKS handshake failed (the origin's name not resolving for a SOCKS proxy that is
/// sent addresses included, as curl counts it). `None` lets the general rules apply (a TLS
/// failure with the proxy, a timeout).
fn proxy_error(error: &pool::Error, attempt: &Attempt<'_>) -> Option<CurlError> {
    let ms = attempt.elapsed.as_millis();
    // The proxy as `-x` gave it: curl names it by its host (and port), a SOCKS one by version.
    let proxy = error
        .proxy()
        .and_then(|label| pool::Proxy::parse(label).ok());
    if error.is_proxy_socks() {
        if error.is_resolve() {
            return Some(CurlError::new(
                97,
                format!("Could not resolve host: {}", attempt.dial_host),
            ));
        }
        let version = match proxy.map(|proxy| proxy.scheme()) {
            Some(pool::ProxyScheme::Socks4 | pool::ProxyScheme::Socks4a) => "SOCKS4",
            _ => "SOCKS5",
        };
        return Some(CurlError::new(
            97,
            format!(
                "Can't complete {version} connection to {}. ({})",
                attempt.dial_host,
                root_cause(error)
            ),
        ));
    }
    if error.is_proxy_tunnel() {
        return Some(match error.proxy_status() {
            Some(status) => CurlError::new(56, format!("CONNECT tunnel failed, response {status}")),
            None => CurlError::new(56, format!("Proxy CONNECT aborted: {}", root_cause(error))),
        });
    }
    if error.is_resolve() {
        let name = proxy
            .as_ref()
            .map_or_else(|| root_cause(error), |p| p.host().to_owned());
        return Some(CurlError::new(
            5,
            format!("Could not resolve proxy: {name}"),
        ));
    }
    // A TLS failure with the proxy (its certificate included) is classified as any TLS
    // failure is: curl's 35 or 60.
    let tls = error.is_tls()
        || error.is_certificate()
        || error.is_pinned_key_mismatch()
        || error.is_certificate_status();
    if error.is_connect() && !error.is_connect_timeout() && !tls {
        let whom = proxy.map_or_else(
            || "the proxy".to_owned(),
            |p| format!("{} port {}", p.host(), p.port()),
        );
        return Some(CurlError::new(
            connect_failed_code(error),
            format!("Failed to connect to {whom} after {ms} ms: Couldn't connect to server"),
        ));
    }
    None
}

/// Exit 60 with curl's wording for the common certificate problems.
fn certificate_problem(error: &pool::Error, host: &str) -> CurlError {
    use rustls::CertificateError as C;
    let named = match error.certificate_check() {
        Some(pool::CertificateCheck::SelfSigned) => Some("self-signed certificate"),
        Some(pool::CertificateCheck::SelfSignedInChain) => {
            Some("self-signed certificate in certificate chain")
        }
        _ => None,
    };
    if let Some(problem) = named {
        return CurlError::new(60, format!("SSL certificate problem: {problem}"));
    }
    let problem = match find::<rustls::Error>(error) {
        Some(rustls::Error::InvalidCertificate(cert)) => match cert {
            C::UnknownIssuer => "unable to get local issuer certificate".to_owned(),
            C::Expired | C::ExpiredContext { .. } => "certificate has expired".to_owned(),
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "certificate is not yet valid".to_owned()
            }
            C::Revoked => "certificate revoked".to_owned(),
            C::BadSignature => "certificate signature failure".to_owned(),
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                return CurlError::new(
                    60,
                    format!(
                        "SSL: no alternative certificate subject name matches target host name '{host}'"
                    ),
                );
            }
            other => other.to_string(),
        },
        Some(other) => other.to_string(),
        None => root_cause(error),
    };
    CurlError::new(60, format!("SSL certificate problem: {problem}"))
}

/// The server a failed TLS handshake with the origin was connected to: curl fills
/// `%{remote_ip}` and `%{scheme}` once its TCP connection stands, so a TLS failure shows them
/// where a refused connection does not.
pub(crate) fn tls_peer(error: &pool::Error) -> Option<std::net::SocketAddr> {
    let handshake = error.is_tls()
        || error.is_certificate()
        || error.is_pinned_key_mismatch()
        || error.is_certificate_status();
    if !handshake || error.is_proxy() {
        return None;
    }
    find::<pool::ConnectError>(error).and_then(pool::ConnectError::addr)
}

/// Every error of type `T` in `error`'s source chain, outermost first.
fn find_all<T: StdError + 'static>(error: &pool::Error) -> impl Iterator<Item = &T> {
    let first: Option<&(dyn StdError + 'static)> = error.source();
    std::iter::successors(first, |e| (*e).source()).filter_map(|e| e.downcast_ref::<T>())
}

/// How far a connection that failed got, as curl's `-v` tells it before its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FailedStep {
    /// The TCP connect to this address failed, for this reason (`Connection refused`): the
    /// attempt that failed last when several addresses were tried.
    Dial(std::net::SocketAddr, String),
    /// The TCP connection to this address was made and its TLS handshake failed.
    Tls(std::net::SocketAddr),
}

/// The step a new connection failed at, when the error says: a failed dial (to the origin or
/// to a proxy), or a TLS handshake with the origin over a direct connection (through a proxy
/// the address is the proxy's).
pub(crate) fn failed_step(error: &pool::Error) -> Option<FailedStep> {
    let connect = find::<pool::ConnectError>(error)?;
    let addr = connect.addr()?;
    if connect.is_connect() {
        let reason = find::<std::io::Error>(error).map_or_else(|| root_cause(error), strerror);
        return Some(FailedStep::Dial(addr, reason));
    }
    let tls = connect.is_tls() || connect.is_certificate();
    (tls && !connect.is_proxy()).then_some(FailedStep::Tls(addr))
}

/// The first error of type `T` in `error`'s source chain.
fn find<T: StdError + 'static>(error: &pool::Error) -> Option<&T> {
    find_all(error).next()
}

/// The innermost error's message (the pool's own layers only add context the curl message
/// already gives).
fn root_cause(error: &pool::Error) -> String {
    let mut current: &(dyn StdError + 'static) = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
