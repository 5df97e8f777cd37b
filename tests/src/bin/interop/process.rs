//! Processes for the interop checks: finding server binaries, free loopback ports, servers
//! stopped on drop, and poolcurl (or curl) runs bounded in time, without the machine's proxy
//! variables.

use super::*;

pub(crate) fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/sbin", "/usr/bin"].map(PathBuf::from));
    dirs.map(|d| d.join(name)).find(|p| p.is_file())
}

/// Free loopback ports, distinct from each other. The kernel picks each (bind to port 0), and
/// the listeners are closed again because nginx and nghttpd take a port number, not a socket.
/// Another process could take a port in the moment between; the server then fails to start
/// and its checks fail with its log, rather than anything passing wrongly.
pub(crate) fn free_ports<const N: usize>() -> Result<[u16; N], String> {
    let held: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<_>>()
        .map_err(|e| format!("no free port: {e}"))?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&held) {
        *port = listener.local_addr().map_err(|e| e.to_string())?.port();
    }
    Ok(ports)
}

/// Kills a child that is still running and reaps it.
pub(crate) fn kill(child: &mut Child) {
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A server we started, stopped on drop however its scope is left.
pub(crate) struct Server {
    pub(crate) name: &'static str,
    pub(crate) child: Child,
    /// A graceful stop command, tried before killing the process.
    pub(crate) stop: Option<Command>,
    /// Where the server logs; its tail explains a failed start.
    pub(crate) log: PathBuf,
}

impl Server {
    /// Starts `cmd` with its stdout and stderr in the file `out`.
    pub(crate) fn start(
        name: &'static str,
        mut cmd: Command,
        log: PathBuf,
        out: &Path,
    ) -> Result<Server, String> {
        let out = File::create(out).map_err(|e| format!("create {}: {e}", out.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        Ok(Server {
            name,
            child,
            stop: None,
            log,
        })
    }

    /// Stops the server with `SIGTERM` to its process rather than killing it: a master
    /// (HAProxy's, a prefork tinyproxy's) then stops its workers too, where `SIGKILL` would
    /// leave them holding the ports.
    pub(crate) fn stop_with_sigterm(&mut self) {
        let mut stop = Command::new("kill");
        stop.args(["-TERM", &self.child.id().to_string()]);
        self.stop = Some(stop);
    }

    /// Polls until every port accepts a TCP connection, or the server exits, or
    /// [`READY_DEADLINE`] passes. A connect that succeeds means the listening socket exists
    /// (nginx's master binds before it forks workers; a connection accepted early waits in the
    /// backlog until a worker takes it), which is all a load needs.
    pub(crate) fn wait_ready(&mut self, ports: &[u16]) -> Result<(), String> {
        let deadline = Instant::now() + READY_DEADLINE;
        for &port in ports {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
                let exited = self.child.try_wait().map_err(|e| e.to_string())?;
                if exited.is_some() || Instant::now() > deadline {
                    let why = exited.map_or("is not listening".into(), |s| format!("exited ({s})"));
                    let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                    let lines: Vec<&str> = log.lines().collect();
                    let tail = lines[lines.len().saturating_sub(4)..].join(" | ");
                    return Err(format!("{} {why} on port {port}; log: {tail}", self.name));
                }
                thread::sleep(Duration::from_millis(20)); // poll interval
            }
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = &mut self.stop {
            let _ = stop.stdout(Stdio::null()).stderr(Stdio::null()).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(20));
            }
            if matches!(self.child.try_wait(), Ok(None)) {
                eprintln!("interop: {} did not stop within 5 s; killing it", self.name);
            }
        }
        kill(&mut self.child);
    }
}

/// A poolcurl (or curl) run in progress. Two threads read its output, so it never blocks on a
/// full pipe, and each sends what it read when its pipe closes: the run's end is that message,
/// not a polled exit status. Killed on drop if it has not finished.
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) started: Instant,
    /// `(0, stdout)` and `(1, stderr)`, each sent at the end of its pipe.
    pub(crate) outputs: mpsc::Receiver<(usize, Vec<u8>)>,
}

/// A finished run: exit status (`None`: killed at [`RUN_DEADLINE`]), stdout, stderr.
pub(crate) struct Finished {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// The proxy variables poolcurl (like curl) reads: removed from every run's environment, so a
/// proxy configured on the machine neither carries nor bypasses the checks' traffic. The proxy
/// checks set the ones they test explicitly.
pub(crate) const PROXY_ENV: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// `cmd` without the [`PROXY_ENV`] variables.
pub(crate) fn without_proxy_env(mut cmd: Command) -> Command {
    for var in PROXY_ENV {
        cmd.env_remove(var);
    }
    cmd
}

impl Running {
    /// Starts `poolcurl load` (JSON summary) with `args`, on one partition unless `args` say
    /// how many: the checks count connections per origin, which `load`'s default (one
    /// partition per CPU) would multiply by the machine's CPUs.
    pub(crate) fn spawn(poolcurl: &Path, args: &[String]) -> Result<Running, String> {
        let mut cmd = without_proxy_env(Command::new(poolcurl));
        cmd.args(LOAD).args(args);
        if !args.iter().any(|a| a == "--partitions") {
            cmd.args(["--partitions", "1"]);
        }
        Running::start(cmd)
    }

    /// Starts `cmd` (any program: poolcurl in curl mode, curl) with its output captured.
    pub(crate) fn start(mut cmd: Command) -> Result<Running, String> {
        cmd.stdin(Stdio::null());
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let program = Path::new(cmd.get_program()).to_owned();
        let mut child = cmd.spawn().map_err(|e| {
            let name = program.file_name().unwrap_or_default().to_string_lossy();
            format!("cannot run {name}: {e}")
        })?;
        let (sender, outputs) = mpsc::channel();
        let read = |index: usize, mut pipe: Box<dyn Read + Send>| {
            let sender = sender.clone();
            thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                let _ = sender.send((index, buf));
            });
        };
        read(0, Box::new(child.stdout.take().expect("piped")));
        read(1, Box::new(child.stderr.take().expect("piped")));
        Ok(Running {
            child,
            started: Instant::now(),
            outputs,
        })
    }

    /// Waits for the run to end (both pipes closed, then its exit status), or kills it at
    /// [`RUN_DEADLINE`] (`status` is then `None`).
    pub(crate) fn finish(mut self) -> Finished {
        let mut output = [Vec::new(), Vec::new()];
        let mut ended = 0;
        let mut timed_out = false;
        while ended < 2 {
            let left = RUN_DEADLINE.saturating_sub(self.started.elapsed());
            let received = if timed_out {
                self.outputs.recv().ok()
            } else {
                match self.outputs.recv_timeout(left) {
                    Ok(message) => Some(message),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        // Killing it closes its pipes, so the readers end and report.
                        timed_out = true;
                        kill(&mut self.child);
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => None,
                }
            };
            let Some((index, bytes)) = received else {
                break;
            };
            output[index] = bytes;
            ended += 1;
        }
        let status = if timed_out {
            None
        } else {
            self.child.wait().ok()
        };
        let [stdout, stderr] = output.map(|b| String::from_utf8_lossy(&b).into_owned());
        Finished {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        kill(&mut self.child);
    }
}

/// Starts a server (`cmd`, listening on `port`) with its output in `dir/NAME.log`, and waits
/// until it listens.
pub(crate) fn start_in(
    dir: &Path,
    name: &'static str,
    cmd: Command,
    port: u16,
) -> Result<Server, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let log = dir.join(format!("{name}.log"));
    let mut server = Server::start(name, cmd, log.clone(), &log)?;
    server.wait_ready(&[port])?;
    Ok(server)
}

/// `poolcurl load -z 5s -c 32` on `target` (its protocol flags and URL) while `reload` runs
/// `count` times at `times` after the run started (see [`at_intervals`]): the finished run, and
/// the reloads' failures.
pub(crate) fn load_through_reloads(
    poolcurl: &Path,
    target: &[String],
    count: u64,
    times: (Duration, Duration),
    reload: impl FnMut(u64) -> Result<(), String>,
) -> (Result<Finished, String>, Vec<String>) {
    let mut args = strings(&["-z", "5s", "-c", "32"]);
    args.extend_from_slice(target);
    let run = Running::spawn(poolcurl, &args);
    let problems = match &run {
        Ok(run) => at_intervals(run.started, count, times, reload),
        Err(_) => Vec::new(),
    };
    (run.map(Running::finish), problems)
}

/// One server's reload checks: for each of `names` with its `(protocol, target)`,
/// `poolcurl load -z 5s -c 32` while `reload` runs `count` times, at 0.5 s, 1.5 s, ... into
/// the run. A row passes when every request was answered over `protocol`, every reload
/// succeeded, and the run opened more than one connection (the reloads closed some).
pub(crate) fn reload_checks(
    poolcurl: &Path,
    names: Vec<String>,
    targets: Vec<(&'static str, Vec<String>)>,
    count: u64,
    mut reload: impl FnMut() -> Result<(), String>,
) -> Vec<Row> {
    let times = (Duration::from_millis(500), Duration::from_secs(1));
    let mut rows = Vec::new();
    for (name, (proto, target)) in names.into_iter().zip(targets) {
        let (finished, mut problems) =
            load_through_reloads(poolcurl, &target, count, times, |_| reload());
        problems.extend(reloads_closed_none(&finished));
        rows.push(Row::judge(name, finished, None, proto, problems));
    }
    rows
}

/// Runs `action(n)` for `n` in `0..count`, the first `first` after `started` and the others
/// `spacing` apart: reloads sent to a server while a load runs. The sleeps only place the
/// actions in time; no result depends on their exact moment. Returns the failures, each named
/// by its action's number (from 1).
pub(crate) fn at_intervals(
    started: Instant,
    count: u64,
    (first, spacing): (Duration, Duration),
    mut action: impl FnMut(u64) -> Result<(), String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for n in 0..count {
        let at = started + first + spacing * u32::try_from(n).unwrap_or(u32::MAX);
        thread::sleep(at.saturating_duration_since(Instant::now()));
        if let Err(e) = action(n) {
            problems.push(format!("reload {} failed: {e}", n + 1));
        }
    }
    problems
}

/// Runs `restart` (a command that asks a server to restart) and waits until the server's
/// `log` holds one more line with `marker` (what it logs once the restart is done), at most
/// [`RESTART_DEADLINE`]. For servers that ignore a restart asked for while the last one is
/// still under way (lighttpd), or whose restart command returns before the restart is done
/// (Apache httpd's `-k graceful`, a signal to HAProxy's master): each restart is over before
/// the next is sent, and a restart the server never made fails its check.
pub(crate) fn restart_and_wait(restart: Command, log: &Path, marker: &str) -> Result<(), String> {
    let count = || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        text.lines().filter(|l| l.contains(marker)).count()
    };
    let before = count();
    succeeds(restart)?;
    let deadline = Instant::now() + RESTART_DEADLINE;
    while count() == before {
        if Instant::now() > deadline {
            return Err(format!(
                "no \"{marker}\" logged {RESTART_DEADLINE:?} after the restart"
            ));
        }
        thread::sleep(Duration::from_millis(20)); // poll interval
    }
    Ok(())
}

/// How long a restart may take before it counts as failed: twice the 5 s that lighttpd's and
/// httpd's configs here let old connections finish in (by hand, each took 2 s at most).
const RESTART_DEADLINE: Duration = Duration::from_secs(10);

/// Runs `cmd` to its end; `Err` says how it failed (its status and stderr, or why it could
/// not run).
pub(crate) fn succeeds(mut cmd: Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("could not run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(format!("{}: {}", out.status, stderr.trim()))
    }
}
