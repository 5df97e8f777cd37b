//! The proxies of curl mode's pool: [`proxy_config`] from `-x` (or the environment),
//! `--noproxy`, `-U`, `--proxy-header` and the `CONNECT`'s user agent, and an `https://`
//! proxy's own TLS settings ([`proxy_tls_options`]), which never take the origins' flags.

use http::HeaderValue;
use http::header::HeaderName;
use pool::{NoProxy, Proxy, ProxyConfig, TlsOptions};

use super::super::args::{ConnectArgs, HeaderAction, HeaderArg, ProxyTlsArgs};
use super::super::ca_files::{ca_directories, read_ca_file, read_crl_file};
use super::super::client_cert;
use super::super::exit::CurlError;
use super::super::pinned_key;
use super::super::request::DEFAULT_USER_AGENT;

/// An `https://` proxy's TLS settings, from its own flags alone: the platform's roots unless
/// `--proxy-cacert` replaces them, `--proxy-capath`, `--proxy-crlfile`, `--proxy-insecure` and
/// `--proxy-cert`/`--proxy-key`.
///
/// # Errors
///
/// Exit 77 for an unreadable `--proxy-cacert`, 82 for an unusable `--proxy-crlfile`, 58 for
/// unreadable `--proxy-cert`/`--proxy-key` files, 59 for `--proxy-ciphers` or
/// `--proxy-tls13-ciphers` lists that pick nothing.
pub(super) fn proxy_tls_options(args: &ProxyTlsArgs) -> Result<TlsOptions, CurlError> {
    let mut options = TlsOptions {
        danger_accept_invalid_certs: args.proxy_insecure,
        ..TlsOptions::default()
    };
    if let Some(path) = &args.proxy_cacert {
        options.extra_roots_pem.push(read_ca_file(path)?);
        options.native_roots = false;
    }
    if let Some(dirs) = &args.proxy_capath {
        options.extra_roots_pem.extend(ca_directories(dirs));
    }
    if let Some(path) = &args.proxy_crlfile {
        options.crls_pem.push(read_crl_file(path)?);
    }
    if let Some(cert) = &args.proxy_cert {
        options.client_identity_pem =
            Some(client_cert::read_identity(&client_cert::IdentityFiles {
                cert,
                // curl takes `--proxy-key ''` (unlike `--key ''`) as no key file.
                key: args
                    .proxy_key
                    .as_deref()
                    .filter(|key| !key.is_empty())
                    .map(std::path::Path::new),
                cert_type: args.proxy_cert_type.as_deref(),
                key_type: args.proxy_key_type.as_deref(),
                pass: args.proxy_pass.as_deref(),
            })?);
    }
    if let Some(arg) = &args.proxy_pinnedpubkey {
        options.pinned_public_keys = pinned_key::pins(arg);
    }
    options.cipher_suites = super::super::ciphers::suites(
        args.proxy_ciphers.as_deref(),
        args.proxy_tls13_ciphers.as_deref(),
    )?;
    Ok(options)
}

/// curl's exit for a proxy URL it cannot use: 7 and "Unsupported proxy scheme" for a scheme it
/// does not speak (`-x ftp://...`), 5 and "Unsupported proxy syntax" for one that does not
/// parse; the URL is `-x`'s or the environment's, as curl words both.
fn proxy_error(error: &pool::ProxyError) -> CurlError {
    let url = error.input();
    if error.is_unsupported_scheme() {
        CurlError::new(7, format!("Unsupported proxy scheme for '{url}'"))
    } else {
        CurlError::new(5, format!("Unsupported proxy syntax in '{url}'"))
    }
}

/// The proxies the flags (or, without `-x`, the environment) ask for; `None` for none. A
/// tunnel's `CONNECT` carries `user_agent` (`-A`, sent even when empty, as curl does; a value
/// that is not a header value is `-A`'s usage error elsewhere) or poolcurl's own.
///
/// # Errors
///
/// Exit 5 for a proxy URL that cannot be parsed (curl's "Could not resolve proxy" class), 7
/// for a scheme no proxy speaks, exit 2 for a `-U` without a colon.
pub(crate) fn proxy_config(
    args: &ConnectArgs,
    user_agent: Option<&str>,
) -> Result<Option<ProxyConfig>, CurlError> {
    let mut config = match args.proxy_url().as_deref() {
        // A Unix socket replaces the network, proxies included, as in curl.
        _ if args.unix_socket().is_some() => return Ok(None),
        Some("") => return Ok(None),
        Some(url) => ProxyConfig::new().all(Proxy::parse(url).map_err(|e| proxy_error(&e))?),
        None => ProxyConfig::from_env().map_err(|e| proxy_error(&e))?,
    };
    if let Some(user) = &args.proxy_user {
        let (name, password) = user
            .split_once(':')
            .ok_or_else(|| CurlError::new(2, "--proxy-user needs USER:PASSWORD"))?;
        config = config
            .with_credentials(name, password)
            .with_auth(args.proxy_auth.scheme());
    }
    if args.proxy_choice.connect_http10() {
        config = config.with_http10_connect(true);
    }
    let agent = user_agent.map_or(Ok(HeaderValue::from_static(DEFAULT_USER_AGENT)), |agent| {
        HeaderValue::from_str(agent)
    });
    if let Ok(agent) = agent {
        config = config.with_user_agent(agent);
    }
    // curl's own header on a tunnel's `CONNECT` (forwarded requests carry it among curl
    // mode's headers: `proxy_keep_alive`).
    if proxy_keep_alive(args) {
        config = config.with_connect_header(
            HeaderName::from_static("proxy-connection"),
            HeaderValue::from_static("Keep-Alive"),
        );
    }
    for header in &args.proxy_headers {
        // "Name:" would remove one of curl's own CONNECT headers; poolcurl's CONNECT carries
        // Host, Proxy-Authorization and User-Agent, which a header of the same name replaces.
        if let HeaderAction::Set(value) = &header.action {
            config = config.with_header(header.name.clone(), value.clone());
        }
    }
    if let Some(list) = &args.noproxy {
        config = config.no_proxy(NoProxy::parse(list));
    }
    Ok((!config.is_empty()).then_some(config))
}

/// Whether curl's `Proxy-Connection: Keep-Alive` goes to an HTTP proxy (on a `CONNECT` and
/// each forwarded request), for HTTP/1.0 proxies that close otherwise: unless a
/// `--proxy-header` of that name replaces or ("Proxy-Connection:") removes it.
pub(crate) fn proxy_keep_alive(args: &ConnectArgs) -> bool {
    let proxy_connection = HeaderName::from_static("proxy-connection");
    !args
        .proxy_headers
        .iter()
        .any(|h: &HeaderArg| h.name == proxy_connection)
}
