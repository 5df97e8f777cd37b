//! `-:` / `--next`: one command line, several sets of options, each with its own URLs.
//!
//! curl's rules, each checked against curl 7.88:
//!
//! * `--next` after a URL starts a new group; the options before it apply to that group's
//!   URLs only (`poolcurl URL1 --next -d x URL2` sends a GET, then a POST). A `--next` before
//!   any URL of its group starts nothing, so the options around it stay together.
//! * Global options apply to every group wherever they stand: `-s`, `-S`, `-v`, `-#`,
//!   `--no-progress-meter`, `--rate`, `-Z`, `--parallel-max`, `--parallel-immediate`,
//!   `--fail-early`, `--styled-output`, `--stderr`, `--trace`, `--trace-ascii` and
//!   `--trace-time`. [`split`] copies them to the front of every group (in the order
//!   written, so the last of a repeated one still wins).
//! * A last group without a URL (`URL --next -o x`) is an error, but only when its turn comes:
//!   the groups before it run first.
//!
//! The groups then go through clap one by one. How they share a pool, a cookie engine and the
//! exit code is [`super::run`]'s concern.

use super::argv::{self, Kind};

/// The long names of curl's global options that poolcurl takes.
const GLOBAL_LONG: &[&str] = &[
    "silent",
    "show-error",
    "verbose",
    "progress-bar",
    "no-progress-meter",
    "rate",
    "parallel",
    "parallel-max",
    "parallel-immediate",
    "fail-early",
    "styled-output",
    "stderr",
    "trace-time",
    "trace",
    "trace-ascii",
];

/// The short forms of curl's global options.
const GLOBAL_SHORT: &[char] = &['s', 'S', 'v', '#', 'Z'];

/// Splits `argv` (without the program name, `-K` files already spliced in) into the command
/// lines of its groups, each with the global options. Without a `--next` that starts a group,
/// the one group is `argv` unchanged. `takes_value` says whether an option takes a value.
pub(crate) fn split(argv: Vec<String>, takes_value: &dyn Fn(&str) -> bool) -> Vec<Vec<String>> {
    let mut groups = Groups::default();
    for arg in argv::read(argv.clone(), takes_value) {
        match arg.kind {
            Kind::Long { ref name, .. } if name == "next" => groups.next(),
            Kind::Long { ref name, .. } if GLOBAL_LONG.contains(&name.as_str()) => {
                groups.global.extend(arg.raw);
            }
            Kind::Short { flags, valued } => groups.bundle(&flags, valued, arg.raw.len() > 1),
            _ => {
                groups.urls += arg.urls();
                groups.local.extend(arg.raw);
            }
        }
    }
    if groups.done.is_empty() {
        return vec![argv];
    }
    groups.next_group();
    let Groups { done, global, .. } = groups;
    done.into_iter()
        .map(|local| global.iter().cloned().chain(local).collect())
        .collect()
}

/// The groups read so far.
#[derive(Default)]
struct Groups {
    /// The local options and URLs of the groups a `--next` ended.
    done: Vec<Vec<String>>,
    /// The current group's local options and URLs.
    local: Vec<String>,
    /// How many URLs the current group has.
    urls: usize,
    /// Every global option, in order.
    global: Vec<String>,
}

impl Groups {
    /// `--next`: ends the current group if it has a URL.
    fn next(&mut self) {
        if self.urls > 0 {
            self.next_group();
        }
    }

    fn next_group(&mut self) {
        self.done.push(std::mem::take(&mut self.local));
        self.urls = 0;
    }

    /// A bundle of short options: its global letters go to every group, `:` is `--next`, and
    /// the rest stays in the current group (with the valued letter, written as it was:
    /// `separate` when its value was the next argument).
    fn bundle(&mut self, flags: &str, valued: Option<(char, Option<String>)>, separate: bool) {
        let mut local = String::new();
        for letter in flags.chars() {
            if letter == ':' {
                self.local.extend(argv::bundle(&std::mem::take(&mut local)));
                self.next();
            } else if GLOBAL_SHORT.contains(&letter) {
                self.global.push(format!("-{letter}"));
            } else {
                local.push(letter);
            }
        }
        match valued {
            Some((letter, Some(value))) if !separate => {
                self.local.push(format!("-{local}{letter}{value}"));
            }
            Some((letter, value)) => {
                self.local.push(format!("-{local}{letter}"));
                self.local.extend(value);
            }
            None => self.local.extend(argv::bundle(&local)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes_value(name: &str) -> bool {
        matches!(
            name,
            "-o" | "--output" | "-d" | "--data" | "-w" | "--url" | "--rate" | "--stderr"
        )
    }

    fn split_strs(argv: &[&str]) -> Vec<Vec<String>> {
        split(argv.iter().map(|s| (*s).to_owned()).collect(), &takes_value)
    }

    #[test]
    fn next_after_a_url_starts_a_group_with_the_global_options() {
        assert_eq!(
            split_strs(&["-sLo", "a", "http://a/", "--next", "-vd", "x", "http://b/"]),
            [
                vec!["-s", "-v", "-Lo", "a", "http://a/"],
                vec!["-s", "-v", "-d", "x", "http://b/"],
            ]
        );
        assert_eq!(
            split_strs(&[
                "--url",
                "http://a/",
                "-s:",
                "--rate",
                "2/s",
                "-oout",
                "http://b/"
            ]),
            [
                vec!["-s", "--rate", "2/s", "--url", "http://a/"],
                vec!["-s", "--rate", "2/s", "-oout", "http://b/"],
            ]
        );
    }

    #[test]
    fn stderr_and_trace_time_apply_to_every_group_wherever_they_stand() {
        assert_eq!(
            split_strs(&[
                "http://a/",
                "--next",
                "--stderr",
                "e.txt",
                "--trace-time",
                "http://b/"
            ]),
            [
                vec!["--stderr", "e.txt", "--trace-time", "http://a/"],
                vec!["--stderr", "e.txt", "--trace-time", "http://b/"],
            ]
        );
    }

    #[test]
    fn next_before_a_url_starts_nothing() {
        let argv = ["-w", "A", "--next", "-o", "x", "http://a/"];
        assert_eq!(split_strs(&argv), [argv.to_vec()]);
        assert_eq!(
            split_strs(&["http://a/", "--next", "--next", "-d", "x", "http://b/"]),
            [vec!["http://a/"], vec!["-d", "x", "http://b/"]]
        );
    }

    #[test]
    fn a_last_group_without_a_url_is_kept_and_values_are_not_options() {
        assert_eq!(
            split_strs(&["http://a/", "--next", "-o", "x"]),
            [vec!["http://a/"], vec!["-o", "x"]]
        );
        let argv = ["-d", "--next", "-w", "-:", "http://a/", "--", "--next"];
        assert_eq!(split_strs(&argv), [argv.to_vec()]);
    }
}
