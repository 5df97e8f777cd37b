//! `poolcurl`: a curl-like client on the `pool` crate.
//!
//! `poolcurl [OPTIONS] URL...` is curl mode: curl's flags, output and exit codes, with every URL
//! of one invocation sent through one [`pool::ConnectionPool`], so same-origin URLs reuse a
//! connection and `-v` / `-w` report what the pool did (partition, connection id, reuse). See
//! the [`curl`] module.
//!
//! # Adding subcommands
//!
//! The command line is laid out so that subcommands (`poolcurl load ...`, `poolcurl serve ...`)
//! can be added without disturbing curl mode: [`Cli`] already sets
//! `args_conflicts_with_subcommands` and `subcommand_negates_reqs`, so adding
//!
//! ```text
//! #[command(subcommand)]
//! command: Option<Command>,
//! ```
//!
//! to [`Cli`] (with a `#[derive(clap::Subcommand)] enum Command`) makes `poolcurl load ...` parse
//! as the subcommand, while `poolcurl URL...` keeps requiring its URLs; `main` then dispatches on
//! `cli.command` and falls back to [`curl::run`].

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

mod curl;

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "poolcurl",
    version,
    about = "A curl-like HTTP/1.1 + HTTP/2 client on a connection pool",
    long_about = "A curl-like HTTP/1.1 + HTTP/2 client on a connection pool.\n\n\
        All URLs of one invocation go through one pool, so same-origin URLs reuse the \
        connection; -v and -w show the partition and connection that served each response.",
    args_override_self = true,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    /// curl mode: `poolcurl [OPTIONS] URL...`.
    #[command(flatten)]
    curl: curl::CurlArgs,
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    curl::run(cli.curl, &matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
