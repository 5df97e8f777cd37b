//! One `-F` argument read as curl reads it: `NAME=` and then a text value, `@FILE[,FILE...]`,
//! `<FILE`, `(` (a nested multipart opens) or, with no name, `)` (it closes), each followed by
//! `;`-separated modifiers: `type=`, `filename=`, `headers=` (a header, or `@FILE`/`<FILE` of
//! headers) and `encoder=`.
//!
//! A word may be quoted (`"a,b;c.txt"`, with `\"` and `\\` inside), which keeps `,` and `;` in
//! it; an unquoted word loses its surrounding spaces. A `type=` runs on over later `;` segments
//! that name no modifier (`type=text/plain;charset=utf-8`), and a segment that is neither is
//! skipped with a warning. This module only reads; [`super`] builds the body.

use super::super::exit::CurlError;

/// The modifiers after a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Modifiers {
    /// `type=`: the part's `Content-Type`.
    pub(super) content_type: Option<String>,
    /// `filename=`: the file name the part declares.
    pub(super) filename: Option<String>,
    /// `encoder=`: the part's `Content-Transfer-Encoding`.
    pub(super) encoder: Option<String>,
    /// `headers=`: the part's own header lines, in order.
    pub(super) headers: Vec<String>,
}

/// One file of `@FILE[,FILE...]` with its modifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileSpec {
    /// The path (`-` is standard input).
    pub(super) path: String,
    pub(super) modifiers: Modifiers,
}

/// What one argument asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Field {
    /// A text value (`--form-string` values are taken whole, without modifiers).
    Text { value: String, modifiers: Modifiers },
    /// `<FILE`: a text value read from a file.
    FileText { path: String, modifiers: Modifiers },
    /// `@FILE[,FILE...]`: file uploads; several make a `multipart/mixed` part.
    Files(Vec<FileSpec>),
    /// `(`: a nested multipart opens; later arguments are its parts until `=)`.
    Open { modifiers: Modifiers },
    /// `=)`: the innermost open multipart closes.
    Close,
}

/// A parsed argument: its name (none for `=value`), what it asks for, and the warnings curl
/// prints while reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Parsed {
    pub(super) name: Option<String>,
    pub(super) field: Field,
    pub(super) warnings: Vec<String>,
}

/// Reads one argument; `literal` for `--form-string`.
///
/// # Errors
///
/// Exit 2 for an argument without `=` or a `type=` that is not `major/minor`, as curl's
/// "option -F: is badly used here".
pub(super) fn parse(text: &str, literal: bool) -> Result<Parsed, CurlError> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| bad_use("Illegally formatted input field!"))?;
    let name = Some(name.to_owned()).filter(|n| !n.is_empty());
    let mut reader = Reader {
        warnings: Vec::new(),
    };
    let field = if literal {
        Field::Text {
            value: value.to_owned(),
            modifiers: Modifiers::default(),
        }
    } else if value.starts_with('(') {
        let (_, modifiers, _) = reader.part(value, None)?;
        Field::Open { modifiers }
    } else if name.is_none() && value == ")" {
        Field::Close
    } else if let Some(files) = value.strip_prefix('@') {
        let mut specs = Vec::new();
        let mut rest = files;
        loop {
            let (path, modifiers, after) = reader.part(rest, Some(','))?;
            specs.push(FileSpec { path, modifiers });
            match after.strip_prefix(',') {
                Some(next) => rest = next,
                None => break,
            }
        }
        Field::Files(specs)
    } else if let Some(path) = value.strip_prefix('<') {
        let (path, modifiers, _) = reader.part(path, None)?;
        Field::FileText { path, modifiers }
    } else {
        let (value, modifiers, _) = reader.part(value, None)?;
        Field::Text { value, modifiers }
    };
    Ok(Parsed {
        name,
        field,
        warnings: reader.warnings,
    })
}

/// Exit 2 with curl's wording for a malformed `-F`.
fn bad_use(warning: &str) -> CurlError {
    CurlError::usage("option -F: is badly used here", Some(warning.to_owned()))
}

/// Whitespace as C's `isspace` sees it.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// `segment` after `key`, which it starts with in any case (curl's `checkprefix`).
fn strip_key<'a>(segment: &'a str, key: &str) -> Option<&'a str> {
    let head = segment.get(..key.len())?;
    head.eq_ignore_ascii_case(key)
        .then(|| &segment[key.len()..])
}

/// The reader's state: the warnings so far.
struct Reader {
    warnings: Vec<String>,
}

impl Reader {
    /// A word up to `;` or `end`: quoted (its escapes undone; spaces after the closing quote
    /// are dropped, anything else warned about), else as it stands with its trailing spaces
    /// dropped. Returns the word and the rest, which starts at the `;` or `end` (or is empty).
    fn word<'a>(&mut self, text: &'a str, end: Option<char>) -> (String, &'a str) {
        let stops = |c: char| c == ';' || Some(c) == end;
        if let Some(quoted) = text.strip_prefix('"') {
            let mut word = String::new();
            let mut chars = quoted.char_indices();
            while let Some((at, c)) = chars.next() {
                match c {
                    '\\' if quoted[at + 1..].starts_with(['\\', '"']) => {
                        if let Some((_, escaped)) = chars.next() {
                            word.push(escaped);
                        }
                    }
                    '"' => {
                        let after = &quoted[at + 1..];
                        let stop = after.find(stops).unwrap_or(after.len());
                        if !after[..stop].chars().all(is_space) {
                            self.warnings
                                .push("Trailing data after quoted form parameter".to_owned());
                        }
                        return (word, &after[stop..]);
                    }
                    c => word.push(c),
                }
            }
            // No closing quote: the word is read as if unquoted.
        }
        let stop = text.find(stops).unwrap_or(text.len());
        (
            text[..stop].trim_end_matches(is_space).to_owned(),
            &text[stop..],
        )
    }

    /// A value and its modifiers, up to `end` (`,` between files) or the end of the text.
    /// Returns the value, the modifiers and the rest (starting at `end`, or empty).
    fn part<'a>(
        &mut self,
        text: &'a str,
        end: Option<char>,
    ) -> Result<(String, Modifiers, &'a str), CurlError> {
        let (value, mut rest) = self.word(text.trim_start_matches(is_space), end);
        let mut modifiers = Modifiers::default();
        // `type=` runs on over segments that name no other modifier: its text is the source
        // from its start to the last non-space before the segment that ends it.
        let mut open_type: Option<(usize, usize)> = None;
        let close_type = |open: &mut Option<(usize, usize)>, modifiers: &mut Modifiers| {
            if let Some((start, stop)) = open.take() {
                modifiers.content_type = Some(text[start..stop].to_owned());
            }
        };
        while let Some(segment) = rest.strip_prefix(';') {
            let segment = segment.trim_start_matches(is_space);
            let offset = text.len() - segment.len();
            let stops = |c: char| c == ';' || Some(c) == end;
            if let (None, Some(value)) = (open_type, strip_key(segment, "type=")) {
                let value = value.trim_start_matches(is_space);
                let start = text.len() - value.len();
                let major = value.find(['/', ' ']).unwrap_or(value.len());
                let minor = value.get(major + 1..).map_or(0, |after| {
                    after.find([';', ',', ' ', '\n']).unwrap_or(after.len())
                });
                if major == 0 || !value[major..].starts_with('/') || minor == 0 {
                    return Err(bad_use("Illegally formatted content-type field!"));
                }
                let after_type = &value[major + 1 + minor..];
                let stop = after_type.find(stops).unwrap_or(after_type.len());
                let kept = after_type[..stop].trim_end_matches(is_space).len();
                open_type = Some((start, start + major + 1 + minor + kept));
                rest = &after_type[stop..];
            } else if let Some(value) = strip_key(segment, "filename=") {
                close_type(&mut open_type, &mut modifiers);
                let (word, after) = self.word(value.trim_start_matches(is_space), end);
                modifiers.filename = Some(word);
                rest = after;
            } else if let Some(value) = strip_key(segment, "headers=") {
                close_type(&mut open_type, &mut modifiers);
                if let Some(file) = value.strip_prefix(['@', '<']) {
                    let (path, after) = self.word(file.trim_start_matches(is_space), end);
                    match std::fs::read(&path) {
                        Ok(bytes) => modifiers.headers.extend(header_lines(&bytes)),
                        Err(e) => self.warnings.push(format!("Cannot read from {path}: {e}")),
                    }
                    rest = after;
                } else {
                    let (header, after) = self.word(value.trim_start_matches(is_space), end);
                    modifiers.headers.push(header);
                    rest = after;
                }
            } else if let Some(value) = strip_key(segment, "encoder=") {
                close_type(&mut open_type, &mut modifiers);
                let (word, after) = self.word(value.trim_start_matches(is_space), end);
                modifiers.encoder = Some(word);
                rest = after;
            } else if let Some((start, _)) = open_type {
                // More of the content type (`;charset=utf-8`).
                let stop = segment.find(stops).unwrap_or(segment.len());
                let kept = segment[..stop].trim_end_matches(is_space).len();
                open_type = Some((start, offset + kept));
                rest = &segment[stop..];
            } else {
                let (unknown, after) = self.word(segment, end);
                if !unknown.is_empty() {
                    self.warnings
                        .push(format!("skip unknown form field: {unknown}"));
                }
                rest = after;
            }
        }
        close_type(&mut open_type, &mut modifiers);
        Ok((value, modifiers, rest))
    }
}

/// The header lines of a `headers=@FILE` file, as curl reads them: `#` at a line's start makes
/// it a comment, a line that starts with a space or tab continues the header before it (its
/// text appended without the line break), carriage returns are dropped and each header loses
/// its trailing spaces.
fn header_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes).replace('\r', "");
    let mut headers: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in text.split('\n') {
        let continues = line.starts_with(is_space);
        if !continues && !line.is_empty() {
            let done = current.trim_end_matches(is_space);
            if !done.is_empty() {
                headers.push(done.to_owned());
            }
            current.clear();
        }
        if !line.starts_with('#') {
            current.push_str(line);
        }
    }
    let done = current.trim_end_matches(is_space);
    if !done.is_empty() {
        headers.push(done.to_owned());
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: &str) -> (Option<String>, Field, Vec<String>) {
        let parsed = parse(text, false).unwrap();
        (parsed.name, parsed.field, parsed.warnings)
    }

    fn text(value: &str, modifiers: Modifiers) -> Field {
        Field::Text {
            value: value.to_owned(),
            modifiers,
        }
    }

    #[test]
    fn values_lose_their_spaces_unless_quoted() {
        let (name, value, warnings) = field("a= spaced ");
        assert_eq!(name.as_deref(), Some("a"));
        assert_eq!(value, text("spaced", Modifiers::default()));
        assert!(warnings.is_empty());
        let (_, value, _) = field(r#"a=" kept; \"quoted\" \\ ""#);
        assert_eq!(value, text(r#" kept; "quoted" \ "#, Modifiers::default()));
        // An unclosed quote reads as unquoted.
        let (_, value, _) = field(r#"a="open"#);
        assert_eq!(value, text(r#""open"#, Modifiers::default()));
        let (_, _, warnings) = field(r#"a="q"x"#);
        assert_eq!(warnings, ["Trailing data after quoted form parameter"]);
        let literal = parse("a=@x;type=y", true).unwrap();
        assert_eq!(literal.field, text("@x;type=y", Modifiers::default()));
        assert_eq!(parse("=v", false).unwrap().name, None);
        assert_eq!(parse("novalue", false).unwrap_err().code(), 2);
    }

    #[test]
    fn types_run_on_and_unknown_segments_are_skipped() {
        let (_, value, warnings) = field("a=x;y; type=text/plain; charset=utf-8 ;filename=f.txt");
        let modifiers = Modifiers {
            content_type: Some("text/plain; charset=utf-8".to_owned()),
            filename: Some("f.txt".to_owned()),
            ..Modifiers::default()
        };
        assert_eq!(value, text("x", modifiers));
        assert_eq!(warnings, ["skip unknown form field: y"]);
        for bad in ["a=1;type=bogus", "a=1;type=/x", "a=1;type=x/"] {
            assert_eq!(parse(bad, false).unwrap_err().code(), 2, "{bad}");
        }
    }

    #[test]
    fn files_split_at_commas_and_keep_their_modifiers() {
        let (_, files, _) = field(r#"f=@a.txt;type=text/x,"b,c.txt";filename="n;1",d"#);
        let spec = |path: &str, content_type: Option<&str>, filename: Option<&str>| FileSpec {
            path: path.to_owned(),
            modifiers: Modifiers {
                content_type: content_type.map(str::to_owned),
                filename: filename.map(str::to_owned),
                ..Modifiers::default()
            },
        };
        assert_eq!(
            files,
            Field::Files(vec![
                spec("a.txt", Some("text/x"), None),
                spec("b,c.txt", None, Some("n;1")),
                spec("d", None, None),
            ])
        );
        let (_, open, _) = field("n=(;type=multipart/alternative");
        let modifiers = Modifiers {
            content_type: Some("multipart/alternative".to_owned()),
            ..Modifiers::default()
        };
        assert_eq!(open, Field::Open { modifiers });
        assert_eq!(field("=)").1, Field::Close);
        assert_eq!(field("x=)").1, text(")", Modifiers::default()));
    }

    #[test]
    fn headers_come_inline_or_from_a_file() {
        let (_, value, _) = field(r#"a=1;headers="X-A: 1;2";encoder=base64;headers=X-B: b"#);
        let modifiers = Modifiers {
            encoder: Some("base64".to_owned()),
            headers: vec!["X-A: 1;2".to_owned(), "X-B: b".to_owned()],
            ..Modifiers::default()
        };
        assert_eq!(value, text("1", modifiers));
        let lines = header_lines(b"X-One: 1 \r\n# comment\nX-Two: a\n  b\n\n\tc\nX-Three: 3");
        assert_eq!(lines, ["X-One: 1", "X-Two: a  b\tc", "X-Three: 3"]);
        let (_, _, warnings) = field("a=1;headers=@/nonexistent/h");
        assert!(
            warnings[0].starts_with("Cannot read from /nonexistent/h"),
            "{warnings:?}"
        );
    }
}
