//! URL globbing as curl does it (off with `-g`): `{a,b,c}` alternatives and `[1-10]`,
//! `[01-10]` (zero-padded), `[a-z]`, `[1-100:10]` (step) ranges, expanded left to right with
//! the rightmost pattern varying fastest. Each expansion keeps the values it took, for `#N` in
//! `-o` names.
//!
//! `\{`, `\}`, `\[` and `\]` are literal, and so are an IPv6 address in brackets and `[]`
//! (`?ids[]=1`) wherever they stand. An unbalanced or malformed pattern is exit 3 with curl's
//! message and caret (`bad range in URL position N:`, the column counted as curl counts it).
//! What this does not do: nested patterns, or more than 100 000 URLs from one.

use super::exit::CurlError;

/// The most URLs one pattern may expand to.
const MAX_URLS: usize = 100_000;

/// One URL a pattern expanded to, and the values its globs took (for `#1`, `#2`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    /// The URL.
    pub(crate) url: String,
    /// The value of each glob, in order.
    pub(crate) values: Vec<String>,
}

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Choice(Vec<String>),
}

/// Expands `pattern`.
///
/// # Errors
///
/// Exit 3 for a malformed pattern, or one that expands to too many URLs.
pub(crate) fn expand(pattern: &str) -> Result<Vec<Expanded>, CurlError> {
    let pieces = parse(pattern)?;
    let mut out = vec![Expanded {
        url: String::new(),
        values: Vec::new(),
    }];
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.iter_mut().for_each(|e| e.url.push_str(&text)),
            Piece::Choice(choices) => {
                if out.len().saturating_mul(choices.len()) > MAX_URLS {
                    return Err(CurlError::new(3, "URL globbing: too many URLs"));
                }
                out = out
                    .into_iter()
                    .flat_map(|e| {
                        choices.iter().map(move |choice| {
                            let mut next = e.clone();
                            next.url.push_str(choice);
                            next.values.push(choice.clone());
                            next
                        })
                    })
                    .collect();
            }
        }
    }
    Ok(out)
}

/// Replaces `#N` in an output file name with the value of the Nth glob (1-based); `#` not
/// followed by a glob's number stays.
pub(crate) fn fill_output(name: &str, values: &[String]) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('#') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        let value = after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| values.get(i));
        match value {
            Some(value) => {
                out.push_str(value);
                rest = &after[digits..];
            }
            None => {
                out.push('#');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// How many pieces (text or globs) one pattern may have, as curl's `GLOB_PATTERN_NUM`.
const MAX_PIECES: usize = 100;

/// curl's error for a malformed pattern: `what`, and at `pos` (curl's column, from 1; 0 names
/// none) the pattern with a caret under it.
fn glob_error(pattern: &str, what: &str, pos: usize) -> CurlError {
    let message = match pos {
        0 => what.to_owned(),
        // C's `%*s` of " ": at least the one blank.
        _ => format!(
            "{what} in URL position {pos}:\n{pattern}\n{}^",
            " ".repeat((pos - 1).max(1))
        ),
    };
    CurlError::new(3, message)
}

/// Splits a pattern into text and choices, as curl 7.88's `glob_parse` reads it, columns
/// (for the error's caret) counted as curl counts them.
fn parse(pattern: &str) -> Result<Vec<Piece>, CurlError> {
    let bytes = pattern.as_bytes();
    let mut at = Cursor { i: 0, pos: 1 };
    let mut pieces = Vec::new();
    while at.i < bytes.len() {
        let mut text = Vec::new();
        while let Some(&c) = bytes.get(at.i).filter(|&&c| c != b'{') {
            if c == b'[' {
                // An IPv6 literal and `[]` are text; curl's column does not move over them.
                let rest = &pattern[at.i..];
                let skip = ipv6_literal(rest).or_else(|| rest.starts_with("[]").then_some(2));
                match skip {
                    Some(skip) => {
                        text.extend_from_slice(&bytes[at.i..at.i + skip]);
                        at.i += skip;
                        continue;
                    }
                    None => break,
                }
            }
            if c == b'}' || c == b']' {
                return Err(glob_error(pattern, "unmatched close brace/bracket", at.pos));
            }
            if c == b'\\' && matches!(bytes.get(at.i + 1), Some(b'{' | b'[' | b'}' | b']')) {
                at.advance(1);
            }
            text.push(bytes[at.i]);
            at.advance(1);
        }
        if !text.is_empty() {
            // Only ASCII backslashes were left out: still UTF-8.
            pieces.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
        } else if let Some(&open) = bytes.get(at.i) {
            at.advance(1);
            let choices = match open {
                b'{' => set(pattern, &mut at)?,
                _ => range(pattern, &mut at)?,
            };
            pieces.push(Piece::Choice(choices));
        }
        if pieces.len() >= MAX_PIECES {
            return Err(glob_error(pattern, "too many globs", at.pos));
        }
    }
    Ok(pieces)
}

/// Where the parser is: the byte index, and curl's column.
struct Cursor {
    i: usize,
    pos: usize,
}

impl Cursor {
    fn advance(&mut self, n: usize) {
        self.i += n;
        self.pos += n;
    }
}

/// The length of the IPv6 literal `[...]` that `rest` starts with, if it is one (curl asks its
/// URL parser; here the address before any `%` zone must parse).
fn ipv6_literal(rest: &str) -> Option<usize> {
    let end = rest.find(']')?;
    let address = rest[1..end].split('%').next().unwrap_or_default();
    (end + 1 < 128 && address.parse::<std::net::Ipv6Addr>().is_ok()).then_some(end + 1)
}

/// `{a,b}` after its `{`: the elements, to the closing `}`.
fn set(pattern: &str, at: &mut Cursor) -> Result<Vec<String>, CurlError> {
    let bytes = pattern.as_bytes();
    let (start, open) = (at.i, at.pos - 1);
    let mut elements = Vec::new();
    let mut element = Vec::new();
    loop {
        match bytes.get(at.i) {
            None => return Err(glob_error(pattern, "unmatched brace", open)),
            Some(b'{' | b'[') => return Err(glob_error(pattern, "nested brace", at.pos)),
            Some(b'}') if at.i == start => {
                return Err(glob_error(pattern, "empty string within braces", at.pos));
            }
            Some(b'}') => {
                // curl's column does not move over the closing brace.
                at.i += 1;
                elements.push(String::from_utf8_lossy(&element).into_owned());
                return Ok(elements);
            }
            Some(b',') => {
                elements.push(String::from_utf8_lossy(&std::mem::take(&mut element)).into_owned());
                at.advance(1);
            }
            Some(b']') => return Err(glob_error(pattern, "unexpected close bracket", at.pos)),
            Some(&c) => {
                if c == b'\\' && at.i + 1 < bytes.len() {
                    at.advance(1);
                }
                element.push(bytes[at.i]);
                at.advance(1);
            }
        }
    }
}

/// `[a-z]`, `[1-10]`, `[01-10]`, `[1-100:10]` after its `[`: the values, as curl's
/// `glob_range` reads them (the column of an error is where curl's reading stopped).
fn range(pattern: &str, at: &mut Cursor) -> Result<Vec<String>, CurlError> {
    let bytes = &pattern.as_bytes()[at.i..];
    let (values, read) = match bytes.first() {
        Some(c) if c.is_ascii_alphabetic() => letter_range(bytes),
        Some(c) if c.is_ascii_digit() => number_range(bytes),
        _ => return Err(glob_error(pattern, "bad range specification", at.pos)),
    };
    at.advance(read);
    values.ok_or_else(|| glob_error(pattern, "bad range", at.pos))
}

/// `a-z]` or `a-z:N]`: the letters, and how far curl read.
fn letter_range(b: &[u8]) -> (Option<Vec<String>>, usize) {
    // sscanf("%c-%c%c"): three bytes around a dash.
    let (Some(&min), Some(b'-'), Some(&max), Some(&end)) =
        (b.first(), b.get(1), b.get(2), b.get(3))
    else {
        return (None, 0);
    };
    let (step, read) = match end {
        b']' => (1, 4),
        b':' => match digits(&b[4..]) {
            (Some(step), n) if b.get(4 + n) == Some(&b']') => (step, 5 + n),
            _ => (0, 0),
        },
        _ => return (None, 0),
    };
    let bad = step == 0
        || step > i32::MAX as u64
        || (min == max && step != 1)
        || (min != max && (min > max || step > u64::from(max - min) || max - min > b'z' - b'a'));
    if bad {
        return (None, read);
    }
    let values = (min..=max)
        .step_by(step as usize)
        .map(|c| char::from(c).to_string())
        .collect();
    (Some(values), read)
}

/// `1-10]`, `01-10]` (padded to the first number's digits) or `1-10:N]`: the numbers, and how
/// far curl read.
fn number_range(b: &[u8]) -> (Option<Vec<String>>, usize) {
    let width = if b[0] == b'0' {
        b.iter().take_while(|c| c.is_ascii_digit()).count()
    } else {
        0
    };
    let (Some(min), n) = digits(b) else {
        return (None, 0);
    };
    if b.get(n) != Some(&b'-') {
        return (None, 0);
    }
    // After the dash, blanks may come before the second number.
    let mut read = n + 1;
    read += b[read..]
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t'))
        .count();
    let (max, n) = digits(&b[read..]);
    let Some(max) = max.filter(|_| n > 0) else {
        return (None, read);
    };
    let mut end = read + n;
    let step = if b.get(end) == Some(&b':') {
        read = end + 1;
        let (step, n) = digits(&b[read..]);
        end = read + n;
        step.unwrap_or(0)
    } else {
        1
    };
    if b.get(end) != Some(&b']') {
        return (None, read);
    }
    read = end + 1;
    let bad =
        step == 0 || (min == max && step != 1) || (min != max && (min > max || step > max - min));
    if bad || (max - min) / step >= MAX_URLS as u64 {
        return (None, read);
    }
    let values = (min..=max)
        .step_by(step as usize)
        .map(|n| format!("{n:0width$}"))
        .collect();
    (Some(values), read)
}

/// The decimal number `b` starts with (`None` if it has no digit or overflows) and how many
/// digits it has.
fn digits(b: &[u8]) -> (Option<u64>, usize) {
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let value = std::str::from_utf8(&b[..n])
        .ok()
        .and_then(|d| d.parse().ok());
    (value.filter(|_| n > 0), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(pattern: &str) -> Vec<String> {
        expand(pattern)
            .unwrap()
            .into_iter()
            .map(|e| e.url)
            .collect()
    }

    #[test]
    fn braces_and_ranges_expand_rightmost_fastest() {
        assert_eq!(
            urls("http://h/{a,b}/[1-2]"),
            [
                "http://h/a/1",
                "http://h/a/2",
                "http://h/b/1",
                "http://h/b/2"
            ]
        );
        assert_eq!(
            urls("http://h/[08-10]"),
            ["http://h/08", "http://h/09", "http://h/10"]
        );
        assert_eq!(
            urls("http://h/[a-c]"),
            ["http://h/a", "http://h/b", "http://h/c"]
        );
        assert_eq!(
            urls("http://h/[0-10:5]"),
            ["http://h/0", "http://h/5", "http://h/10"]
        );
        assert_eq!(urls("http://h/\\{x\\}"), ["http://h/{x}"]);
        assert_eq!(urls("http://[::1]:80/"), ["http://[::1]:80/"]);
    }

    #[test]
    fn malformed_patterns_exit_3() {
        for bad in [
            "http://h/{a",
            "http://h/[1-",
            "http://h/[3-1]",
            "http://h/a]",
            "http://h/{}",
        ] {
            assert_eq!(expand(bad).unwrap_err().code(), 3, "{bad}");
        }
        let empty = expand("http://h/f{}.txt").unwrap_err();
        assert_eq!(
            empty.message(),
            "empty string within braces in URL position 12:\nhttp://h/f{}.txt\n           ^"
        );
    }

    #[test]
    fn brackets_that_are_no_range_stay_text() {
        assert_eq!(urls("http://h/?a[]=1&a[]=2"), ["http://h/?a[]=1&a[]=2"]);
        assert_eq!(
            urls("http://h/[::1]/[1-2]"),
            ["http://h/[::1]/1", "http://h/[::1]/2"]
        );
    }

    #[test]
    fn errors_point_where_curl_stopped_reading() {
        let message = |pattern: &str| expand(pattern).unwrap_err().message().to_owned();
        // The column after `[`, plus how far curl's range reader went.
        assert!(message("http://h/x[1-3:x]").starts_with("bad range in URL position 16:"));
        assert!(message("http://h/x[2-1]").starts_with("bad range in URL position 16:"));
        assert!(
            message("http://h/x[-]").starts_with("bad range specification in URL position 12:")
        );
        assert!(message("http://h/x{a{b}}").starts_with("nested brace in URL position 13:"));
        assert!(message("http://h/x{a").starts_with("unmatched brace in URL position 11:"));
    }

    #[test]
    fn output_names_take_glob_values() {
        let e = &expand("http://h/{x,y}/[1-2]").unwrap()[3];
        assert_eq!(fill_output("out_#1_#2.txt", &e.values), "out_y_2.txt");
        assert_eq!(fill_output("#3#x", &e.values), "#3#x");
    }
}
