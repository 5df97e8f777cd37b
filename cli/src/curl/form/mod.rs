//! `-F` / `--form-string`: a `multipart/form-data` body (RFC 7578) laid out byte for byte as
//! curl lays it out, built whole in memory.
//!
//! | argument | part |
//! |----------|------|
//! | `name=value` | a text field (its surrounding spaces dropped unless quoted) |
//! | `name=@file` | a file upload: `filename` is the file's name; `@-` reads standard input and is named `-` |
//! | `name=@a,b` | several files in one field: a `multipart/mixed` part holding each as an attachment |
//! | `name=<file` | a text field whose value is the file's contents |
//! | `...;type=T` `;filename=F` `;headers=H` `;headers=@FILE` `;encoder=E` | the part's `Content-Type`, file name, own headers, and `Content-Transfer-Encoding` (`binary`, `8bit`, `7bit`, `base64`, `quoted-printable`) |
//! | `name=(;type=multipart/T` ... `=)` | a nested multipart: the arguments between are its parts |
//! | `--form-string name=value` | a text field taken literally (`@`, `<` and `;` included) |
//!
//! The grammar (quoted words, a type running on over `;charset=...`, unknown modifiers skipped
//! with a warning) is [`parse`]'s; escaping, default types and encoders are [`encode`]'s.
//! Decisions where curl's behaviour and a wider convention differ, taken as curl's: a part's
//! default `Content-Type` comes from curl's ten-entry table of file endings, not a MIME
//! database, so a `.json` file goes as `application/octet-stream` as curl sends it; a text
//! field has a type only when its `filename=` is in that table, and a `<file` field none; names
//! and file names are percent-escaped (`"` as `%22`) unless `--form-escape` asks for
//! backslashes. The boundary is 24 dashes and 16 hex digits, as curl's.
//!
//! What this module does not do: stream large files (they are read whole), or leave a
//! `quoted-printable` body's length to chunked framing as curl does (the whole form is built
//! first, so its length is known and sent).

mod encode;
mod parse;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

pub(crate) use encode::Escape;
use encode::{Encoder, content_type_for};
use parse::{Field, FileSpec, Modifiers};

use super::data::read_source;
use super::exit::CurlError;

/// One `-F` or `--form-string` argument, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FormArg {
    /// `-F`: `@`, `<`, `(` and the `;` modifiers are interpreted.
    Form(String),
    /// `--form-string`: the value is literal.
    Literal(String),
}

/// A built multipart body, its boundary and what curl would have warned about.
#[derive(Debug, Clone)]
pub(crate) struct Multipart {
    /// The whole body.
    pub(crate) body: Bytes,
    /// The `Content-Type` header value, with the boundary.
    pub(crate) content_type: String,
    /// curl's warnings while reading the arguments (`skip unknown form field: x`), without
    /// the `Warning: ` curl puts before each.
    pub(crate) warnings: Vec<String>,
}

/// One part, before it is written.
#[derive(Debug)]
struct Part {
    name: Option<String>,
    filename: Option<String>,
    content_type: Option<String>,
    encoder: Option<Encoder>,
    headers: Vec<String>,
    body: Body,
}

/// What a part holds.
#[derive(Debug)]
enum Body {
    /// Text, or standard input.
    Data(Vec<u8>),
    /// An uploaded file's contents; its path names a default type when the part's file name
    /// does not.
    File { path: String, content: Vec<u8> },
    /// Parts of a nested multipart.
    Multipart(Vec<Part>),
}

/// Builds the body of the `-F` arguments. `root_type` is the type a `-H Content-Type` gave
/// (`""` for `-H 'Content-Type:'`), which curl keeps and extends with the boundary
/// (`multipart/related; boundary=...`); the parts are `form-data` only under
/// `multipart/form-data`, `attachment`s otherwise, as curl's MIME code makes them.
///
/// # Errors
///
/// Exit 26 when a file cannot be read (or `7bit` content is not 7-bit); exit 2 for an argument
/// without `=`, a malformed `type=` or a `)` with nothing open; exit 43 for an unknown encoder.
pub(crate) fn build(
    args: &[FormArg],
    escape: Escape,
    root_type: Option<&str>,
) -> Result<Multipart, CurlError> {
    let mut next = boundaries();
    build_with(args, escape, root_type, &mut next)
}

fn build_with(
    args: &[FormArg],
    escape: Escape,
    root_type: Option<&str>,
    next_boundary: &mut dyn FnMut() -> String,
) -> Result<Multipart, CurlError> {
    let mut warnings = Vec::new();
    // The open multiparts, outermost (the form) first: each with its part, if nested.
    let mut open: Vec<(Option<Part>, Vec<Part>)> = vec![(None, Vec::new())];
    for arg in args {
        let (text, literal) = match arg {
            FormArg::Form(text) => (text, false),
            FormArg::Literal(text) => (text, true),
        };
        let parsed = parse::parse(text, literal)?;
        warnings.extend(parsed.warnings);
        let part = match parsed.field {
            Field::Close => {
                if open.len() == 1 {
                    return Err(CurlError::usage(
                        "option -F: is badly used here",
                        Some("no multipart to terminate!".to_owned()),
                    ));
                }
                close_innermost(&mut open);
                continue;
            }
            Field::Open { modifiers } => {
                warn_not_allowed(&modifiers, &mut warnings, true);
                let container = Part {
                    name: parsed.name,
                    filename: None,
                    content_type: modifiers.content_type,
                    encoder: None,
                    headers: modifiers.headers,
                    body: Body::Multipart(Vec::new()),
                };
                open.push((Some(container), Vec::new()));
                continue;
            }
            Field::Text { value, modifiers } => {
                part(parsed.name, Body::Data(value.into_bytes()), modifiers)?
            }
            Field::FileText { path, modifiers } => {
                warn_not_allowed(&modifiers, &mut warnings, false);
                let modifiers = Modifiers {
                    filename: None,
                    ..modifiers
                };
                // The contents as text: unlike an upload, its path names no type.
                part(parsed.name, Body::Data(read_source(&path)?), modifiers)?
            }
            Field::Files(specs) => files(parsed.name, specs)?,
        };
        if let Some((_, parts)) = open.last_mut() {
            parts.push(part);
        }
    }
    while open.len() > 1 {
        close_innermost(&mut open);
    }
    let parts = open.pop().map(|(_, parts)| parts).unwrap_or_default();
    let root = root_type.unwrap_or(FORM_DATA);
    let boundary = next_boundary();
    let mut body = Vec::new();
    let form = is_form_data(root);
    write_parts(&parts, &boundary, form, escape, next_boundary, &mut body);
    Ok(Multipart {
        body: Bytes::from(body),
        content_type: format!("{root}; boundary={boundary}"),
        warnings,
    })
}

/// Ends the innermost nested multipart: its parts go into its container, which becomes a
/// part of the multipart around it.
fn close_innermost(open: &mut Vec<(Option<Part>, Vec<Part>)>) {
    if let Some((Some(mut container), parts)) = open.pop() {
        container.body = Body::Multipart(parts);
        if let Some((_, outer)) = open.last_mut() {
            outer.push(container);
        }
    }
}

/// curl's warnings for modifiers a field of that kind does not take: a nested multipart takes
/// neither a file name nor an encoder, a `<file` field no file name.
fn warn_not_allowed(modifiers: &Modifiers, warnings: &mut Vec<String>, nested: bool) {
    if let Some(filename) = &modifiers.filename {
        warnings.push(format!("Field filename not allowed here: {filename}"));
    }
    if let (true, Some(encoder)) = (nested, &modifiers.encoder) {
        warnings.push(format!("Field encoder not allowed here: {encoder}"));
    }
}

/// A part from its body and modifiers.
fn part(name: Option<String>, body: Body, modifiers: Modifiers) -> Result<Part, CurlError> {
    let encoder = modifiers
        .encoder
        .as_deref()
        .map(Encoder::from_name)
        .transpose()?;
    let body = match (encoder, body) {
        (Some(encoder), Body::Data(content)) => Body::Data(encoder.encode(content)?),
        (Some(encoder), Body::File { path, content }) => Body::File {
            path,
            content: encoder.encode(content)?,
        },
        (_, body) => body,
    };
    Ok(Part {
        name,
        filename: modifiers.filename,
        content_type: modifiers.content_type,
        encoder,
        headers: modifiers.headers,
        body,
    })
}

/// A file's contents as a part body: standard input for `-` (data, with no path to name a
/// type), else the file.
fn file_body(path: &str) -> Result<Body, CurlError> {
    let content = read_source(path)?;
    Ok(match path {
        "-" => Body::Data(content),
        _ => Body::File {
            path: path.to_owned(),
            content,
        },
    })
}

/// `@file[,file...]`: one file is the field's part; several are attachments of a
/// `multipart/mixed` part that carries the field's name.
fn files(name: Option<String>, specs: Vec<FileSpec>) -> Result<Part, CurlError> {
    let several = specs.len() > 1;
    let mut parts = Vec::with_capacity(specs.len());
    for FileSpec {
        path,
        mut modifiers,
    } in specs
    {
        if modifiers.filename.is_none() {
            modifiers.filename = Some(file_name(&path));
        }
        let name = if several { None } else { name.clone() };
        parts.push(part(name, file_body(&path)?, modifiers)?);
    }
    if !several && let Some(only) = parts.pop() {
        return Ok(only);
    }
    Ok(Part {
        name,
        filename: None,
        content_type: None,
        encoder: None,
        headers: Vec::new(),
        body: Body::Multipart(parts),
    })
}

/// The last path segment of a file argument; standard input is named `-`.
fn file_name(path: &str) -> String {
    if path == "-" {
        return path.to_owned();
    }
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The parts between `--boundary` lines, closed by `--boundary--`. `form` when they are the
/// parts of a `multipart/form-data` (their disposition is `form-data`).
fn write_parts(
    parts: &[Part],
    boundary: &str,
    form: bool,
    escape: Escape,
    next_boundary: &mut dyn FnMut() -> String,
    out: &mut Vec<u8>,
) {
    for part in parts {
        out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let nested = match &part.body {
            Body::Multipart(_) => Some(next_boundary()),
            _ => None,
        };
        for line in head(part, form, escape, nested.as_deref()) {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        match (&part.body, &nested) {
            (Body::Multipart(children), Some(inner)) => {
                let children_form = content_type(part).is_some_and(is_form_data);
                write_parts(children, inner, children_form, escape, next_boundary, out);
            }
            (Body::Data(content) | Body::File { content, .. }, _) => out.extend_from_slice(content),
            (Body::Multipart(_), None) => {}
        }
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
}

/// A part's header lines, in curl's order: `Content-Disposition`, `Content-Type`,
/// `Content-Transfer-Encoding`, then the part's own headers (except a `Content-Type`, which
/// gave the type when `type=` did not). `boundary` is a nested multipart's.
fn head(part: &Part, form: bool, escape: Escape, boundary: Option<&str>) -> Vec<String> {
    let mut lines = Vec::new();
    if own_header(part, "Content-Disposition").is_none() {
        let named = part.name.is_some() || part.filename.is_some();
        let disposition = match form {
            true => Some("form-data"),
            false if named => Some("attachment"),
            false => None,
        };
        if let Some(disposition) = disposition {
            let mut line = format!("Content-Disposition: {disposition}");
            if let Some(name) = &part.name {
                line.push_str(&format!("; name=\"{}\"", escape.apply(name)));
            }
            if let Some(filename) = &part.filename {
                line.push_str(&format!("; filename=\"{}\"", escape.apply(filename)));
            }
            lines.push(line);
        }
    }
    if let Some(content_type) = content_type(part) {
        match boundary {
            Some(boundary) => {
                lines.push(format!("Content-Type: {content_type}; boundary={boundary}"))
            }
            None => lines.push(format!("Content-Type: {content_type}")),
        }
    }
    if let (None, Some(encoder)) = (own_header(part, "Content-Transfer-Encoding"), part.encoder) {
        lines.push(format!("Content-Transfer-Encoding: {}", encoder.name()));
    }
    let is_type = |h: &&String| {
        h.split_once(':')
            .is_some_and(|(n, _)| n.eq_ignore_ascii_case("Content-Type"))
    };
    lines.extend(part.headers.iter().filter(|h| !is_type(h)).cloned());
    lines
}

/// The value of the part's own header of that name (any case), if it has one.
fn own_header<'a>(part: &'a Part, name: &str) -> Option<&'a str> {
    part.headers.iter().find_map(|h| {
        let (n, value) = h.split_once(':')?;
        n.eq_ignore_ascii_case(name)
            .then(|| value.trim_start_matches(' '))
    })
}

/// A part's `Content-Type`: `type=`, else its own `Content-Type` header, else curl's default:
/// `multipart/mixed` for a nested multipart; for a file, by its file name, by its path, and
/// `application/octet-stream` when it has a file name; for data, by its file name if any.
fn content_type(part: &Part) -> Option<&str> {
    part.content_type
        .as_deref()
        .or_else(|| own_header(part, "Content-Type"))
        .or_else(|| match &part.body {
            Body::Multipart(_) => Some("multipart/mixed"),
            Body::File { path, .. } => part
                .filename
                .as_deref()
                .and_then(content_type_for)
                .or_else(|| content_type_for(path))
                .or(part.filename.as_ref().map(|_| "application/octet-stream")),
            Body::Data(_) => part.filename.as_deref().and_then(content_type_for),
        })
}

/// A form's own type, unless `-H` gives another.
const FORM_DATA: &str = "multipart/form-data";

/// Whether `content_type` is `multipart/form-data`, parameters aside (curl's
/// `content_type_match`: the name in any case, then the end, a blank or `;`).
fn is_form_data(content_type: &str) -> bool {
    content_type
        .get(..FORM_DATA.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(FORM_DATA))
        && matches!(
            content_type.as_bytes().get(FORM_DATA.len()),
            None | Some(b' ' | b'\t' | b'\r' | b'\n' | b';')
        )
}

/// Boundaries unlikely to appear in the parts: from the clock and the process id, the
/// nested ones counting on from the form's.
fn boundaries() -> impl FnMut() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
    move || {
        mixed = mixed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        format!("------------------------{mixed:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds with boundaries `B1`, `B2`, ... and returns the body as text.
    fn built(args: &[FormArg], escape: Escape) -> Result<(String, Vec<String>), CurlError> {
        let mut n = 0;
        let mut next = || {
            n += 1;
            format!("B{n}")
        };
        let form = build_with(args, escape, None, &mut next)?;
        assert_eq!(form.content_type, "multipart/form-data; boundary=B1");
        Ok((
            String::from_utf8_lossy(&form.body).into_owned(),
            form.warnings,
        ))
    }

    fn form(text: &str) -> FormArg {
        FormArg::Form(text.to_owned())
    }

    #[test]
    fn a_type_from_the_command_line_keeps_its_name_and_gets_the_boundary() {
        let built_as = |root: &str| {
            let mut next = || "B1".to_owned();
            build_with(&[form("a=1")], Escape::Percent, Some(root), &mut next).unwrap()
        };
        // `-H 'Content-Type: multipart/related; type="application/json"'`: curl's type, its
        // parameters and then the boundary; the parts are attachments outside form-data.
        let related = built_as("multipart/related; type=\"application/json\"");
        assert_eq!(
            related.content_type,
            "multipart/related; type=\"application/json\"; boundary=B1"
        );
        assert_eq!(
            String::from_utf8_lossy(&related.body),
            "--B1\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\n1\r\n--B1--\r\n"
        );
        // The usual `-H 'Content-Type: multipart/form-data'`: the boundary it lacked is added.
        let form_data = built_as("Multipart/Form-Data");
        assert_eq!(form_data.content_type, "Multipart/Form-Data; boundary=B1");
        assert!(String::from_utf8_lossy(&form_data.body).contains("form-data; name="));
        // `-H 'Content-Type:'` (which removes other headers): an empty type, as curl sends it.
        assert_eq!(built_as("").content_type, "; boundary=B1");
        assert!(!is_form_data("multipart/form-database"));
        assert!(is_form_data("multipart/form-data;charset=utf-8"));
    }

    #[test]
    fn fields_files_and_modifiers() {
        let dir = crate::scratch::Scratch::new("form");
        let file = dir.join("notes.txt");
        std::fs::write(&file, "file body").unwrap();
        let json = dir.join("data.json");
        std::fs::write(&json, "{}").unwrap();
        let args = [
            form("a=1"),
            form(&format!("up=@{}", file.display())),
            form(&format!("inline=<{}", file.display())),
            form(&format!(
                "j=@{};filename=q\"d.bin;headers=X-Y: z",
                json.display()
            )),
            FormArg::Literal("lit=@not;type=file".into()),
        ];
        let (body, warnings) = built(&args, Escape::Percent).unwrap();
        let expected = "--B1\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n\
            --B1\r\nContent-Disposition: form-data; name=\"up\"; filename=\"notes.txt\"\r\n\
            Content-Type: text/plain\r\n\r\nfile body\r\n\
            --B1\r\nContent-Disposition: form-data; name=\"inline\"\r\n\r\nfile body\r\n\
            --B1\r\nContent-Disposition: form-data; name=\"j\"; filename=\"q%22d.bin\"\r\n\
            Content-Type: application/octet-stream\r\nX-Y: z\r\n\r\n{}\r\n\
            --B1\r\nContent-Disposition: form-data; name=\"lit\"\r\n\r\n@not;type=file\r\n\
            --B1--\r\n";
        assert_eq!(body, expected);
        assert!(warnings.is_empty(), "{warnings:?}");
        let several = form(&format!(
            "f=@{},{};type=text/x",
            file.display(),
            json.display()
        ));
        let (body, _) = built(&[several], Escape::Backslash).unwrap();
        let expected = "--B1\r\nContent-Disposition: form-data; name=\"f\"\r\n\
            Content-Type: multipart/mixed; boundary=B2\r\n\r\n\
            --B2\r\nContent-Disposition: attachment; filename=\"notes.txt\"\r\n\
            Content-Type: text/plain\r\n\r\nfile body\r\n\
            --B2\r\nContent-Disposition: attachment; filename=\"data.json\"\r\n\
            Content-Type: text/x\r\n\r\n{}\r\n--B2--\r\n\r\n--B1--\r\n";
        assert_eq!(body, expected);
        assert_eq!(
            built(&[form("f=@/nonexistent/x")], Escape::Percent)
                .unwrap_err()
                .code(),
            26
        );
    }

    #[test]
    fn nested_parts_encoders_and_own_headers() {
        let args = [
            form("n=(;type=multipart/alternative"),
            form("=plain"),
            form("= <b>x</b>;type=text/html;encoder=base64"),
            form("=)"),
            form("t=1;headers=Content-Type: text/x-t;headers=X-Q: q;y"),
        ];
        let (body, warnings) = built(&args, Escape::Percent).unwrap();
        let expected = "--B1\r\nContent-Disposition: form-data; name=\"n\"\r\n\
            Content-Type: multipart/alternative; boundary=B2\r\n\r\n\
            --B2\r\n\r\nplain\r\n\
            --B2\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: base64\r\n\r\n\
            PGI+eDwvYj4=\r\n--B2--\r\n\r\n\
            --B1\r\nContent-Disposition: form-data; name=\"t\"\r\nContent-Type: text/x-t\r\n\
            X-Q: q\r\n\r\n1\r\n--B1--\r\n";
        assert_eq!(body, expected);
        assert_eq!(warnings, ["skip unknown form field: y"]);
        // An open multipart the arguments leave open closes at the end.
        let (body, _) = built(&[form("n=("), form("=x")], Escape::Percent).unwrap();
        assert!(body.ends_with("x\r\n--B2--\r\n\r\n--B1--\r\n"), "{body}");
    }

    #[test]
    fn malformed_fields_exit_as_curl_does() {
        let code = |args: &[FormArg]| built(args, Escape::Percent).unwrap_err().code();
        assert_eq!(code(&[form("novalue")]), 2);
        assert_eq!(code(&[form("=)")]), 2);
        assert_eq!(code(&[form("a=1;type=bogus")]), 2);
        assert_eq!(code(&[form("a=1;encoder=rot13")]), 43);
        assert_eq!(code(&[form("a=caf\u{e9};encoder=7bit")]), 26);
    }
}
