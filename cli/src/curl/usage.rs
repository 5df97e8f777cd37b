//! The command line before and around clap, in curl's manner: `~/.curlrc` (unless `-q` comes
//! first) and `-K` files are spliced in (their lines the command line would refuse left out
//! with curl's warning),
//! deliberately unsupported flags are named, `-H @FILE` headers are spliced in, `--next`
//! splits it into groups, and clap's errors are reported as curl reports usage errors:
//!
//! ```text
//! poolcurl: option --bogus: is unknown
//! poolcurl: try 'poolcurl --help' for more information
//! ```
//!
//! with exit status 2; a value curl reads as a number or a size is refused in curl's words
//! ([`bad_value`]). Subcommands (`load`, `serve`) keep clap's own messages: they are not
//! curl.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::args::unsupported;
use super::exit::Note;
use super::{argv, bad_value, config, errout, header_file, negate, next, output};

/// The hint printed after every usage error.
pub(crate) const TRY_HELP: &str = "poolcurl: try 'poolcurl --help' for more information";

/// Whether `argv` (with the program name) is curl mode: its first argument is not a
/// subcommand.
pub(crate) fn is_curl_mode(argv: &[OsString]) -> bool {
    !matches!(
        argv.get(1).and_then(|a| a.to_str()),
        Some("load" | "serve" | "help")
    )
}

/// Prepares a curl-mode command line (with the program name) for clap: splices `~/.curlrc`
/// and `-K` files in,
/// refuses deliberately unsupported flags, splices `-H @FILE` headers in and splits it at
/// `--next` ([`next::split`]), then applies each group's `--no-` negations ([`negate`]).
/// Returns one command line (with the program name) per group. `command` is clap's
/// definition, asked which options exist and take a value. `Err` is the exit code, the message
/// already printed.
pub(crate) fn prepare(
    argv: Vec<OsString>,
    command: &clap::Command,
) -> Result<Vec<Vec<OsString>>, ExitCode> {
    let takes_value = &|name: &str| takes_value(command, name);
    let mut argv = argv.into_iter();
    let program = argv.next().unwrap_or_else(|| OsString::from("poolcurl"));
    let mut rest: Vec<String> = argv.map(|a| a.to_string_lossy().into_owned()).collect();
    // curl reads ~/.curlrc before the command line, unless `-q` (in any case, as curl
    // compares it) comes first.
    let no_arguments = rest.is_empty();
    let disabled = |a: &String| a.eq_ignore_ascii_case("-q") || a.eq_ignore_ascii_case("--disable");
    if rest.first().is_some_and(disabled) {
        rest.remove(0);
    } else if let Some(file) = config::default_file() {
        rest.splice(0..0, ["--config".to_owned(), file]);
    }
    if no_arguments && rest.is_empty() {
        // No arguments and no ~/.curlrc: curl's hint alone.
        errout::line(TRY_HELP);
        return Err(ExitCode::from(2));
    }
    let refuses = |args: &[String]| refused_in_config(command, args);
    let reader = config::Reader {
        takes_value,
        refuses: &refuses,
    };
    let rest = match config::expand(rest, &reader) {
        Ok(rest) => rest,
        Err(error) => {
            eprintln!("poolcurl: {}", error.message());
            eprintln!("{TRY_HELP}");
            return Err(ExitCode::from(error.code()));
        }
    };
    // Before anything else is reported: what follows goes where `--stderr` says.
    errout::redirect_from(&rest, takes_value);
    if let Some(message) = unsupported::find(&rest, takes_value) {
        errout::line(&format!("poolcurl: {message}"));
        errout::line(TRY_HELP);
        return Err(ExitCode::from(2));
    }
    let rest = header_file::expand(rest, takes_value);
    let rest = argv::attach_dashed_values(rest, takes_value);
    let lookup = |long: &str| long_option(command, long);
    let mut groups = Vec::new();
    for group in next::split(rest, takes_value) {
        let group = negate::apply(group, takes_value, &lookup).map_err(|message| {
            errout::line(&format!("poolcurl: {message}"));
            errout::line(TRY_HELP);
            ExitCode::from(2)
        })?;
        groups.push(
            std::iter::once(program.clone())
                .chain(group.into_iter().map(OsString::from))
                .collect(),
        );
    }
    Ok(groups)
}

/// The usage message for one config-file line's `args` that the command line would refuse:
/// an option poolcurl does not support, or one clap refuses (unknown, without its value, a
/// value that does not parse). A `--no-` negation is read as the command line reads it.
fn refused_in_config(command: &clap::Command, args: &[String]) -> Option<String> {
    let takes_value = &|name: &str| takes_value(command, name);
    if let Some(message) = unsupported::find(args, takes_value) {
        return Some(message);
    }
    let lookup = |long: &str| long_option(command, long);
    let args = match negate::apply(args.to_vec(), takes_value, &lookup) {
        Ok(args) => args,
        Err(message) => return Some(message),
    };
    let argv = std::iter::once("poolcurl".to_owned()).chain(args.iter().cloned());
    match command.clone().try_get_matches_from(argv) {
        Err(error)
            if !matches!(
                error.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            Some(describe(&error, command, &args).1)
        }
        _ => None,
    }
}

/// What `command` says of its long option `long` (without `--`): `None` when it has none,
/// else whether it takes a value and its short letter; for `--no-` negations.
fn long_option(command: &clap::Command, long: &str) -> Option<(bool, Option<char>)> {
    let arg = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?;
    Some((takes_a_value(arg), arg.get_short()))
}

/// Whether `arg` takes a value on the command line: not a flag whose occurrences clap keeps as
/// values of their own (`-O`, so that each keeps its place; `num_args = 0`).
pub(crate) fn takes_a_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values() && arg.get_num_args().is_none_or(|n| n.max_values() > 0)
}

/// Whether option `name` (as written on a command line: `-o`, `--output`) of `command` takes a
/// value.
fn takes_value(command: &clap::Command, name: &str) -> bool {
    let found = if let Some(long) = name.strip_prefix("--") {
        command.get_arguments().find(|a| a.get_long() == Some(long))
    } else if let Some(short) = name.strip_prefix('-') {
        let mut chars = short.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => command.get_arguments().find(|a| a.get_short() == Some(c)),
            _ => None,
        }
    } else {
        None
    };
    found.is_some_and(takes_a_value)
}

/// Reports a clap error in curl mode as curl reports usage errors, and returns exit code 2
/// (help and version requests print as clap prints them and exit 0). `argv` is the command
/// line clap read (with the program name), which names a refused option as it was typed.
pub(crate) fn clap_error(error: &clap::Error, argv: &[OsString]) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            errout::line(TRY_HELP);
            return ExitCode::from(2);
        }
        _ => {}
    }
    let args: Vec<String> = argv
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let command = <crate::Cli as clap::CommandFactory>::command();
    let (note, line) = describe(error, &command, &args);
    match note {
        Some(Note::Warning(text)) => errout::line(&output::curl_warning(&text)),
        Some(Note::Error(text)) => errout::line(&output::curl_error_note(&text)),
        None => {}
    }
    errout::line(&format!("poolcurl: {line}"));
    errout::line(TRY_HELP);
    ExitCode::from(2)
}

/// The part after `poolcurl: ` for a clap error, and the note curl prints before it (a
/// warning or an error line), if it prints one: a value
/// curl reads as a number or a size is refused in curl's words ([`bad_value`]), naming the
/// option as `args` (the command line without the program name) typed it.
fn describe(
    error: &clap::Error,
    command: &clap::Command,
    args: &[String],
) -> (Option<Note>, String) {
    let arg = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => flag_name(arg),
        _ => String::new(),
    };
    let value = match error.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(value)) => Some(value.clone()),
        _ => None,
    };
    if let (Some(long), Some(value), ErrorKind::InvalidValue | ErrorKind::ValueValidation) =
        (arg.strip_prefix("--"), value.as_deref(), error.kind())
    {
        let short = long_option(command, long).and_then(|(_, short)| short);
        let takes_value = &|name: &str| takes_value(command, name);
        if let Some(refusal) = bad_value::refusal(args, takes_value, long, short, value) {
            return (refusal.note, refusal.line);
        }
    }
    // A missing parameter belongs to the last word; curl names it as typed (`-X`, `-sX`).
    let arg = match (error.kind(), value.as_deref(), args.last()) {
        (ErrorKind::InvalidValue, Some(""), Some(last)) if last.starts_with('-') => flag_name(last),
        _ => arg,
    };
    (None, clap_words(error, &arg, value))
}

/// [`describe`]'s line in clap's terms, for an option [`bad_value`] does not word.
fn clap_words(error: &clap::Error, arg: &str, value: Option<String>) -> String {
    match error.kind() {
        ErrorKind::UnknownArgument => format!("option {arg}: is unknown"),
        ErrorKind::InvalidValue if value.as_deref() == Some("") => {
            format!("option {arg}: requires parameter")
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let reason = std::error::Error::source(error)
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            format!(
                "option {arg}: bad value '{}'{reason}",
                value.unwrap_or_default()
            )
        }
        ErrorKind::ArgumentConflict => {
            let other = match error.get(ContextKind::PriorArg) {
                Some(ContextValue::String(other)) => flag_name(other),
                Some(ContextValue::Strings(others)) => others
                    .iter()
                    .map(|o| flag_name(o))
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => String::from("another option"),
            };
            format!("option {arg}: cannot be combined with {other}")
        }
        _ => {
            // Other kinds are rare in curl mode; clap's first line says what happened.
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            first.trim_start_matches("error: ").to_owned()
        }
    }
}

/// `--max-time <SECONDS>` -> `--max-time`.
fn flag_name(arg: &str) -> String {
    arg.split([' ', '=']).next().unwrap_or(arg).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn error_for(argv: &[&str]) -> String {
        let error = crate::Cli::command()
            .try_get_matches_from(std::iter::once("poolcurl").chain(argv.iter().copied()))
            .expect_err("a usage error");
        let args: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
        describe(&error, &crate::Cli::command(), &args).1
    }

    #[test]
    fn clap_errors_read_like_curls() {
        assert_eq!(
            error_for(&["--bogus", "http://a/"]),
            "option --bogus: is unknown"
        );
        // Named as typed, as curl names it.
        assert_eq!(
            error_for(&["http://a/", "-X"]),
            "option -X: requires parameter"
        );
        assert_eq!(
            error_for(&["http://a/", "-sX"]),
            "option -sX: requires parameter"
        );
        assert_eq!(
            error_for(&["http://a/", "--request"]),
            "option --request: requires parameter"
        );
        assert_eq!(
            error_for(&["-m", "abc", "http://a/"]),
            "option -m: expected a proper numerical parameter"
        );
        assert_eq!(
            error_for(&["--limit-rate", "fast", "http://a/"]),
            "option --limit-rate: is badly used here"
        );
        assert_eq!(
            error_for(&["-c", "", "http://a/"]),
            "option -c: blank argument where content is expected"
        );
        assert_eq!(
            error_for(&["http://a/", "-X", ""]),
            "option -X: blank argument where content is expected"
        );
    }

    #[test]
    fn subcommands_are_not_curl_mode() {
        let argv = |a: &str| vec![OsString::from("poolcurl"), OsString::from(a)];
        assert!(!is_curl_mode(&argv("load")));
        assert!(!is_curl_mode(&argv("serve")));
        assert!(is_curl_mode(&argv("http://a/")));
    }
}
