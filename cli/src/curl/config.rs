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
//! (`silent`) never swallows the next token. What this module does not do: read `~/.curlrc`
//! (curl does unless `-q`; poolcurl reads only the files it is given).

use super::argv::{self, Kind};
use super::exit::CurlError;

/// How deep `-K` files may name further `-K` files.
const MAX_DEPTH: usize = 8;

/// Replaces every `-K FILE` / `--config FILE` / `--config=FILE` in `argv` (without the program
/// name) by the options the file holds. `takes_value` says whether an option name (as written
/// on a command line: `-o`, `--output`) takes a value.
///
/// # Errors
///
/// Exit 26 when a file cannot be read, as curl reports it.
pub(crate) fn expand(
    argv: Vec<String>,
    takes_value: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, CurlError> {
    expand_at(argv, takes_value, 0, &mut false)
}

/// [`expand`] at `depth` files deep; `silent` says whether a `-s` came earlier on the command
/// line (curl notes a file it cannot read unless one did: it reads `-K` files while it
/// reads the arguments, so a later `-s` does not yet apply).
fn expand_at(
    argv: Vec<String>,
    takes_value: &dyn Fn(&str) -> bool,
    depth: usize,
    silent: &mut bool,
) -> Result<Vec<String>, CurlError> {
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
        let options = parse(&text, takes_value);
        out.extend(expand_at(options, takes_value, depth + 1, silent)?);
    }
    Ok(out)
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

/// The command-line arguments a config file's text stands for.
pub(crate) fn parse(text: &str, takes_value: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
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
        if option == "--url" {
            // `url = X` is a URL wherever it stands.
            out.push("--url".to_owned());
            out.push(value);
        } else if takes_value(&option) {
            out.push(option);
            out.push(value);
        } else {
            out.push(option);
        }
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
}
