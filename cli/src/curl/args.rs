//! curl mode's command line: the clap definition and the parsers that validate flag values.
//!
//! Values are checked while parsing (a bad `-H`, `--resolve`, `-X` or timeout is clap's usage
//! error, exit status 2); only what needs the file system (`@file` data, `--cacert`) is checked
//! later, with curl's exit codes.
//!
//! Two flag groups are flattened into [`CurlArgs`] and reused unchanged by `poolcurl load`:
//! [`RequestArgs`] (what a request sends) and [`ConnectArgs`] (how connections are made), so
//! both modes accept the same spellings and values for them.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::ArgMatches;
use http::Method;
use http::header::{HeaderName, HeaderValue};

/// `poolcurl [OPTIONS] URL...`: curl's flags with curl's meanings.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CurlArgs {
    /// The URLs to fetch, in order, through one connection pool
    #[arg(value_name = "URL", required = true)]
    pub(crate) urls: Vec<String>,

    /// What each request sends: `-X`, `-H` and the data flags.
    #[command(flatten)]
    pub(crate) request: RequestArgs,

    /// Write the output of the next URL to FILE instead of stdout (repeatable, in URL order)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Vec<PathBuf>,

    /// Include the response status line and headers in the output
    #[arg(short = 'i', long = "include")]
    pub(crate) include: bool,

    /// Send HEAD and show the response head only
    #[arg(
        short = 'I',
        long = "head",
        conflicts_with_all = ["data", "data_binary", "data_raw"]
    )]
    pub(crate) head: bool,

    /// Show the connection, the request and response heads on stderr
    #[arg(short = 'v', long = "verbose")]
    pub(crate) verbose: bool,

    /// Silent mode: no error messages
    #[arg(short = 's', long = "silent")]
    pub(crate) silent: bool,

    /// With -s, show error messages anyway
    #[arg(short = 'S', long = "show-error")]
    pub(crate) show_error: bool,

    /// Fail on HTTP errors (status >= 400) without output, exit code 22
    #[arg(short = 'f', long = "fail")]
    pub(crate) fail: bool,

    /// Follow redirects (301, 302, 303, 307, 308)
    #[arg(short = 'L', long = "location")]
    pub(crate) location: bool,

    /// Maximum number of redirects to follow with -L (-1: unlimited)
    #[arg(
        long = "max-redirs",
        value_name = "NUM",
        default_value_t = 50,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(i64).range(-1..)
    )]
    pub(crate) max_redirs: i64,

    /// How connections are made: TLS, HTTP version, interface, timeouts, `--resolve`.
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,

    /// Maximum time for each whole transfer, in seconds
    #[arg(short = 'm', long = "max-time", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) max_time: Option<Duration>,

    /// Print FORMAT on stdout after each transfer (%{http_code}, %{conn_id}, ...; @FILE reads it)
    #[arg(short = 'w', long = "write-out", value_name = "FORMAT")]
    pub(crate) write_out: Option<String>,
}

/// The flags that say what a request sends, shared by curl mode and `poolcurl load`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RequestArgs {
    /// Request method to use instead of GET/POST/HEAD
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = parse_method)]
    pub(crate) method: Option<Method>,

    /// Extra header "Name: value" (repeatable); "Name:" removes a default, "Name;" sends it empty
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = parse_header)]
    pub(crate) headers: Vec<HeaderArg>,

    /// HTTP POST data (repeatable, joined with &); @FILE reads a file without CR/LF
    #[arg(short = 'd', long = "data", value_name = "DATA")]
    pub(crate) data: Vec<String>,

    /// HTTP POST data sent as-is; @FILE reads a file byte for byte
    #[arg(long = "data-binary", value_name = "DATA")]
    pub(crate) data_binary: Vec<String>,

    /// HTTP POST data without @FILE interpretation
    #[arg(long = "data-raw", value_name = "DATA")]
    pub(crate) data_raw: Vec<String>,
}

/// The flags that say how connections are made, shared by curl mode and `poolcurl load`
/// (see [`super::setup`] for the pool settings they become).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ConnectArgs {
    /// Accept any server certificate (insecure)
    #[arg(short = 'k', long = "insecure")]
    pub(crate) insecure: bool,

    /// Verify servers against the CA certificates in this PEM file (instead of the system's)
    #[arg(long = "cacert", value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,

    /// Use HTTP/1.1 only
    #[arg(long = "http1.1", overrides_with_all = ["http2", "http2_prior_knowledge"])]
    pub(crate) http1_1: bool,

    /// Offer HTTP/2 by ALPN over TLS, accept HTTP/1.1 (cleartext URLs use HTTP/1.1)
    #[arg(long = "http2", overrides_with_all = ["http1_1", "http2_prior_knowledge"])]
    pub(crate) http2: bool,

    /// Speak HTTP/2 without negotiation on cleartext URLs (h2c)
    #[arg(long = "http2-prior-knowledge", overrides_with_all = ["http1_1", "http2"])]
    pub(crate) http2_prior_knowledge: bool,

    /// Bind connections to this network interface
    #[arg(long = "interface", value_name = "NAME")]
    pub(crate) interface: Option<String>,

    /// Maximum time for establishing a connection (resolve, TCP, TLS), in seconds
    #[arg(long = "connect-timeout", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) connect_timeout: Option<Duration>,

    /// Resolve HOST:PORT to ADDR (repeatable; ADDR may be a bracketed IPv6 address; several separated by commas)
    #[arg(long = "resolve", value_name = "HOST:PORT:ADDR", value_parser = parse_resolve)]
    pub(crate) resolve: Vec<ResolveArg>,

    /// Use this HTTP proxy, as http://USER:PASSWORD@HOST:PORT or https://... (scheme, credentials and port optional; "" for none, ignoring the environment)
    #[arg(short = 'x', long = "proxy", value_name = "URL")]
    pub(crate) proxy: Option<String>,

    /// Hosts to reach without the proxy (comma-separated; "*" for all), instead of NO_PROXY
    #[arg(long = "noproxy", value_name = "LIST")]
    pub(crate) noproxy: Option<String>,

    /// The proxy's user and password (USER:PASSWORD)
    #[arg(short = 'U', long = "proxy-user", value_name = "USER:PASSWORD")]
    pub(crate) proxy_user: Option<String>,

    /// Tunnel http:// URLs through the proxy with CONNECT too (https:// always are)
    #[arg(short = 'p', long = "proxytunnel")]
    pub(crate) proxytunnel: bool,
}

/// One `-H` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderArg {
    /// The header name.
    pub(crate) name: HeaderName,
    /// What to do with it.
    pub(crate) action: HeaderAction,
}

/// What a `-H` argument does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderAction {
    /// `Name: value`: send it, replacing a default header of that name.
    Set(HeaderValue),
    /// `Name:`: do not send a header of that name (defaults included).
    Remove,
}

/// One `--resolve HOST:PORT:ADDR[,ADDR...]` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolveArg {
    /// The host name, without brackets.
    pub(crate) host: String,
    /// The port the override applies to.
    pub(crate) port: u16,
    /// The addresses to connect to instead (with `port`).
    pub(crate) addrs: Vec<SocketAddr>,
}

/// One piece of request data, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DataArg {
    /// `-d`: text, or `@file` read without CR and LF.
    Ascii(String),
    /// `--data-binary`: text, or `@file` read byte for byte.
    Binary(String),
    /// `--data-raw`: text, `@` included.
    Raw(String),
}

impl RequestArgs {
    /// The `-d`, `--data-binary` and `--data-raw` values in the order they were given (curl
    /// joins them in that order). `matches` are the matches of the command these flags belong
    /// to (the subcommand's for `poolcurl load`).
    pub(crate) fn data_in_order(&self, matches: &ArgMatches) -> Vec<DataArg> {
        let mut parts: Vec<(usize, DataArg)> = Vec::new();
        let mut collect = |id: &str, values: &[String], make: fn(String) -> DataArg| {
            let indices: Vec<usize> = matches
                .indices_of(id)
                .map(Iterator::collect)
                .unwrap_or_default();
            for (i, value) in values.iter().enumerate() {
                // clap records an index for every value; the stable sort keeps listing order
                // should one be missing.
                let index = indices.get(i).copied().unwrap_or(usize::MAX);
                parts.push((index, make(value.clone())));
            }
        };
        collect("data", &self.data, DataArg::Ascii);
        collect("data_binary", &self.data_binary, DataArg::Binary);
        collect("data_raw", &self.data_raw, DataArg::Raw);
        parts.sort_by_key(|(index, _)| *index);
        parts.into_iter().map(|(_, part)| part).collect()
    }
}

impl CurlArgs {
    /// `--max-redirs` as a limit; `None` is unlimited.
    pub(crate) fn redirect_limit(&self) -> Option<u32> {
        u32::try_from(self.max_redirs).ok()
    }
}

/// Parses `-X`.
fn parse_method(text: &str) -> Result<Method, String> {
    Method::from_bytes(text.as_bytes()).map_err(|_| format!("invalid method {text:?}"))
}

/// Parses `-H`: `Name: value`, `Name:` (remove) or `Name;` (send with an empty value).
fn parse_header(text: &str) -> Result<HeaderArg, String> {
    let (name, action) = match text.split_once(':') {
        Some((name, value)) => {
            let value = value.trim();
            if value.is_empty() {
                (name, HeaderAction::Remove)
            } else {
                let value = HeaderValue::from_str(value)
                    .map_err(|_| format!("invalid value in header {text:?}"))?;
                (name, HeaderAction::Set(value))
            }
        }
        None => match text.strip_suffix(';') {
            Some(name) => (name, HeaderAction::Set(HeaderValue::from_static(""))),
            None => {
                return Err(format!(
                    "header {text:?} must be \"Name: value\", \"Name:\" or \"Name;\""
                ));
            }
        },
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("invalid header name in {text:?}"))?;
    Ok(HeaderArg { name, action })
}

/// Parses a non-negative number of seconds (fractions allowed).
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a number of seconds, got {text:?}"))?;
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("expected a non-negative number of seconds, got {text:?}"))
}

/// Parses `--resolve [+]HOST:PORT:ADDR[,ADDR]...`; HOST and ADDR may be bracketed IPv6.
fn parse_resolve(text: &str) -> Result<ResolveArg, String> {
    let bad = || format!("--resolve {text:?} is not HOST:PORT:ADDR[,ADDR]...");
    let spec = text.strip_prefix('+').unwrap_or(text);
    let (host, rest) = match spec.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed.split_once(']').ok_or_else(bad)?;
            (host, rest.strip_prefix(':').ok_or_else(bad)?)
        }
        None => spec.split_once(':').ok_or_else(bad)?,
    };
    let (port, addrs) = rest.split_once(':').ok_or_else(bad)?;
    if host.is_empty() {
        return Err(bad());
    }
    let port: u16 = port.parse().map_err(|_| bad())?;
    let addrs = addrs
        .split(',')
        .map(|addr| {
            let addr = addr.trim();
            let addr = addr
                .strip_prefix('[')
                .and_then(|a| a.strip_suffix(']'))
                .unwrap_or(addr);
            addr.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, port))
                .map_err(|_| format!("--resolve {text:?}: {addr:?} is not an IP address"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ResolveArg {
        host: host.to_owned(),
        port,
        addrs,
    })
}

/// Parses `argv` (without the program name) with the real command line, for unit tests.
#[cfg(test)]
pub(crate) fn parse_test_args(argv: &[&str]) -> (CurlArgs, ArgMatches) {
    use clap::{CommandFactory, FromArgMatches};
    let matches = crate::Cli::command()
        .try_get_matches_from(std::iter::once("poolcurl").chain(argv.iter().copied()))
        .expect("valid command line");
    let args = crate::Cli::from_arg_matches(&matches)
        .expect("matches fit the definition")
        .curl;
    (args, matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> (CurlArgs, ArgMatches) {
        parse_test_args(argv)
    }

    #[test]
    fn headers_set_remove_and_empty() {
        let h = parse_header("X-Test:  a b ").unwrap();
        assert_eq!(h.name, "x-test");
        assert_eq!(h.action, HeaderAction::Set(HeaderValue::from_static("a b")));
        assert_eq!(
            parse_header("User-Agent:").unwrap().action,
            HeaderAction::Remove
        );
        assert_eq!(
            parse_header("X-Empty;").unwrap().action,
            HeaderAction::Set(HeaderValue::from_static(""))
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
    }

    #[test]
    fn resolve_entries_accept_ipv6_in_brackets() {
        let r = parse_resolve("example.test:443:127.0.0.1").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("example.test", 443));
        assert_eq!(r.addrs, vec!["127.0.0.1:443".parse().unwrap()]);
        let r = parse_resolve("+a.test:80:[::1],127.0.0.2").unwrap();
        assert_eq!(
            r.addrs,
            vec!["[::1]:80".parse().unwrap(), "127.0.0.2:80".parse().unwrap()]
        );
        let r = parse_resolve("[::1]:8080:127.0.0.1").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 8080));
        assert!(parse_resolve("a.test:80").is_err());
        assert!(parse_resolve("a.test:http:127.0.0.1").is_err());
        assert!(parse_resolve("a.test:80:not-an-ip").is_err());
    }

    #[test]
    fn seconds_take_fractions() {
        assert_eq!(parse_seconds("0.3").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_seconds("2").unwrap(), Duration::from_secs(2));
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
    }

    #[test]
    fn data_keeps_command_line_order_across_flags() {
        let (args, matches) = parse(&[
            "--data-binary",
            "b",
            "-d",
            "a",
            "http://x/",
            "--data-raw",
            "@c",
            "-d",
            "d",
        ]);
        assert_eq!(
            args.request.data_in_order(&matches),
            vec![
                DataArg::Binary("b".into()),
                DataArg::Ascii("a".into()),
                DataArg::Raw("@c".into()),
                DataArg::Ascii("d".into()),
            ]
        );
    }

    #[test]
    fn flags_may_repeat_and_follow_urls() {
        let (args, _) = parse(&["http://a/", "-v", "-v", "http://b/", "-w", "%{http_code}"]);
        assert_eq!(args.urls, ["http://a/", "http://b/"]);
        assert!(args.verbose);
        assert_eq!(args.write_out.as_deref(), Some("%{http_code}"));
        let (args, _) = parse(&["-H", "A: 1", "-H", "B: 2", "http://a/"]);
        assert_eq!(args.request.headers.len(), 2);
    }

    #[test]
    fn the_last_http_version_flag_wins() {
        let (args, _) = parse(&["--http1.1", "--http2-prior-knowledge", "http://a/"]);
        assert!(args.connect.http2_prior_knowledge && !args.connect.http1_1);
        let (args, _) = parse(&["--http2", "--http1.1", "http://a/"]);
        assert!(args.connect.http1_1 && !args.connect.http2);
    }

    #[test]
    fn max_redirs_accepts_minus_one() {
        let (args, _) = parse(&["--max-redirs", "-1", "http://a/"]);
        assert_eq!(args.redirect_limit(), None);
        let (args, _) = parse(&["http://a/"]);
        assert_eq!(args.redirect_limit(), Some(50));
    }
}
