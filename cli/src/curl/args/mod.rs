//! curl mode's command line: the clap definition of [`CurlArgs`] and the types its values
//! parse into.
//!
//! Values are checked while parsing where curl rejects them as usage errors (a bad `-H` name, `-X`
//! or timeout: exit status 2, see [`parse`]); what needs the file system (`@file` data,
//! `--cacert`, `-T`) or has its own curl exit code (`--resolve`, 49) is checked later.
//!
//! The flags are grouped by concern, each group a flattened struct:
//!
//! | group | flags |
//! |-------|-------|
//! | [`RequestArgs`] (shared with `poolcurl load`) | `-X -H -d --data-binary --data-raw` |
//! | [`ConnectArgs`] (shared with `poolcurl load`) | TLS, HTTP version, `--interface`, `--resolve`, `--connect-to`, `--unix-socket`, proxies, their authentication ([`ProxyAuthArgs`]) and TLS ([`ProxyTlsArgs`]) |
//! | [`SendArgs`] | `-A -e -u --json -G --data-urlencode -F -T -r -C -b -c --compressed --tr-encoding` |
//! | [`TransferArgs`] | outputs (`-o -O -D`), `--url`, globbing, `-Z`, `--retry`, `-# -N` |
//! | [`NetArgs`] | `-4 -6 --http1.0 --cert --key --tlsv1.x` |
//! | [`CompatArgs`] | flags accepted with no effect (`--basic`, `--tcp-nodelay`, ...) |
//!
//! [`unsupported`] lists the curl flags poolcurl deliberately does not take; every long
//! option of curl 7.88 is either taken or listed there (a unit test holds the list).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::ArgMatches;
use http::Method;
use http::header::{HeaderName, HeaderValue};

use super::trace::Style;

mod compat;
mod net;
pub(crate) mod parse;
mod proxy_auth;
mod proxy_choice;
mod proxy_tls;
mod send;
mod tls_choice;
mod transfer;
pub(crate) mod unsupported;

pub(crate) use compat::CompatArgs;
pub(crate) use net::NetArgs;
pub(crate) use parse::{parse_seconds, parse_size};
pub(crate) use proxy_auth::ProxyAuthArgs;
pub(crate) use proxy_choice::ProxyChoiceArgs;
pub(crate) use proxy_tls::ProxyTlsArgs;
pub(crate) use send::SendArgs;
pub(crate) use tls_choice::TlsChoiceArgs;
pub(crate) use transfer::TransferArgs;

use parse::{parse_header, parse_method};

/// `poolcurl [OPTIONS] URL...`: curl's flags with curl's meanings.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CurlArgs {
    /// The URLs to fetch, in order, through one connection pool (`{a,b}` and `[1-3]` expand)
    #[arg(value_name = "URL")]
    pub(crate) urls: Vec<String>,

    /// What each request sends: `-X`, `-H` and the data flags.
    #[command(flatten)]
    pub(crate) request: RequestArgs,

    /// What else requests carry: agent, referer, credentials, forms, uploads, cookies.
    #[command(flatten)]
    pub(crate) send: SendArgs,

    /// Where output goes and how transfers run: outputs, globbing, parallelism, retries.
    #[command(flatten)]
    pub(crate) transfer: TransferArgs,

    /// Include the response status line and headers in the output
    #[arg(short = 'i', long = "include")]
    pub(crate) include: bool,

    /// Send HEAD and show the response head only
    #[arg(short = 'I', long = "head")]
    pub(crate) head: bool,

    /// curl's `--no-head`: asks for a GET, which `-I`, `-F`, data without `-G` and `-T`
    /// conflict with, and turns `-i` off (see `negate`); hidden as curl's `--no-` forms are
    #[arg(long = "no-head", hide = true)]
    pub(crate) no_head: bool,

    /// Show the connection, the request and response heads on stderr
    #[arg(short = 'v', long = "verbose", overrides_with_all = ["trace", "trace_ascii"])]
    pub(crate) verbose: bool,

    /// Write -v's trace with every byte sent and received, in hex, to FILE ("-": stdout,
    /// "%": stderr)
    #[arg(long = "trace", value_name = "FILE", overrides_with_all = ["verbose", "trace_ascii"])]
    pub(crate) trace: Option<String>,

    /// As --trace, the bytes as text (64 a line, a line per CRLF)
    #[arg(long = "trace-ascii", value_name = "FILE", overrides_with_all = ["verbose", "trace"])]
    pub(crate) trace_ascii: Option<String>,

    /// Silent mode: no error messages and no progress bar
    #[arg(short = 's', long = "silent")]
    pub(crate) silent: bool,

    /// Do not read ~/.curlrc (only as the first argument; anywhere else it does nothing, as in
    /// curl)
    #[arg(short = 'q', long = "disable")]
    _disable: bool,

    /// With -s, show error messages anyway
    #[arg(short = 'S', long = "show-error")]
    pub(crate) show_error: bool,

    /// Start each -v (or --trace) line with the local time (HH:MM:SS.micros)
    #[arg(long = "trace-time")]
    pub(crate) trace_time: bool,

    /// Write what goes to stderr (-v, errors, warnings, the -# bar) to FILE instead ("-": stdout)
    #[arg(long = "stderr", value_name = "FILE")]
    pub(crate) stderr: Option<String>,

    /// Fail on HTTP errors (status >= 400) without output, exit code 22
    #[arg(short = 'f', long = "fail")]
    pub(crate) fail: bool,

    /// Follow redirects (301, 302, 303, 307, 308)
    #[arg(short = 'L', long = "location")]
    pub(crate) location: bool,

    /// Like -L, and -u, -H Authorization and -H Cookie go to every host redirected to
    #[arg(long = "location-trusted")]
    pub(crate) location_trusted: bool,

    /// With -L, keep a POST (and its data) after a 301 instead of turning it into a GET
    #[arg(long = "post301")]
    pub(crate) post301: bool,

    /// With -L, keep a POST (and its data) after a 302 instead of turning it into a GET
    #[arg(long = "post302")]
    pub(crate) post302: bool,

    /// With -L, keep a POST (and its data) after a 303 instead of turning it into a GET
    #[arg(long = "post303")]
    pub(crate) post303: bool,

    /// Allow only these protocols (curl's syntax: "=https", "-http", "-all,+https")
    #[arg(long = "proto", value_name = "PROTOCOLS", allow_hyphen_values = true)]
    pub(crate) proto: Option<String>,

    /// Allow only these protocols for redirect targets (as --proto)
    #[arg(
        long = "proto-redir",
        value_name = "PROTOCOLS",
        allow_hyphen_values = true
    )]
    pub(crate) proto_redir: Option<String>,

    /// The scheme of URLs given without one (default http)
    #[arg(long = "proto-default", value_name = "SCHEME")]
    pub(crate) proto_default: Option<String>,

    /// Send the URL's path as given, with its /./ and /../ segments
    #[arg(long = "path-as-is")]
    pub(crate) path_as_is: bool,

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

    /// Address family, HTTP/1.0, client certificates, TLS versions.
    #[command(flatten)]
    pub(crate) net: NetArgs,

    /// curl flags that change nothing in poolcurl (`--basic`, `--tcp-nodelay`, ...).
    #[command(flatten)]
    pub(crate) compat: CompatArgs,

    /// Maximum time for each whole transfer, in seconds
    #[arg(short = 'm', long = "max-time", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) max_time: Option<Duration>,

    /// Print FORMAT after each transfer (%{http_code}, %{json}, %{stderr}, ...; @FILE reads it)
    #[arg(short = 'w', long = "write-out", value_name = "FORMAT")]
    pub(crate) write_out: Option<String>,
}

/// The flags that say what a request sends, shared by curl mode and `poolcurl load`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RequestArgs {
    /// Request method to use instead of GET/POST/HEAD
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = parse_method)]
    pub(crate) method: Option<Method>,

    /// Extra header "Name: value" (repeatable); "Name:" removes a default, "Name;" sends it empty; @FILE reads one per line (curl mode)
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = parse_header)]
    pub(crate) headers: Vec<HeaderArg>,

    /// HTTP POST data (repeatable, joined with &); @FILE reads a file without CR/LF
    #[arg(
        short = 'd',
        long = "data",
        visible_alias = "data-ascii",
        value_name = "DATA"
    )]
    pub(crate) data: Vec<String>,

    /// HTTP POST data sent as-is; @FILE reads a file byte for byte
    #[arg(long = "data-binary", value_name = "DATA")]
    pub(crate) data_binary: Vec<String>,

    /// HTTP POST data without @FILE interpretation
    #[arg(long = "data-raw", value_name = "DATA")]
    pub(crate) data_raw: Vec<String>,
}

/// The flags that say how connections are made, shared by curl mode and `poolcurl load`
/// (see [`super::setup`] for the pool settings they become). Equal flags make the same pool,
/// so the groups of a `--next` command line with equal flags share one.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub(crate) struct ConnectArgs {
    /// Accept any server certificate (insecure)
    #[arg(short = 'k', long = "insecure")]
    pub(crate) insecure: bool,

    /// Verify servers against the CA certificates in this PEM file (instead of the system's)
    #[arg(long = "cacert", value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,

    /// Reject server certificates this PEM certificate revocation list revokes
    #[arg(long = "crlfile", value_name = "FILE")]
    pub(crate) crlfile: Option<PathBuf>,

    /// Also trust the PEM certificates in these directories (DIR[:DIR...], a c_rehash directory too)
    #[arg(long = "capath", value_name = "DIR")]
    pub(crate) capath: Option<String>,

    /// Use HTTP/1.1 only
    #[arg(long = "http1.1", overrides_with_all = ["http2", "http2_prior_knowledge"])]
    pub(crate) http1_1: bool,

    /// Offer HTTP/2 by ALPN over TLS, accept HTTP/1.1 (cleartext URLs use HTTP/1.1)
    #[arg(long = "http2", overrides_with_all = ["http1_1", "http2_prior_knowledge"])]
    pub(crate) http2: bool,

    /// Speak HTTP/2 without negotiation on cleartext URLs (h2c)
    #[arg(long = "http2-prior-knowledge", overrides_with_all = ["http1_1", "http2"])]
    pub(crate) http2_prior_knowledge: bool,

    /// Bind connections to this network interface, or to this local IP address ("if!NAME" and "host!ADDRESS" say which)
    #[arg(long = "interface", value_name = "NAME", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub(crate) interface: Option<String>,

    /// Maximum time for establishing a connection (resolve, TCP, TLS), in seconds
    #[arg(long = "connect-timeout", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) connect_timeout: Option<Duration>,

    /// Resolve HOST:PORT to ADDR (repeatable; ADDR may be a bracketed IPv6 address; several separated by commas)
    #[arg(long = "resolve", value_name = "HOST:PORT:ADDR")]
    pub(crate) resolve: Vec<String>,

    /// Connect to HOST2:PORT2 for requests to HOST1:PORT1; TLS and Host keep the URL's host (repeatable; empty parts match any / keep the URL's)
    #[arg(long = "connect-to", value_name = "HOST1:PORT1:HOST2:PORT2")]
    pub(crate) connect_to: Vec<String>,

    /// Which proxy (`-x`, `--proxy1.0`, `--socks5`, ...).
    #[command(flatten)]
    pub(crate) proxy_choice: ProxyChoiceArgs,

    /// Hosts to reach without the proxy (comma-separated; "*" for all), instead of NO_PROXY
    #[arg(long = "noproxy", value_name = "LIST")]
    pub(crate) noproxy: Option<String>,

    /// The proxy's user and password (USER:PASSWORD; USER alone asks for the password)
    #[arg(short = 'U', long = "proxy-user", value_name = "USER:PASSWORD")]
    pub(crate) proxy_user: Option<String>,

    /// How -U's credentials are presented (`--proxy-basic`, `--proxy-digest`,
    /// `--proxy-anyauth`).
    #[command(flatten)]
    pub(crate) proxy_auth: ProxyAuthArgs,

    /// Extra header for the proxy alone (repeatable; @FILE reads one per line): on CONNECT, and on requests through a forward proxy
    #[arg(long = "proxy-header", value_name = "HEADER", value_parser = parse_header)]
    pub(crate) proxy_headers: Vec<HeaderArg>,

    /// Tunnel http:// URLs through the proxy with CONNECT too (https:// always are)
    #[arg(short = 'p', long = "proxytunnel")]
    pub(crate) proxytunnel: bool,

    /// An https:// proxy's own TLS settings (`--proxy-cacert`, `--proxy-insecure`, ...).
    #[command(flatten)]
    pub(crate) proxy_tls: ProxyTlsArgs,

    /// Connect through this Unix domain socket instead of the network (no proxy applies)
    #[arg(
        long = "unix-socket",
        value_name = "PATH",
        overrides_with = "abstract_unix_socket"
    )]
    pub(crate) unix_socket: Option<PathBuf>,

    /// As --unix-socket, with a name in Linux's abstract socket namespace
    #[arg(
        long = "abstract-unix-socket",
        value_name = "NAME",
        overrides_with = "unix_socket"
    )]
    pub(crate) abstract_unix_socket: Option<String>,
}

impl ConnectArgs {
    /// The proxy URL the flags name (see [`ProxyChoiceArgs::proxy_url`]).
    pub(crate) fn proxy_url(&self) -> Option<String> {
        self.proxy_choice.proxy_url()
    }

    /// The Unix socket `--unix-socket` or `--abstract-unix-socket` names, whichever came last;
    /// an abstract name is a path starting with a NUL byte, as tokio reads it.
    pub(crate) fn unix_socket(&self) -> Option<PathBuf> {
        match (&self.unix_socket, &self.abstract_unix_socket) {
            (Some(path), _) => Some(path.clone()),
            (None, Some(name)) => Some(PathBuf::from(format!("\0{name}"))),
            (None, None) => None,
        }
    }

    /// What `--interface` binds connections to, read as curl reads it: `if!NAME` is a
    /// device, `host!ADDRESS` and an IP address a local address, anything else a device.
    /// (curl also takes a host name to resolve; poolcurl takes it as a device name, which
    /// then fails to bind, exit 45.)
    pub(crate) fn bind(&self) -> Option<Bind<'_>> {
        let text = self.interface.as_deref()?;
        if let Some(device) = text.strip_prefix("if!") {
            return Some(Bind::Device(device));
        }
        let host = text.strip_prefix("host!").unwrap_or(text);
        let unbracketed = host.trim_start_matches('[').trim_end_matches(']');
        Some(match unbracketed.parse() {
            Ok(address) => Bind::Address(address),
            Err(_) => Bind::Device(host),
        })
    }
}

/// What connections are bound to ([`ConnectArgs::bind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bind<'a> {
    /// A network device, by name (`SO_BINDTODEVICE`).
    Device(&'a str),
    /// A local address.
    Address(std::net::IpAddr),
}

/// One `-H` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderArg {
    /// The header name.
    pub(crate) name: HeaderName,
    /// The name as typed (`x-Custom-ID`), which curl sends as it is.
    pub(crate) spelling: String,
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

/// One `--resolve HOST:PORT:ADDR[,ADDR...]` (or `-HOST:PORT`) argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolveArg {
    /// The host name, without brackets (`*`: every host on the port).
    pub(crate) host: String,
    /// The port the override applies to.
    pub(crate) port: u16,
    /// The addresses to connect to instead (with `port`); `None` for `-HOST:PORT`, which
    /// drops an earlier entry.
    pub(crate) addrs: Option<Vec<SocketAddr>>,
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
    /// `--json`: as `--data-binary`, and joined to the previous piece without `&`.
    Json(String),
    /// `--data-urlencode`: `content`, `=content`, `name=content`, `@file` or `name@file`,
    /// with the content percent-encoded.
    UrlEncode(String),
}

impl RequestArgs {
    /// The `-d`, `--data-binary` and `--data-raw` values in the order they were given (curl
    /// joins them in that order). `matches` are the matches of the command these flags belong
    /// to (the subcommand's for `poolcurl load`).
    pub(crate) fn data_in_order(&self, matches: &ArgMatches) -> Vec<DataArg> {
        let mut parts = DataOrder::default();
        parts.collect(matches, "data", &self.data, DataArg::Ascii);
        parts.collect(matches, "data_binary", &self.data_binary, DataArg::Binary);
        parts.collect(matches, "data_raw", &self.data_raw, DataArg::Raw);
        parts.finish()
    }
}

/// Data pieces of several flags, put back in command-line order.
#[derive(Debug, Default)]
struct DataOrder {
    parts: Vec<(usize, DataArg)>,
}

impl DataOrder {
    /// Adds the values of flag `id`, each at its command-line index.
    fn collect(
        &mut self,
        matches: &ArgMatches,
        id: &str,
        values: &[String],
        make: fn(String) -> DataArg,
    ) {
        let indices: Vec<usize> = matches
            .indices_of(id)
            .map(Iterator::collect)
            .unwrap_or_default();
        for (i, value) in values.iter().enumerate() {
            // clap records an index for every value; the stable sort keeps listing order
            // should one be missing.
            let index = indices.get(i).copied().unwrap_or(usize::MAX);
            self.parts.push((index, make(value.clone())));
        }
    }

    fn finish(mut self) -> Vec<DataArg> {
        self.parts.sort_by_key(|(index, _)| *index);
        self.parts.into_iter().map(|(_, part)| part).collect()
    }
}

impl CurlArgs {
    /// `--trace` or `--trace-ascii`, whichever came last (clap keeps only the last of the
    /// two and `-v`): the style and the file.
    pub(crate) fn trace(&self) -> Option<(Style, &str)> {
        match (&self.trace, &self.trace_ascii) {
            (Some(path), _) => Some((Style::Hex, path)),
            (None, Some(path)) => Some((Style::Ascii, path)),
            (None, None) => None,
        }
    }

    /// Whether `-X` names HEAD (in any case, as curl compares it) without `-I`: curl warns
    /// that this may not do what the user wants.
    pub(crate) fn custom_head(&self) -> bool {
        !self.head
            && self
                .request
                .method
                .as_ref()
                .is_some_and(|method| method.as_str().eq_ignore_ascii_case("HEAD"))
    }

    /// The method `-X` names when it is the one curl would infer anyway (case aside): HEAD
    /// for `-I`, PUT for `-T`, POST for request data or a form (with `-G` too, as curl
    /// infers it), GET otherwise. curl's `-v` notes that such a `-X` is unnecessary.
    pub(crate) fn unnecessary_method(&self) -> Option<&'static str> {
        let method = self.request.method.as_ref()?;
        let request = &self.request;
        let send = &self.send;
        let data = !(request.data.is_empty()
            && request.data_binary.is_empty()
            && request.data_raw.is_empty()
            && send.json.is_empty()
            && send.data_urlencode.is_empty()
            && send.form.is_empty()
            && send.form_string.is_empty());
        let inferred = if self.head {
            "HEAD"
        } else if !send.upload_file.is_empty() {
            "PUT"
        } else if data {
            "POST"
        } else {
            "GET"
        };
        method
            .as_str()
            .eq_ignore_ascii_case(inferred)
            .then_some(inferred)
    }

    /// Every request data piece of curl mode in command-line order: the shared data flags,
    /// `--json` and `--data-urlencode`.
    pub(crate) fn data_in_order(&self, matches: &ArgMatches) -> Vec<DataArg> {
        let mut parts = DataOrder::default();
        parts.collect(matches, "data", &self.request.data, DataArg::Ascii);
        parts.collect(
            matches,
            "data_binary",
            &self.request.data_binary,
            DataArg::Binary,
        );
        parts.collect(matches, "data_raw", &self.request.data_raw, DataArg::Raw);
        parts.collect(matches, "json", &self.send.json, DataArg::Json);
        parts.collect(
            matches,
            "data_urlencode",
            &self.send.data_urlencode,
            DataArg::UrlEncode,
        );
        parts.finish()
    }

    /// `--max-redirs` as a limit; `None` is unlimited.
    pub(crate) fn redirect_limit(&self) -> Option<u32> {
        u32::try_from(self.max_redirs).ok()
    }
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
    fn interface_names_a_device_or_a_local_address_as_curl_reads_it() {
        let bind = |value: &str| {
            let (args, _) = parse(&["--interface", value, "http://x/"]);
            args.connect.bind().map(|b| format!("{b:?}"))
        };
        assert_eq!(bind("eth0").unwrap(), "Device(\"eth0\")");
        assert_eq!(bind("if!eth0").unwrap(), "Device(\"eth0\")");
        assert_eq!(bind("if!10.0.0.1").unwrap(), "Device(\"10.0.0.1\")");
        assert_eq!(bind("10.0.0.1").unwrap(), "Address(10.0.0.1)");
        assert_eq!(bind("host!10.0.0.1").unwrap(), "Address(10.0.0.1)");
        assert_eq!(bind("[::1]").unwrap(), "Address(::1)");
        let (args, _) = parse(&["http://x/"]);
        assert_eq!(args.connect.bind(), None);
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
            args.data_in_order(&matches),
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
