//! curl's request kind (its `httpreq`): which of a GET, a HEAD, a form POST, a data POST or a
//! PUT the flags ask for, and the combinations curl refuses, when and how it refuses them.
//!
//! curl 7.88 settles the kind in three places, and poolcurl follows each:
//!
//! * while it reads the command line, `-I` asks for a HEAD, `--no-head` for a GET and `-F`
//!   for a form POST, in the order written: the second of two different kinds is a badly used option (exit 2 before
//!   any transfer, the message printed even under `-s`, after a warning that `-s` mutes);
//! * when a group's first transfer is made, data (`-d` and friends) asks for a POST, or with
//!   `-G` for a GET (a HEAD with `-I`): against `-I` or `-F` that is a warning and exit 2 for
//!   the run, the groups before it having run;
//! * when a transfer uploads, `-T` asks for a PUT: against anything else the same (checked by
//!   the transfer, [`super::Session`]).
//!
//! What this does not do: `-X`, which changes the method sent and never the kind.

use clap::ArgMatches;
use clap::parser::ValueSource;

use super::exit::CurlError;

/// A request kind, as curl names them in its warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpReq {
    /// `-G` with data.
    Get,
    /// `-I`.
    Head,
    /// `-F`.
    FormPost,
    /// `-d` and friends.
    Post,
    /// `-T`.
    Put,
}

impl HttpReq {
    /// The kind and the flag that asks for it, as curl's warning names them.
    fn name(self) -> &'static str {
        match self {
            HttpReq::Get => "GET (-G, --get)",
            HttpReq::Head => "HEAD (-I, --head)",
            HttpReq::FormPost => "multipart formpost (-F, --form)",
            HttpReq::Post => "POST (-d, --data)",
            HttpReq::Put => "PUT (-T, --upload-file)",
        }
    }
}

/// curl's warning when `asked` comes after `chosen`.
pub(crate) fn conflict(asked: HttpReq, chosen: HttpReq) -> String {
    format!(
        "You can only select one HTTP request method! You asked for both {} and {}.",
        asked.name(),
        chosen.name()
    )
}

/// The kind a group's flags settle on before any upload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Chosen {
    /// The kind, if a flag asked for one (`None`: a plain GET).
    pub(crate) req: Option<HttpReq>,
    /// The warning that ends the run when the group's first transfer is made: data asked for
    /// a kind other than the one `-I` or `-F` chose.
    pub(crate) refused: Option<String>,
}

/// Settles the kind as curl does (see the module docs); `has_data` says whether the group has
/// data.
///
/// # Errors
///
/// Exit 2, as a badly used option, when `-I` and `-F` both appear.
pub(crate) fn choose(
    matches: &ArgMatches,
    get: bool,
    head: bool,
    has_data: bool,
) -> Result<Chosen, CurlError> {
    let indices = |id: &str| said_at(matches, id);
    let mut asked: Vec<(usize, HttpReq, &str)> = Vec::new();
    if head {
        asked.extend(
            indices("head")
                .into_iter()
                .map(|i| (i, HttpReq::Head, "-I")),
        );
    }
    asked.extend(
        indices("no_head")
            .into_iter()
            .map(|i| (i, HttpReq::Get, "--no-head")),
    );
    for id in ["form", "form_string"] {
        asked.extend(
            indices(id)
                .into_iter()
                .map(|i| (i, HttpReq::FormPost, "-F")),
        );
    }
    asked.sort_by_key(|(index, ..)| *index);
    let mut chosen = Chosen::default();
    for (_, req, flag) in asked {
        match chosen.req {
            Some(earlier) if earlier != req => {
                return Err(CurlError::usage(
                    format!("option {flag}: is badly used here"),
                    Some(conflict(req, earlier)),
                ));
            }
            _ => chosen.req = Some(req),
        }
    }
    if has_data {
        let req = match (get, head) {
            (true, true) => HttpReq::Head,
            (true, false) => HttpReq::Get,
            (false, _) => HttpReq::Post,
        };
        match chosen.req {
            Some(earlier) if earlier != req => chosen.refused = Some(conflict(req, earlier)),
            _ => chosen.req = Some(req),
        }
    }
    Ok(chosen)
}

/// Where on the command line flag `id` was given, in order; nothing for a flag left at its
/// default (whose default value has an index too). For checks that read flags in the order
/// written ([`choose`], [`super::fail_mode`]).
pub(crate) fn said_at(matches: &ArgMatches, id: &str) -> Vec<usize> {
    if matches.value_source(id) != Some(ValueSource::CommandLine) {
        return Vec::new();
    }
    matches.indices_of(id).into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose_for(argv: &[&str]) -> Result<Chosen, CurlError> {
        let (args, matches) = crate::curl::args::parse_test_args(argv);
        let has_data = !args.data_in_order(&matches).is_empty();
        choose(&matches, args.send.get, args.head, has_data)
    }

    #[test]
    fn head_and_a_form_are_a_badly_used_option_named_by_the_later_flag() {
        let error = choose_for(&["-F", "a=b", "-I", "http://a/"]).unwrap_err();
        assert!(error.is_usage());
        assert_eq!(error.message(), "option -I: is badly used here");
        assert_eq!(
            error.warning().unwrap(),
            "You can only select one HTTP request method! You asked for both HEAD (-I, --head) \
             and multipart formpost (-F, --form)."
        );
        let error = choose_for(&["-I", "--form-string", "a=b", "http://a/"]).unwrap_err();
        assert_eq!(error.message(), "option -F: is badly used here");
    }

    #[test]
    fn data_against_head_or_a_form_ends_the_run_when_the_transfer_is_made() {
        let chosen = choose_for(&["-I", "-d", "x", "http://a/"]).unwrap();
        assert_eq!(
            chosen.refused.as_deref(),
            Some(
                "You can only select one HTTP request method! You asked for both POST \
                 (-d, --data) and HEAD (-I, --head)."
            )
        );
        let chosen = choose_for(&["-G", "-F", "a=b", "-d", "x", "http://a/"]).unwrap();
        assert!(
            chosen
                .refused
                .unwrap()
                .contains("both GET (-G, --get) and multipart")
        );
    }

    #[test]
    fn no_head_asks_for_a_get() {
        let error = choose_for(&["-I", "--no-head", "http://a/"]).unwrap_err();
        assert_eq!(error.message(), "option --no-head: is badly used here");
        assert!(
            error
                .warning()
                .unwrap()
                .contains("both GET (-G, --get) and HEAD")
        );
        let error = choose_for(&["--no-head", "-F", "a=b", "http://a/"]).unwrap_err();
        assert_eq!(error.message(), "option -F: is badly used here");
        let chosen = choose_for(&["--no-head", "-d", "x", "http://a/"]).unwrap();
        assert!(
            chosen
                .refused
                .unwrap()
                .contains("both POST (-d, --data) and GET")
        );
        let chosen = choose_for(&["--no-head", "-G", "-d", "x", "http://a/"]).unwrap();
        assert_eq!((chosen.req, chosen.refused), (Some(HttpReq::Get), None));
    }

    #[test]
    fn kinds_that_agree_are_chosen() {
        let chosen = choose_for(&["-G", "-I", "-d", "x", "http://a/"]).unwrap();
        assert_eq!((chosen.req, chosen.refused), (Some(HttpReq::Head), None));
        let chosen = choose_for(&["-d", "x", "http://a/"]).unwrap();
        assert_eq!(chosen.req, Some(HttpReq::Post));
        let chosen = choose_for(&["-G", "-F", "a=b", "http://a/"]).unwrap();
        assert_eq!(chosen.req, Some(HttpReq::FormPost));
        assert_eq!(choose_for(&["http://a/"]).unwrap(), Chosen::default());
    }
}
