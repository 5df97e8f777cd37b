//! `-f` against `--fail-with-body`: curl 7.88 takes one or the other. Reading its command line
//! in order, the option that turns the second of them on while the first is on (`--no-fail`
//! and `--no-fail-with-body` turn them off again) is badly used: exit 2, after curl's
//! "You must select either --fail or --fail-with-body, not both." (muted by `-s`).
//!
//! What this does not do: name the option as it was typed. curl names it so (`--fail` or
//! `-f`); this names `-f` and `--fail-with-body`.

use clap::ArgMatches;

use super::exit::{CurlError, Note};
use super::method::said_at;

/// Checks the group's `-f` and `--fail-with-body` (their negations already applied: an
/// occurrence left is one that turned the flag on).
///
/// # Errors
///
/// Exit 2, a badly used option, when both are on at once.
pub(crate) fn check(matches: &ArgMatches) -> Result<(), CurlError> {
    let mut turned_on: Vec<(usize, &str)> = Vec::new();
    for (id, flag) in [("fail", "-f"), ("fail_with_body", "--fail-with-body")] {
        let first = said_at(matches, id).first().copied();
        turned_on.extend(first.map(|at| (at, flag)));
    }
    turned_on.sort_unstable();
    match turned_on[..] {
        [_, (_, later)] => Err(CurlError::usage(
            format!("option {later}: is badly used here"),
            None,
        )
        .with_note(Note::Error(
            "You must select either --fail or --fail-with-body, not both.".to_owned(),
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(argv: &[&str]) -> Result<(), CurlError> {
        let (_, matches) = crate::curl::args::parse_test_args(argv);
        check(&matches)
    }

    #[test]
    fn the_option_that_turns_the_second_on_is_badly_used() {
        let error = checked(&["-f", "--fail-with-body", "http://a/"]).unwrap_err();
        assert!(error.is_usage());
        assert_eq!(
            error.message(),
            "option --fail-with-body: is badly used here"
        );
        let error = checked(&["--fail-with-body", "-sf", "http://a/"]).unwrap_err();
        assert_eq!(error.message(), "option -f: is badly used here");
        assert!(checked(&["-f", "http://a/"]).is_ok());
        assert!(checked(&["--fail-with-body", "http://a/"]).is_ok());
    }
}
