//! `-H @FILE`: request headers read from a file (`@-`: stdin), spliced into the command line
//! as one `-H LINE` per header before clap parses it, as curl reads them.
//!
//! The file is split at every CR and LF; empty lines are skipped, and so are the lines curl
//! makes nothing of ([`is_header_line`]). A file that cannot be opened is a warning
//! (`Warning: Failed to open FILE!`), not an error: the request goes without its headers, as in
//! curl, and the warning is muted when `-s` came earlier on the command line (curl warns while
//! it reads its arguments, so a later `-s` does not yet apply).
//!
//! Such a `-H` value on the command line is dropped here as well (`-H nocolon`, `-H ': x'`,
//! `-H 'x; y'`): curl sends nothing for it and goes on, where clap's parser would refuse it
//! (exit 2).
//!
//! `--proxy-header @FILE` reads its file the same way.

use super::argv::{self, Kind};

/// Replaces every `-H @FILE` / `--header @FILE` / `--header=@FILE` / `-H@FILE` in `argv`
/// (without the program name, after `-K` files are spliced in) by one `-H` per header line of
/// the file. `takes_value` says whether an option (as written on a command line: `-o`,
/// `--output`) takes a value, so that another option's value is never read as a flag.
pub(crate) fn expand(argv: Vec<String>, takes_value: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut silent = false;
    for arg in argv::read(argv, takes_value) {
        silent |= arg.silences();
        match arg.kind {
            Kind::Long { name, value } if name == "header" || name == "proxy-header" => {
                splice(&mut out, &format!("--{name}"), value, silent);
            }
            Kind::Long { .. } => out.extend(arg.raw),
            Kind::Short { flags, valued } => match valued {
                Some(('H', value)) => {
                    out.extend(argv::bundle(&flags));
                    splice(&mut out, "-H", value, silent);
                }
                _ => out.extend(arg.raw),
            },
            Kind::Url | Kind::Rest => out.extend(arg.raw),
        }
    }
    out
}

/// Pushes `option value`, or one `-H LINE` per header of the file `value` names.
fn splice(out: &mut Vec<String>, option: &str, value: Option<String>, silent: bool) {
    let Some(value) = value else {
        // No value: clap reports the missing parameter.
        out.push(option.to_owned());
        return;
    };
    let Some(file) = value.strip_prefix('@') else {
        // curl sends nothing for a line that is not a header, and says nothing.
        if is_header_line(&value) {
            out.push(option.to_owned());
            out.push(value);
        }
        return;
    };
    match read(file) {
        Some(text) => {
            for line in header_lines(&text) {
                out.push(option.to_owned());
                out.push(line.to_owned());
            }
        }
        None if silent => {}
        None => super::output::stderr_line(&format!("Warning: Failed to open {file}!")),
    }
}

/// The header lines of a header file's text.
fn header_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split(['\r', '\n']).filter(|line| is_header_line(line))
}

/// Whether curl 7.88 makes anything of a `-H` line (`Curl_add_custom_headers`): a name before
/// its first `:` (`Name: value`, or `Name:` to remove one), or without a colon a name before a
/// `;` that ends the line (`Name;`, sent empty). A line that starts with its separator, one
/// with neither, and one with more after its `;` are not headers.
fn is_header_line(line: &str) -> bool {
    match line.find(':') {
        Some(at) => at > 0,
        None => line
            .find(';')
            .is_some_and(|at| at > 0 && at + 1 == line.len()),
    }
}

/// The file's text (`-` is stdin), if it can be read.
fn read(file: &str) -> Option<String> {
    super::data::read_source(file)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes_value(name: &str) -> bool {
        matches!(
            name,
            "-H" | "--header" | "--proxy-header" | "-o" | "--output" | "-d" | "--data"
        )
    }

    fn expand_strs(argv: &[&str]) -> Vec<String> {
        expand(argv.iter().map(|s| (*s).to_owned()).collect(), &takes_value)
    }

    #[test]
    fn every_spelling_of_a_header_file_splices_its_lines() {
        let dir = crate::scratch::Scratch::new("hfile");
        let file = dir.join("headers.txt");
        std::fs::write(&file, "X-One: 1\r\n\r\nnot a header\nX-Two;\n").unwrap();
        let at = format!("@{}", file.display());
        let spliced = ["-H", "X-One: 1", "-H", "X-Two;"];
        assert_eq!(
            expand_strs(&["-H", &at, "http://a/"]),
            [&spliced[..], &["http://a/"]].concat()
        );
        let long = ["--header", "X-One: 1", "--header", "X-Two;"];
        assert_eq!(expand_strs(&["--header", &at]), long);
        assert_eq!(expand_strs(&[&format!("--header={at}")]), long);
        assert_eq!(
            expand_strs(&["--proxy-header", &at]),
            ["--proxy-header", "X-One: 1", "--proxy-header", "X-Two;"]
        );
        assert_eq!(expand_strs(&[&format!("-H{at}")]), spliced);
        assert_eq!(expand_strs(&["-sH", &at]), [&["-s"][..], &spliced].concat());
    }

    #[test]
    fn other_values_and_plain_headers_pass_through() {
        let argv = ["-d", "-H", "-H", "A: 1", "-o", "@x", "--", "-H", "@y"];
        assert_eq!(expand_strs(&argv), argv);
        assert_eq!(expand_strs(&["-dH"]), ["-dH"]);
        assert_eq!(expand_strs(&["-H"]), ["-H"]);
        assert_eq!(expand_strs(&["-H", "no colon", "-H", "A;"]), ["-H", "A;"]);
    }

    #[test]
    fn lines_curl_makes_nothing_of_are_dropped() {
        for line in [": x", ";", "x; y", "x; ", "x;;", "", "no colon"] {
            assert!(!is_header_line(line), "{line:?}");
            assert_eq!(expand_strs(&["-H", line]), [] as [&str; 0], "{line:?}");
        }
        for line in ["A: 1", "A:", "A;", "a:b;c", "A: ;"] {
            assert!(is_header_line(line), "{line:?}");
        }
    }

    #[test]
    fn a_missing_file_adds_no_header() {
        assert_eq!(
            expand_strs(&["-s", "-H", "@/nonexistent/poolcurl-headers", "http://a/"]),
            ["-s", "http://a/"]
        );
    }
}
