//! `poolcurl`: a curl-like client on the `pool` crate.
//!
//! * `poolcurl [OPTIONS] URL...` is curl mode: curl's flags, output and exit codes, with every
//!   URL of one invocation sent through one [`pool::ConnectionPool`], so same-origin URLs reuse
//!   a connection and `-v` / `-w` report what the pool did (partition, connection id, reuse).
//!   See the [`curl`] module.
//! * `poolcurl load [OPTIONS] [URL...]` drives concurrent load through the partitions of one
//!   pool and summarizes what happened, the pool's view included. See the [`load`] module.
//! * `poolcurl serve` runs the built-in local origin that `load --local` uses. See the
//!   [`origin`] module.
//!
//! # Subcommands and curl mode
//!
//! [`Cli`] sets `args_conflicts_with_subcommands` and `subcommand_negates_reqs`, so `poolcurl
//! load ...` parses as the subcommand while `poolcurl URL...` keeps requiring its URLs; `main`
//! dispatches on `cli.command` and falls back to [`curl::run`]. A consequence: a curl-mode URL
//! spelled exactly `load` or `serve` (no scheme, no port) is taken as the subcommand; write
//! `http://load` for that host.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

#[allow(unsafe_code)]
mod alloc;
mod curl;
mod load;
mod log;
mod origin;
#[cfg(test)]
mod scratch;

/// mimalloc instead of the system allocator: a load run allocates and frees a few small blocks
/// per request on every partition thread, where glibc's malloc cost about 6% of the CPU a
/// request takes (oha, for comparison, links jemalloc). See [`alloc`] for how it is called.
#[global_allocator]
static ALLOCATOR: alloc::Mimalloc = alloc::Mimalloc;

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "poolcurl",
    version = curl::version::text(),
    about = "A curl-like HTTP/1.1 + HTTP/2 client on a connection pool",
    long_about = "A curl-like HTTP/1.1 + HTTP/2 client on a connection pool.\n\n\
        All URLs of one invocation go through one pool, so same-origin URLs reuse the \
        connection; -v and -w show the partition and connection that served each response.\n\n\
        `poolcurl load` drives concurrent load through the pool's partitions and shows what the \
        pool did (try `poolcurl load --local`); `poolcurl serve` runs the local origin it uses.\n\n\
        POOLCURL_LOG=FILTER prints the libraries' own log to stderr (h2=debug: every HTTP/2 \
        frame; pool=debug: the pool's decisions).",
    after_help = curl::args::unsupported::help(),
    args_override_self = true,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    /// `load` or `serve`; none is curl mode.
    #[command(subcommand)]
    command: Option<Command>,

    /// curl mode: `poolcurl [OPTIONS] URL...`.
    #[command(flatten)]
    curl: curl::CurlArgs,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Drive concurrent load through the partitions of one pool and show what the pool did
    Load(Box<load::LoadArgs>),
    /// Run the built-in local origin (HTTP/1.1, h2c, TLS+ALPN) until Ctrl-C
    Serve(origin::ServeArgs),
}

fn main() -> ExitCode {
    log::init();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let curl_mode = curl::usage::is_curl_mode(&argv);
    let mut groups = if curl_mode {
        match curl::usage::prepare(argv, &Cli::command()) {
            Ok(groups) => groups.into_iter(),
            Err(code) => return code,
        }
    } else {
        vec![argv].into_iter()
    };
    let argv = groups.next().unwrap_or_default();
    let matches = match Cli::command().try_get_matches_from(&argv) {
        Ok(matches) => matches,
        Err(error) if curl_mode => return curl::usage::clap_error(&error, &argv),
        Err(error) => error.exit(),
    };
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli.command {
        Some(Command::Load(args)) => {
            let sub = matches.subcommand_matches("load").unwrap_or(&matches);
            load::run(*args, sub)
        }
        Some(Command::Serve(args)) => origin::serve::run(args),
        None => {
            // The groups after a `--next`: curl mode only (a URL spelled `load` there is a
            // URL).
            let mut parsed = vec![(cli.curl, matches)];
            for argv in groups {
                let group = curl_group_command()
                    .try_get_matches_from(&argv)
                    .and_then(|m| Ok((curl::CurlArgs::from_arg_matches(&m)?, m)));
                match group {
                    Ok(group) => parsed.push(group),
                    Err(error) => return curl::usage::clap_error(&error, &argv),
                }
            }
            curl::run(parsed)
        }
    }
}

/// The command line of one group after a `--next`: curl mode's options, without subcommands.
fn curl_group_command() -> clap::Command {
    let command = clap::Command::new("poolcurl")
        .version(env!("CARGO_PKG_VERSION"))
        .after_help(curl::args::unsupported::help())
        .args_override_self(true);
    <curl::CurlArgs as clap::Args>::augment_args(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        curl_group_command().debug_assert();
    }
}
