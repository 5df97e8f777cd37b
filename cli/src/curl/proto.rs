//! `--proto`, `--proto-redir` and `--proto-default`: which schemes a transfer may use.
//!
//! The lists use curl's syntax: comma-separated protocol names, each after optional modifiers
//! (`+` allows, `-` denies, `=` allows only this one), `all` for every protocol. `--proto`
//! starts from every protocol and applies to every request of a transfer; `--proto-redir`
//! starts from curl's default for redirects (HTTP, HTTPS, FTP, FTPS) and applies to redirect
//! targets as well. poolcurl speaks HTTP and HTTPS only, so only those two are tracked:
//! another protocol's name changes nothing here (curl warns about names it does not know and
//! goes on, and so does this). A scheme a list denies is curl's exit 1, "Protocol ... not
//! supported or disabled".
//!
//! `--proto-default SCHEME` is the scheme of a URL given without one (curl's default is
//! `http`).

use super::exit::CurlError;

/// The schemes a list allows, of the two poolcurl speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Allowed {
    http: bool,
    https: bool,
}

impl Allowed {
    /// Every protocol: `--proto`'s start, and what applies without it.
    pub(crate) const ALL: Allowed = Allowed {
        http: true,
        https: true,
    };

    /// Applies a list in curl's syntax to `self`.
    pub(crate) fn apply(mut self, list: &str) -> Allowed {
        for token in list.split(',') {
            let mut name = token.trim();
            let mut action = Action::Allow;
            while let Some(c) = name.chars().next().filter(|c| matches!(c, '+' | '-' | '=')) {
                action = match c {
                    '+' => Action::Allow,
                    '-' => Action::Deny,
                    _ => Action::Only,
                };
                name = &name[1..];
            }
            let (http, https) = match name.to_ascii_lowercase().as_str() {
                "all" => (true, true),
                "http" => (true, false),
                "https" => (false, true),
                _ => (false, false),
            };
            match action {
                Action::Allow => {
                    self.http |= http;
                    self.https |= https;
                }
                Action::Deny => {
                    self.http &= !http;
                    self.https &= !https;
                }
                Action::Only => self = Allowed { http, https },
            }
        }
        self
    }

    /// Checks the scheme of a request.
    ///
    /// # Errors
    ///
    /// Exit 1 when the list does not allow it.
    pub(crate) fn check(self, scheme: &str) -> Result<(), CurlError> {
        let allowed = match scheme.to_ascii_lowercase().as_str() {
            "http" => self.http,
            "https" => self.https,
            _ => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(CurlError::unsupported_protocol(scheme))
        }
    }
}

/// What a token does.
#[derive(Debug, Clone, Copy)]
enum Action {
    Allow,
    Deny,
    Only,
}

/// The schemes of a transfer's requests: `--proto` for all of them, and also `--proto-redir`
/// for redirect targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Protocols {
    pub(crate) any: Allowed,
    pub(crate) redirect: Allowed,
}

impl Protocols {
    /// The lists of `--proto` and `--proto-redir`, if given.
    pub(crate) fn new(proto: Option<&str>, proto_redir: Option<&str>) -> Protocols {
        let any = proto.map_or(Allowed::ALL, |list| Allowed::ALL.apply(list));
        // curl's redirect default is HTTP, HTTPS, FTP and FTPS: both of poolcurl's.
        let redirect = proto_redir.map_or(Allowed::ALL, |list| Allowed::ALL.apply(list));
        Protocols { any, redirect }
    }

    /// Checks a redirect target's scheme against both lists.
    ///
    /// # Errors
    ///
    /// Exit 1 when either list denies it.
    pub(crate) fn check_redirect(self, scheme: &str) -> Result<(), CurlError> {
        self.any.check(scheme)?;
        self.redirect.check(scheme)
    }
}

/// `url` with `--proto-default`'s scheme when it has none (`default` `None` leaves it to the
/// URL parser, which takes `http`).
pub(crate) fn with_default_scheme(url: &str, default: Option<&str>) -> String {
    match default {
        Some(scheme) if !has_scheme(url) => format!("{scheme}://{url}"),
        _ => url.to_owned(),
    }
}

/// Whether `url` starts with `scheme:/` (`://` and curl's one-to-three-slash forms), not
/// merely holds one later (`host/?next=http://x`).
fn has_scheme(url: &str) -> bool {
    url.split_once(":/")
        .is_some_and(|(scheme, _)| super::url::is_scheme(scheme))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_follow_curls_modifiers() {
        let only_https = Allowed::ALL.apply("=https");
        assert!(only_https.check("https").is_ok());
        assert_eq!(only_https.check("http").unwrap_err().code(), 1);
        assert!(Allowed::ALL.apply("-http").check("http").is_err());
        assert!(Allowed::ALL.apply("-all,+https,http").check("http").is_ok());
        assert!(Allowed::ALL.apply("-all,https").check("http").is_err());
        assert!(Allowed::ALL.apply("bogus").check("http").is_ok());
        assert!(Allowed::ALL.apply("=ftp").check("https").is_err());
    }

    #[test]
    fn redirects_answer_to_both_lists() {
        let p = Protocols::new(None, Some("=https"));
        assert!(p.any.check("http").is_ok());
        assert!(p.check_redirect("http").is_err());
        assert!(p.check_redirect("https").is_ok());
        let p = Protocols::new(Some("-https"), None);
        assert!(p.check_redirect("https").is_err());
    }

    #[test]
    fn the_default_scheme_applies_to_urls_without_one() {
        assert_eq!(
            with_default_scheme("a.test/x", Some("https")),
            "https://a.test/x"
        );
        assert_eq!(with_default_scheme("http://a/", Some("https")), "http://a/");
        assert_eq!(with_default_scheme("http:/a/", Some("https")), "http:/a/");
        assert_eq!(
            with_default_scheme("a.test:8080/", Some("https")),
            "https://a.test:8080/"
        );
        assert_eq!(with_default_scheme("a.test", None), "a.test");
        assert_eq!(
            with_default_scheme("a.test/?next=http://b/", Some("https")),
            "https://a.test/?next=http://b/"
        );
    }
}
