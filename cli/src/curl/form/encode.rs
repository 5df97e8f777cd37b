//! What a form part's bytes and names become on the wire, as curl writes them: names and file
//! names escaped in `Content-Disposition`, a part's default `Content-Type` from its file name,
//! and the `encoder=` transfer encodings.

use base64::Engine as _;

use super::super::exit::CurlError;

/// How `"` (and line breaks) in a name or file name are written inside its quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Escape {
    /// curl's default, the HTML form rules: `"` as `%22`, CR as `%0D`, LF as `%0A`.
    #[default]
    Percent,
    /// `--form-escape`: `\` and `"` behind a backslash.
    Backslash,
}

impl Escape {
    /// `text` escaped for a quoted `Content-Disposition` parameter.
    pub(super) fn apply(self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match (self, c) {
                (Self::Percent, '"') => out.push_str("%22"),
                (Self::Percent, '\r') => out.push_str("%0D"),
                (Self::Percent, '\n') => out.push_str("%0A"),
                (Self::Backslash, '"' | '\\') => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
        out
    }
}

/// The `Content-Type` curl gives a part by its file name's ending, from curl's own short
/// table (any case); `None` for every other name. curl does not guess more widely (a `.json`
/// file goes as `application/octet-stream`), so neither does poolcurl.
pub(super) fn content_type_for(name: &str) -> Option<&'static str> {
    const TABLE: [(&str, &str); 10] = [
        (".gif", "image/gif"),
        (".jpg", "image/jpeg"),
        (".jpeg", "image/jpeg"),
        (".png", "image/png"),
        (".svg", "image/svg+xml"),
        (".txt", "text/plain"),
        (".htm", "text/html"),
        (".html", "text/html"),
        (".pdf", "application/pdf"),
        (".xml", "application/xml"),
    ];
    TABLE.iter().find_map(|(ending, content_type)| {
        let start = name.len().checked_sub(ending.len())?;
        let tail = name.get(start..)?;
        tail.eq_ignore_ascii_case(ending).then_some(*content_type)
    })
}

/// An `encoder=`: the `Content-Transfer-Encoding` of a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoder {
    Binary,
    EightBit,
    SevenBit,
    Base64,
    QuotedPrintable,
}

impl Encoder {
    /// The encoder of that name (any case).
    ///
    /// # Errors
    ///
    /// Exit 43, curl's "A libcurl function was given a bad argument", for another name.
    pub(super) fn from_name(name: &str) -> Result<Self, CurlError> {
        [
            Self::Binary,
            Self::EightBit,
            Self::SevenBit,
            Self::Base64,
            Self::QuotedPrintable,
        ]
        .into_iter()
        .find(|encoder| encoder.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            CurlError::new(
                43,
                format!("A libcurl function was given a bad argument (no encoder {name:?})"),
            )
        })
    }

    /// The name in the `Content-Transfer-Encoding` header.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Binary => "binary",
            Self::EightBit => "8bit",
            Self::SevenBit => "7bit",
            Self::Base64 => "base64",
            Self::QuotedPrintable => "quoted-printable",
        }
    }

    /// `content` encoded: base64 in lines of 76 joined by CRLF, quoted-printable by RFC 2045
    /// (the `quoted_printable` crate, whose line breaking is curl's), the others as they are.
    ///
    /// # Errors
    ///
    /// Exit 26, as curl's "read function returned funny value", when `7bit` content holds a
    /// byte above 127.
    pub(super) fn encode(self, content: Vec<u8>) -> Result<Vec<u8>, CurlError> {
        match self {
            Self::Binary | Self::EightBit => Ok(content),
            Self::SevenBit if content.is_ascii() => Ok(content),
            Self::SevenBit => Err(CurlError::new(
                26,
                "read function returned funny value (8-bit data in a 7bit part)",
            )),
            Self::Base64 => {
                let text = base64::engine::general_purpose::STANDARD.encode(&content);
                Ok(text
                    .as_bytes()
                    .chunks(76)
                    .collect::<Vec<_>>()
                    .join(&b"\r\n"[..]))
            }
            Self::QuotedPrintable => Ok(quoted_printable::encode(content)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_by_strategy() {
        let name = "a\"b\\c\r\n";
        assert_eq!(Escape::Percent.apply(name), "a%22b\\c%0D%0A");
        assert_eq!(Escape::Backslash.apply(name), "a\\\"b\\\\c\r\n");
    }

    #[test]
    fn types_come_from_curls_table_only() {
        assert_eq!(content_type_for("notes.TXT"), Some("text/plain"));
        assert_eq!(content_type_for("x.jpeg"), Some("image/jpeg"));
        assert_eq!(content_type_for("data.json"), None);
        assert_eq!(content_type_for("txt"), None);
        assert_eq!(content_type_for("-"), None);
    }

    #[test]
    fn encoders_encode_as_curl_does() {
        assert_eq!(Encoder::from_name("BASE64").unwrap(), Encoder::Base64);
        assert_eq!(Encoder::from_name("rot13").unwrap_err().code(), 43);
        let long = Encoder::Base64.encode(vec![b'x'; 60]).unwrap();
        let lines: Vec<&[u8]> = long.split(|b| *b == b'\n').collect();
        assert_eq!(lines[0].len(), 77, "76 characters and the CR");
        assert_eq!(lines.len(), 2);
        assert_eq!(
            Encoder::QuotedPrintable
                .encode(b"a=b \xc3\xa9 ".to_vec())
                .unwrap(),
            b"a=3Db =C3=A9=20"
        );
        assert_eq!(
            Encoder::SevenBit
                .encode(b"caf\xc3\xa9".to_vec())
                .unwrap_err()
                .code(),
            26
        );
        assert_eq!(Encoder::EightBit.encode(b"\xff".to_vec()).unwrap(), b"\xff");
    }
}
