//! The curl-mode flags that say where output goes and how the transfers run
//! ([`TransferArgs`]): output files and their metadata (`-R`, ETag files), header dumps, extra URLs and globbing, parallel transfers,
//! retries, and the progress display.

use std::path::PathBuf;
use std::time::Duration;

use super::parse::{self, parse_rate, parse_seconds, parse_size};

/// Outputs, URLs, parallelism and retries.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TransferArgs {
    /// Write the output of the next URL to FILE instead of stdout (repeatable, in URL order; #N is the Nth glob's value)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Vec<PathBuf>,

    /// Write the output of the next URL to a local file named like the URL's last path segment
    // One value per occurrence, not a count: clap keeps a count's last index only, and the
    // plan pairs each occurrence with its URL by its place on the command line.
    #[arg(short = 'O', long = "remote-name", action = clap::ArgAction::Append, num_args = 0, default_missing_value = "")]
    pub(crate) remote_name: Vec<String>,

    /// Write the output of the next URL to stdout (an output slot, as -o and -O are: under --remote-name-all, the URL it pairs with goes to stdout)
    #[arg(long = "no-remote-name", action = clap::ArgAction::Append, num_args = 0, default_missing_value = "")]
    pub(crate) no_remote_name: Vec<String>,

    /// Use -O for every URL without an -o
    #[arg(long = "remote-name-all")]
    pub(crate) remote_name_all: bool,

    /// Create the directories an -o path names
    #[arg(long = "create-dirs")]
    pub(crate) create_dirs: bool,

    /// Put the files of -o, -O and -D in DIR (prefixed to each name as given, as curl does)
    #[arg(long = "output-dir", value_name = "DIR")]
    pub(crate) output_dir: Option<String>,

    /// Never overwrite an -o/-O file: write to NAME.1, NAME.2, ... (up to .100) instead
    #[arg(long = "no-clobber")]
    pub(crate) no_clobber: bool,

    /// Delete the -o/-O file of a transfer that fails
    #[arg(long = "remove-on-error")]
    pub(crate) remove_on_error: bool,

    /// Set an output file's time to the response's Last-Modified
    #[arg(short = 'R', long = "remote-time")]
    pub(crate) remote_time: bool,

    /// Store the URL (without credentials) and Content-Type in an output file's extended
    /// attributes (user.xdg.origin.url, user.mime_type)
    #[arg(long = "xattr")]
    pub(crate) xattr: bool,

    /// Read and write an HSTS cache in FILE: hosts it names, or that said so over HTTPS, get
    /// https:// only ("" keeps them for the transfer only)
    #[arg(long = "hsts", value_name = "FILE")]
    pub(crate) hsts: Option<String>,

    /// Read and write an Alt-Svc cache in FILE: an https:// origin's alternatives, used by later
    /// requests to it ("" keeps them for the transfer only)
    #[arg(long = "alt-svc", value_name = "FILE")]
    pub(crate) alt_svc: Option<String>,

    /// Save the response's ETag to FILE ("-" is stdout; emptied when each transfer starts)
    #[arg(long = "etag-save", value_name = "FILE")]
    pub(crate) etag_save: Option<PathBuf>,

    /// Send If-None-Match with the ETag FILE holds (as --etag-save wrote it)
    #[arg(long = "etag-compare", value_name = "FILE")]
    pub(crate) etag_compare: Option<String>,

    /// Write the response heads to FILE ("-" is stdout)
    #[arg(short = 'D', long = "dump-header", value_name = "FILE")]
    pub(crate) dump_header: Option<PathBuf>,

    /// Leave the proxy's answers to a tunnel's CONNECT out of -i, -I and -D output
    #[arg(long = "suppress-connect-headers")]
    pub(crate) suppress_connect_headers: bool,

    /// As -f, but write the response body before exiting 22
    #[arg(long = "fail-with-body")]
    pub(crate) fail_with_body: bool,

    /// With several URLs, start no transfer after one has failed; exit with the failure's code
    #[arg(long = "fail-early")]
    pub(crate) fail_early: bool,

    /// Another URL to fetch (repeatable; taken before the positional URLs)
    #[arg(long = "url", value_name = "URL")]
    pub(crate) url: Vec<String>,

    /// Take {} and [] in URLs literally (no globbing)
    #[arg(short = 'g', long = "globoff")]
    pub(crate) globoff: bool,

    /// Run the transfers in parallel through the one pool
    #[arg(short = 'Z', long = "parallel")]
    pub(crate) parallel: bool,

    /// With -Z, at most NUM transfers at once (at most 300; 0 means the default, 50)
    #[arg(
        long = "parallel-max",
        value_name = "NUM",
        default_value_t = 50,
        value_parser = parse::parse_parallel_max
    )]
    pub(crate) parallel_max: u16,

    /// Start at most N transfers per UNIT (s, m, h, d; N alone is per hour); no effect with -Z
    #[arg(long = "rate", value_name = "N/UNIT", value_parser = parse_rate)]
    pub(crate) rate: Option<Duration>,

    /// Retry a transfer that failed transiently (timeout, resolve, HTTP 408/429/500/502/503/504) up to NUM times
    #[arg(long = "retry", value_name = "NUM", default_value_t = 0)]
    pub(crate) retry: u64,

    /// Wait SECONDS before each retry (default: 1 s, doubling each time, or the server's Retry-After)
    #[arg(long = "retry-delay", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) retry_delay: Option<Duration>,

    /// Stop retrying once SECONDS have passed since the first attempt
    #[arg(long = "retry-max-time", value_name = "SECONDS", value_parser = parse_seconds)]
    pub(crate) retry_max_time: Option<Duration>,

    /// With --retry, retry after any error
    #[arg(long = "retry-all-errors")]
    pub(crate) retry_all_errors: bool,

    /// With --retry, also retry when the connection is refused
    #[arg(long = "retry-connrefused")]
    pub(crate) retry_connrefused: bool,

    /// Hold each response body to at most SPEED bytes per second, on average (k, M, G suffixes)
    #[arg(long = "limit-rate", value_name = "SPEED", value_parser = parse_size)]
    pub(crate) limit_rate: Option<u64>,

    /// Abort a transfer slower than BYTES per second for --speed-time seconds (exit 28)
    #[arg(short = 'Y', long = "speed-limit", value_name = "BYTES")]
    pub(crate) speed_limit: Option<u64>,

    /// The seconds --speed-limit is judged over (default 30)
    #[arg(short = 'y', long = "speed-time", value_name = "SECONDS")]
    pub(crate) speed_time: Option<u64>,

    /// Send If-Modified-Since TIME (a date, or a file's modification time); -TIME sends If-Unmodified-Since
    #[arg(
        short = 'z',
        long = "time-cond",
        value_name = "TIME",
        allow_hyphen_values = true
    )]
    pub(crate) time_cond: Option<String>,

    /// With -O, name the file after the response's Content-Disposition filename (never overwriting one)
    #[arg(short = 'J', long = "remote-header-name")]
    pub(crate) remote_header_name: bool,

    /// Refuse a response body over SIZE bytes (k, M, G suffixes; 0: no limit): exit 63
    #[arg(long = "max-filesize", value_name = "SIZE", value_parser = parse_size)]
    pub(crate) max_filesize: Option<u64>,

    /// Show a progress bar on stderr
    #[arg(short = '#', long = "progress-bar")]
    pub(crate) progress_bar: bool,

    /// Show no progress display (not even -#'s bar); errors still print
    #[arg(long = "no-progress-meter")]
    pub(crate) no_progress_meter: bool,

    /// Write the output as it arrives, flushing after every piece
    #[arg(short = 'N', long = "no-buffer")]
    pub(crate) no_buffer: bool,

    /// Read more options from FILE (one per line: "--flag value", "flag = value", "url = ..."; "-" is stdin)
    #[arg(short = 'K', long = "config", value_name = "FILE")]
    pub(crate) config: Vec<PathBuf>,

    /// Start another set of options for the URLs that follow (-v, -s, -S, -Z, --rate, --fail-early and the progress flags apply to all)
    #[arg(short = ':', long = "next")]
    pub(crate) next: bool,
}
