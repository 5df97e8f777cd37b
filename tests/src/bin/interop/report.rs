//! The results table of the interop checks: one row per check (or reference run), with the
//! details printed under it.

use super::*;

pub(crate) const HEADER: &str = "check requests succeeded failed opened retries resends result";
/// The index of the last column, `result`.
pub(crate) const RESULT: usize = 7;

/// One line of the table: a check (`passed` is `Some`) or a reference (`None`).
pub(crate) struct Row {
    /// One per column of [`HEADER`]; the counts are 1..=5.
    pub(crate) cells: Vec<String>,
    pub(crate) passed: Option<bool>,
    /// Printed under the table: why a check failed, what happened to connections.
    pub(crate) details: Vec<String>,
}

impl Row {
    pub(crate) fn new(check: String, passed: Option<bool>) -> Row {
        let mut cells = vec!["-".to_string(); RESULT + 1];
        cells[0] = check;
        cells[RESULT] = match passed {
            Some(true) => "ok",
            Some(false) => "FAIL",
            None => "ref",
        }
        .into();
        Row {
            cells,
            passed,
            details: Vec::new(),
        }
    }

    /// A row saying which checks were skipped (`label`) and why (`why`, under the table when
    /// given): a server or curl is not installed. It neither passes nor fails.
    pub(crate) fn skipped(label: String, why: Option<&str>) -> Row {
        let mut row = Row::new(label, None);
        row.cells[RESULT] = "skip".into();
        row.details.extend(why.map(str::to_owned));
        row
    }

    /// A check that could not run.
    pub(crate) fn broken(check: String, why: &str) -> Row {
        let mut row = Row::new(check, Some(false));
        row.details.push(why.to_string());
        row
    }

    /// Judges a poolcurl run: it exited 0, and its summary shows requests (`expect` of them,
    /// if given) that all succeeded, none aborted, on connections of `proto` only. `problems`
    /// are failures found before.
    pub(crate) fn judge(
        check: String,
        run: Result<Finished, String>,
        expect: Option<u64>,
        proto: &str,
        problems: Vec<String>,
    ) -> Row {
        Row::judge_summary(
            check,
            run,
            expect,
            proto,
            problems,
            Tolerated::None,
            &|_| Vec::new(),
        )
    }

    /// Judges a run against a server that teaches the pool something by failing requests
    /// first: as [`judge`](Self::judge), except that failures are tolerated (and poolcurl's
    /// exit status 1 with them) if they all ended before the run settled (the first second
    /// with successes, no failure and no connection closed: [`settled_second`]), and there
    /// are at most `lesson` of them for each connection closed before then; `learnt` reads
    /// from the same summary what else the check requires (the problems it returns fail the
    /// check).
    pub(crate) fn judge_lesson(
        check: String,
        run: Result<Finished, String>,
        proto: &str,
        lesson: u64,
        learnt: &Learnt,
    ) -> Row {
        let (tolerance, problems) = (Tolerated::Lesson(lesson), Vec::new());
        Row::judge_summary(check, run, None, proto, problems, tolerance, learnt)
    }

    /// Judges a run whose `-m` limit is meant to cut requests short: as
    /// [`judge`](Self::judge), except that failures are tolerated (and poolcurl's exit status
    /// 1 with them) if every one is a `timeout` and there are at least `at_least` of them (or
    /// the run cut nothing and proved nothing); `then` reads what else the check requires.
    pub(crate) fn judge_cut_short(
        check: String,
        run: Result<Finished, String>,
        proto: &str,
        at_least: u64,
        then: &Learnt,
    ) -> Row {
        let (tolerance, problems) = (Tolerated::Timeouts(at_least), Vec::new());
        Row::judge_summary(check, run, None, proto, problems, tolerance, then)
    }

    /// Parses the run's summary once, for the tolerated failures, `then` and the table's
    /// cells; `problems` were found before.
    fn judge_summary(
        check: String,
        run: Result<Finished, String>,
        expect: Option<u64>,
        proto: &str,
        mut problems: Vec<String>,
        tolerance: Tolerated,
        then: &Learnt,
    ) -> Row {
        let (mut cells, mut info, mut tolerated) = (Vec::new(), Vec::new(), 0);
        let run = match run {
            Ok(run) => run,
            Err(e) => return Row::broken(check, &e),
        };
        match serde_json::from_str::<Value>(&run.stdout) {
            Ok(json) => {
                tolerated = match tolerance {
                    Tolerated::None => 0,
                    Tolerated::Lesson(lesson) => lesson_failures(&json, lesson, &mut problems),
                    Tolerated::Timeouts(at_least) => timeouts(&json, at_least, &mut problems),
                };
                problems.extend(then(&json));
                cells = summarize(&json, expect, proto, tolerated, &mut problems, &mut info);
            }
            Err(_) => {
                let stderr = run.stderr.trim().replace('\n', " | ");
                problems.push(format!("no JSON summary; stderr: {stderr}"));
            }
        }
        match run.status {
            None => problems.push(format!("killed after {} s", RUN_DEADLINE.as_secs())),
            // poolcurl exits 1 when a request failed: expected with tolerated failures.
            Some(s) if tolerated > 0 && s.code() == Some(1) => {}
            Some(s) if !s.success() => problems.push(format!("poolcurl exited with {s}")),
            Some(_) => {}
        }
        let mut row = Row::new(check, Some(problems.is_empty()));
        row.cells.splice(1..1 + cells.len(), cells);
        row.details = problems.into_iter().chain(info).collect();
        row
    }
}

/// Which failures a judged run may have.
enum Tolerated {
    /// None.
    None,
    /// Up to this many per connection closed before the run settled, all before it
    /// (`judge_lesson`).
    Lesson(u64),
    /// Timeouts only, at least this many (`judge_cut_short`).
    Timeouts(u64),
}

/// The timeouts of a run's JSON summary, if every failure is one and there are at least
/// `at_least`; otherwise 0, with the reason in `problems`.
fn timeouts(json: &Value, at_least: u64, problems: &mut Vec<String>) -> u64 {
    let failures = json["failures"].as_u64().unwrap_or(0);
    let timeouts = json
        .pointer("/errors/timeout")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if timeouts < at_least {
        problems.push(format!(
            "{timeouts} requests cut short by -m, fewer than {at_least}"
        ));
        return 0;
    }
    if failures > timeouts {
        // `summarize` names the classes of all of them.
        return 0;
    }
    timeouts
}

/// What a lesson check requires of a run's summary beyond its failures: the problems found.
pub(crate) type Learnt = dyn Fn(&Value) -> Vec<String>;

/// The problem, if any, with a run's summary that should list the loopback origin on `port`
/// under the lesson `key` of its `connections` (such as `uploads_one_at_a_time`).
pub(crate) fn unlisted_lesson(json: &Value, key: &str, port: u16) -> Option<String> {
    let origin = format!("http://127.0.0.1:{port}");
    let listed = json
        .pointer(&format!("/connections/{key}"))
        .and_then(Value::as_array)
        .is_some_and(|origins| origins.iter().any(|o| o.as_str() == Some(&origin)));
    (!listed).then(|| format!("the summary does not list the origin under {key}"))
}

/// The index of the second in which a lesson run settled: the first whole second (of
/// `seconds`, a summary's `timeline`; not the run's last fraction of one) in which requests
/// succeeded, none failed and no connection closed. Before it the server may end connections
/// and fail requests while the pool learns; after it, nothing more should.
pub(crate) fn settled_second(seconds: &[Value]) -> Option<usize> {
    seconds.iter().position(|s| {
        is_whole(s)
            && count(s, "successes") > 0
            && count(s, "failures") == 0
            && count(s, "connections_closed") == 0
    })
}

/// Whether a second of a summary's `timeline` is a whole one (not the run's last fraction).
fn is_whole(second: &Value) -> bool {
    second["window_s"].as_f64().is_some_and(|w| w >= 1.0)
}

/// A count of one second of a summary's `timeline` (0 if absent).
pub(crate) fn count(second: &Value, key: &str) -> u64 {
    second[key].as_u64().unwrap_or(0)
}

/// The failures of a run's JSON summary that ended before it settled ([`settled_second`]), if
/// it settled within the first half of its whole seconds, there are at most `per_connection`
/// failures for each connection that closed meanwhile (a connection the server ends fails at
/// most the requests it carried) and none ended later; otherwise 0, with the reason in
/// `problems`.
fn lesson_failures(json: &Value, per_connection: u64, problems: &mut Vec<String>) -> u64 {
    let seconds = json["timeline"].as_array().cloned().unwrap_or_default();
    let sum = |seconds: &[Value], key: &str| seconds.iter().map(|s| count(s, key)).sum::<u64>();
    let Some(settled) = settled_second(&seconds) else {
        problems.push(
            "the run never settled: every whole second had a failure, a closed connection or \
             no success"
                .to_owned(),
        );
        return 0;
    };
    let whole = seconds.iter().filter(|s| is_whole(s)).count();
    if settled > whole / 2 {
        problems.push(format!(
            "the run settled only in second {} of {whole}: the pool learnt too slowly",
            settled + 1
        ));
        return 0;
    }
    let (early, late) = seconds.split_at(settled);
    let failed_late = sum(late, "failures");
    if failed_late > 0 {
        problems.push(format!(
            "{failed_late} failed after the run settled (in second {}: successes, no failure, \
             no connection closed)",
            settled + 1
        ));
        return 0;
    }
    let (failed, closed) = (sum(early, "failures"), sum(early, "connections_closed"));
    if failed > per_connection * closed.max(1) {
        problems.push(format!(
            "{failed} failed while the pool learnt, more than {per_connection} for each of the \
             {closed} connections closed meanwhile"
        ));
        return 0;
    }
    failed
}

/// The names of a group's checks, each announced on stderr as it starts (the group runs them
/// one after the other).
pub(crate) fn announce<const N: usize>(checks: [&str; N]) -> [String; N] {
    checks.map(|check| {
        eprintln!("interop: {check} ...");
        check.to_string()
    })
}

/// The table cells of a poolcurl JSON summary (requests ... resends). Adds to `problems`
/// what fails the check and to `info` what happened to connections;
/// up to `tolerated` failures go to `info` instead.
pub(crate) fn summarize(
    json: &Value,
    expect: Option<u64>,
    proto: &str,
    tolerated: u64,
    problems: &mut Vec<String>,
    info: &mut Vec<String>,
) -> Vec<String> {
    let count = |path: &str| json.pointer(path).and_then(Value::as_u64);
    let object = |path: &str| json.pointer(path).and_then(Value::as_object);
    let show = |n: Option<u64>| n.map_or("n/a".into(), |n| n.to_string());
    let (requests, failures) = (count("/requests"), count("/failures"));
    match failures {
        Some(0) => {}
        Some(n) if n <= tolerated => {
            let classes = object("/errors").and_then(nonzero).unwrap_or_default();
            info.push(format!("{n} failed as the check allows: {classes}"));
        }
        Some(n) => {
            let classes = object("/errors").and_then(nonzero).unwrap_or_default();
            problems.push(format!("{n} failed: {classes}"));
            for (class, example) in object("/error_examples").into_iter().flatten() {
                problems.push(format!(
                    "  {class}: {}",
                    example.as_str().unwrap_or_default()
                ));
            }
        }
        None => problems.push("no `failures` in the summary".into()),
    }
    if let Some(n @ 1..) = count("/aborted") {
        problems.push(format!("{n} aborted"));
    }
    match (requests, expect) {
        (Some(0) | None, _) => problems.push("no requests ran".into()),
        (Some(n), Some(want)) if n != want => {
            problems.push(format!("{n} of {want} requests ended"))
        }
        _ => {}
    }
    let (h1, h2) = (count("/connections/h1"), count("/connections/h2"));
    let (wanted, other) = if proto == "h2" { (h2, h1) } else { (h1, h2) };
    if wanted.is_none_or(|n| n == 0) || other.is_some_and(|n| n > 0) {
        problems.push(format!(
            "expected {proto} connections only: h1={} h2={}",
            show(h1),
            show(h2)
        ));
    }
    if let Some(closed) = object("/connections/closed").and_then(nonzero) {
        info.push(format!("connections closed during the run: {closed}"));
    }
    // Why, where the close said: for HTTP/2, what the server's frames showed.
    if let Some(examples) = object("/connections/close_examples") {
        for (reason, example) in examples {
            if let Some(example) = example.as_str() {
                info.push(format!("  {reason}, e.g.: {example}"));
            }
        }
    }
    let resends = object("/connections/resends").map(|r| nonzero(r).unwrap_or("0".into()));
    vec![
        show(requests),
        show(count("/successes")),
        show(failures),
        show(count("/connections/opened")),
        show(count("/connections/retries")),
        resends.unwrap_or_else(|| "n/a".into()),
    ]
}

/// "key=n key=n" for the non-zero counts of an object; `None` when all are zero.
pub(crate) fn nonzero(map: &Map<String, Value>) -> Option<String> {
    let parts: Vec<String> = map
        .iter()
        .filter_map(|(k, v)| v.as_u64().filter(|&n| n > 0).map(|n| format!("{k}={n}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

pub(crate) fn print_table(rows: &[Row]) {
    let header = Row {
        cells: HEADER.split(' ').map(String::from).collect(),
        passed: None,
        details: Vec::new(),
    };
    let lines: Vec<&Row> = std::iter::once(&header).chain(rows).collect();
    let mut widths = [0; RESULT + 1];
    for row in &lines {
        for (width, cell) in widths.iter_mut().zip(&row.cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::from("\n");
    for row in &lines {
        let mut line = String::new();
        for (i, (cell, width)) in row.cells.iter().zip(widths).enumerate() {
            // Counts right-aligned, text left-aligned.
            let _ = match i {
                1..=5 => write!(line, "{cell:>width$}  "),
                _ => write!(line, "{cell:<width$}  "),
            };
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for row in rows.iter().filter(|r| !r.details.is_empty()) {
        let _ = writeln!(out, "\n{} [{}]", row.cells[0], row.cells[RESULT]);
        for detail in &row.details {
            let _ = writeln!(out, "    {detail}");
        }
    }
    print!("{out}");
}

/// The connections a poolcurl run opened, from its JSON summary.
pub(crate) fn opened(run: &Result<Finished, String>) -> Option<u64> {
    let json: Value = serde_json::from_str(&run.as_ref().ok()?.stdout).ok()?;
    json.pointer("/connections/opened")?.as_u64()
}

/// A run through a server's reloads that opened one connection proved nothing about them: the
/// reloads closed none. The problem to report then.
pub(crate) fn reloads_closed_none(run: &Result<Finished, String>) -> Option<String> {
    (opened(run) == Some(1))
        .then(|| "one connection for the whole run: the reloads closed none".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A summary whose timeline has one whole second per `(successes, failures, closed)`,
    /// then a last fraction of a second with nothing in it.
    fn run(seconds: &[(u64, u64, u64)]) -> Value {
        let mut timeline: Vec<Value> = seconds
            .iter()
            .map(|&(successes, failures, closed)| {
                json!({
                    "window_s": 1.0,
                    "successes": successes,
                    "failures": failures,
                    "connections_closed": closed,
                })
            })
            .collect();
        timeline.push(json!({"window_s": 0.01, "successes": 0, "failures": 0}));
        json!({ "timeline": timeline })
    }

    fn judged(seconds: &[(u64, u64, u64)]) -> (u64, Vec<String>) {
        let mut problems = Vec::new();
        let tolerated = lesson_failures(&run(seconds), 32, &mut problems);
        (tolerated, problems)
    }

    #[test]
    fn a_lesson_run_settles_in_its_first_whole_second_without_failures_or_closes() {
        let json = run(&[(900, 40, 2), (2_000, 0, 0), (2_000, 0, 0), (2_000, 0, 0)]);
        let seconds = json["timeline"].as_array().unwrap();
        assert_eq!(settled_second(seconds), Some(1));
        // Two connections ended while the pool learnt: up to 32 failures each.
        assert_eq!(
            judged(&[(900, 40, 2), (2_000, 0, 0), (2_000, 0, 0), (2_000, 0, 0)]).0,
            40
        );
        let (_, problems) = judged(&[(900, 40, 1), (2_000, 0, 0), (2_000, 0, 0), (2_000, 0, 0)]);
        assert!(
            problems[0].contains("more than 32 for each of the 1"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_run_that_never_settles_or_fails_after_settling_is_a_problem() {
        // Without the lesson the server ends connections every second: only the last
        // fraction of a second is quiet, and it does not count.
        let (tolerated, problems) = judged(&[(500, 10, 8), (500, 20, 8), (500, 5, 9), (500, 0, 9)]);
        assert_eq!(tolerated, 0);
        assert!(problems[0].contains("never settled"), "{problems:?}");
        let (_, problems) = judged(&[(900, 3, 1), (2_000, 0, 0), (2_000, 1, 0), (2_000, 0, 0)]);
        assert!(
            problems[0].contains("1 failed after the run settled"),
            "{problems:?}"
        );
        let (_, problems) = judged(&[(900, 3, 1), (900, 3, 1), (900, 3, 1), (2_000, 0, 0)]);
        assert!(
            problems[0].contains("settled only in second 4 of 4"),
            "{problems:?}"
        );
    }
}
