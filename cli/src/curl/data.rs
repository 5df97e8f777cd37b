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
use super::exit::CurlError;

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
/// Exit 26 when a `@file` cannot be read.
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
                Some(path) => body.extend(file_string(&read_source(path)?)),
                None => body.extend_from_slice(text.as_bytes()),
            },
            DataArg::Binary(text) | DataArg::Json(text) => match text.strip_prefix('@') {
                Some(path) => body.extend(read_source(path)?),
                None => body.extend_from_slice(text.as_bytes()),
            },
            DataArg::Raw(text) => body.extend_from_slice(text.as_bytes()),
            DataArg::UrlEncode(text) => body.extend(url_encode_piece(text)?.into_bytes()),
        }
    }
    Ok(Bytes::from(body))
}

/// One `--data-urlencode` piece: `content`, `=content`, `name=content`, `@file` or
/// `name@file`; the name is sent as given, the content encoded.
pub(crate) fn url_encode_piece(text: &str) -> Result<String, CurlError> {
    let split = text.find(['=', '@']);
    let (name, content) = match split {
        None => (None, text.as_bytes().to_vec()),
        Some(at) => {
            let name = &text[..at];
            let rest = &text[at + 1..];
            let content = if text.as_bytes()[at] == b'@' {
                read_source(rest)?
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
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CurlError::read_failed(path, &e))?;
        return Ok(bytes);
    }
    std::fs::read(path).map_err(|e| CurlError::read_failed(path, &e))
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
    fn url_encoded_files_keep_their_name() {
        let dir = crate::scratch::Scratch::new("data");
        let file = dir.join("v.txt");
        std::fs::write(&file, "a b\n").unwrap();
        let piece = format!("name@{}", file.display());
        assert_eq!(url_encode_piece(&piece).unwrap(), "name=a+b%0A");
        assert_eq!(
            url_encode_piece("@/nonexistent/file").unwrap_err().code(),
            26
        );
    }
}
