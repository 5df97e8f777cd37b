//! `poolcurl load`'s command line.
//!
//! The request flags (`-X -H -d --data-binary --data-raw`) and connection flags (`-k --cacert
//! --http1.1 --http2 --http2-prior-knowledge --interface --connect-timeout --resolve`) are curl
//! mode's own groups ([`RequestArgs`], [`ConnectArgs`]), flattened here, so both modes spell and
//! validate them identically. Everything else is load mode's: volume (`-n`, `-z`), concurrency
//! (`-c`, `--rate`, `--partitions`), pool settings and output.
//!
//! Every value is checked while parsing, so a bad value is clap's usage error (exit 2). The
//! combinations clap cannot express (`--local` with full URLs, paths without `--local`) are
//! checked by [`super::run`] and reported the same way.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, ValueEnum};
use http::Uri;

use super::volume::{Volume, parse_count, parse_duration};
use crate::curl::args::{ConnectArgs, RequestArgs, parse_seconds, parse_size};
use crate::curl::url::parse_url;

/// The volume when neither `-n` nor `-z` is given, for URLs (oha's and hey's default).
pub(crate) const DEFAULT_REQUESTS: u64 = 200;

/// The volume when neither `-n` nor `-z` is given with `--local`: long enough to watch.
pub(crate) const DEFAULT_LOCAL_DURATION: Duration = Duration::from_secs(5);

/// `poolcurl load [OPTIONS] [URL]...`
#[derive(Debug, Clone, clap::Args)]
#[command(
    about = "Drive concurrent load through the partitions of one pool and show what the pool did",
    long_about = "Drive concurrent load through the partitions of one pool and show what the \
        pool did: requests, latency percentiles, status codes and errors, and the pool's view \
        (connections opened and why they closed, reuse, permit waits, per-partition counts).\n\n\
        Several URLs (arguments, or one per line of --urls-file) are used round-robin, each \
        worker starting at a different one; the summary breaks requests and connections down \
        by origin. With --local, an origin is started in-process on loopback and the \
        arguments are paths on it (/, /bytes/N, /delay/MS, /status/CODE, /close).\n\n\
        Exit status: 0 when every request succeeded, 1 when any failed or was aborted, 2 for \
        bad flags.",
    args_override_self = true
)]
pub(crate) struct LoadArgs {
    /// URLs to load, round-robin; with --local, paths on the local origin (default /)
    #[arg(
        value_name = "URL",
        required_unless_present_any = ["local", "urls_file"],
        value_parser = parse_target
    )]
    pub(crate) targets: Vec<Target>,

    /// Read more URLs from FILE, one per line (blank lines and lines starting with # are skipped)
    #[arg(long = "urls-file", value_name = "FILE", help_heading = "Load")]
    pub(crate) urls_file: Option<PathBuf>,

    /// Number of requests (10k, 1m) [default: 200, or 5s of load with --local]
    #[arg(
        short = 'n',
        long = "requests",
        value_name = "N",
        value_parser = parse_count,
        conflicts_with = "duration",
        help_heading = "Load"
    )]
    pub(crate) requests: Option<u64>,

    /// Send requests for this long (30s, 2m, 500ms); in-flight requests then finish and count
    #[arg(
        short = 'z',
        long = "duration",
        value_name = "DURATION",
        value_parser = parse_duration,
        help_heading = "Load"
    )]
    pub(crate) duration: Option<Duration>,

    /// Requests in flight at once (not connections)
    #[arg(
        short = 'c',
        long = "concurrency",
        value_name = "N",
        default_value_t = 50,
        value_parser = clap::value_parser!(u32).range(1..=100_000),
        help_heading = "Load"
    )]
    pub(crate) concurrency: u32,

    /// Open loop: start requests on a fixed schedule of QPS per second, latency measured from the scheduled time
    #[arg(long = "rate", value_name = "QPS", value_parser = parse_rate, help_heading = "Load")]
    pub(crate) rate: Option<f64>,

    /// Ramp up over this long (10s): closed loop starts the -c workers one by one, open loop raises the rate from 0 to --rate
    #[arg(
        long = "ramp",
        value_name = "DURATION",
        value_parser = parse_duration,
        help_heading = "Load"
    )]
    pub(crate) ramp: Option<Duration>,

    /// Partitions of the pool, each a single-threaded runtime on its own thread [default: one per CPU, at most -c]
    #[arg(
        long = "partitions",
        value_name = "P",
        value_parser = clap::value_parser!(u32).range(1..=1024),
        help_heading = "Load"
    )]
    pub(crate) partitions: Option<u32>,

    /// Maximum time for each request (head and body), in seconds; a request over it is a timeout error
    #[arg(
        short = 'm',
        long = "max-time",
        value_name = "SECONDS",
        value_parser = parse_seconds,
        help_heading = "Load"
    )]
    pub(crate) max_time: Option<Duration>,

    /// Count responses with status >= 400 as failures (errors.http)
    #[arg(short = 'f', long = "fail", help_heading = "Load")]
    pub(crate) fail: bool,

    /// Bound each origin to N connections across all partitions
    #[arg(
        long = "max-connections-per-host",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = "Pool"
    )]
    pub(crate) max_connections_per_host: Option<u64>,

    /// Let at most N requests per origin wait for a connection; more fail at once (saturated)
    #[arg(
        long = "max-pending-per-host",
        value_name = "N",
        requires = "max_connections_per_host",
        value_parser = clap::value_parser!(u64),
        help_heading = "Pool"
    )]
    pub(crate) max_pending_per_host: Option<u64>,

    /// Which partitions may use each other's connections
    #[arg(
        long = "reuse-scope",
        value_name = "SCOPE",
        value_enum,
        default_value_t = ReuseScope::Interface,
        help_heading = "Pool"
    )]
    pub(crate) reuse_scope: ReuseScope,

    /// How long a partition below its share of a bounded origin's connections waits before
    /// a connection moves to it (20ms, 0s) [default: 20ms]
    #[arg(
        long = "placement-tolerance",
        value_name = "DURATION",
        value_parser = parse_duration,
        help_heading = "Pool"
    )]
    pub(crate) placement_tolerance: Option<Duration>,

    /// Close connections idle this long, in seconds; 0 or "none" keeps them [default: 90]
    #[arg(
        long = "idle-timeout",
        value_name = "SECONDS",
        value_parser = parse_idle_timeout,
        help_heading = "Pool"
    )]
    pub(crate) idle_timeout: Option<IdleTimeout>,

    /// Keep at most N idle HTTP/1 connections per origin in each partition; more close as they come back (0: keep none) [default: no limit]
    #[arg(
        long = "max-idle-per-host",
        value_name = "N",
        value_parser = clap::value_parser!(u64),
        help_heading = "Pool"
    )]
    pub(crate) max_idle_per_host: Option<u64>,

    /// Keep at most N idle HTTP/1 connections in the whole pool, every origin and partition together; past it the one idle longest closes (0: keep none) [default: no limit]
    #[arg(
        long = "max-idle-connections",
        value_name = "N",
        value_parser = clap::value_parser!(u64),
        help_heading = "Pool"
    )]
    pub(crate) max_idle_connections: Option<u64>,

    /// Retire connections older than this (30s, 2m); HTTP/2 is renewed before it drains
    #[arg(
        long = "max-connection-lifetime",
        value_name = "DURATION",
        value_parser = parse_duration,
        help_heading = "Pool"
    )]
    pub(crate) max_connection_lifetime: Option<Duration>,

    /// Fail a request that waits this long for a connection (queueing only)
    #[arg(
        long = "pool-timeout",
        value_name = "DURATION",
        value_parser = parse_duration,
        help_heading = "Pool"
    )]
    pub(crate) pool_timeout: Option<Duration>,

    /// HTTP/2 connections per partition and origin when every one is at the server's stream
    /// limit [default: 16]
    #[arg(
        long = "http2-max-connections",
        value_name = "N",
        help_heading = "Pool"
    )]
    pub(crate) http2_max_connections: Option<u64>,

    /// HTTP/2 receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE; k, M or G suffix)
    /// [default: 2M]
    #[arg(
        long = "http2-stream-window",
        value_name = "SIZE",
        value_parser = parse_stream_window,
        help_heading = "Pool"
    )]
    pub(crate) http2_stream_window: Option<u32>,

    /// Before the run, open N connections per partition and origin (reported apart; under --max-connections-per-host, at most each partition's equal share of it)
    #[arg(long = "preconnect", value_name = "N", help_heading = "Pool")]
    pub(crate) preconnect: Option<u64>,

    /// What each request sends.
    #[command(flatten, next_help_heading = "Request")]
    pub(crate) request: RequestArgs,

    /// How connections are made.
    #[command(flatten, next_help_heading = "Connection")]
    pub(crate) connect: ConnectArgs,

    /// Start an origin in-process on loopback and load it (HTTP/1.1; h2c with --http2-prior-knowledge; TLS+ALPN with --http2)
    #[arg(long = "local", help_heading = "Local origin")]
    pub(crate) local: bool,

    /// Worker threads of the local origin's runtime
    #[arg(
        long = "local-threads",
        value_name = "N",
        default_value_t = 2,
        requires = "local",
        value_parser = clap::value_parser!(u32).range(1..=64),
        help_heading = "Local origin"
    )]
    pub(crate) local_threads: u32,

    /// Summary format on stdout
    #[arg(
        long = "output-format",
        value_name = "FORMAT",
        value_enum,
        default_value_t = OutputFormat::Text,
        help_heading = "Output"
    )]
    pub(crate) output_format: OutputFormat,

    /// No progress display on stderr (it is also hidden when stderr is not a terminal)
    #[arg(long = "no-progress", action = ArgAction::SetTrue, help_heading = "Output")]
    pub(crate) no_progress: bool,
}

impl LoadArgs {
    /// `--partitions`, or one per CPU the process may run on (as oha's and hey's runtimes
    /// have one worker per CPU), but no more than the `-c` workers that would use them.
    pub(crate) fn partition_count(&self) -> usize {
        match self.partitions {
            Some(p) => usize::try_from(p).unwrap_or(1),
            None => {
                let cpus = std::thread::available_parallelism().map_or(1, usize::from);
                cpus.min(usize::try_from(self.concurrency).unwrap_or(1))
                    .max(1)
            }
        }
    }

    /// The volume asked for, or the default.
    pub(crate) fn volume(&self) -> Volume {
        match (self.requests, self.duration) {
            (Some(n), _) => Volume::Requests(n),
            (None, Some(z)) => Volume::Duration(z),
            (None, None) if self.local => Volume::Duration(DEFAULT_LOCAL_DURATION),
            (None, None) => Volume::Requests(DEFAULT_REQUESTS),
        }
    }
}

/// One positional argument: a URL, or (with `--local`) a path on the local origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// An absolute `http` or `https` URL (curl's rules: a missing scheme is `http://`).
    Url(Uri),
    /// A path starting with `/`.
    Path(String),
}

/// `--reuse-scope`, the pool's [`pool::ConnectionReuseScope`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReuseScope {
    /// A connection serves only the partition that owns it
    Partition,
    /// Partitions bound to the same --interface (or none) share connections (the pool's default)
    Interface,
    /// Every partition may use every connection
    Pool,
}

impl ReuseScope {
    /// The pool's setting.
    pub(crate) fn to_pool(self) -> pool::ConnectionReuseScope {
        match self {
            ReuseScope::Partition => pool::ConnectionReuseScope::Partition,
            ReuseScope::Interface => pool::ConnectionReuseScope::NetworkInterface,
            ReuseScope::Pool => pool::ConnectionReuseScope::Pool,
        }
    }

    /// The flag value, for the summary.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReuseScope::Partition => "partition",
            ReuseScope::Interface => "interface",
            ReuseScope::Pool => "pool",
        }
    }
}

/// `--idle-timeout`: `Some` duration, or `None` for "keep idle connections".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdleTimeout(pub(crate) Option<Duration>);

/// `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// A human-readable summary
    Text,
    /// One JSON object (schema poolcurl.load/1, see docs/load-json.md)
    Json,
    /// The run second by second, as CSV (requests, failures, rps, latency, connections)
    Csv,
}

/// Parses a positional argument (or a line of `--urls-file`): a path if it starts with `/`,
/// else a URL by curl's rules.
pub(crate) fn parse_target(text: &str) -> Result<Target, String> {
    if text.starts_with('/') {
        return match text.parse::<http::uri::PathAndQuery>() {
            Ok(_) => Ok(Target::Path(text.to_owned())),
            Err(_) => Err(format!("{text:?} is not a valid path")),
        };
    }
    parse_url(text)
        .map(Target::Url)
        .map_err(|e| e.message().to_owned())
}

/// Parses `--rate`: a positive, finite number of requests per second.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!(
            "expected a positive number of requests per second, got {text:?}"
        )),
    }
}

/// Parses `--idle-timeout`: seconds, with `0` and `none` disabling the timeout.
fn parse_idle_timeout(text: &str) -> Result<IdleTimeout, String> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(IdleTimeout(None));
    }
    let timeout = parse_seconds(text)?;
    Ok(IdleTimeout(Some(timeout).filter(|t| !t.is_zero())))
}

/// Parses `--http2-stream-window`: a size (`k`, `M` or `G` suffix, powers of 1024) of at most
/// 2^31-1 bytes, the largest window HTTP/2 allows (RFC 9113 §6.9.1), and not 0, which would
/// hold every response body back for good.
fn parse_stream_window(text: &str) -> Result<u32, String> {
    let size = parse_size(text)?;
    if size == 0 {
        return Err("a window of 0 bytes would stall every response body".to_owned());
    }
    u32::try_from(size)
        .ok()
        .filter(|size| *size <= i32::MAX as u32)
        .ok_or_else(|| format!("an HTTP/2 window is at most 2147483647 bytes, got {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_paths_or_urls() {
        assert_eq!(
            parse_target("/bytes/10"),
            Ok(Target::Path("/bytes/10".into()))
        );
        assert_eq!(
            parse_target("localhost:8080/x"),
            Ok(Target::Url("http://localhost:8080/x".parse().unwrap()))
        );
        assert!(parse_target("ftp://a/").is_err());
        assert!(parse_target("/a b").is_err());
    }

    #[test]
    fn idle_timeout_zero_and_none_disable() {
        assert_eq!(parse_idle_timeout("none"), Ok(IdleTimeout(None)));
        assert_eq!(parse_idle_timeout("0"), Ok(IdleTimeout(None)));
        assert_eq!(
            parse_idle_timeout("2.5"),
            Ok(IdleTimeout(Some(Duration::from_millis(2_500))))
        );
        assert!(parse_idle_timeout("soon").is_err());
    }

    /// `LoadArgs` from a `load` command line.
    fn load_args(argv: &[&str]) -> LoadArgs {
        use clap::{Args, FromArgMatches};
        let command = LoadArgs::augment_args(clap::Command::new("load"));
        let matches = command
            .try_get_matches_from(std::iter::once("load").chain(argv.iter().copied()))
            .unwrap();
        LoadArgs::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn partitions_default_to_one_per_cpu_but_no_more_than_the_workers() {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let url = "http://127.0.0.1:1/";
        assert_eq!(load_args(&[url, "-c", "1000"]).partition_count(), cpus);
        assert_eq!(load_args(&[url, "-c", "1"]).partition_count(), 1);
        assert_eq!(load_args(&[url, "--partitions", "3"]).partition_count(), 3);
        assert_eq!(
            load_args(&[url, "-c", "1", "--partitions", "3"]).partition_count(),
            3,
            "as asked"
        );
    }

    #[test]
    fn rates_are_positive() {
        assert_eq!(parse_rate("250"), Ok(250.0));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-3").is_err());
        assert!(parse_rate("inf").is_err());
    }
}
