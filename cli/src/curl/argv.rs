//! A curl command line read the way curl reads it, before clap sees it.
//!
//! Several steps rewrite the command line before clap parses it: `-K` files are spliced in
//! ([`super::config`]), refused flags are named ([`super::args::unsupported`]), `-H @FILE`
//! headers are spliced in ([`super::header_file`]), values that start with `-` are attached to
//! their options ([`attach_dashed_values`]) and `--next` splits it into groups
//! ([`super::next`]). Each needs the same answer to one question, which argument is an option,
//! which is an option's value and which is a URL, so [`read`] answers it once, by curl's rules:
//!
//! * `--name`, `--name=VALUE`, or `--name VALUE` when the option takes a value;
//! * `-abc` is a bundle of short flags; the first letter that takes a value ends the bundle,
//!   its value being the rest of the argument (`-oFILE`, `-sSo FILE`'s next argument);
//! * `-` alone and anything not starting with `-` is a URL;
//! * `--` ends the options: every argument after it is a URL.
//!
//! What this does not do: know the options. Whether one takes a value is asked of clap's
//! definition (`takes_value`), so an unknown option takes none, and clap reports it later.

/// One option (with its value) or one URL, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Arg {
    /// The arguments it was written as: one, or two when the value is the next argument (all
    /// of them for [`Kind::Rest`]).
    pub(crate) raw: Vec<String>,
    /// What it is.
    pub(crate) kind: Kind,
}

/// What an [`Arg`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `--name`, `--name=VALUE` or `--name VALUE`; `value` is `None` for a flag, and for an
    /// option that takes a value but ended the command line.
    Long { name: String, value: Option<String> },
    /// A bundle of short options: `flags` are the letters that take no value, `valued` the
    /// letter that does, with its value (`None` when the command line ended first).
    Short {
        flags: String,
        valued: Option<(char, Option<String>)>,
    },
    /// A URL.
    Url,
    /// `--` and the URLs after it.
    Rest,
}

impl Arg {
    /// Whether this argument is `-s` / `--silent` (alone or in a bundle): what curl has read
    /// so far mutes the warnings it prints while it reads the rest.
    pub(crate) fn silences(&self) -> bool {
        match &self.kind {
            Kind::Long { name, .. } => name == "silent",
            Kind::Short { flags, .. } => flags.contains('s'),
            Kind::Url | Kind::Rest => false,
        }
    }

    /// The URLs this argument adds to its group: a URL, `--url`'s value, or those after `--`.
    pub(crate) fn urls(&self) -> usize {
        match &self.kind {
            Kind::Url => 1,
            Kind::Long { name, value } if name == "url" => usize::from(value.is_some()),
            Kind::Rest => self.raw.len() - 1,
            Kind::Long { .. } | Kind::Short { .. } => 0,
        }
    }
}

/// Reads `argv` (without the program name). `takes_value` says whether an option, as written
/// on a command line (`-o`, `--output`), takes a value.
pub(crate) fn read(argv: Vec<String>, takes_value: &dyn Fn(&str) -> bool) -> Vec<Arg> {
    let mut out = Vec::with_capacity(argv.len());
    let mut args = argv.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            let mut raw = vec![arg];
            raw.extend(args.by_ref());
            out.push(Arg {
                raw,
                kind: Kind::Rest,
            });
            break;
        }
        let kind = if let Some(long) = arg.strip_prefix("--") {
            match long.split_once('=') {
                Some((name, value)) => Kind::Long {
                    name: name.to_owned(),
                    value: Some(value.to_owned()),
                },
                None => Kind::Long {
                    name: long.to_owned(),
                    value: None,
                },
            }
        } else if let Some(letters) = arg.strip_prefix('-').filter(|l| !l.is_empty()) {
            let mut flags = String::new();
            let mut valued = None;
            for (at, letter) in letters.char_indices() {
                if takes_value(&format!("-{letter}")) {
                    let rest = &letters[at + letter.len_utf8()..];
                    valued = Some((letter, (!rest.is_empty()).then(|| rest.to_owned())));
                    break;
                }
                flags.push(letter);
            }
            Kind::Short { flags, valued }
        } else {
            Kind::Url
        };
        let mut raw = vec![arg];
        let kind = match kind {
            Kind::Long { name, value: None } if takes_value(&format!("--{name}")) => {
                let value = args.next();
                raw.extend(value.clone());
                Kind::Long { name, value }
            }
            Kind::Short {
                flags,
                valued: Some((letter, None)),
            } => {
                let value = args.next();
                raw.extend(value.clone());
                Kind::Short {
                    flags,
                    valued: Some((letter, value)),
                }
            }
            kind => kind,
        };
        out.push(Arg { raw, kind });
    }
    out
}

/// `argv` with every option value that starts with `-` attached to its option (`-d -x` becomes
/// `-d-x`, `--range -500` becomes `--range=-500`): curl takes the argument after an option
/// that takes a value as that value, whatever it looks like, where clap would read `-x` as an
/// option of its own.
pub(crate) fn attach_dashed_values(
    argv: Vec<String>,
    takes_value: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    for arg in read(argv, takes_value) {
        let separate = arg.raw.len() == 2;
        match arg.kind {
            Kind::Long {
                name,
                value: Some(value),
            } if separate && value.starts_with('-') => out.push(format!("--{name}={value}")),
            Kind::Short {
                flags,
                valued: Some((letter, Some(value))),
            } if separate && value.starts_with('-') => {
                out.push(format!("-{flags}{letter}{value}"));
            }
            _ => out.extend(arg.raw),
        }
    }
    out
}

/// `-FLAGS`, or nothing for no flags: what is left of a bundle when its valued letter is
/// taken out of it.
pub(crate) fn bundle(flags: &str) -> Option<String> {
    (!flags.is_empty()).then(|| format!("-{flags}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes_value(name: &str) -> bool {
        matches!(name, "-o" | "--output" | "-d" | "--data" | "-H" | "--url")
    }

    #[test]
    fn values_that_look_like_options_are_attached() {
        let argv = [
            "-d",
            "-x",
            "-so",
            "-",
            "--data",
            "-1",
            "--output=-y",
            "-H",
            "A: 1",
            "-v",
            "--",
            "-u",
        ];
        let attached = attach_dashed_values(argv.map(String::from).to_vec(), &takes_value);
        assert_eq!(
            attached,
            [
                "-d-x",
                "-so-",
                "--data=-1",
                "--output=-y",
                "-H",
                "A: 1",
                "-v",
                "--",
                "-u"
            ]
        );
    }

    fn read_strs(argv: &[&str]) -> Vec<Kind> {
        read(argv.iter().map(|s| (*s).to_owned()).collect(), &takes_value)
            .into_iter()
            .map(|arg| arg.kind)
            .collect()
    }

    fn long(name: &str, value: Option<&str>) -> Kind {
        Kind::Long {
            name: name.to_owned(),
            value: value.map(str::to_owned),
        }
    }

    fn short(flags: &str, valued: Option<(char, Option<&str>)>) -> Kind {
        Kind::Short {
            flags: flags.to_owned(),
            valued: valued.map(|(c, v)| (c, v.map(str::to_owned))),
        }
    }

    #[test]
    fn values_are_never_read_as_options() {
        assert_eq!(
            read_strs(&[
                "-sd",
                "-x",
                "--data",
                "--next",
                "--output=-v",
                "-o-v",
                "http://a/"
            ]),
            [
                short("s", Some(('d', Some("-x")))),
                long("data", Some("--next")),
                long("output", Some("-v")),
                short("", Some(('o', Some("-v")))),
                Kind::Url,
            ]
        );
    }

    #[test]
    fn bundles_end_at_their_first_valued_letter() {
        assert_eq!(
            read_strs(&["-sSo", "f", "-sL", "-dv"]),
            [
                short("sS", Some(('o', Some("f")))),
                short("sL", None),
                short("", Some(('d', Some("v")))),
            ]
        );
    }

    #[test]
    fn a_missing_value_is_none_and_dashes_end_the_options() {
        assert_eq!(
            read_strs(&["-", "--output"]),
            [Kind::Url, long("output", None)]
        );
        assert_eq!(read_strs(&["-H"]), [short("", Some(('H', None)))]);
        let args = read(
            ["-s", "--", "-v", "http://a/"].map(str::to_owned).to_vec(),
            &takes_value,
        );
        assert_eq!(args[1].kind, Kind::Rest);
        assert_eq!(args[1].raw, ["--", "-v", "http://a/"]);
        assert_eq!(args[1].urls(), 2);
    }

    #[test]
    fn raw_keeps_the_arguments_as_written() {
        let argv = ["-sSo", "f", "--url", "http://a/", "-H", "A: 1", "x"];
        let args = read(argv.map(str::to_owned).to_vec(), &takes_value);
        let raw: Vec<String> = args.iter().flat_map(|a| a.raw.clone()).collect();
        assert_eq!(raw, argv);
        let urls: Vec<usize> = args.iter().map(Arg::urls).collect();
        assert_eq!(urls, [0, 1, 0, 1]);
    }
}
