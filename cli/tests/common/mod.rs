//! What the CLI test binaries share: how a `poolcurl` child is started.

/// A `poolcurl` command for a test: stdin closed, killed if the test drops it, and without the
/// proxy variables poolcurl reads (the runs talk to loopback peers; a proxy configured in the
/// test's environment must not apply).
pub(crate) fn poolcurl_command() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_poolcurl"));
    for var in [
        "http_proxy",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        command.env_remove(var);
    }
    command
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    command
}
