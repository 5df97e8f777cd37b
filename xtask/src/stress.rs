//! `cargo xtask stress`: every test binary of the workspace, run again and again, to find the
//! test that fails one run in hundreds.
//!
//! It builds the test binaries once (the features `ci` tests with), copies them under
//! `target/stress/bin` so a rebuild while it runs changes nothing, then runs each in its
//! package's directory (as `cargo test` does) for the rounds asked. A failing run's whole
//! output goes to `target/stress/failures/ROUND-BINARY.txt` (the panic message is at its
//! start); one line says so. With `--load`, one busy thread per core runs for the whole time,
//! so the tests also run on a machine with no idle core, as CI's sometimes is.
//!
//! What it does not do: retry, or count a failure as anything but a bug to find.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::{FEATURES, target_dir};

/// The options of one stress run.
struct Options {
    rounds: usize,
    /// Only binaries whose file name contains this.
    only: Option<String>,
    /// Busy threads beside the tests.
    load: bool,
}

/// One test binary: where it runs and its copy.
struct TestBinary {
    package_dir: PathBuf,
    binary: PathBuf,
    name: String,
}

pub(crate) fn run(args: &[String]) -> ExitCode {
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("xtask stress: {message}\n\n{}", crate::USAGE);
            return ExitCode::from(2);
        }
    };
    let binaries = match build(options.only.as_deref()) {
        Ok(binaries) => binaries,
        Err(message) => {
            eprintln!("xtask stress: {message}");
            return ExitCode::FAILURE;
        }
    };
    let failures_dir = target_dir().join("stress").join("failures");
    if let Err(e) = std::fs::create_dir_all(&failures_dir) {
        eprintln!("xtask stress: create {}: {e}", failures_dir.display());
        return ExitCode::FAILURE;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let busy = if options.load {
        busy_threads(&stop)
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let mut failed = 0;
    for round in 1..=options.rounds {
        for test in &binaries {
            if let Some(saved) = run_once(test, round, &failures_dir) {
                failed += 1;
                eprintln!(
                    "xtask stress: {} failed in round {round}: {saved}",
                    test.name
                );
            }
        }
        eprintln!(
            "xtask stress: round {round} of {} done, {failed} failure(s), {:.0?}",
            options.rounds,
            started.elapsed()
        );
    }
    stop.store(true, Ordering::Relaxed);
    busy.into_iter()
        .for_each(|t| t.join().expect("busy thread"));
    let runs = options.rounds * binaries.len();
    eprintln!(
        "xtask stress: {runs} runs of {} binaries{}, {failed} failed",
        binaries.len(),
        if options.load { " under load" } else { "" }
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        rounds: 10,
        only: None,
        load: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--rounds" => {
                options.rounds = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or("--rounds takes a count above 0")?;
            }
            "--only" => options.only = Some(it.next().ok_or("--only takes a name")?.clone()),
            "--load" => options.load = true,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(options)
}

/// Builds the workspace's test binaries and copies those named by `only` (all without it).
fn build(only: Option<&str>) -> Result<Vec<TestBinary>, String> {
    let output = Command::new("cargo")
        .args(["test", "--workspace", "--features", FEATURES, "--locked"])
        .args(["--no-run", "--message-format=json-render-diagnostics"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("building the tests failed ({})", output.status));
    }
    let copies = target_dir().join("stress").join("bin");
    std::fs::create_dir_all(&copies).map_err(|e| format!("create {}: {e}", copies.display()))?;
    let mut binaries = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let is_test = message["reason"] == "compiler-artifact"
            && message["profile"]["test"] == true
            && message["executable"].is_string();
        if !is_test {
            continue;
        }
        let built = PathBuf::from(message["executable"].as_str().unwrap_or_default());
        let manifest = PathBuf::from(message["manifest_path"].as_str().unwrap_or_default());
        let name = built
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if only.is_some_and(|only| !name.contains(only)) {
            continue;
        }
        let binary = copies.join(&name);
        std::fs::copy(&built, &binary).map_err(|e| format!("copy {}: {e}", built.display()))?;
        binaries.push(TestBinary {
            package_dir: manifest.parent().unwrap_or(Path::new(".")).to_path_buf(),
            binary,
            name,
        });
    }
    if binaries.is_empty() {
        return Err("no test binary matched".into());
    }
    Ok(binaries)
}

/// Runs `test` once; on failure saves its output and returns where.
fn run_once(test: &TestBinary, round: usize, dir: &Path) -> Option<String> {
    let output = Command::new(&test.binary)
        .arg("-q")
        .current_dir(&test.package_dir)
        .output();
    let (status, text) = match output {
        Ok(out) if out.status.success() => return None,
        Ok(out) => (out.status.to_string(), [out.stdout, out.stderr].concat()),
        Err(e) => (format!("did not start: {e}"), Vec::new()),
    };
    let path = dir.join(format!("{round}-{}.txt", test.name));
    let saved = std::fs::File::create(&path).and_then(|mut file| {
        writeln!(file, "{} ({status}), round {round}", test.name)?;
        file.write_all(&text)
    });
    Some(match saved {
        Ok(()) => format!("{status}, output in {}", path.display()),
        Err(e) => format!("{status}, output not saved ({e})"),
    })
}

/// One spinning thread per core until `stop`.
fn busy_threads(stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (0..cores)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failing run's whole output is kept, with its name, round and status first.
    #[test]
    fn a_failing_run_keeps_its_whole_output() {
        let dir = std::env::temp_dir().join(format!("xtask-stress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("fails.sh");
        std::fs::write(
            &script,
            "#!/bin/sh\necho \"panicked: left 1 right 2\"\nexit 101\n",
        )
        .unwrap();
        let ok = dir.join("passes.sh");
        std::fs::write(&ok, "#!/bin/sh\nexit 0\n").unwrap();
        for path in [&script, &ok] {
            let chmod = Command::new("chmod").arg("+x").arg(path).status().unwrap();
            assert!(chmod.success());
        }
        let test = |binary: &Path, name: &str| TestBinary {
            package_dir: dir.clone(),
            binary: binary.to_path_buf(),
            name: name.into(),
        };

        assert_eq!(run_once(&test(&ok, "passes"), 1, &dir), None);
        let said = run_once(&test(&script, "fails"), 3, &dir).expect("a failure");
        assert!(said.contains("exit status: 101"), "{said}");
        let kept = std::fs::read_to_string(dir.join("3-fails.txt")).unwrap();
        assert!(
            kept.starts_with("fails (exit status: 101), round 3\n"),
            "{kept}"
        );
        assert!(kept.contains("panicked: left 1 right 2"), "{kept}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
