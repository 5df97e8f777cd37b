//! `-n`/`--netrc`, `--netrc-file FILE` and `--netrc-optional`: a transfer's user and password
//! from a `.netrc` file (`$HOME/.netrc` unless `--netrc-file` names another), looked up by the
//! host of each request.
//!
//! The file is read as curl 7.88 reads it: tokens separated by blanks and newlines, keywords in
//! any case (`machine NAME`, `default`, `login NAME`, `password WORD`, `account WORD`, `macdef
//! NAME`, whose lines up to the next empty one are skipped), a token starting with `#` ending
//! its line, `"quoted tokens"` with `\"`, `\\`, `\n`, `\r` and `\t`, and unknown tokens skipped.
//! A quote left open is the one error (exit 26, ".netrc parser error"); a missing file is not
//! one, it only finds no host. The `netrc-rs` and `rust-netrc` crates read another dialect
//! (keywords in lower case only, no quoting, an error where an entry is cut short), so the
//! token reader is ours; it is the whole of the format.
//!
//! Which entry applies, as in curl: of the entries for the host (`machine` with the host's name,
//! in any case, or `default`), the first with both a `login` and a `password`, else the first;
//! with a user in the URL, the first whose `login` is that user. What an entry leaves out is
//! sent empty. `-u` (or `--oauth2-bearer`) wins over the file. `-n` and `--netrc-file` prefer
//! the file's password to the URL's; `--netrc-optional` keeps a password the URL has.
//!
//! Not copied from curl 7.88, whose choices there follow from how its scan stops rather than
//! from a rule: with a user in the URL that no entry names, curl sends the last entry's
//! password with that user (poolcurl sends none, as later curl releases do); when no entry for
//! the host is complete, curl takes the last entry of the file if it is one of them and empty
//! values otherwise (poolcurl the first entry for the host); and inside the host's own entry
//! curl does not know `macdef`, reading the macro's lines as entries (poolcurl skips them
//! wherever the macro stands).

use std::path::{Path, PathBuf};

use super::exit::CurlError;

/// How the file's credentials rank against the URL's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `-n`, `--netrc-file`: the file's password wins over the URL's.
    Required,
    /// `--netrc-optional`: a password in the URL wins.
    Optional,
}

/// One `machine` or `default` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Entry {
    /// The host; `None` for `default`.
    machine: Option<String>,
    login: Option<String>,
    password: Option<String>,
}

/// The `.netrc` of a command line: where it is, how it ranks, and what it says.
#[derive(Debug)]
pub(crate) struct Netrc {
    pub(crate) mode: Mode,
    pub(crate) path: PathBuf,
    /// The entries in file order; `Err` when the file could not be parsed.
    entries: Result<Vec<Entry>, ()>,
}

impl Netrc {
    /// Reads the file the flags name (`None` without any of them). A file that cannot be read
    /// has no entries.
    pub(crate) fn load(netrc: bool, file: Option<&str>, optional: bool) -> Option<Netrc> {
        let mode = match (optional, netrc || file.is_some()) {
            (true, _) => Mode::Optional,
            (false, true) => Mode::Required,
            (false, false) => return None,
        };
        let path = match file {
            Some(file) => PathBuf::from(file),
            None => std::env::var_os("HOME")
                .map(|home| Path::new(&home).join(".netrc"))
                .unwrap_or_else(|| PathBuf::from(".netrc")),
        };
        let text = std::fs::read(&path).unwrap_or_default();
        let entries = parse(&String::from_utf8_lossy(&text));
        Some(Netrc {
            mode,
            path,
            entries,
        })
    }

    /// The user and password for `host`, given the URL's `user` if it has one: `Ok(None)`
    /// when no entry applies.
    ///
    /// # Errors
    ///
    /// Exit 26 when the file could not be parsed.
    pub(crate) fn lookup(
        &self,
        host: &str,
        user: Option<&str>,
    ) -> Result<Option<(String, String)>, CurlError> {
        let entries = self
            .entries
            .as_ref()
            .map_err(|()| CurlError::new(26, ".netrc parser error"))?;
        let mut applies = entries.iter().filter(|e| {
            e.machine
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(host))
        });
        let found = match user {
            Some(user) => applies.find(|e| e.login.as_deref() == Some(user)),
            None => {
                let first = applies.clone().next();
                applies
                    .find(|e| e.login.is_some() && e.password.is_some())
                    .or(first)
            }
        };
        Ok(found.map(|e| {
            (
                e.login.clone().unwrap_or_default(),
                e.password.clone().unwrap_or_default(),
            )
        }))
    }
}

/// The entries of a `.netrc` text; `Err` for a quote left open.
fn parse(text: &str) -> Result<Vec<Entry>, ()> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut in_macdef = false;
    // The keyword whose value the next token is.
    let mut pending: Option<String> = None;
    for line in text.lines() {
        if in_macdef {
            in_macdef = !line.trim().is_empty();
            continue;
        }
        for token in tokens(line)? {
            if let Some(keyword) = pending.take() {
                match keyword.as_str() {
                    "machine" => entries.push(Entry {
                        machine: Some(token),
                        ..Entry::default()
                    }),
                    "login" => {
                        if let Some(entry) = entries.last_mut() {
                            entry.login = Some(token);
                        }
                    }
                    "password" => {
                        if let Some(entry) = entries.last_mut() {
                            entry.password = Some(token);
                        }
                    }
                    // `account`'s value, and `macdef`'s name: its lines follow.
                    "macdef" => in_macdef = true,
                    _ => {}
                }
                continue;
            }
            let keyword = token.to_ascii_lowercase();
            match keyword.as_str() {
                "default" => entries.push(Entry::default()),
                "machine" | "login" | "password" | "account" | "macdef" => pending = Some(keyword),
                _ => {}
            }
        }
    }
    Ok(entries)
}

/// The tokens of one line, up to a token that starts a comment.
fn tokens(line: &str) -> Result<Vec<String>, ()> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_ascii_whitespace()).is_some() {}
        match chars.peek() {
            None | Some('#') => return Ok(out),
            Some('"') => {
                chars.next();
                let mut token = String::new();
                loop {
                    match chars.next().ok_or(())? {
                        '"' => break,
                        '\\' => token.push(match chars.next().ok_or(())? {
                            'n' => '\n',
                            'r' => '\r',
                            't' => '\t',
                            other => other,
                        }),
                        c => token.push(c),
                    }
                }
                out.push(token);
            }
            Some(_) => {
                let mut token = String::new();
                while let Some(c) = chars.next_if(|c| !c.is_ascii_whitespace()) {
                    token.push(c);
                }
                out.push(token);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn netrc(text: &str) -> Netrc {
        Netrc {
            mode: Mode::Required,
            path: PathBuf::from("test"),
            entries: parse(text),
        }
    }

    fn found(text: &str, host: &str, user: Option<&str>) -> Option<(String, String)> {
        netrc(text).lookup(host, user).expect("parsed")
    }

    fn pair(user: &str, password: &str) -> Option<(String, String)> {
        Some((user.to_owned(), password.to_owned()))
    }

    const TWO_USERS: &str = "machine h.test login alice password one\n\
        machine h.test login bob password two\n\
        default login dflt password three\n";

    #[test]
    fn the_first_entry_for_the_host_or_the_users_own() {
        assert_eq!(found(TWO_USERS, "h.test", None), pair("alice", "one"));
        assert_eq!(found(TWO_USERS, "H.TEST", None), pair("alice", "one"));
        assert_eq!(found(TWO_USERS, "h.test", Some("bob")), pair("bob", "two"));
        assert_eq!(found(TWO_USERS, "other.test", None), pair("dflt", "three"));
        // The default applies to any host, so it answers for a user it names too.
        assert_eq!(
            found(TWO_USERS, "h.test", Some("dflt")),
            pair("dflt", "three")
        );
        // A user no entry names gets nothing from the file (curl 7.88 sent another's password).
        assert_eq!(found(TWO_USERS, "h.test", Some("carol")), None);
        assert_eq!(found("machine a login b password c", "x", None), None);
    }

    #[test]
    fn a_complete_entry_wins_over_an_earlier_one_that_is_not() {
        let text = "machine h login alice\nmachine h login bob password two\n";
        assert_eq!(found(text, "h", None), pair("bob", "two"));
        let text = "machine h login alice\ndefault login d password dd\n";
        assert_eq!(found(text, "h", None), pair("d", "dd"));
        let text = "machine h login alice\nmachine h password p\n";
        assert_eq!(found(text, "h", None), pair("alice", ""));
    }

    #[test]
    fn a_default_before_the_host_wins_as_in_curl() {
        let text = "default login d password dd\nmachine h.test login alice password one";
        assert_eq!(found(text, "h.test", None), pair("d", "dd"));
    }

    #[test]
    fn what_an_entry_leaves_out_is_sent_empty() {
        assert_eq!(found("machine h login alice", "h", None), pair("alice", ""));
        assert_eq!(found("machine h password s", "h", None), pair("", "s"));
        // Cut short at the end of the file: no error, as in curl.
        assert_eq!(
            found("machine h login alice password", "h", None),
            pair("alice", "")
        );
    }

    #[test]
    fn keywords_in_any_case_across_lines_with_comments_and_macros() {
        let text = "# machine h login no password no\n\
            MACHINE h # login no\n\
            Login al#ice\n\
            macdef init\n\
            machine h login inside password macro\n\
            \n\
            account acc PASSWORD one bogus token\n";
        assert_eq!(found(text, "h", None), pair("al#ice", "one"));
    }

    #[test]
    fn quoted_tokens_take_blanks_and_escapes() {
        let text = r#"machine h login "al ice" password "o\"n\\e\t""#;
        assert_eq!(found(text, "h", None), pair("al ice", "o\"n\\e\t"));
    }

    #[test]
    fn an_open_quote_is_a_parse_error_exit_26() {
        let error = netrc("machine h login a password \"one")
            .lookup("h", None)
            .unwrap_err();
        assert_eq!(error.to_string(), "(26) .netrc parser error");
    }

    #[test]
    fn the_flags_choose_the_mode_and_the_file() {
        assert!(Netrc::load(false, None, false).is_none());
        let file = Netrc::load(false, Some("/nonexistent/netrc"), false).unwrap();
        assert_eq!(file.mode, Mode::Required);
        assert_eq!(
            file.lookup("h", None).unwrap(),
            None,
            "a missing file finds nothing"
        );
        assert_eq!(
            Netrc::load(true, Some("/nonexistent/netrc"), true)
                .unwrap()
                .mode,
            Mode::Optional
        );
    }
}
