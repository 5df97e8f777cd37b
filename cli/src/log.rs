//! The libraries' own log, on request: `POOLCURL_LOG`.
//!
//! curl shows its protocol layers' chatter with `--trace-config` (curl 8.3 and later); the
//! layers under poolcurl (the pool's crates, hyper, h2, rustls) report through `tracing` and
//! `log` instead, and nothing of it is printed unless the user asks. `POOLCURL_LOG` asks: its
//! value is a filter in the `RUST_LOG` syntax of `tracing-subscriber`'s `EnvFilter`
//! (`h2=debug` for every HTTP/2 frame sent and received; `pool=debug` for the decisions of all
//! the pool's crates, since a target matches by prefix; `debug` for everything), and the
//! matching events go to stderr, one line each, plain text, with a UTC time stamp and the
//! emitting module.
//!
//! What this does not do: it is not `-v` or `--trace` (those are curl's and keep curl's
//! format), and it is read once at start, for curl mode, `load` and `serve` alike. An unset or
//! empty variable installs nothing, so the libraries' events stay disabled at their call
//! sites (one relaxed load each) and a run costs what it did before. A filter that does not
//! parse is said in one line on stderr and the run goes on without the log, as curl goes on
//! past a `--trace-config` word it does not know.

use std::ffi::OsString;

/// The variable read.
pub(crate) const VAR: &str = "POOLCURL_LOG";

/// Installs the stderr log when `POOLCURL_LOG` asks for it (see the module docs).
pub(crate) fn init() {
    let Some(value) = std::env::var_os(VAR) else {
        return;
    };
    if let Err(message) = install(&value) {
        eprintln!("poolcurl: {VAR}: {message}; going on without the log");
    }
}

fn install(value: &OsString) -> Result<(), String> {
    let Some(filter) = value.to_str() else {
        return Err("not valid UTF-8".to_owned());
    };
    if filter.trim().is_empty() {
        return Ok(());
    }
    let filter = tracing_subscriber::EnvFilter::builder()
        .parse(filter)
        .map_err(|e| e.to_string())?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init()
        .map_err(|e| e.to_string())
}
