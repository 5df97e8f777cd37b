//! Request data: reading the pieces of `-d`, `--data-binary`, `--data-raw`, `--json` and
//! `--data-urlencode` (`@file` included) and joining them as curl does: with `&` between
//! pieces, except that a `--json` piece continues the previous one.
//!
//! `--data-urlencode` percent-encodes every byte except `A-Z a-z 0-9 - . _ ~`, and a space as
//! `+`, as curl 7.88 does. What this module does not do: multipart forms ([`super::form`])
//! or uploads (`-T`, read whole by [`read_source`]).

use std::io::Read;

use bytes::Bytes;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};

use super::args::DataArg;
use super::exit::{CurlError, Note};

/// The unreserved characters of RFC 3986, which `curl_easy_escape` leaves as they are.
pub(crate) const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What `--data-urlencode` leaves as it is: the unreserved characters and the space (sent as
/// `+`).
const URL_ENCODE: &AsciiSet = &UNRESERVED.remove(b' ');

/// Reads and joins the data pieces.
///
/// # Errors
///
/// Exit 26 when a `@file` cannot be opened, or opens and cannot be read byte for byte (a
/// directory given to `--data-binary`, `--json` or `--data-urlencode`; `-d` reads such a file
/// as empty text), in curl's words ([`piece_file`]).
pub(crate) fn read_data(data: &[DataArg]) -> Result<Bytes, CurlError> {
    let mut body = Vec::new();
    for (i, piece) in data.iter().enumerate() {
        if i > 0 && !matches!(piece, DataArg::Json(_)) {
            body.push(b'&');
        }
        match piece {
            // curl reads `-d @FILE` as text ([`file_string`]): line ends go, and with them
            // whatever follows a CR or NUL on a line.
            DataArg::Ascii(text) => match text.strip_prefix('@') {
                Some(path) => body.extend(file_string(&piece_file(path, "-d", true)?)),
                None => body.extend_from_slice(text.as_bytes()),
            },
            DataArg::Binary(text) | DataArg::Json(text) => match text.strip_prefix('@') {
                Some(path) => {
                    let flag = match piece {
                        DataArg::Json(_) => "--json",
                        _ => "--data-binary",
                    };
                    body.extend(piece_file(path, flag, false)?);
                }
                None => body.extend_from_slice(text.as_bytes()),
            },
            DataArg::Raw(text) => body.extend_from_slice(text.as_bytes()),
            DataArg::UrlEncode(text) => {
                body.extend(url_encode_piece(text, "--data-urlencode")?.into_bytes());
            }
        }
    }
    Ok(Bytes::from(body))
}

/// The bytes of a data option's `@file` (`-` is stdin), for option `flag`.
///
/// A file that does not open fails as curl 8.3 and later fail it, `Failed to open FILE` and
/// then `option -d: error encountered when reading a file` (exit 26): curl 7.88 warned and
/// sent an empty piece, which posted nothing where a name was mistyped. A file that opens and
/// then fails to read fails the same way without the first line, except that `-d` (`as_text`,
/// curl's `file2string`, which stops at the first failed read) reads it as empty.
fn piece_file(path: &str, flag: &str, as_text: bool) -> Result<Vec<u8>, CurlError> {
    let mut source = open_source(path).map_err(|_| {
        let note = Note::Error(format!("Failed to open {path}"));
        CurlError::option_read_failed(flag).with_note(note)
    })?;
    let mut bytes = Vec::new();
    match source.read_to_end(&mut bytes) {
        Ok(_) => Ok(bytes),
        Err(_) if as_text => Ok(Vec::new()),
        Err(_) => Err(CurlError::option_read_failed(flag)),
    }
}

/// One `--data-urlencode` (or `--url-query`, named by `flag`) piece: `content`, `=content`,
/// `name=content`, `@file` or `name@file`; the name is sent as given, the content encoded. A
/// file read as empty makes the whole piece empty, its name left out too, as curl does.
///
/// # Errors
///
/// As [`piece_file`], for a file.
pub(crate) fn url_encode_piece(text: &str, flag: &str) -> Result<String, CurlError> {
    let split = text.find(['=', '@']);
    let (name, content) = match split {
        None => (None, text.as_bytes().to_vec()),
        Some(at) => {
            let name = &text[..at];
            let rest = &text[at + 1..];
            let content = if text.as_bytes()[at] == b'@' {
                let content = piece_file(rest, flag, false)?;
                if content.is_empty() {
                    return Ok(String::new());
                }
                content
            } else {
                rest.as_bytes().to_vec()
            };
            ((!name.is_empty()).then_some(name), content)
        }
    };
    let encoded = percent_encode(&content, URL_ENCODE)
        .to_string()
        .replace(' ', "+");
    Ok(match name {
        Some(name) => format!("{name}={encoded}"),
        None => encoded,
    })
}

/// The contents of a `@file` argument (`-` is stdin).
///
/// # Errors
///
/// Exit 26 when it cannot be read.
pub(crate) fn read_source(path: &str) -> Result<Vec<u8>, CurlError> {
    let mut bytes = Vec::new();
    open_source(path)
        .and_then(|mut source| source.read_to_end(&mut bytes))
        .map_err(|e| CurlError::read_failed(path, &e))?;
    Ok(bytes)
}

/// A `@file` argument opened for reading: stdin for `-`.
pub(crate) fn open_source(path: &str) -> std::io::Result<Box<dyn Read>> {
    if path == "-" {
        return Ok(Box::new(std::io::stdin()));
    }
    Ok(Box::new(std::fs::File::open(path)?))
}

/// A file's text as curl 7.88 reads `-d @FILE`, `-w @FILE` and `--etag-compare`
/// (`file2string`): line by line in pieces of at most 255 bytes (its `fgets` buffer), each
/// cut at its first CR, LF or NUL, the pieces joined with nothing between them.
pub(crate) fn file_string(bytes: &[u8]) -> Vec<u8> {
    const PIECE: usize = 255;
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        for piece in line.chunks(PIECE) {
            let end = piece
                .iter()
                .position(|b| matches!(b, b'\r' | b'\n' | 0))
                .unwrap_or(piece.len());
            out.extend_from_slice(&piece[..end]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_strings_drop_line_ends_and_what_follows_a_cr() {
        assert_eq!(file_string(b"%{http_code}\n"), b"%{http_code}");
        assert_eq!(file_string(b"a\r\nb\nc"), b"abc");
        assert_eq!(file_string(b"a\rjunk\nb"), b"ab");
        let long = [b'x'; 300];
        let mut text = long.to_vec();
        text[10] = b'\r';
        // The CR cuts its 255-byte piece only; the next piece is kept.
        assert_eq!(file_string(&text).len(), 10 + (300 - 255));
    }

    #[test]
    fn pieces_join_with_ampersands_and_json_continues() {
        let data = [
            DataArg::Ascii("a=1".into()),
            DataArg::UrlEncode("q=x y&z".into()),
            DataArg::UrlEncode("=é".into()),
            DataArg::UrlEncode("plain~.-_".into()),
        ];
        assert_eq!(read_data(&data).unwrap(), "a=1&q=x+y%26z&%C3%A9&plain~.-_");
        let json = [DataArg::Json("{\"a\":".into()), DataArg::Json("1}".into())];
        assert_eq!(read_data(&json).unwrap(), "{\"a\":1}");
    }

    #[test]
    fn url_encoded_files_keep_their_name_unless_they_are_empty() {
        let dir = crate::scratch::Scratch::new("data");
        let file = dir.join("v.txt");
        std::fs::write(&file, "a b\n").unwrap();
        let piece = format!("name@{}", file.display());
        assert_eq!(
            url_encode_piece(&piece, "--data-urlencode").unwrap(),
            "name=a+b%0A"
        );
        let empty = dir.join("empty.txt");
        std::fs::write(&empty, "").unwrap();
        let piece = format!("name@{}", empty.display());
        assert_eq!(url_encode_piece(&piece, "--data-urlencode").unwrap(), "");
    }

    #[test]
    fn a_file_that_does_not_open_fails_in_curls_words() {
        for (piece, flag) in [
            (DataArg::Ascii("@/nonexistent/a".into()), "-d"),
            (DataArg::Json("@/nonexistent/a".into()), "--json"),
            (
                DataArg::UrlEncode("n@/nonexistent/a".into()),
                "--data-urlencode",
            ),
        ] {
            let error = read_data(&[piece]).unwrap_err();
            assert_eq!((error.code(), error.is_usage()), (26, true));
            assert_eq!(
                error.message(),
                format!("option {flag}: error encountered when reading a file")
            );
            assert_eq!(
                error.note(),
                Some(&Note::Error("Failed to open /nonexistent/a".into()))
            );
        }
    }

    #[test]
    fn a_file_that_opens_but_does_not_read_fails_byte_reads_only() {
        let dir = crate::scratch::Scratch::new("data-dir");
        let path = dir.join("sub");
        std::fs::create_dir(&path).unwrap();
        let at = format!("@{}", path.display());
        // `-d` reads text, and a directory reads as none.
        assert_eq!(read_data(&[DataArg::Ascii(at.clone())]).unwrap(), "");
        for (piece, flag) in [
            (DataArg::Binary(at.clone()), "--data-binary"),
            (DataArg::Json(at.clone()), "--json"),
            (DataArg::UrlEncode(at.clone()), "--data-urlencode"),
        ] {
            let error = read_data(&[piece]).unwrap_err();
            assert_eq!((error.code(), error.is_usage()), (26, true));
            assert_eq!(
                error.message(),
                format!("option {flag}: error encountered when reading a file")
            );
            assert_eq!(error.note(), None);
        }
    }
}
