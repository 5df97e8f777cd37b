//! `poolcurl load` beside oha (the Rust load tool most people reach for) on the same nginx URL,
//! with the same load, in three cases:
//!
//! * HTTP/1.1 with 64 requests in flight (`-c 64`, 64 connections for both). poolcurl runs with
//!   one partition per CPU, as oha's runtime has one worker per CPU.
//! * TLS with ALPN h2, 64 streams on one connection: the case as the issue states it. oha gets
//!   `-c 1 -p 64`; poolcurl `-c 64 --partitions 1`, since the pool gives each partition an
//!   HTTP/2 connection of its own (one partition is how a poolcurl user asks for one
//!   connection). One connection is served by one nginx worker in every run of both tools.
//! * TLS with ALPN h2 on one connection per CPU: poolcurl with a partition per CPU, so
//!   `-c 64 --http2` with P partitions is P connections of 64 / P streams, and oha
//!   `-c P -p 64/P`. With two connections nginx serves both on one worker in some runs and one
//!   each in others (see below), so this case is read by split.
//!
//! Five `-z 4s` runs of each tool per case, alternating, poolcurl first. For each: completed
//! responses per second (responses / run time) and the latency percentiles each tool computes
//! over its complete responses, each the median of the tool's runs. Both run against
//! listeners without nginx's 1000 requests per connection: otherwise nginx's GOAWAY would catch
//! requests that poolcurl re-sends (counted in its latencies) and oha reports as errors
//! (dropped from its latencies).
//!
//! This is a measurement, not a check: its rows are references (they never fail the run), and
//! a table on stdout prints both tools side by side (each figure the median of the tool's
//! runs) and poolcurl's ratio: the median over the rounds of each round's ratio (see
//! `paired_ratios`; which tool goes first alternates by round). Both tools share the
//! machine with nginx (two workers), so the figures are of this machine at this moment; the
//! printed command lines reproduce them. Each run's line also says how nginx's workers shared
//! its connections, sampled in the middle of the run (`workers.rs`): the listeners give each
//! worker a socket of its own, so 64 connections spread evenly, but with two HTTP/2
//! connections `2/0` (one worker serves both) and `1/1` are two different machines, and a
//! median over five runs counts whichever came up more often; for that case the medians over
//! the runs of each split both tools had are printed beside.
//!
//! Each run also records the CPU time the tool and nginx's workers spent per completed
//! response (`cpu.rs`), printed beside the figures: at equal work per response the tools'
//! requests/s and p99 are the kernel's sharing of the cores in that run, and the CPU column
//! says whether a difference comes from the tool.
//!
//! oha is not installed here: `cargo xtask interop` installs the pinned version into
//! `target/tools` and passes `--oha PATH`; without it the comparison is one "skip" line.

use super::*;

/// How long each run loads (`-z`); its connections are counted per nginx worker half way.
const RUN: Duration = Duration::from_secs(4);

/// Runs of each tool per case, alternating; the table shows each figure's median. One run per
/// tool swings by 10–20% on a 2-core machine shared with nginx, more than the difference being
/// measured, and medians of three still flipped either way from one run of the suite to the
/// next.
const ROUNDS: usize = 5;

/// What one tool measured.
#[derive(Debug, Clone, Default)]
struct Measured {
    /// Completed responses per second of the run.
    rps: f64,
    /// Completed responses in the run.
    responses: f64,
    /// The tool's CPU time (user and system) per completed response, µs (`cpu.rs`).
    cpu_us: Option<f64>,
    /// nginx's workers' CPU time per completed response over the run, µs.
    nginx_us: Option<f64>,
    p50_ms: f64,
    p99_ms: f64,
    /// Requests that did not get a complete response (oha: errors other than its own
    /// deadline aborts; poolcurl: failures + aborted).
    failed: u64,
    /// Established connections per nginx worker in the middle of the run, busiest first.
    split: Option<Vec<usize>>,
}

/// The comparison's rows and its side-by-side table (printed by the caller under the main
/// table).
pub(crate) fn oha_comparison(
    poolcurl: &Path,
    oha: Option<&Path>,
    nginx: &Nginx,
    dir: &Path,
) -> (Vec<Row>, String) {
    let Some(oha) = oha else {
        let row = Row::new(
            "poolcurl load vs oha: skipped (no oha; cargo xtask interop installs it)".into(),
            None,
        );
        return (vec![row], String::new());
    };
    let (master, ports) = match nginx {
        Ok((_, server, ports)) => (server.child.id(), *ports),
        Err(e) => {
            return (
                vec![Row::broken("poolcurl load vs oha".into(), e)],
                String::new(),
            );
        }
    };
    let ca = dir.join("ca.pem").display().to_string();
    // The listeners without nginx's 1000 requests per connection (see `start_nginx`).
    let h1_url = format!("http://127.0.0.1:{}/", ports[3]);
    let tls_port = ports[4];
    let h2_url = format!("https://localhost:{tls_port}/");
    let per_cpu = partitions();
    let seconds = format!("{}s", RUN.as_secs());
    let h2_ours = |partitions: usize| {
        strings(&[
            "-z",
            &seconds,
            "-c",
            "64",
            "--http2",
            &format!("--cacert={ca}"),
            &format!("--resolve=localhost:{tls_port}:127.0.0.1"),
            "--partitions",
            &partitions.to_string(),
            &h2_url,
        ])
    };
    let h2_theirs = |connections: usize| {
        strings(&[
            "-z",
            &seconds,
            "-c",
            &connections.to_string(),
            "-p",
            &(64 / connections.max(1)).to_string(),
            "--http2",
            "--ipv4",
            "--cacert",
            &ca,
            &h2_url,
        ])
    };
    let per_cpu_case = format!("TLS ALPN h2, 64 streams on {per_cpu} connection(s)");
    // Name, listener port, whether its few connections make nginx's split decide a run (see
    // `workers.rs`), poolcurl's arguments, oha's.
    let cases = [
        (
            "HTTP/1.1, 64 connections",
            ports[3],
            false,
            strings(&[
                "-z",
                &seconds,
                "-c",
                "64",
                "--http1.1",
                "--partitions",
                &per_cpu.to_string(),
                &h1_url,
            ]),
            strings(&["-z", &seconds, "-c", "64", "--http-version", "1.1", &h1_url]),
        ),
        (
            "TLS ALPN h2, 64 streams on one connection",
            tls_port,
            false,
            h2_ours(1),
            h2_theirs(1),
        ),
        (
            per_cpu_case.as_str(),
            tls_port,
            per_cpu > 1,
            h2_ours(per_cpu),
            h2_theirs(per_cpu),
        ),
    ];
    let mut rows = Vec::new();
    let mut table = String::from(
        "\npoolcurl load vs oha (same nginx URL, medians of 5 alternating runs each)\n\
         case                                      tool       resp/s    p50 ms    p99 ms  failed  CPU µs/resp  nginx µs/resp\n",
    );
    for (case, port, by_split, ours, theirs) in cases {
        let split = || worker_split(master, port);
        eprintln!("interop: poolcurl load vs oha, {case} ...");
        let name = format!("poolcurl load vs oha, {case}");
        let (mut ours_runs, mut theirs_runs) = (Vec::new(), Vec::new());
        // Each round is a pair, and which tool goes first alternates (poolcurl, oha; oha,
        // poolcurl; ...), so a drift of the machine through the case favours neither.
        for round in 0..ROUNDS {
            if round % 2 == 1 {
                theirs_runs.push(with_cpu(master, || run_oha(oha, &theirs, split)));
            }
            ours_runs.push(with_cpu(master, || run_poolcurl(poolcurl, &ours, split)));
            if round % 2 == 0 {
                theirs_runs.push(with_cpu(master, || run_oha(oha, &theirs, split)));
            }
        }
        let mut row = Row::new(name, None);
        for (tool, runs) in [("poolcurl", &ours_runs), ("oha", &theirs_runs)] {
            let each: Vec<String> = runs
                .iter()
                .map(|run| match run {
                    Ok(m) => format!(
                        "{:.0} req/s p99 {:.3} ms CPU {} µs/resp, nginx {} (nginx workers {})",
                        m.rps,
                        m.p99_ms,
                        show_us(m.cpu_us),
                        show_us(m.nginx_us),
                        show_split(m.split.as_deref())
                    ),
                    Err(_) => "failed".to_owned(),
                })
                .collect();
            row.details
                .push(format!("{tool} runs: {}", each.join(" | ")));
        }
        // With 64 connections spread over the workers' own sockets, no two runs split alike
        // and none needs to; with one connection per partition the split is the machine.
        let alike = match by_split {
            true => same_split(&ours_runs, &theirs_runs),
            false => Vec::new(),
        };
        let paired = paired_ratios(&ours_runs, &theirs_runs);
        let (pool, other) = (median(ours_runs), median(theirs_runs));
        row.details.push(format!(
            "poolcurl load --no-progress --output-format json {}",
            ours.join(" ")
        ));
        row.details.push(format!(
            "oha --no-tui --output-format json {}",
            theirs.join(" ")
        ));
        for (tool, measured) in [("poolcurl", &pool), ("oha", &other)] {
            match measured {
                Ok(m) => {
                    let _ = writeln!(
                        table,
                        "{case:<41} {tool:<8} {:>9.0} {:>9.3} {:>9.3} {:>7} {:>12} {:>14}",
                        m.rps,
                        m.p50_ms,
                        m.p99_ms,
                        m.failed,
                        show_us(m.cpu_us),
                        show_us(m.nginx_us)
                    );
                }
                Err(e) => {
                    let _ = writeln!(table, "{case:<41} {tool:<8} no result: {e}");
                    row.details.push(format!("{tool}: {e}"));
                }
            }
        }
        if let Some((rps, p99)) = paired {
            let verdict = verdict(rps, p99);
            let _ = writeln!(table, "{:<41} {verdict}", "");
            row.cells[RESULT] = verdict;
        }
        for Alike {
            split,
            runs,
            ours,
            theirs,
        } in alike
        {
            let line = format!(
                "runs with nginx workers {} only ({} and {}): {}",
                show_split(Some(&split)),
                runs.0,
                runs.1,
                verdict(ours.rps / theirs.rps, ours.p99_ms / theirs.p99_ms)
            );
            let _ = writeln!(table, "{:<41} {line}", "");
            row.details.push(line);
        }
        rows.push(row);
    }
    (rows, table)
}

/// `run` (one tool's run) with the CPU that the tool and nginx's workers (under `master`)
/// spent on it, per completed response (see `cpu.rs`); without them where `/proc` says nothing.
fn with_cpu(
    master: u32,
    run: impl FnOnce() -> Result<Measured, String>,
) -> Result<Measured, String> {
    let (tool, nginx) = (cpu::reaped_children(), cpu::of_workers(master));
    let mut measured = run()?;
    let per_response = |before: Option<Duration>, after: Option<Duration>| {
        let spent = after?.checked_sub(before?)?;
        (measured.responses > 0.0).then(|| spent.as_secs_f64() * 1e6 / measured.responses)
    };
    measured.cpu_us = per_response(tool, cpu::reaped_children());
    measured.nginx_us = per_response(nginx, cpu::of_workers(master));
    Ok(measured)
}

/// `8.41`, or `?` when unknown.
fn show_us(us: Option<f64>) -> String {
    us.map_or_else(|| "?".to_owned(), |us| format!("{us:.2}"))
}

/// poolcurl's figures over oha's (requests/s and p99 ratios), and which way each points.
fn verdict(rps: f64, p99: f64) -> String {
    format!(
        "poolcurl/oha: requests/s {rps:.2}x, p99 {p99:.2}x ({})",
        match (rps >= 1.0, p99 <= 1.0) {
            (true, true) => "ahead on both",
            (true, false) => "ahead on requests/s, behind on p99",
            (false, true) => "behind on requests/s, ahead on p99",
            (false, false) => "behind on both",
        }
    )
}

/// The medians over the rounds of poolcurl's requests/s and p99 each over oha's in the same
/// round; `None` if a run failed. A ratio within a round compares two runs a few seconds
/// apart; the ratio of the tools' medians compares runs from anywhere in the case, and this
/// machine's speed moves through a case in steps (one case's runs of both tools went from
/// about 140k to about 165k req/s half way through), so when the step fell between a pair,
/// the medians followed it and the tool with more runs before it looked slower.
fn paired_ratios(
    ours: &[Result<Measured, String>],
    theirs: &[Result<Measured, String>],
) -> Option<(f64, f64)> {
    let pairs: Vec<(&Measured, &Measured)> = ours
        .iter()
        .zip(theirs)
        .map(|(p, o)| Some((p.as_ref().ok()?, o.as_ref().ok()?)))
        .collect::<Option<_>>()?;
    let mid =
        |ratio: fn(&Measured, &Measured) -> f64| middle(pairs.iter().map(|(p, o)| ratio(p, o)));
    Some((mid(|p, o| p.rps / o.rps)?, mid(|p, o| p.p99_ms / o.p99_ms)?))
}

/// Both tools' medians over their runs with one nginx split.
struct Alike {
    split: Vec<usize>,
    /// How many runs of each tool had it.
    runs: (usize, usize),
    ours: Measured,
    theirs: Measured,
}

/// Every split that came up in the runs of both tools, the most frequent (in both tools' runs
/// together) first, with each tool's medians over its runs with it: the comparison with
/// nginx's placement of the connections held equal (see `workers.rs`). Empty when no split
/// came up for both, or a run failed.
fn same_split(
    ours: &[Result<Measured, String>],
    theirs: &[Result<Measured, String>],
) -> Vec<Alike> {
    let all = |runs: &[Result<Measured, String>]| {
        runs.iter()
            .map(|run| run.as_ref().ok().cloned())
            .collect::<Option<Vec<Measured>>>()
    };
    let (Some(ours), Some(theirs)) = (all(ours), all(theirs)) else {
        return Vec::new();
    };
    let mut splits: Vec<Vec<usize>> = ours.iter().filter_map(|m| m.split.clone()).collect();
    splits.sort();
    splits.dedup();
    let mut alike: Vec<Alike> = splits
        .into_iter()
        .filter_map(|split| alike_at(&ours, &theirs, split))
        .collect();
    alike.sort_by_key(|a| std::cmp::Reverse(a.runs.0 + a.runs.1));
    alike
}

/// Both tools' medians over their runs with `split`; `None` if either had none.
fn alike_at(ours: &[Measured], theirs: &[Measured], split: Vec<usize>) -> Option<Alike> {
    let with = |runs: &[Measured]| -> Vec<Result<Measured, String>> {
        runs.iter()
            .filter(|m| m.split.as_ref() == Some(&split))
            .cloned()
            .map(Ok)
            .collect()
    };
    let (mine, other) = (with(ours), with(theirs));
    if mine.is_empty() || other.is_empty() {
        return None;
    }
    Some(Alike {
        runs: (mine.len(), other.len()),
        ours: median(mine).ok()?,
        theirs: median(other).ok()?,
        split,
    })
}

/// The median of each figure over `runs` (failures summed); the first error if any run failed.
fn median(runs: Vec<Result<Measured, String>>) -> Result<Measured, String> {
    let runs: Vec<Measured> = runs.into_iter().collect::<Result<_, _>>()?;
    let mid = |pick: fn(&Measured) -> f64| {
        middle(runs.iter().map(pick)).expect("a median of at least one run")
    };
    let mid_of = |pick: fn(&Measured) -> Option<f64>| middle(runs.iter().filter_map(pick));
    Ok(Measured {
        rps: mid(|m| m.rps),
        responses: mid(|m| m.responses),
        cpu_us: mid_of(|m| m.cpu_us),
        nginx_us: mid_of(|m| m.nginx_us),
        p50_ms: mid(|m| m.p50_ms),
        p99_ms: mid(|m| m.p99_ms),
        failed: runs.iter().map(|m| m.failed).sum(),
        split: None,
    })
}

/// The middle of `values` (the upper one of an even count), `None` when there are none.
fn middle(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// Waits for `run` to finish, sampling `split` half way through its `-z` time.
fn finish_sampled(
    run: Running,
    split: impl FnOnce() -> Option<Vec<usize>>,
) -> (Finished, Option<Vec<usize>>) {
    // A pause of this thread, not of the load: the tool runs on meanwhile.
    std::thread::sleep(RUN / 2);
    let sampled = split();
    (run.finish(), sampled)
}

/// poolcurl's partitions where the case does not fix one connection: one per CPU, as oha's
/// runtime has one worker per CPU (otherwise the comparison would be one thread against all).
fn partitions() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `poolcurl load` with `args`: its successes per second and latency percentiles.
fn run_poolcurl(
    poolcurl: &Path,
    args: &[String],
    split: impl FnOnce() -> Option<Vec<usize>>,
) -> Result<Measured, String> {
    let (run, split) = finish_sampled(Running::spawn(poolcurl, args)?, split);
    let json: Value = serde_json::from_str(&run.stdout)
        .map_err(|_| format!("no JSON summary; stderr: {}", run.stderr.trim()))?;
    let number = |path: &str| {
        json.pointer(path)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("no {path} in poolcurl's summary"))
    };
    let successes = number("/successes")?;
    let seconds = number("/duration_s")?;
    Ok(Measured {
        rps: successes / seconds,
        responses: successes,
        cpu_us: None,
        nginx_us: None,
        p50_ms: number("/latency_ms/p50")?,
        p99_ms: number("/latency_ms/p99")?,
        failed: (number("/failures")? + number("/aborted")?) as u64,
        split,
    })
}

/// oha with `args`: its complete responses per second and latency percentiles.
fn run_oha(
    oha: &Path,
    args: &[String],
    split: impl FnOnce() -> Option<Vec<usize>>,
) -> Result<Measured, String> {
    let mut cmd = without_proxy_env(Command::new(oha));
    cmd.args(["--no-tui", "--output-format", "json"]).args(args);
    let (run, split) = finish_sampled(Running::start(cmd)?, split);
    if run.status.is_none_or(|s| !s.success()) {
        return Err(format!("oha failed: {}", run.stderr.trim()));
    }
    let json: Value = serde_json::from_str(&run.stdout)
        .map_err(|_| format!("no JSON from oha; stderr: {}", run.stderr.trim()))?;
    let number = |path: &str| {
        json.pointer(path)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("no {path} in oha's output"))
    };
    let responses: u64 = json
        .pointer("/statusCodeDistribution")
        .and_then(Value::as_object)
        .map(|codes| codes.values().filter_map(Value::as_u64).sum())
        .ok_or("no statusCodeDistribution in oha's output")?;
    // oha aborts the requests in flight at the `-z` deadline and lists them as errors; those
    // are the tool's own doing, not failures.
    let failed = json
        .pointer("/errorDistribution")
        .and_then(Value::as_object)
        .map(|errors| {
            errors
                .iter()
                .filter(|(what, _)| !what.contains("deadline"))
                .filter_map(|(_, n)| n.as_u64())
                .sum()
        })
        .unwrap_or(0);
    Ok(Measured {
        rps: responses as f64 / number("/summary/total")?,
        responses: responses as f64,
        cpu_us: None,
        nginx_us: None,
        p50_ms: number("/metrics/latency_ms/p50")?,
        p99_ms: number("/metrics/latency_ms/p99")?,
        failed,
        split,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rps: f64, split: &[usize]) -> Result<Measured, String> {
        Ok(Measured {
            rps,
            responses: rps,
            cpu_us: None,
            nginx_us: None,
            p50_ms: 1.0,
            p99_ms: 2.0,
            failed: 0,
            split: Some(split.to_vec()),
        })
    }

    #[test]
    fn the_verdict_is_the_median_of_each_rounds_ratio() {
        // The machine sped up after the second round: the tools' own medians (150 against
        // 200) would put poolcurl behind, though it was ahead in three rounds of four.
        let ours = [
            run(125.0, &[]),
            run(150.0, &[]),
            run(100.0, &[]),
            run(400.0, &[]),
        ];
        let theirs = [
            run(100.0, &[]),
            run(100.0, &[]),
            run(200.0, &[]),
            run(200.0, &[]),
        ];
        let (rps, p99) = paired_ratios(&ours, &theirs).unwrap();
        assert_eq!(rps, 1.5, "ratios 0.5, 1.25, 1.5, 2: the upper middle one");
        assert_eq!(p99, 1.0);
        assert!(verdict(rps, p99).ends_with("(ahead on both)"));
        assert!(verdict(0.99, 0.9).ends_with("(behind on requests/s, ahead on p99)"));
        let failed = [Err("oha failed".to_owned())];
        assert_eq!(paired_ratios(&ours[..1], &failed), None);
    }

    #[test]
    fn each_split_both_tools_met_is_compared_alone_most_frequent_first() {
        let ours = [run(130.0, &[1, 1]), run(100.0, &[2, 0]), run(90.0, &[2, 0])];
        let theirs = [run(80.0, &[2, 0]), run(85.0, &[2, 0]), run(120.0, &[1, 1])];
        let alike = same_split(&ours, &theirs);
        let splits: Vec<&[usize]> = alike.iter().map(|a| a.split.as_slice()).collect();
        assert_eq!(splits, [&[2, 0][..], &[1, 1][..]]);
        assert_eq!(alike[0].runs, (2, 2));
        assert_eq!(alike[0].ours.rps, 100.0, "the upper of two is the median");
        assert_eq!(alike[0].theirs.rps, 85.0);
        assert_eq!((alike[1].ours.rps, alike[1].theirs.rps), (130.0, 120.0));

        let apart = [run(80.0, &[40, 24])];
        assert!(
            same_split(&ours[..1], &apart).is_empty(),
            "no split in common"
        );
        let failed = [Err("oha failed".to_owned())];
        assert!(same_split(&ours, &failed).is_empty());
    }
}
