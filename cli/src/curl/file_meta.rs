//! What curl mode keeps beside a transfer's output: `--etag-save`, `--etag-compare` and
//! `-R`/`--remote-time`, with curl 7.88's rules.
//!
//! * `--etag-compare FILE` sends `If-None-Match` with the file's text, its line breaks
//!   removed (`""` for an empty file), appended to the `-H` headers as curl appends it. A file
//!   that cannot be read is exit 26, unless `--etag-save` is also given (then `""` is sent).
//! * `--etag-save FILE` (`-` is stdout) is created empty when each transfer starts and gets
//!   the value of every `ETag` header the transfer receives, one per line, as the heads arrive;
//!   a 304 to a `--etag-compare` of the same file writes the tag back.
//! * `-R` sets an output file's modification time to the last response's `Last-Modified`
//!   once the transfer succeeded; a response without one, or stdout, leaves it alone.
//! * `-J` with `-O` names the file after the `filename` parameter of the response's
//!   `Content-Disposition` ([`disposition_filename`]), in the `-O` file's directory; a file of
//!   that name that exists already is not overwritten (exit 23). Without the parameter the
//!   URL's name stays.

use std::io::Write as _;
use std::path::Path;

use http::HeaderMap;
use http::header::{CONTENT_DISPOSITION, ETAG, HeaderValue, LAST_MODIFIED};

use super::exit::CurlError;

/// The `If-None-Match` value of `--etag-compare FILE`; `saving` is whether `--etag-save` is
/// given too.
///
/// # Errors
///
/// Exit 26 when the file cannot be read and nothing is being saved.
pub(crate) fn etag_to_compare(file: &str, saving: bool) -> Result<HeaderValue, CurlError> {
    let text = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(_) if saving => Vec::new(),
        Err(_) => return Err(CurlError::new(26, format!("Failed to open {file}"))),
    };
    let tag = super::data::file_string(&text);
    let tag = if tag.is_empty() {
        b"\"\"".to_vec()
    } else {
        tag
    };
    HeaderValue::from_bytes(&tag)
        .map_err(|_| CurlError::new(26, format!("{file} holds no usable ETag")))
}

/// `--etag-save FILE` at the start of a transfer: creates or empties it.
///
/// # Errors
///
/// curl's warning when it cannot be created: the transfer is then skipped.
pub(crate) fn start_etag_file(file: &Path) -> Result<(), String> {
    if file.as_os_str() == "-" {
        return Ok(());
    }
    std::fs::File::create(file).map(drop).map_err(|_| {
        format!(
            "Failed creating file for saving etags: \"{}\". Skip this transfer",
            file.display()
        )
    })
}

/// `--etag-save FILE` when a response head arrives: appends each `ETag` value, one per line.
///
/// # Errors
///
/// Exit 23 when the file (or stdout) cannot be written.
pub(crate) fn save_etags(file: &Path, headers: &HeaderMap) -> Result<(), CurlError> {
    let mut lines = Vec::new();
    for tag in headers.get_all(ETAG) {
        lines.extend_from_slice(tag.as_bytes());
        lines.push(b'\n');
    }
    if lines.is_empty() {
        return Ok(());
    }
    let written = if file.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(&lines).and_then(|()| out.flush())
    } else {
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
            .and_then(|mut f| f.write_all(&lines))
    };
    written.map_err(|e| CurlError::write_failed(format!("{}: {e}", file.display())))
}

/// `-R`: gives `file` the time of `headers`' `Last-Modified`, if it has a valid one.
pub(crate) fn set_remote_time(file: &Path, headers: &HeaderMap) {
    let Some(time) = headers
        .get(LAST_MODIFIED)
        .and_then(|v| v.to_str().ok())
        .and_then(|text| httpdate::parse_http_date(text).ok())
    else {
        return;
    };
    // Best effort, as curl's: a file time that cannot be set fails nothing.
    if let Ok(opened) = std::fs::OpenOptions::new().write(true).open(file) {
        let _ = opened.set_modified(time);
    }
}

/// `--xattr`: stores in `file`'s extended attributes where it came from, under the names of
/// freedesktop.org's common attributes, as curl 7.88 does: `user.xdg.origin.url`, the URL the
/// transfer was given (not where redirects led) without its user name and password, and
/// `user.mime_type`, the last response's `Content-Type` (when it has one).
///
/// # Errors
///
/// The file system's, when it keeps no extended attributes; curl warns and goes on.
pub(crate) fn set_xattrs(file: &Path, url: &str, headers: &HeaderMap) -> std::io::Result<()> {
    let origin = match url::Url::parse(url) {
        Ok(mut parsed) => {
            // Neither fails on a URL with a host, which is every URL a transfer wrote from.
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        Err(_) => url.to_owned(),
    };
    xattr::set(file, "user.xdg.origin.url", origin.as_bytes())?;
    if let Some(content_type) = headers.get(http::header::CONTENT_TYPE) {
        xattr::set(file, "user.mime_type", content_type.as_bytes())?;
    }
    Ok(())
}

/// The file name `Content-Disposition` suggests, as curl 7.88's `-J` reads it: the value of
/// the first `filename` parameter, quoted (up to its closing quote) or not (up to `;`), without
/// any directory part (`/` or `\\`), so a server cannot write outside the output directory.
/// `filename*` (RFC 6266's encoded form) is not read, as curl does not read it; `None` without
/// a usable name.
pub(crate) fn disposition_filename(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_DISPOSITION)?.to_str().ok()?;
    // A parameter starts after a `;` and spaces; a quoted value may hold a `;` of its own.
    let at = value.match_indices(';').find_map(|(semicolon, _)| {
        let param = value[semicolon + 1..].trim_start();
        let key = param.get(..9)?;
        key.eq_ignore_ascii_case("filename=").then_some(param)
    })?;
    let raw = &at[9..];
    let name = match raw.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or_default(),
        None => raw.split(';').next().unwrap_or_default().trim_end(),
    };
    let name = name.rsplit(['/', '\\']).next().unwrap_or_default();
    (!name.is_empty() && name != "." && name != "..").then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file `name` (not made) in a scratch directory of its own, which goes when the first
    /// half of the pair is dropped.
    fn temp(name: &str) -> (crate::scratch::Scratch, std::path::PathBuf) {
        let dir = crate::scratch::Scratch::new(&format!("meta-{name}"));
        let file = dir.join(name);
        (dir, file)
    }

    #[test]
    fn compared_etags_lose_their_line_breaks_and_an_empty_file_sends_empty_quotes() {
        let (_file_dir, file) = temp("compare");
        std::fs::write(&file, "\"a\"\n\"b\"\r\n").unwrap();
        let path = file.to_str().unwrap();
        assert_eq!(etag_to_compare(path, false).unwrap(), "\"a\"\"b\"");
        std::fs::write(&file, "").unwrap();
        assert_eq!(etag_to_compare(path, false).unwrap(), "\"\"");
        let (_missing_dir, missing) = temp("missing");
        let missing = missing.to_str().unwrap();
        assert_eq!(etag_to_compare(missing, false).unwrap_err().code(), 26);
        assert_eq!(etag_to_compare(missing, true).unwrap(), "\"\"");
    }

    #[test]
    fn saved_etags_are_one_per_line_after_the_file_was_emptied() {
        let (_file_dir, file) = temp("save");
        std::fs::write(&file, "old\n").unwrap();
        start_etag_file(&file).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"");
        let mut headers = HeaderMap::new();
        save_etags(&file, &headers).unwrap();
        headers.insert(ETAG, HeaderValue::from_static("\"v1\""));
        save_etags(&file, &headers).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"\"v1\"\n");
    }

    #[test]
    fn remote_time_follows_last_modified() {
        let (_file_dir, file) = temp("remote");
        std::fs::write(&file, "x").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            LAST_MODIFIED,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        set_remote_time(&file, &headers);
        let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
        assert_eq!(
            modified,
            httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap()
        );
    }

    #[test]
    fn disposition_names_lose_their_directories() {
        let name = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_DISPOSITION, HeaderValue::from_static(value));
            disposition_filename(&headers)
        };
        assert_eq!(
            name("attachment; filename=\"report.txt\"").as_deref(),
            Some("report.txt")
        );
        assert_eq!(
            name("attachment; FileName=plain.txt; size=3").as_deref(),
            Some("plain.txt")
        );
        assert_eq!(
            name("attachment; filename=\"a;b.txt\"").as_deref(),
            Some("a;b.txt")
        );
        assert_eq!(
            name("attachment; filename=\"../../etc/x\"").as_deref(),
            Some("x")
        );
        assert_eq!(
            name("attachment; filename=dir\\\\win.txt").as_deref(),
            Some("win.txt")
        );
        assert_eq!(name("attachment; filename*=UTF-8''enc.txt"), None);
        assert_eq!(name("inline"), None);
        assert_eq!(name("attachment; filename=\"\""), None);
        assert_eq!(name("attachment; filename=\"..\""), None);
    }
}
