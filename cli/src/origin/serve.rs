//! `poolcurl serve`: the local origin in the foreground until Ctrl-C (or SIGTERM).
//!
//! It prints one line per listener, then the CA file and the routes, on stdout (line by line,
//! so a script or test can read the URLs as they appear):
//!
//! ```text
//! http1  http://127.0.0.1:41231/
//! h2c    http://127.0.0.1:39555/
//! https  https://127.0.0.1:40861/
//! ca     /tmp/poolcurl-serve-4242/ca.pem
//! paths  / /bytes/N /delay/MS /status/CODE /close
//! ```
//!
//! `--port`, `--h2c-port` and `--tls-port` fix the listeners' ports (0, the default, picks a
//! free one) and `--bind` their address (default 127.0.0.1), so documented commands such as
//! `poolcurl serve --port 8080 --tls-port 8443` can be followed by curl-mode examples as
//! written. The TLS certificate names `localhost`, `127.0.0.1` and `::1`. `--unix-socket PATH`
//! adds an HTTP/1.1 listener on that path (a `unix` line), for `--unix-socket` examples; the
//! socket file is removed on Ctrl-C or SIGTERM.
//!
//! The CA certificate is written to `--ca-dir` (created if needed), or to a fresh directory
//! under the system's temporary directory, which is removed again on Ctrl-C or SIGTERM. A
//! process killed outright leaves the directory behind.

use std::io::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::{Flavor, LocalOrigin};

/// `poolcurl serve [OPTIONS]`
#[derive(Debug, Clone, clap::Args)]
#[command(
    about = "Run the built-in local origin (HTTP/1.1, h2c, TLS+ALPN) until Ctrl-C",
    long_about = "Run the built-in local origin in the foreground until Ctrl-C: HTTP/1.1 \
        cleartext, h2c (HTTP/2 with prior knowledge) and TLS with ALPN h2/http1.1, on ephemeral \
        loopback ports (or the --port, --h2c-port, --tls-port and --bind you give), with a CA \
        made at start. Prints the three URLs and the CA file.\n\n\
        Paths: / (small body), /bytes/N, /delay/MS, /status/CODE, /close (Connection: close). \
        --unix-socket PATH also serves HTTP/1.1 on a Unix domain socket.",
    args_override_self = true
)]
pub(crate) struct ServeArgs {
    /// Worker threads of the origin's runtime
    #[arg(
        long = "threads",
        value_name = "N",
        default_value_t = 2,
        value_parser = clap::value_parser!(u32).range(1..=64)
    )]
    pub(crate) threads: u32,

    /// Write ca.pem into this directory (default: a temporary directory removed on exit)
    #[arg(long = "ca-dir", value_name = "DIR")]
    pub(crate) ca_dir: Option<PathBuf>,

    /// Port of the HTTP/1.1 listener (0: any free port)
    #[arg(long = "port", value_name = "PORT", default_value_t = 0)]
    pub(crate) port: u16,

    /// Port of the h2c (HTTP/2 with prior knowledge) listener (0: any free port)
    #[arg(long = "h2c-port", value_name = "PORT", default_value_t = 0)]
    pub(crate) h2c_port: u16,

    /// Port of the TLS listener, ALPN h2 and http/1.1 (0: any free port)
    #[arg(long = "tls-port", value_name = "PORT", default_value_t = 0)]
    pub(crate) tls_port: u16,

    /// Address the listeners bind to (0.0.0.0 or :: for every interface)
    #[arg(long = "bind", value_name = "ADDR", default_value = "127.0.0.1")]
    pub(crate) bind: IpAddr,

    /// Also serve HTTP/1.1 on a Unix domain socket at this path (removed on exit)
    #[arg(long = "unix-socket", value_name = "PATH")]
    pub(crate) unix_socket: Option<PathBuf>,
}

/// Runs `poolcurl serve`; returns when interrupted.
pub(crate) fn run(args: ServeArgs) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("poolcurl serve: {error:#}");
            ExitCode::from(1)
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let threads = usize::try_from(args.threads).unwrap_or(1);
    let origin = LocalOrigin::start_on(
        threads,
        args.bind,
        [args.port, args.h2c_port, args.tls_port],
    )?;
    let (dir, remove_dir) = match args.ca_dir {
        Some(dir) => (dir, false),
        None => (
            std::env::temp_dir().join(format!("poolcurl-serve-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, origin.ca_pem())
        .with_context(|| format!("writing {}", ca_path.display()))?;

    if let Some(path) = &args.unix_socket {
        origin.serve_unix(path)?;
    }
    let mut out = std::io::stdout().lock();
    for flavor in Flavor::ALL {
        writeln!(out, "{:<6} {}", flavor.label(), origin.url(flavor, "/"))?;
    }
    if let Some(path) = &args.unix_socket {
        writeln!(out, "{:<6} {}", "unix", path.display())?;
    }
    writeln!(out, "{:<6} {}", "ca", ca_path.display())?;
    writeln!(
        out,
        "{:<6} / /bytes/N /delay/MS /status/CODE /close",
        "paths"
    )?;
    out.flush()?;
    drop(out);
    eprintln!("poolcurl serve: serving until Ctrl-C");

    let waiter = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal runtime")?;
    waiter.block_on(interrupted())?;

    drop(origin);
    if let Some(path) = &args.unix_socket {
        let _ = std::fs::remove_file(path);
    }
    if remove_dir {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

/// Resolves on Ctrl-C, or SIGTERM where there is one.
async fn interrupted() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM")?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result.context("waiting for Ctrl-C")?,
            _ = terminate.recv() => {}
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")
    }
}
