//! `-F` / `--form-string`: a `multipart/form-data` body (RFC 7578), built whole in memory.
//!
//! | argument | part |
//! |----------|------|
//! | `name=value` | a text field |
//! | `name=@file` | a file upload: `filename` is the file's name, `Content-Type` guessed from its extension (`mime_guess`), else `application/octet-stream` |
//! | `name=<file` | a text field whose value is the file's contents |
//! | `...;type=T` / `...;filename=F` | override the part's `Content-Type` / file name |
//! | `--form-string name=value` | a text field taken literally (`@`, `<` and `;` included) |
//!
//! The boundary is 24 dashes and 16 hex digits from the clock and the process id. What this
//! module does not do: several files in one field (`@a,b`), `;headers=`, `;encoder=`, or
//! streaming large files (they are read whole).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::data::read_source;
use super::exit::CurlError;

/// One `-F` or `--form-string` argument, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FormArg {
    /// `-F`: `@`, `<` and `;type=` / `;filename=` are interpreted.
    Form(String),
    /// `--form-string`: the value is literal.
    Literal(String),
}

/// A built multipart body and its boundary.
#[derive(Debug, Clone)]
pub(crate) struct Multipart {
    /// The whole body.
    pub(crate) body: Bytes,
    /// The `Content-Type` header value, with the boundary.
    pub(crate) content_type: String,
}

/// One part before encoding.
#[derive(Debug, Default)]
struct Part {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    content: Vec<u8>,
}

/// Builds the body of the `-F` arguments.
///
/// # Errors
///
/// Exit 26 when a file cannot be read; exit 2 for an argument without `=`.
pub(crate) fn build(args: &[FormArg]) -> Result<Multipart, CurlError> {
    build_with_boundary(args, &boundary())
}

fn build_with_boundary(args: &[FormArg], boundary: &str) -> Result<Multipart, CurlError> {
    let mut body = Vec::new();
    for arg in args {
        let part = parse(arg)?;
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let mut disposition = format!(
            "Content-Disposition: form-data; name=\"{}\"",
            quote(&part.name)
        );
        if let Some(filename) = &part.filename {
            disposition.push_str(&format!("; filename=\"{}\"", quote(filename)));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(content_type) = &part.content_type {
            body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(&part.content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok(Multipart {
        body: Bytes::from(body),
        content_type: format!("multipart/form-data; boundary={boundary}"),
    })
}

/// One argument as a part.
fn parse(arg: &FormArg) -> Result<Part, CurlError> {
    let (text, literal) = match arg {
        FormArg::Form(text) => (text, false),
        FormArg::Literal(text) => (text, true),
    };
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| CurlError::new(2, format!("Illegally formatted input field: '{text}'")))?;
    let mut part = Part {
        name: name.to_owned(),
        ..Part::default()
    };
    if literal {
        part.content = value.as_bytes().to_vec();
        return Ok(part);
    }
    let (value, modifiers) = split_modifiers(value);
    if let Some(path) = value.strip_prefix('@') {
        part.content = read_source(path)?;
        part.filename = Some(file_name(path));
        part.content_type = Some(if path == "-" {
            "application/octet-stream".to_owned()
        } else {
            mime_guess::from_path(path)
                .first_raw()
                .unwrap_or("application/octet-stream")
                .to_owned()
        });
    } else if let Some(path) = value.strip_prefix('<') {
        part.content = read_source(path)?;
    } else {
        part.content = value.as_bytes().to_vec();
    }
    for (key, setting) in modifiers {
        match key {
            "type" => part.content_type = Some(setting.to_owned()),
            "filename" => part.filename = Some(setting.to_owned()),
            _ => {}
        }
    }
    Ok(part)
}

/// `value;type=x;filename=y` -> (`value`, [(type, x), (filename, y)]). Only `;type=` and
/// `;filename=` split: a `;` followed by anything else stays in the value.
fn split_modifiers(value: &str) -> (&str, Vec<(&str, &str)>) {
    let mut modifiers = Vec::new();
    let mut end = value.len();
    let mut rest = value;
    let mut base = 0;
    let mut first_modifier = None;
    while let Some(at) = rest.find(';') {
        let after = &rest[at + 1..];
        let known = ["type=", "filename="]
            .iter()
            .find(|k| after.starts_with(**k));
        if let Some(key) = known {
            first_modifier.get_or_insert(base + at);
            let setting_end = after.find(';').unwrap_or(after.len());
            modifiers.push((&key[..key.len() - 1], &after[key.len()..setting_end]));
        }
        base += at + 1;
        rest = after;
    }
    if let Some(at) = first_modifier {
        end = at;
    }
    (&value[..end], modifiers)
}

/// The last path segment of a file argument (`-` names no file).
fn file_name(path: &str) -> String {
    if path == "-" {
        return String::new();
    }
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Escapes `"` and `\` inside a quoted parameter.
fn quote(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A boundary unlikely to appear in the parts.
fn boundary() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
    format!("------------------------{mixed:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_files_and_modifiers() {
        let dir = std::env::temp_dir().join(format!("poolcurl-form-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("notes.txt");
        std::fs::write(&file, "file body").unwrap();
        let args = [
            FormArg::Form("a=1".into()),
            FormArg::Form(format!("up=@{}", file.display())),
            FormArg::Form(format!("inline=<{};type=text/x-note", file.display())),
            FormArg::Literal("lit=@not;type=file".into()),
        ];
        let form = build_with_boundary(&args, "XYZ").unwrap();
        assert_eq!(form.content_type, "multipart/form-data; boundary=XYZ");
        let expected = "--XYZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
            --XYZ\r\nContent-Disposition: form-data; name=\"up\"; filename=\"notes.txt\"\r\n\
            Content-Type: text/plain\r\n\r\nfile body\r\n\
            --XYZ\r\nContent-Disposition: form-data; name=\"inline\"\r\n\
            Content-Type: text/x-note\r\n\r\nfile body\r\n\
            --XYZ\r\nContent-Disposition: form-data; name=\"lit\"\r\n\r\n@not;type=file\r\n\
            --XYZ--\r\n";
        assert_eq!(String::from_utf8_lossy(&form.body), expected);
        assert_eq!(
            build(&[FormArg::Form("novalue".into())])
                .unwrap_err()
                .code(),
            2
        );
        assert_eq!(
            build(&[FormArg::Form("f=@/nonexistent/x".into())])
                .unwrap_err()
                .code(),
            26
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
