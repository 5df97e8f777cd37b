//! curl's words for an option value it cannot use.
//!
//! clap refuses a value that does not parse with its parser's own reason; curl 7.88 says one
//! of a few fixed things, naming the option as it was typed (`-m`, `-sm`, `--max-time`):
//!
//! ```text
//! curl: option -m: expected a proper numerical parameter
//! curl: option --retry: expected a positive numerical parameter
//! curl: option -m: too large number
//! curl: option --limit-rate: is badly used here
//! ```
//!
//! and, for a size (`--limit-rate`, `--max-filesize`), a warning before it saying what was
//! wrong with the number or its unit (for `--rate`'s unit, an error line; for an empty `-o`,
//! that the name has no length). [`refusal`] gives those for the options curl reads as
//! numbers or sizes. Any other option refused with an empty value (`-c ''`, `--cacert ''`,
//! `-X ''`) gets curl 8.6's words, `blank argument where content is expected` (curl 7.88 took
//! such values and went on with them, or crashed on `-D ''`); other options keep the reason
//! clap's parser gives.
//!
//! What this does not do: decide whether a value is acceptable (each option's parser does);
//! it only words the refusal.

use super::argv::{self, Kind};
use super::exit::Note;

/// What curl prints for a refused value: its note, if any (muted by an earlier `-s`), and
/// the part of the error line after `poolcurl: `.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// A size's `Warning: ...`, or `--rate`'s error line about its unit.
    pub(crate) note: Option<Note>,
    /// `option NAME: REASON`.
    pub(crate) line: String,
}

/// How curl 7.88 reads an option's value.
enum Reading {
    /// A whole number of at least 0 (`str2unum`), or a number of seconds (`str2udouble`):
    /// a negative one is "positive" wording.
    Unsigned,
    /// A number that may be negative (`--max-redirs`'s -1), or an offset: any bad value is
    /// "proper" wording.
    Signed,
    /// A size with an optional unit, named so in curl's warning.
    Size(&'static str),
    /// `--rate`'s `N/UNIT`: `N` a whole number of at least 1, `UNIT` by its first letter.
    Rate,
    /// `-o`'s file name, which may not be empty.
    FileName,
    /// Anything else curl refuses as badly used.
    BadlyUsed,
    /// An empty value for an option not in [`READINGS`] that refuses one.
    Blank,
}

/// The options this module words, by their long names (without `--`), and how curl reads each.
const READINGS: &[(&str, Reading)] = &[
    ("max-time", Reading::Unsigned),
    ("connect-timeout", Reading::Unsigned),
    ("expect100-timeout", Reading::Unsigned),
    ("keepalive-time", Reading::Unsigned),
    ("retry", Reading::Unsigned),
    ("retry-delay", Reading::Unsigned),
    ("retry-max-time", Reading::Unsigned),
    ("speed-limit", Reading::Unsigned),
    ("speed-time", Reading::Unsigned),
    ("parallel-max", Reading::Unsigned),
    ("happy-eyeballs-timeout-ms", Reading::Unsigned),
    ("continue-at", Reading::Unsigned),
    ("max-redirs", Reading::Signed),
    ("create-file-mode", Reading::Signed),
    ("limit-rate", Reading::Size("rate")),
    ("max-filesize", Reading::Size("max-filesize")),
    ("rate", Reading::Rate),
    ("output", Reading::FileName),
    ("local-port", Reading::BadlyUsed),
    ("tls-max", Reading::BadlyUsed),
];

/// curl's refusal of `value` for option `long` (without `--`, short letter `short`), named as
/// `args` (the command line, read by `takes_value`) typed it; `None` for an option this module
/// does not word (one outside [`READINGS`] with a value that is not empty). A `-s` before the
/// option (in its bundle too) mutes the note.
pub(crate) fn refusal(
    args: &[String],
    takes_value: &dyn Fn(&str) -> bool,
    long: &str,
    short: Option<char>,
    value: &str,
) -> Option<Refusal> {
    let reading = match READINGS.iter().find(|(name, _)| *name == long) {
        Some((_, reading)) => reading,
        None if value.is_empty() => &Reading::Blank,
        None => return None,
    };
    let mut silent = false;
    let mut typed = None;
    for arg in argv::read(args.to_vec(), takes_value) {
        let found = match &arg.kind {
            Kind::Long { name, value: given } => {
                (name == long && given.as_deref() == Some(value)).then(|| format!("--{long}"))
            }
            Kind::Short {
                flags,
                valued: Some((letter, Some(given))),
            } if Some(*letter) == short && given == value => Some(match arg.raw.len() {
                2 => arg.raw[0].clone(),
                // Attached as typed (`-mx`), or attached by poolcurl because it starts with
                // `-` (`-C -5`): curl names the second as `-C`.
                _ if value.starts_with('-') => format!("-{flags}{letter}"),
                _ => arg.raw[0].clone(),
            }),
            _ => None,
        };
        // A bundle's `s` before the option (`-so ''`) mutes it too.
        silent |= arg.silences();
        if found.is_some() {
            typed = found;
            break;
        }
    }
    // An option given no value at all (`-X` last) reaches clap as an empty one: curl says it
    // requires a parameter, which is the caller's wording.
    let typed = match (typed, reading) {
        (Some(typed), _) => typed,
        (None, Reading::Blank) => return None,
        (None, _) => format!("--{long}"),
    };
    // `--rate`'s number is what comes before its `/`.
    let number = match reading {
        Reading::Rate => value.split('/').next().unwrap_or_default(),
        _ => value,
    };
    let negative = number.starts_with('-') && number[1..].parse::<f64>().is_ok();
    // Past what curl's `long` holds (a double's infinity included).
    let too_large = number
        .parse::<f64>()
        .is_ok_and(|n| n.abs() > i64::MAX as f64);
    let (note, reason) = match reading {
        Reading::Unsigned | Reading::Signed | Reading::Rate if too_large => {
            (None, "too large number")
        }
        Reading::Unsigned | Reading::Rate if negative => {
            (None, "expected a positive numerical parameter")
        }
        Reading::Unsigned | Reading::Signed => (None, "expected a proper numerical parameter"),
        Reading::Rate => match number.parse::<u64>() {
            Err(_) => (None, "expected a proper numerical parameter"),
            Ok(0) => (None, "is badly used here"),
            Ok(_) => (
                Some(Note::Error("unsupported --rate unit".to_owned())),
                "is badly used here",
            ),
        },
        Reading::Size(which) => {
            let number = value.trim_start().starts_with(|c: char| c.is_ascii_digit());
            let warning = match number {
                true => format!("unsupported {which} unit. Use G, M, K or B!"),
                false => format!("invalid number specified for {which}"),
            };
            (Some(Note::Warning(warning)), "is badly used here")
        }
        Reading::FileName => (
            Some(Note::Warning("output file name has no length".to_owned())),
            "is badly used here",
        ),
        Reading::BadlyUsed => (None, "is badly used here"),
        Reading::Blank => (None, "blank argument where content is expected"),
    };
    Some(Refusal {
        note: note.filter(|_| !silent),
        line: format!("option {typed}: {reason}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes_value(name: &str) -> bool {
        matches!(
            name,
            "-m" | "--max-time"
                | "-C"
                | "--limit-rate"
                | "--retry"
                | "--max-redirs"
                | "--rate"
                | "-o"
                | "-c"
                | "--cacert"
        )
    }

    fn refused(args: &[&str], long: &str, short: Option<char>, value: &str) -> Refusal {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        refusal(&args, &takes_value, long, short, value).expect("worded")
    }

    #[test]
    fn numbers_are_refused_in_curls_words_naming_the_option_as_typed() {
        let line = |args: &[&str], long, short, value| refused(args, long, short, value).line;
        assert_eq!(
            line(&["-m", "abc"], "max-time", Some('m'), "abc"),
            "option -m: expected a proper numerical parameter"
        );
        assert_eq!(
            line(&["-sm", "x"], "max-time", Some('m'), "x"),
            "option -sm: expected a proper numerical parameter"
        );
        assert_eq!(
            line(&["-mx"], "max-time", Some('m'), "x"),
            "option -mx: expected a proper numerical parameter"
        );
        assert_eq!(
            line(&["--retry", "-1"], "retry", None, "-1"),
            "option --retry: expected a positive numerical parameter"
        );
        assert_eq!(
            line(&["-C-5"], "continue-at", Some('C'), "-5"),
            "option -C: expected a positive numerical parameter"
        );
        assert_eq!(
            line(&["--max-redirs", "-2"], "max-redirs", None, "-2"),
            "option --max-redirs: expected a proper numerical parameter"
        );
        assert_eq!(
            line(&["-m", "1e400"], "max-time", Some('m'), "1e400"),
            "option -m: too large number"
        );
        let huge = "99999999999999999999";
        assert_eq!(
            line(&["--retry", huge], "retry", None, huge),
            "option --retry: too large number"
        );
    }

    #[test]
    fn sizes_are_badly_used_after_a_warning_that_an_earlier_s_mutes() {
        let wrong = refused(&["--limit-rate", "x"], "limit-rate", None, "x");
        assert_eq!(wrong.line, "option --limit-rate: is badly used here");
        assert_eq!(
            wrong.note,
            Some(Note::Warning("invalid number specified for rate".into()))
        );
        let unit = refused(&["--limit-rate", "5q"], "limit-rate", None, "5q");
        assert_eq!(
            unit.note,
            Some(Note::Warning(
                "unsupported rate unit. Use G, M, K or B!".into()
            ))
        );
        let muted = refused(&["-s", "--limit-rate", "x"], "limit-rate", None, "x");
        assert_eq!(muted.note, None);
        let after = refused(&["--limit-rate", "x", "-s"], "limit-rate", None, "x");
        assert!(after.note.is_some());
        let bundled = refused(&["-so", ""], "output", Some('o'), "");
        assert_eq!(bundled.note, None);
    }

    #[test]
    fn rates_are_refused_by_their_number_then_their_unit() {
        let rate = |value| refused(&["--rate", value], "rate", None, value);
        assert_eq!(
            rate("x/s").line,
            "option --rate: expected a proper numerical parameter"
        );
        assert_eq!(
            rate("-1/s").line,
            "option --rate: expected a positive numerical parameter"
        );
        assert_eq!(rate("0/s").line, "option --rate: is badly used here");
        let unit = rate("1/fortnight");
        assert_eq!(unit.line, "option --rate: is badly used here");
        assert_eq!(
            unit.note,
            Some(Note::Error("unsupported --rate unit".into()))
        );
    }

    #[test]
    fn an_empty_output_name_is_badly_used() {
        let empty = refused(&["-o", ""], "output", Some('o'), "");
        assert_eq!(empty.line, "option -o: is badly used here");
        assert_eq!(
            empty.note,
            Some(Note::Warning("output file name has no length".into()))
        );
    }

    #[test]
    fn every_worded_option_is_one_of_curl_modes_and_takes_a_value() {
        use clap::CommandFactory;
        let command = crate::Cli::command();
        for (long, _) in READINGS {
            let arg = command
                .get_arguments()
                .find(|a| a.get_long() == Some(long))
                .unwrap_or_else(|| panic!("--{long} is an option"));
            assert!(arg.get_action().takes_values(), "--{long}");
        }
    }

    #[test]
    fn an_empty_value_elsewhere_is_a_blank_argument_named_as_typed() {
        let line = |args: &[&str], long, short| refused(args, long, short, "").line;
        assert_eq!(
            line(&["-c", ""], "cookie-jar", Some('c')),
            "option -c: blank argument where content is expected"
        );
        assert_eq!(
            line(&["--cacert", ""], "cacert", None),
            "option --cacert: blank argument where content is expected"
        );
        // A number's empty value keeps curl 7.88's words for the number.
        assert_eq!(
            line(&["-m", ""], "max-time", Some('m')),
            "option -m: expected a proper numerical parameter"
        );
    }

    #[test]
    fn other_options_keep_their_parsers_reason() {
        let args = vec!["--range".to_owned(), "x".to_owned()];
        assert_eq!(refusal(&args, &takes_value, "range", Some('r'), "x"), None);
    }
}
