//! Project automation, run as `cargo xtask <command>`.
//!
//! * `cargo xtask ci` runs the whole test matrix (the examples included, each run against its
//!   own local origin) and stops at the first failing step, naming it.
//! * `cargo xtask bench [--quick] [--json] [--url URL] [--only N] [--contender NAME]
//!   [--concurrency C]` runs the benchmark (release mode).
//! * `cargo xtask soak [--secs N]` runs the long mixed-fault soak (release mode; not in `ci`).
//! * `cargo xtask stress [--rounds N] [--only NAME] [--load]` runs every test binary again and
//!   again to find rare failures, keeping each failure's whole output (see `stress.rs`).
//! * `cargo xtask interop` runs poolcurl against nginx, nghttpd, tinyproxy, microsocks, Dante
//!   and Apache httpd (release mode); it is also the last step of `ci` when nginx and nghttpd
//!   are installed, and skipped there with one line when not.
//!   It first installs oha ([`OHA_VERSION`], `cargo install --locked` into `target/tools`) for
//!   the `poolcurl load` vs oha comparison; when that fails, the comparison is skipped with one
//!   line.
//!
//! Each step is an ordinary cargo invocation printed before it runs, so a failure can be
//! reproduced by copying the printed line.

mod stress;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// One step of a task: a name for people and the command that implements it.
struct Step {
    name: &'static str,
    program: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
}

impl Step {
    fn cargo(name: &'static str, args: &[&str]) -> Step {
        Step {
            name,
            program: "cargo",
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
        }
    }

    fn env(mut self, key: &'static str, value: &'static str) -> Step {
        self.env.push((key, value));
        self
    }

    /// Appends arguments given on xtask's own command line.
    fn with_args(mut self, extra: &[String]) -> Step {
        self.args.extend(extra.iter().cloned());
        self
    }

    fn run(&self) -> Result<(), String> {
        let env: String = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v:?} "))
            .collect();
        eprintln!(
            "\n==> [{}] {env}{} {}",
            self.name,
            self.program,
            self.args.join(" ")
        );
        let started = Instant::now();
        let status = Command::new(self.program)
            .args(&self.args)
            .envs(self.env.iter().copied())
            .status()
            .map_err(|e| {
                format!(
                    "step `{}` could not start `{}`: {e}",
                    self.name, self.program
                )
            })?;
        eprintln!(
            "==> [{}] {} in {:.1?}",
            self.name,
            status,
            started.elapsed()
        );
        if status.success() {
            Ok(())
        } else {
            Err(format!("step `{}` failed ({status})", self.name))
        }
    }
}

/// Optional features every step builds, so their code is linted, tested and documented too.
const FEATURES: &str = "pool/hickory,pool/metrics";

/// The library crates users depend on. `ci` checks each alone, with only the features it asks of
/// its dependencies: the workspace build unifies features (tests turn on hyper's `server`), so
/// code that needs more than the crate asks for builds there and fails for a user.
const PRODUCT_CRATES: [&str; 6] = [
    "pool-core",
    "pool-tls",
    "pool-h1",
    "pool-h2",
    "pool",
    "pool-smithy",
];

/// The examples `ci` builds and runs (`examples/`, package `pool-examples`): each starts its own
/// local origin and stops by itself.
const EXAMPLES: [&str; 4] = ["quick_start", "tower_stack", "gateway", "connector"];

fn ci_steps() -> Vec<Step> {
    // loom's build gets its own target directory (below the one cargo uses, so
    // CARGO_TARGET_DIR is honoured): its cfg flag would otherwise invalidate the main cache.
    let loom_dir = std::env::var("CARGO_TARGET_DIR")
        .map_or_else(|_| "target/loom".to_owned(), |dir| format!("{dir}/loom"));
    vec![Step::cargo("fmt", &["fmt", "--all", "--check"])]
        .into_iter()
        .chain(
            PRODUCT_CRATES
                .map(|krate| Step::cargo("alone", &["check", "-p", krate, "--lib", "--locked"])),
        )
        .chain([
            Step::cargo(
                "clippy",
                &[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--features",
                    FEATURES,
                    "--locked",
                    "--",
                    "-D",
                    "warnings",
                ],
            ),
            Step::cargo(
                "test",
                &["test", "--workspace", "--features", FEATURES, "--locked"],
            ),
            Step::cargo(
                "doc",
                &[
                    "doc",
                    "--workspace",
                    "--no-deps",
                    "--features",
                    FEATURES,
                    "--locked",
                ],
            )
            .env("RUSTDOCFLAGS", "-D warnings"),
            // Every example, built and run against its local origin.
            Step::cargo(
                "examples-build",
                &["build", "-p", "pool-examples", "--examples", "--locked"],
            ),
        ])
        .chain(EXAMPLES.map(|example| {
            Step::cargo(
                "example",
                &[
                    "run",
                    "--quiet",
                    "-p",
                    "pool-examples",
                    "--locked",
                    "--example",
                    example,
                ],
            )
        }))
        .chain([
            // The coordination code of pool-core, and pool-h1's parking spot, under loom's model
            // checker.
            Step::cargo(
                "loom",
                &[
                    "test",
                    "-p",
                    "pool-core",
                    "-p",
                    "pool-h1",
                    "--release",
                    "--lib",
                    "--locked",
                    "--target-dir",
                    &loom_dir,
                    "loom",
                ],
            )
            .env("RUSTFLAGS", "--cfg pool_loom")
            .env("LOOM_MAX_PREEMPTIONS", "2"),
        ])
        .collect()
}

/// The oha release the interop suite compares `poolcurl load` with (the load tool of issue 19's
/// measurements).
const OHA_VERSION: &str = "1.16.0";

/// The target directory cargo uses (cargo resolves a relative CARGO_TARGET_DIR against the
/// working directory, which every step shares).
fn target_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ in a workspace");
    std::env::var_os("CARGO_TARGET_DIR").map_or(workspace.join("target"), Into::into)
}

/// oha [`OHA_VERSION`] under `target/tools`, installed there with `cargo install --locked` if
/// it is not yet; `None` (after one line saying why) when it cannot be installed.
fn oha() -> Option<PathBuf> {
    let root = target_dir().join("tools");
    let oha = root.join("bin").join("oha");
    let installed = || {
        Command::new(&oha)
            .arg("--version")
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(OHA_VERSION))
    };
    if installed() {
        return Some(oha);
    }
    let root_arg = root.display().to_string();
    let version = format!("={OHA_VERSION}");
    let install = Step::cargo(
        "oha",
        &[
            "install",
            "oha",
            "--version",
            &version,
            "--locked",
            "--root",
            &root_arg,
        ],
    );
    match install.run() {
        Ok(()) if installed() => Some(oha),
        Ok(()) => {
            eprintln!(
                "xtask: oha {OHA_VERSION} installed but does not run; skipping poolcurl vs oha"
            );
            None
        }
        Err(why) => {
            eprintln!(
                "xtask: oha {OHA_VERSION} could not be installed ({why}); skipping poolcurl vs oha"
            );
            None
        }
    }
}

/// Builds poolcurl and runs `tests/src/bin/interop.rs` against it, both in release mode; with
/// `oha`, the interop run also compares `poolcurl load` with it.
fn interop_steps(oha: Option<&Path>) -> Vec<Step> {
    let target = target_dir();
    let poolcurl = target
        .join("release")
        .join("poolcurl")
        .display()
        .to_string();
    let interop = [
        "run",
        "--release",
        "--quiet",
        "--locked",
        "-p",
        "pool-tests",
        "--bin",
        "interop",
        "--",
    ];
    vec![
        Step::cargo(
            "interop-build",
            &["build", "--release", "--locked", "-p", "poolcurl"],
        ),
        Step::cargo("interop", &interop).with_args(
            &[
                vec!["--poolcurl".into(), poolcurl],
                oha.map(|o| vec!["--oha".into(), o.display().to_string()])
                    .unwrap_or_default(),
            ]
            .concat(),
        ),
    ]
}

/// Why the interop checks cannot run on this machine, if they cannot: a server is missing
/// (searched where the interop program searches: PATH, /usr/sbin, /usr/bin).
fn interop_missing() -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<_> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/usr/bin"].map(Into::into));
    let missing: Vec<&str> = ["nginx", "nghttpd"]
        .into_iter()
        .filter(|name| !dirs.iter().any(|dir| Path::new(dir).join(name).is_file()))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "{} not found on PATH, /usr/sbin or /usr/bin (.ci/run installs them)",
            missing.join(" and ")
        )
    })
}

/// Why the tests that run a copy of themselves in a network namespace of their own
/// (`pool_tests::vanish`) cannot here, if they cannot: `unshare -rn` with `ip` must work.
fn namespace_missing() -> Option<String> {
    let up = ["-rn", "ip", "link", "set", "lo", "up"];
    (!runs("unshare", &up)).then(|| {
        "`unshare -rn ip link set lo up` failed (no unshare or ip, or no user namespaces; \
         .ci/run installs util-linux and iproute2)"
            .to_owned()
    })
}

/// Whether `program args` runs and exits 0.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn run_all(steps: &[Step]) -> ExitCode {
    let started = Instant::now();
    for step in steps {
        if let Err(message) = step.run() {
            eprintln!("\nxtask: {message}");
            return ExitCode::FAILURE;
        }
    }
    eprintln!(
        "\nxtask: all {} steps passed in {:.1?}",
        steps.len(),
        started.elapsed()
    );
    ExitCode::SUCCESS
}

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci               fmt, clippy, test, doc, the examples (built and run), loom, then interop
                   when nginx and nghttpd are installed (stops at the first failure)
  bench [--quick] [--json] [--url URL] [--only N] [--contender NAME] [--concurrency C]
                   pool vs raw hyper vs hyper-util, interleaved, in release mode; markdown (or
                   JSON) on stdout; --only N runs scenario N (1-9) alone
  soak [--secs N]  a long mixed-fault run against one bounded pool (default 60 s); prints
                   leaked permits (must be 0) and memory
  interop          poolcurl load against nginx (HTTP/1.1, h2c, TLS; graceful reloads under
                   load), nghttpd (h2c, 10 streams per connection) and tinyproxy (forward,
                   CONNECT with h2 inside, credentials, NO_PROXY, curl side by side), curl
                   side by side on nginx's Unix socket and Apache httpd's Digest auth, and
                   poolcurl load vs oha (installed into target/tools) on nginx, in release
                   mode; a table of results, exit 1 if any check fails
  stress [--rounds N] [--only NAME] [--load]
                   every test binary (or those whose name contains NAME), N rounds (10), with
                   one busy thread per core under --load; each failure's output is kept in
                   target/stress/failures; exit 1 if any run failed";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("ci") => {
            let mut steps = ci_steps();
            let skipped = interop_missing();
            if skipped.is_none() {
                steps.extend(interop_steps(oha().as_deref()));
            }
            let code = run_all(&steps);
            if let Some(why) = skipped {
                eprintln!("xtask: interop skipped: {why}");
            }
            // Tests that need these pass with a line of their own that only a failing test
            // would show: say it here, where a reader of the run sees it.
            if let Some(why) = namespace_missing() {
                eprintln!(
                    "xtask: the network-namespace checks (vanished peers, unanswered connects, \
                     the kernel's timeouts beside curl) passed without running: {why}"
                );
            }
            if !runs("curl", &["--version"]) {
                eprintln!(
                    "xtask: curl not found: the curl parity suite and the beside-curl checks \
                     passed without comparing (.ci/run installs curl)"
                );
            }
            code
        }
        Some("interop") => match interop_missing() {
            None => run_all(&interop_steps(oha().as_deref())),
            Some(why) => {
                eprintln!("xtask: interop cannot run: {why}");
                ExitCode::FAILURE
            }
        },
        Some("bench") => {
            let bench = Step::cargo(
                "bench",
                &[
                    "bench",
                    "--quiet",
                    "-p",
                    "pool-tests",
                    "--bench",
                    "pool_bench",
                    "--",
                ],
            );
            run_all(&[bench.with_args(rest)])
        }
        Some("soak") => {
            let soak = Step::cargo(
                "soak",
                &[
                    "run",
                    "--release",
                    "--quiet",
                    "-p",
                    "pool-tests",
                    "--bin",
                    "soak",
                    "--",
                ],
            );
            run_all(&[soak.with_args(rest)])
        }
        Some("stress") => stress::run(rest),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("xtask: unknown command {other:?}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
