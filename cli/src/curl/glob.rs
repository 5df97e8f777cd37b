//! URL globbing as curl does it (off with `-g`): `{a,b,c}` alternatives and `[1-10]`,
//! `[01-10]` (zero-padded), `[a-z]`, `[1-100:10]` (step) ranges, expanded left to right with
//! the rightmost pattern varying fastest. Each expansion keeps the values it took, for `#N` in
//! `-o` names.
//!
//! `\{`, `\}`, `\[` and `\]` are literal; a `[` that starts an IPv6 address right after `://`
//! is not a range. An unbalanced or malformed pattern is exit 3 (`bad range in URL position
//! N:`), as in curl. What this does not do: nested patterns, or more than 100 000 URLs from one.

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

/// Splits a pattern into text and choices.
fn parse(pattern: &str) -> Result<Vec<Piece>, CurlError> {
    let bad = |at: usize, what: &str| {
        CurlError::new(
            3,
            format!("{what} in URL position {at}:\n{pattern}\n{:>at$}", "^"),
        )
    };
    let mut pieces = Vec::new();
    let mut text = String::new();
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\\' if i + 1 < bytes.len() && b"{}[]".contains(&bytes[i + 1]) => {
                text.push(char::from(bytes[i + 1]));
                i += 2;
            }
            b'{' => {
                let end = pattern[i..]
                    .find('}')
                    .map(|e| i + e)
                    .ok_or_else(|| bad(i + 1, "unmatched brace"))?;
                let inner = &pattern[i + 1..end];
                if inner.is_empty() {
                    // curl points at the closing brace.
                    return Err(bad(end + 1, "empty string within braces"));
                }
                flush(&mut pieces, &mut text);
                pieces.push(Piece::Choice(inner.split(',').map(str::to_owned).collect()));
                i = end + 1;
            }
            b'[' if pattern[..i].ends_with("://") => {
                // An IPv6 address: literal up to its `]`.
                let end = pattern[i..].find(']').map_or(pattern.len(), |e| i + e + 1);
                text.push_str(&pattern[i..end]);
                i = end;
            }
            b'[' => {
                let end = pattern[i..]
                    .find(']')
                    .map(|e| i + e)
                    .ok_or_else(|| bad(i + 1, "unmatched bracket"))?;
                let inner = &pattern[i + 1..end];
                let choices = range(inner).ok_or_else(|| bad(i + 1, "bad range"))?;
                flush(&mut pieces, &mut text);
                pieces.push(Piece::Choice(choices));
                i = end + 1;
            }
            b'}' | b']' => return Err(bad(i + 1, "unmatched close brace/bracket")),
            _ => {
                let len = pattern[i..].chars().next().map_or(1, char::len_utf8);
                text.push_str(&pattern[i..i + len]);
                i += len;
            }
        }
    }
    flush(&mut pieces, &mut text);
    Ok(pieces)
}

fn flush(pieces: &mut Vec<Piece>, text: &mut String) {
    if !text.is_empty() {
        pieces.push(Piece::Text(std::mem::take(text)));
    }
}

/// `1-10`, `01-10`, `a-z`, `1-100:10` -> the values; `None` if malformed.
fn range(inner: &str) -> Option<Vec<String>> {
    let (span, step) = match inner.split_once(':') {
        Some((span, step)) => (span, step.parse::<u64>().ok().filter(|s| *s > 0)?),
        None => (inner, 1),
    };
    let (from, to) = span.split_once('-')?;
    let letters = |s: &str| s.len() == 1 && s.as_bytes()[0].is_ascii_alphabetic();
    if letters(from) && letters(to) {
        let (a, b) = (from.as_bytes()[0], to.as_bytes()[0]);
        if a > b || a.is_ascii_lowercase() != b.is_ascii_lowercase() {
            return None;
        }
        let step = usize::try_from(step).ok()?;
        return Some(
            (a..=b)
                .step_by(step)
                .map(|c| char::from(c).to_string())
                .collect(),
        );
    }
    let (a, b): (u64, u64) = (from.parse().ok()?, to.parse().ok()?);
    if a > b || (b - a) / step >= MAX_URLS as u64 {
        return None;
    }
    let width = if from.starts_with('0') && from.len() > 1 {
        from.len()
    } else {
        0
    };
    let mut values = Vec::new();
    let mut n = a;
    while n <= b {
        values.push(format!("{n:0width$}"));
        n += step;
    }
    Some(values)
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
    fn output_names_take_glob_values() {
        let e = &expand("http://h/{x,y}/[1-2]").unwrap()[3];
        assert_eq!(fill_output("out_#1_#2.txt", &e.values), "out_y_2.txt");
        assert_eq!(fill_output("#3#x", &e.values), "#3#x");
    }
}
