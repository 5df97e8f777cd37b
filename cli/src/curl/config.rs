//! `-K FILE` / `--config FILE`: more command-line options read from a file, spliced into the
//! command line where the `-K` stood, before clap parses it.
//!
//! The format is curl's: one option per line, its name with or without leading dashes,
//! separated from its value by whitespace (or, without dashes, `=` or `:`); a value in double
//! quotes may hold spaces and the escapes `\\`, `\"`, `\t`, `\n`, `\r`, `\v`; an unquoted
//! value ends at whitespace (more words after it are a warning). Lines starting with `#`, `/`
//! or `*` and blank lines are skipped. `url = URL` adds a URL. A file may name another `-K`
//! file (up to a depth of 8); `-K -` reads stdin.
//!
//! Whether an option takes a value is asked of the command-line definition, so a flag line
//! (`silent`) never swallows the next token.
//!
//! A line curl would refuse on the command line (an unknown option, a value that does not
//! parse, an option poolcurl does not support) does not end the run, as it does there: as in
//! curl, it is left out with a warning, `Warning: FILE:LINE: warning: 'NAME' REASON` (unless
//! a `-s` came before it), and the rest of the file is read.
//!
//! Unless the command line starts with `-q`, curl reads `~/.curlrc` first, as if it were a
//! `-K` before the command line; [`default_file`] finds it where curl 7.88 looks.
//!
//! What this module does not do: look up the home directory in the password database when
//! none of the variables names one (curl's last resort).

use std::io::Read;

use super::argv::{self, Kind};
use super::exit::CurlError;

/// How deep `-K` files may name further `-K` files.
const MAX_DEPTH: usize = 8;

/// How the options of a config file are read: `takes_value` says whether an option name (as
/// written on a command line: `-o`, `--output`) takes a value; `refuses` gives the usage
/// message (`option --bogus: is unknown`) for the arguments of one line that the command
/// line would refuse.
pub(crate) struct Reader<'a> {
    pub(crate) takes_value: &'a dyn Fn(&str) -> bool,
    pub(crate) refuses: &'a dyn Fn(&[String]) -> Option<String>,
}

/// Replaces every `-K FILE` / `--config FILE` / `--config=FILE` in `argv` (without the program
/// name) by the options the file holds, but for the lines `reader` refuses (and a `-K` line
/// whose file cannot be read: curl warns about those and goes on).
///
/// # Errors
///
/// Exit 26 when a file on the command line cannot be read, as curl reports it.
pub(crate) fn expand(argv: Vec<String>, reader: &Reader<'_>) -> Result<Vec<String>, CurlError> {
    expand_at(argv, reader, 0, &mut false)
}

/// [`expand`] at `depth` files deep; `silent` says whether a `-s` came earlier on the command
/// line (curl notes a file it cannot read, or a line it refuses, unless one did: it reads
/// `-K` files while it reads the arguments, so a later `-s` does not yet apply).
fn expand_at(
    argv: Vec<String>,
    reader: &Reader<'_>,
    depth: usize,
    silent: &mut bool,
) -> Result<Vec<String>, CurlError> {
    let takes_value = reader.takes_value;
    let mut out = Vec::with_capacity(argv.len());
    for arg in argv::read(argv, takes_value) {
        *silent |= arg.silences();
        let file = match arg.kind {
            Kind::Long { name, value } if name == "config" => value,
            Kind::Short {
                flags,
                valued: Some(('K', value)),
            } => {
                out.extend(argv::bundle(&flags));
                value
            }
            _ => {
                out.extend(arg.raw);
                continue;
            }
        };
        let Some(file) = file else {
            return Err(CurlError::new(2, "option -K: requires parameter"));
        };
        if depth >= MAX_DEPTH {
            return Err(CurlError::new(26, "option -K: config files nest too deep"));
        }
        let text = read(&file).inspect_err(|_| {
            if !*silent {
                let note = format!("cannot read config from '{file}'");
                eprintln!("{}", super::output::curl_error_note(&note));
            }
        })?;
        let shown = if file == "-" {
            "<stdin>"
        } else {
            file.as_str()
        };
        for entry in entries(&text, takes_value) {
            let warn = |silent: bool, reason: &str| {
                if !silent {
                    let warning =
                        format!("{shown}:{}: warning: '{}' {reason}", entry.line, entry.name);
                    eprintln!("{}", super::output::curl_warning(&warning));
                }
            };
            if entry.unquoted_whitespace {
                warn(
                    *silent,
                    "uses unquoted whitespace in the line that may cause side-effects!",
                );
            }
            let refused = match entry.missing {
                true => Some(format!("option {}: requires parameter", entry.name)),
                false => (reader.refuses)(&entry.args),
            };
            if let Some(message) = refused {
                // "option --bogus: is unknown" -> "is unknown"
                warn(
                    *silent,
                    message.split_once(": ").map_or(&*message, |(_, r)| r),
                );
                continue;
            }
            match expand_at(entry.args, reader, depth + 1, silent) {
                Ok(args) => out.extend(args),
                // A `-K` on a line is read as any option there: its failure is the line's
                // warning, and the file goes on.
                Err(error) => {
                    let message = error.message();
                    warn(
                        *silent,
                        message.split_once(": ").map_or(message, |(_, r)| r),
                    );
                    continue;
                }
            }
            // curl applies the flag, then warns (muted if the flag was `-s`).
            if entry.extra_value {
                warn(*silent, "had unsupported trailing garbage");
            }
        }
    }
    Ok(out)
}

/// The `.curlrc` curl 7.88 reads, if there is one: in `$CURL_HOME`, `$XDG_CONFIG_HOME` or
/// `$HOME` as `.curlrc` (the first that can be opened, a variable set to nothing skipped), else,
/// when `XDG_CONFIG_HOME` is not set, as `curlrc` in `$CURL_HOME/.config` or `$HOME/.config`.
pub(crate) fn default_file() -> Option<String> {
    let var = |name: &str| std::env::var_os(name);
    let xdg = var("XDG_CONFIG_HOME").is_some();
    let mut candidates = Vec::new();
    for name in ["CURL_HOME", "XDG_CONFIG_HOME", "HOME"] {
        candidates.extend(var(name).map(|home| (home, "", ".curlrc")));
    }
    if !xdg {
        for name in ["CURL_HOME", "HOME"] {
            candidates.extend(var(name).map(|home| (home, "/.config", "curlrc")));
        }
    }
    candidates
        .into_iter()
        .filter(|(home, ..)| !home.is_empty())
        .map(|(home, under, file)| {
            let mut path = home;
            path.push(under);
            path.push("/");
            path.push(file);
            path
        })
        .find(|path| std::fs::File::open(path).is_ok())
        .map(|path| path.to_string_lossy().into_owned())
}

/// The text of a config file (`-` is stdin). A file that opens but cannot be read (a
/// directory) is empty, as curl's line reader finds it; one that does not open is an error.
fn read(file: &str) -> Result<String, CurlError> {
    let mut source = super::data::open_source(file)
        .map_err(|_| CurlError::new(26, "option -K: error encountered when reading a file"))?;
    let mut bytes = Vec::new();
    if source.read_to_end(&mut bytes).is_err() {
        bytes.clear();
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// One option line of a config file.
struct Entry {
    /// Its number, from 1.
    line: usize,
    /// The option's name as the line writes it.
    name: String,
    /// The command-line arguments it stands for.
    args: Vec<String>,
    /// The option takes a value and the line gives none (not even `""`).
    missing: bool,
    /// An unquoted value was followed by more than a comment (curl warns: only the first word
    /// is the value).
    unquoted_whitespace: bool,
    /// A flag was given a value (curl warns, and the flag applies).
    extra_value: bool,
}

/// The command-line arguments a config file's text stands for.
#[cfg(test)]
fn parse(text: &str, takes_value: &dyn Fn(&str) -> bool) -> Vec<String> {
    entries(text, takes_value)
        .into_iter()
        .flat_map(|e| e.args)
        .collect()
}

/// curl's `ISSPACE`.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// The option lines of a config file's text, read as curl 7.88's `parseconfig` reads them: a
/// line whose first non-blank character is `#`, `/` or `*` is skipped; the name ends at a
/// blank, or for a name without a leading dash at `=` or `:` too; blanks and separators after
/// it are passed; the value is quoted (with escapes, to its closing quote) or runs to the next
/// blank.
fn entries(text: &str, takes_value: &dyn Fn(&str) -> bool) -> Vec<Entry> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_start_matches(is_space);
        if matches!(line.chars().next(), None | Some('#' | '/' | '*')) {
            continue;
        }
        let dashed = line.starts_with('-');
        let separator = |c: char| is_space(c) || (!dashed && (c == '=' || c == ':'));
        let end = line.find(separator).unwrap_or(line.len());
        let (name, rest) = line.split_at(end);
        let rest = rest.trim_start_matches(separator);
        let (value, unquoted_whitespace) = match rest.strip_prefix('"') {
            Some(quoted) => (Some(unquote(quoted)), false),
            None => {
                let end = rest.find(is_space).unwrap_or(rest.len());
                let after = rest[end..].trim_start_matches(is_space);
                let value = (end > 0).then(|| rest[..end].to_owned());
                (value, !after.is_empty() && !after.starts_with('#'))
            }
        };
        let option = match dashed {
            true => name.to_owned(),
            false => format!("--{name}"),
        };
        // `url = X` is a URL wherever it stands.
        let valued = option == "--url" || takes_value(&option);
        let extra_value = !valued && value.as_deref().is_some_and(|v| !v.is_empty());
        let missing = valued && value.is_none();
        let args = match valued {
            true => vec![option, value.unwrap_or_default()],
            false => vec![option],
        };
        out.push(Entry {
            line: number + 1,
            name: name.to_owned(),
            args,
            missing,
            unquoted_whitespace,
            extra_value,
        });
    }
    out
}

/// A quoted value after its opening quote: to the closing quote, with curl's escapes.
fn unquote(quoted: &str) -> String {
    let mut out = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('v') => out.push('\u{b}'),
                Some(other) => out.push(other),
                None => break,
            },
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes_value(name: &str) -> bool {
        matches!(
            name,
            "-o" | "--output" | "--write-out" | "-H" | "--header" | "-K" | "--config"
        )
    }

    fn refuses(args: &[String]) -> Option<String> {
        (args[0] == "--bogus").then(|| "option --bogus: is unknown".to_owned())
    }

    fn expand(argv: Vec<String>, _: &dyn Fn(&str) -> bool) -> Result<Vec<String>, CurlError> {
        let reader = Reader {
            takes_value: &takes_value,
            refuses: &refuses,
        };
        super::expand(argv, &reader)
    }

    #[test]
    fn lines_become_arguments() {
        let text = "# a comment\n\n  silent\nurl = \"http://a.test/x y\"\n-o out.txt\n\
                    write-out: \"%{http_code}\\n\"\nheader = \"X-A: 1\"\n--header X-B:2\n";
        assert_eq!(
            parse(text, &takes_value),
            [
                "--silent",
                "--url",
                "http://a.test/x y",
                "-o",
                "out.txt",
                "--write-out",
                "%{http_code}\n",
                "--header",
                "X-A: 1",
                "--header",
                "X-B:2",
            ]
        );
    }

    #[test]
    fn a_flag_line_never_takes_the_next_token() {
        assert_eq!(parse("verbose yes\n", &takes_value), ["--verbose"]);
        let entry = &entries("verbose yes\n", &takes_value)[0];
        assert!(entry.extra_value && !entry.unquoted_whitespace);
    }

    #[test]
    fn lines_are_read_as_curl_reads_them() {
        let text = "/ comment\n* comment\n\t# comment\n-o=x\noutput x y\noutput x # c\n\
                    header\nheader \"\"\n";
        let all = entries(text, &takes_value);
        // A dashed name ends at a blank only; `=` and `:` belong to it.
        assert_eq!(all[0].args, ["-o=x"]);
        assert_eq!(all[0].line, 4);
        assert!(all[1].unquoted_whitespace && !all[2].unquoted_whitespace);
        assert_eq!(all[1].args, ["--output", "x"]);
        assert!(all[3].missing && !all[4].missing);
    }

    #[test]
    fn missing_files_exit_26_and_files_splice_in_place() {
        let argv = vec![
            "-s".to_owned(),
            "-K".to_owned(),
            "/nonexistent/x".to_owned(),
        ];
        assert_eq!(expand(argv, &takes_value).unwrap_err().code(), 26);
        let dir = crate::scratch::Scratch::new("config");
        let file = dir.join("k.cfg");
        std::fs::write(&file, "output = o.txt\n").unwrap();
        let argv = vec![
            "-v".to_owned(),
            format!("--config={}", file.display()),
            "http://a/".to_owned(),
        ];
        assert_eq!(
            expand(argv, &takes_value).unwrap(),
            ["-v", "--output", "o.txt", "http://a/"]
        );
    }

    #[test]
    fn refused_lines_are_left_out_and_the_rest_is_read() {
        let dir = crate::scratch::Scratch::new("config-r");
        let file = dir.join("k.cfg");
        std::fs::write(&file, "silent\nbogus\noutput = o.txt\n").unwrap();
        let argv = vec!["-K".to_owned(), file.display().to_string()];
        assert_eq!(
            expand(argv, &takes_value).unwrap(),
            ["--silent", "--output", "o.txt"]
        );
    }

    #[test]
    fn a_nested_file_that_cannot_be_read_is_a_refused_line() {
        let dir = crate::scratch::Scratch::new("config-n");
        let file = dir.join("k.cfg");
        let nested = dir.join("n.cfg");
        std::fs::write(&nested, "output = n.txt\n").unwrap();
        let text = format!(
            "-K /nonexistent/x\n-K {}\nurl = http://a/\n",
            nested.display()
        );
        std::fs::write(&file, text).unwrap();
        let argv = vec!["-s".to_owned(), "-K".to_owned(), file.display().to_string()];
        assert_eq!(
            expand(argv, &takes_value).unwrap(),
            ["-s", "--output", "n.txt", "--url", "http://a/"]
        );
    }
}
