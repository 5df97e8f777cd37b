//! `--no-NAME`: curl 7.88 turns any of its boolean options off with `--no-` before the long
//! name (`--no-verbose`, `--no-location`, `--no-remote-name-all`), and turns the options whose
//! own name starts with `no-` on with it left out (`--keepalive`, `--buffer`,
//! `--progress-meter`, `--alpn`, `--sessionid`). clap knows neither spelling, so [`apply`]
//! rewrites each group's command line before clap reads it: the negating word goes, and with it
//! every earlier occurrence of the flag it negates (its long name, or its letter in a bundle of
//! short flags), so that the last word wins as in curl.
//!
//! `--no-` before an option that takes a value, or before one of curl's few flags that are not
//! booleans (`--http2`, `--next`, ...), is curl's usage error ("used '--no-' for option that
//! isn't a boolean").
//!
//! `--no-head` is the one negation with more to it: curl's `--no-head` asks for a GET (a
//! request kind that conflicts with `-I`, `-F`, data without `-G` and `-T`, see
//! [`super::method`]) and turns `-i` off. It stays on the command line, a hidden flag of its
//! own, and takes the earlier `-i`/`--include` out.
//!
//! What this does not do: know which options exist. [`Lookup`] asks clap's definition.

use super::argv::{self, Arg, Kind};

/// curl's flags that take no value and are not booleans either (its `ARG_NONE`): `--no-`
/// before one is a usage error, as before an option that takes a value.
const NOT_BOOLEAN: &[&str] = &[
    "http1.0",
    "http1.1",
    "http2",
    "http2-prior-knowledge",
    "http3",
    "http3-only",
    "tlsv1",
    "tlsv1.0",
    "tlsv1.1",
    "tlsv1.2",
    "tlsv1.3",
    "sslv2",
    "sslv3",
    "ipv4",
    "ipv6",
    "proxy-tlsv1",
    "next",
];

/// What clap's definition says of a long option name (without `--`): `None` when there is no
/// such option, else whether it takes a value and its short letter.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<(bool, Option<char>)>;

/// `group` (one group's command line, without the program name) with its negations applied.
/// `takes_value` says whether an option, as written (`-o`, `--output`), takes a value.
///
/// # Errors
///
/// curl's message for `--no-` before an option that takes a value.
pub(crate) fn apply(
    group: Vec<String>,
    takes_value: &dyn Fn(&str) -> bool,
    lookup: Lookup<'_>,
) -> Result<Vec<String>, String> {
    let mut kept: Vec<Arg> = Vec::new();
    for arg in argv::read(group, takes_value) {
        if let Kind::Long { name, value: None } = &arg.kind {
            if name == "no-head" {
                kept.retain_mut(|earlier| !strip(earlier, "include", Some('i')));
            }
            if let Some((long, short)) = negated(name, lookup)? {
                kept.retain_mut(|earlier| !strip(earlier, &long, short));
                continue;
            }
        }
        kept.push(arg);
    }
    Ok(kept.into_iter().flat_map(|arg| arg.raw).collect())
}

/// The flag `--NAME` negates (its long name and short letter), if it is a negation: `no-X`
/// for a flag `X`, or `X` for a flag `no-X`, where the word itself is not an option.
fn negated(name: &str, lookup: Lookup<'_>) -> Result<Option<(String, Option<char>)>, String> {
    if lookup(name).is_some() {
        return Ok(None);
    }
    // curl's names for poolcurl's `no-` flags have no `no-` (`--no-buffer` negates
    // `buffer`): `--no-no-buffer` is no option.
    if let Some(rest) = name.strip_prefix("no-").filter(|r| !r.starts_with("no-")) {
        return match lookup(rest) {
            Some((false, short)) if !NOT_BOOLEAN.contains(&rest) => {
                Ok(Some((rest.to_owned(), short)))
            }
            Some(_) => Err(format!(
                "option --{name}: used '--no-' for option that isn't a boolean"
            )),
            None => Ok(None),
        };
    }
    let negative = format!("no-{name}");
    Ok(match lookup(&negative) {
        Some((false, short)) => Some((negative, short)),
        _ => None,
    })
}

/// Takes flag `--long` (or its letter `short`) out of `arg`; `true` when nothing is left of
/// it.
fn strip(arg: &mut Arg, long: &str, short: Option<char>) -> bool {
    match &mut arg.kind {
        Kind::Long { name, value: None } => name == long,
        Kind::Short { flags, valued } => {
            let Some(letter) = short.filter(|l| flags.contains(*l)) else {
                return false;
            };
            flags.retain(|c| c != letter);
            match valued {
                None if flags.is_empty() => return true,
                None => arg.raw[0] = format!("-{flags}"),
                // The value was the next argument: it stays there.
                Some((valued, _)) if arg.raw.len() == 2 => {
                    arg.raw[0] = format!("-{flags}{valued}");
                }
                Some((valued, value)) => {
                    let value = value.as_deref().unwrap_or_default();
                    arg.raw[0] = format!("-{flags}{valued}{value}");
                }
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes_value(name: &str) -> bool {
        matches!(name, "-o" | "--output")
    }

    fn lookup(name: &str) -> Option<(bool, Option<char>)> {
        match name {
            "verbose" => Some((false, Some('v'))),
            "silent" => Some((false, Some('s'))),
            "location" => Some((false, Some('L'))),
            "no-buffer" => Some((false, Some('N'))),
            "no-keepalive" => Some((false, None)),
            "output" => Some((true, Some('o'))),
            "next" => Some((false, Some(':'))),
            "include" => Some((false, Some('i'))),
            "head" => Some((false, Some('I'))),
            "no-head" => Some((false, None)),
            _ => None,
        }
    }

    fn apply_strs(argv: &[&str]) -> Result<Vec<String>, String> {
        apply(
            argv.iter().map(|s| (*s).to_owned()).collect(),
            &takes_value,
            &lookup,
        )
    }

    #[test]
    fn no_takes_the_earlier_flag_out_long_or_short() {
        assert_eq!(apply_strs(&["-v", "--no-verbose", "u"]).unwrap(), ["u"]);
        assert_eq!(
            apply_strs(&["--verbose", "--no-verbose"]).unwrap(),
            [] as [&str; 0]
        );
        assert_eq!(
            apply_strs(&["-sLv", "--no-location", "u"]).unwrap(),
            ["-sv", "u"]
        );
        assert_eq!(
            apply_strs(&["-sLo", "f", "--no-location"]).unwrap(),
            ["-so", "f"]
        );
        assert_eq!(apply_strs(&["-Lof", "--no-location"]).unwrap(), ["-of"]);
        // A later flag stays: the last word wins.
        assert_eq!(apply_strs(&["--no-verbose", "-v"]).unwrap(), ["-v"]);
    }

    #[test]
    fn the_positive_of_a_no_option_takes_it_out() {
        assert_eq!(apply_strs(&["-N", "--buffer", "u"]).unwrap(), ["u"]);
        assert_eq!(
            apply_strs(&["--no-keepalive", "--keepalive"]).unwrap(),
            [] as [&str; 0]
        );
        assert_eq!(apply_strs(&["--keepalive"]).unwrap(), [] as [&str; 0]);
    }

    #[test]
    fn no_head_stays_and_turns_include_off() {
        assert_eq!(
            apply_strs(&["-si", "--no-head", "u"]).unwrap(),
            ["-s", "--no-head", "u"]
        );
        assert_eq!(
            apply_strs(&["-I", "--no-head", "-i"]).unwrap(),
            ["-I", "--no-head", "-i"]
        );
    }

    #[test]
    fn no_before_an_option_with_a_value_is_curls_usage_error() {
        assert_eq!(
            apply_strs(&["--no-output"]).unwrap_err(),
            "option --no-output: used '--no-' for option that isn't a boolean"
        );
        assert_eq!(
            apply_strs(&["--no-next"]).unwrap_err(),
            "option --no-next: used '--no-' for option that isn't a boolean"
        );
        // Unknown names are left for clap to report.
        assert_eq!(apply_strs(&["--no-such"]).unwrap(), ["--no-such"]);
        assert_eq!(apply_strs(&["--no-no-buffer"]).unwrap(), ["--no-no-buffer"]);
    }
}
