//! `-K FILE` / `--config FILE`: more command-line options read from a file, spliced into the
//! command line where the `-K` stood, before clap parses it.
//!
//! The format is curl's: one option per line, its name with or without leading dashes,
//! separated from its value by whitespace, `=` or `:`; a value in double quotes may hold spaces
//! and the escapes `\\`, `\"`, `\t`, `\n`, `\r`, `\v`; an unquoted value ends at whitespace.
//! Lines starting with `#` and blank lines are skipped. `url = URL` adds a URL. A file may name
//! another `-K` file (up to a depth of 8); `-K -` reads stdin.
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
/// name) by the options the file holds, but for the lines `reader` refuses.
///
/// # Errors
///
/// Exit 26 when a file cannot be read, as curl reports it.
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
            let refused = match entry.missing {
                true => Some(format!("option {}: requires parameter", entry.name)),
                false => (reader.refuses)(&entry.args),
            };
            if let Some(message) = refused {
                if !*silent {
                    // "option --bogus: is unknown" -> "is unknown"
                    let reason = message.split_once(": ").map_or(&*message, |(_, r)| r);
                    let warning =
                        format!("{shown}:{}: warning: '{}' {reason}", entry.line, entry.name);
                    eprintln!("{}", super::output::curl_warning(&warning));
                }
                continue;
            }
            out.extend(expand_at(entry.args, reader, depth + 1, silent)?);
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

/// The text of a config file (`-` is stdin).
fn read(file: &str) -> Result<String, CurlError> {
    let bytes = if file == "-" {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes).map(|_| bytes)
    } else {
        std::fs::read(file)
    };
    bytes
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|_| CurlError::new(26, "option -K: error encountered when reading a file"))
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
}

/// The command-line arguments a config file's text stands for.
#[cfg(test)]
fn parse(text: &str, takes_value: &dyn Fn(&str) -> bool) -> Vec<String> {
    entries(text, takes_value)
        .into_iter()
        .flat_map(|e| e.args)
        .collect()
}

/// The option lines of a config file's text.
fn entries(text: &str, takes_value: &dyn Fn(&str) -> bool) -> Vec<Entry> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let end = line
            .find(|c: char| c.is_whitespace() || c == '=' || c == ':')
            .unwrap_or(line.len());
        let (name, rest) = line.split_at(end);
        let option = if name.starts_with('-') {
            name.to_owned()
        } else {
            format!("--{name}")
        };
        let rest = rest.trim_start();
        let rest = rest
            .strip_prefix('=')
            .or_else(|| rest.strip_prefix(':'))
            .unwrap_or(rest)
            .trim_start();
        let value = value(rest);
        // `url = X` is a URL wherever it stands.
        let valued = option == "--url" || takes_value(&option);
        let missing = valued && rest.is_empty();
        let args = if valued {
            vec![option, value]
        } else {
            vec![option]
        };
        out.push(Entry {
            line: number + 1,
            name: name.to_owned(),
            args,
            missing,
        });
    }
    out
}

/// A value: quoted with escapes, or up to the first whitespace.
fn value(text: &str) -> String {
    let Some(quoted) = text.strip_prefix('"') else {
        return text
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
    };
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
    }

    #[test]
    fn missing_files_exit_26_and_files_splice_in_place() {
        let argv = vec![
            "-s".to_owned(),
            "-K".to_owned(),
            "/nonexistent/x".to_owned(),
        ];
        assert_eq!(expand(argv, &takes_value).unwrap_err().code(), 26);
        let dir = std::env::temp_dir().join(format!("poolcurl-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
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
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refused_lines_are_left_out_and_the_rest_is_read() {
        let dir = std::env::temp_dir().join(format!("poolcurl-config-r-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("k.cfg");
        std::fs::write(&file, "silent\nbogus\noutput = o.txt\n").unwrap();
        let argv = vec!["-K".to_owned(), file.display().to_string()];
        assert_eq!(
            expand(argv, &takes_value).unwrap(),
            ["--silent", "--output", "o.txt"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
