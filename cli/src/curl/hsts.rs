//! `--hsts FILE`: HTTP Strict Transport Security (RFC 6797) as curl keeps it. The file's hosts,
//! and those an `https://` response names in `Strict-Transport-Security`, are spoken to over
//! HTTPS only: an `http://` URL to one (or to a subdomain, for an `includeSubDomains` entry) is
//! switched to `https://` before it is requested, the first URL and redirects alike, keeping
//! its port as curl does. The file is read when the group starts and written when it ends, in
//! curl's format: one host a line, a leading `.` for `includeSubDomains`, and the expiry in UTC
//! (`"20261204 10:00:00"`) or `"unlimited"`. An empty file name (`--hsts ''`, which curl takes)
//! keeps the cache for the invocation only: nothing is read or written.
//!
//! What this module does not do: take a header from a cleartext response or about an IP
//! address (RFC 6797 and curl ignore both), or preload a list of its own.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use http::{HeaderMap, Uri};

use super::exit::CurlError;
use super::getdate::{file_stamp as stamp, unix_now as now};

/// One host that is HTTPS only.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// In lower case, without a trailing dot.
    host: String,
    include_subdomains: bool,
    /// Seconds since the epoch; `None` never expires.
    expires: Option<i64>,
}

/// The HSTS cache of one group, and its file.
#[derive(Debug)]
pub(crate) struct Hsts {
    path: PathBuf,
    entries: Mutex<Vec<Entry>>,
}

impl Hsts {
    /// The cache in `path` (empty when the file does not exist or holds no entry, or when
    /// `path` is empty).
    pub(crate) fn load(path: &str) -> Hsts {
        let text = match path {
            "" => String::new(),
            path => std::fs::read_to_string(path).unwrap_or_default(),
        };
        let now = now();
        let entries = text
            .lines()
            .filter_map(parse_line)
            .filter(|e| e.expires.is_none_or(|at| at > now))
            .collect();
        Hsts {
            path: PathBuf::from(path),
            entries: Mutex::new(entries),
        }
    }

    /// `uri` over HTTPS, when it is an `http://` URL to a host the cache holds.
    pub(crate) fn upgrade(&self, uri: &Uri) -> Option<Uri> {
        if uri.scheme_str() != Some("http") {
            return None;
        }
        let host = normalized(uri.host()?);
        let now = now();
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let known = entries.iter().any(|e| {
            e.expires.is_none_or(|at| at > now)
                && (e.host == host
                    || (e.include_subdomains
                        && host
                            .strip_suffix(&e.host)
                            .is_some_and(|head| head.ends_with('.') && head.len() > 1)))
        });
        if !known {
            return None;
        }
        let mut parts = uri.clone().into_parts();
        parts.scheme = Some(http::uri::Scheme::HTTPS);
        Uri::from_parts(parts).ok()
    }

    /// Takes in the `Strict-Transport-Security` of a response from `uri`: over HTTPS to a host
    /// name only; `max-age=0` removes the host.
    pub(crate) fn store_from(&self, uri: &Uri, headers: &HeaderMap) {
        let (Some("https"), Some(host)) = (uri.scheme_str(), uri.host()) else {
            return;
        };
        let host = normalized(host);
        if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
            return;
        }
        let Some((max_age, include_subdomains)) = headers
            .get("strict-transport-security")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_header)
        else {
            return;
        };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|e| e.host != host);
        if max_age > 0 {
            let expires = now().saturating_add(i64::try_from(max_age).unwrap_or(i64::MAX));
            entries.push(Entry {
                host,
                include_subdomains,
                expires: Some(expires),
            });
        }
    }

    /// Writes the cache to its file, if it has one.
    ///
    /// # Errors
    ///
    /// Exit 23 when the file cannot be written.
    pub(crate) fn save(&self) -> Result<(), CurlError> {
        if self.path.as_os_str().is_empty() {
            return Ok(());
        }
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = String::from("# Your HSTS cache.\n# Written by poolcurl.\n");
        for entry in entries.iter() {
            let dot = if entry.include_subdomains { "." } else { "" };
            let expires = entry.expires.map_or("unlimited".to_owned(), stamp);
            text.push_str(&format!("{dot}{} \"{expires}\"\n", entry.host));
        }
        std::fs::write(&self.path, text).map_err(|e| {
            CurlError::write_failed(format!(
                "Failed to write HSTS cache {}: {e}",
                self.path.display()
            ))
        })
    }
}

/// `host` in lower case without a trailing dot.
fn normalized(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// One line of the file: `[.]host "YYYYMMDD HH:MM:SS"` or `... "unlimited"`.
fn parse_line(line: &str) -> Option<Entry> {
    let line = line.trim();
    if line.starts_with('#') {
        return None;
    }
    let (host, rest) = line.split_once(char::is_whitespace)?;
    let date = rest.trim().strip_prefix('"')?.split('"').next()?;
    let expires = match date {
        "unlimited" => None,
        date => Some(super::getdate::parse(date)?),
    };
    let (host, include_subdomains) = match host.strip_prefix('.') {
        Some(host) => (host, true),
        None => (host, false),
    };
    Some(Entry {
        host: normalized(host),
        include_subdomains,
        expires,
    })
}

/// `max-age` (required) and whether `includeSubDomains` is there, from a
/// `Strict-Transport-Security` value.
fn parse_header(value: &str) -> Option<(u64, bool)> {
    let mut max_age = None;
    let mut include_subdomains = false;
    for directive in value.split(';').map(str::trim) {
        let (name, argument) = directive.split_once('=').unwrap_or((directive, ""));
        if name.trim().eq_ignore_ascii_case("max-age") {
            max_age = argument.trim().trim_matches('"').parse().ok();
        } else if name.trim().eq_ignore_ascii_case("includeSubDomains") {
            include_subdomains = true;
        }
    }
    Some((max_age?, include_subdomains))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sts(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("strict-transport-security", value.parse().unwrap());
        headers
    }

    #[test]
    fn hosts_learned_over_https_switch_http_urls() {
        let dir = crate::scratch::Scratch::new("hsts");
        let path = dir.join("hsts.txt");
        std::fs::write(
            &path,
            "# comment\n.sub.test \"unlimited\"\nold.test \"20000101 00:00:00\"\n",
        )
        .unwrap();
        let hsts = Hsts::load(path.to_str().unwrap());
        let up = |url: &str| hsts.upgrade(&url.parse().unwrap()).map(|u| u.to_string());
        assert_eq!(
            up("http://a.sub.test/x"),
            Some("https://a.sub.test/x".into())
        );
        assert_eq!(
            up("http://sub.test:8080/"),
            Some("https://sub.test:8080/".into())
        );
        assert_eq!(up("http://old.test/"), None, "expired");
        assert_eq!(up("http://new.test/"), None);
        // Learned over HTTPS only, not from cleartext nor for an address.
        hsts.store_from(&"http://new.test/".parse().unwrap(), &sts("max-age=100"));
        hsts.store_from(&"https://127.0.0.1/".parse().unwrap(), &sts("max-age=100"));
        assert_eq!(up("http://new.test/"), None);
        hsts.store_from(
            &"https://New.Test/".parse().unwrap(),
            &sts("max-age=\"100\""),
        );
        assert_eq!(
            up("http://new.test/a?b"),
            Some("https://new.test/a?b".into())
        );
        assert_eq!(up("http://x.new.test/"), None, "no includeSubDomains");
        hsts.save().unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(saved.contains(".sub.test \"unlimited\"\n"), "{saved}");
        assert!(saved.contains("\nnew.test \"20"), "{saved}");
        assert!(!saved.contains("old.test"), "{saved}");
        // max-age=0 forgets the host.
        hsts.store_from(&"https://new.test/".parse().unwrap(), &sts("max-age=0"));
        assert_eq!(up("http://new.test/"), None);
        assert_eq!(
            parse_header("includeSubDomains"),
            None,
            "max-age is required"
        );
    }

    #[test]
    fn an_empty_file_name_keeps_the_cache_for_the_invocation() {
        let hsts = Hsts::load("");
        hsts.store_from(&"https://kept.test/".parse().unwrap(), &sts("max-age=100"));
        assert_eq!(
            hsts.upgrade(&"http://kept.test/".parse().unwrap())
                .map(|u| u.to_string()),
            Some("https://kept.test/".into())
        );
        assert!(hsts.save().is_ok(), "nothing to write");
    }
}
