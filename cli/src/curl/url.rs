//! URLs: which command-line URLs curl mode accepts, and how a redirect's `Location` resolves
//! against the URL that answered with it (RFC 3986, section 5).
//!
//! Credentials in a URL (`http://user:pass@host/`) are taken out of it by [`take_credentials`]
//! (curl sends them as Basic authentication; the request itself never carries userinfo).
//! [`remote_name`] is the file name `-O` writes to. What this module does not do: URL
//! globbing (see [`super::glob`]) or IDN conversion.

use http::Uri;

use super::exit::CurlError;

/// Parses a command-line URL the way curl accepts it: a URL without a scheme is `http://`;
/// one to three slashes may follow the scheme's colon (`http:/host`, `http:///host`), as curl
/// allows, and more are malformed; schemes other than `http` and `https` are unsupported
/// (exit 1); anything `http::Uri` rejects, or a URL without a host, is malformed (exit 3).
/// `.` and `..` segments of the path are resolved (RFC 3986 section 5.2.4), as curl does
/// without `--path-as-is`.
///
/// # Errors
///
/// [`CurlError`] with code 1 or 3.
pub(crate) fn parse_url(text: &str) -> Result<Uri, CurlError> {
    parse_url_with(text, false)
}

/// [`parse_url`], leaving the path's `.` and `..` segments as they are when `path_as_is`
/// (`--path-as-is`).
///
/// # Errors
///
/// As [`parse_url`].
pub(crate) fn parse_url_with(text: &str, path_as_is: bool) -> Result<Uri, CurlError> {
    let uri = parse_absolute(text)?;
    if path_as_is || !has_dot_segment(uri.path()) {
        return Ok(uri);
    }
    let mut parts = uri.into_parts();
    let mut path = remove_dot_segments(parts.path_and_query.as_ref().map_or("/", |pq| pq.path()));
    if let Some(query) = parts.path_and_query.as_ref().and_then(|pq| pq.query()) {
        path.push('?');
        path.push_str(query);
    }
    parts.path_and_query = Some(path.parse().map_err(|_| CurlError::malformed_url())?);
    Uri::from_parts(parts).map_err(|_| CurlError::malformed_url())
}

/// Whether `path` has a `.` or `..` segment.
fn has_dot_segment(path: &str) -> bool {
    path.split('/')
        .any(|segment| segment == "." || segment == "..")
}

/// [`parse_url`] without the path's resolution.
fn parse_absolute(text: &str) -> Result<Uri, CurlError> {
    let text = match split_scheme(text) {
        Some((_, slashes, _)) if slashes > 3 => return Err(CurlError::malformed_url()),
        Some((_, _, "")) => return Err(CurlError::malformed_url()),
        Some((scheme, _, _))
            if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") =>
        {
            return Err(CurlError::unsupported_protocol(scheme));
        }
        Some((scheme, _, rest)) => format!("{scheme}://{rest}"),
        None => format!("http://{text}"),
    };
    // An IPv6 zone id is no part of the host `http` reads; it is dialed apart (`zone`).
    let text = super::zone::split(&text).map_or(text, |zoned| zoned.url);
    let text = encode_refused(normalize_host(normalize_port(text)));
    let uri: Uri = text.parse().map_err(|_| CurlError::malformed_url())?;
    match uri.host() {
        Some(host) if !host.is_empty() && host != "[]" => Ok(uri),
        _ => Err(CurlError::malformed_url()),
    }
}

/// `url` (with its scheme) with the host as curl's URL parser leaves it: an IPv4 address
/// written in numbers other than four decimal parts (`127.1`, `0x7f.1`, `2130706433`) in
/// dotted decimal, and an internationalized name in its ASCII form (`xn--...`, IDNA as
/// WHATWG's URL standard and libidn2 map it), since a request can carry no other. Anything
/// else, and a host that does not parse either way, is left as written (a name in upper case
/// stays so, as curl keeps it).
fn normalize_host(url: String) -> String {
    let Some((host_start, end)) = host_and_port(&url) else {
        return url;
    };
    if url[host_start..end].starts_with('[') {
        return url;
    }
    let host_end = url[host_start..end]
        .find(':')
        .map_or(end, |i| host_start + i);
    let host = &url[host_start..host_end];
    let numeric = host.bytes().any(|b| b.is_ascii_digit())
        && host
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || matches!(b, b'.' | b'x' | b'X'));
    let ascii = match url::Host::parse(host) {
        Ok(url::Host::Ipv4(address)) if numeric => address.to_string(),
        Ok(url::Host::Domain(name)) if !host.is_ascii() => name,
        _ => return url,
    };
    format!("{}{ascii}{}", &url[..host_start], &url[host_end..])
}

/// `url` (with its scheme) with its port as curl's URL parser writes it back: a number in
/// decimal without leading zeros (`:018090` is `:18090`), and no colon for an empty port
/// (`host:/x` is `host/x`). A port that is no number, or over 65535, is left for the parse to
/// refuse.
fn normalize_port(url: String) -> String {
    let Some((host_start, end)) = host_and_port(&url) else {
        return url;
    };
    // After an IPv6 literal's `]`, else after the host's first colon.
    let after_host = match url[host_start..end].find(']') {
        Some(i) => host_start + i + 1,
        None => host_start,
    };
    let Some(colon) = url[after_host..end].find(':').map(|i| after_host + i) else {
        return url;
    };
    let port = &url[colon + 1..end];
    let written = match port.parse::<u16>() {
        _ if port.is_empty() => String::new(),
        Ok(number) if port.bytes().all(|b| b.is_ascii_digit()) => format!(":{number}"),
        _ => return url,
    };
    if written.len() == port.len() + 1 {
        return url;
    }
    format!("{}{written}{}", &url[..colon], &url[end..])
}

/// Where the host (and port) of `url` (with its scheme) start and end: after the scheme's
/// `://` and any userinfo, up to the path, query or fragment.
fn host_and_port(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let host_start = url[start..end].rfind('@').map_or(start, |i| start + i + 1);
    Some((host_start, end))
}

/// `text` as curl reads a URL with a scheme: the scheme (a letter, then letters, digits, `+`,
/// `-` or `.`), how many slashes follow its colon (at least one), and what follows them.
/// `None` when `text` has no scheme: `host:8080/x` and `user:pass@host` are a host.
fn split_scheme(text: &str) -> Option<(&str, usize, &str)> {
    let (scheme, rest) = text.split_once(':')?;
    let after = rest.trim_start_matches('/');
    let slashes = rest.len() - after.len();
    (is_scheme(scheme) && slashes > 0).then_some((scheme, slashes, after))
}

/// Splits the userinfo off `uri`: the URI without it, and the percent-decoded user and
/// password (empty if absent) when it had one.
pub(crate) fn take_credentials(uri: &Uri) -> (Uri, Option<(String, String)>) {
    let Some(authority) = uri.authority() else {
        return (uri.clone(), None);
    };
    let Some((userinfo, host)) = authority.as_str().rsplit_once('@') else {
        return (uri.clone(), None);
    };
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut parts = uri.clone().into_parts();
    parts.authority = host.parse().ok();
    let stripped = Uri::from_parts(parts).unwrap_or_else(|_| uri.clone());
    (stripped, Some((decode(user), decode(password))))
}

/// The file name `-O` writes a URL to: its last path segment, percent-encoding kept as curl
/// keeps it. `None` when the path ends in `/` (curl: "Remote file name has no length!").
pub(crate) fn remote_name(uri: &Uri) -> Option<String> {
    let name = uri.path().rsplit('/').next().unwrap_or_default();
    (!name.is_empty()).then(|| name.to_owned())
}

/// Resolves a `Location` header value against `base`, percent-encoding bytes a URL may not
/// contain (spaces, non-ASCII) and dropping any fragment.
///
/// # Errors
///
/// As [`parse_url`] for the resolved URL (a redirect to `ftp://` is exit 1).
pub(crate) fn resolve_location(base: &Uri, location: &[u8]) -> Result<Uri, CurlError> {
    let location = encode_unsafe(location);
    let location = location.split('#').next().unwrap_or_default();
    if has_scheme(location) {
        return parse_url(location);
    }
    let scheme = base.scheme_str().unwrap_or("http");
    if location.starts_with("//") {
        return parse_url(&format!("{scheme}:{location}"));
    }
    let authority = base.authority().map_or("", |a| a.as_str());
    let base_path = base.path();
    let (path, query) = if location.is_empty() {
        (base_path.to_owned(), base.query().map(str::to_owned))
    } else if let Some(query) = location.strip_prefix('?') {
        (base_path.to_owned(), Some(query.to_owned()))
    } else {
        let (reference, query) = match location.split_once('?') {
            Some((path, query)) => (path, Some(query.to_owned())),
            None => (location, None),
        };
        let merged = if reference.starts_with('/') {
            reference.to_owned()
        } else {
            let directory = base_path.rfind('/').map_or("/", |i| &base_path[..=i]);
            format!("{directory}{reference}")
        };
        (remove_dot_segments(&merged), query)
    };
    let mut url = format!("{scheme}://{authority}{path}");
    if let Some(query) = query {
        url.push('?');
        url.push_str(&query);
    }
    parse_url(&url)
}

/// Whether a reference starts with `scheme:`.
fn has_scheme(reference: &str) -> bool {
    reference
        .split_once(':')
        .is_some_and(|(scheme, _)| is_scheme(scheme))
}

/// Whether `text` is a scheme (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`).
pub(crate) fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// RFC 3986 `remove_dot_segments` on an absolute path.
fn remove_dot_segments(path: &str) -> String {
    let mut output: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing_slash = false;
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." => trailing_slash = i == last,
            ".." => {
                output.pop();
                trailing_slash = i == last;
            }
            other => {
                output.push(other);
                trailing_slash = false;
            }
        }
    }
    let mut result = String::with_capacity(path.len());
    for segment in &output {
        result.push('/');
        result.push_str(segment);
    }
    if trailing_slash || result.is_empty() {
        result.push('/');
    }
    result
}

/// The fragment of a URL or `Location` (after its first `#`), if it has one: the request
/// never carries it, `%{url_effective}` shows it, as curl's.
pub(crate) fn fragment(text: &[u8]) -> Option<String> {
    let at = text.iter().position(|b| *b == b'#')?;
    Some(encode_unsafe(&text[at + 1..])).filter(|f| !f.is_empty())
}

/// Whether a `Location` stays within the current URL's authority (a path or a query: no
/// scheme, no `//host`), so that curl's resolved URL keeps its `user:password@`.
pub(crate) fn keeps_authority(location: &[u8]) -> bool {
    let text = String::from_utf8_lossy(location);
    let text = text.trim();
    !has_scheme(text) && !text.starts_with("//")
}

/// `%{url_effective}` for a request to `uri` whose URL was `written` (credentials and all)
/// and had `fragment`: curl shows the URL's `user:password@` and fragment, which the request
/// line never carries.
pub(crate) fn effective(uri: &Uri, written: &Uri, fragment: Option<String>) -> String {
    let mut shown = uri.to_string();
    let userinfo = written
        .authority()
        .and_then(|a| a.as_str().rsplit_once('@'))
        .map(|(userinfo, _)| userinfo);
    if let (Some(userinfo), Some(at)) = (userinfo, shown.find("://")) {
        shown.insert_str(at + 3, &format!("{userinfo}@"));
    }
    if let Some(fragment) = fragment {
        shown.push('#');
        shown.push_str(&fragment);
    }
    shown
}

/// `uri` as its request line carries it: a path with bytes outside ASCII (`/é`, which the URL
/// keeps as typed, and `%{url_effective}` shows so) percent-encoded, in curl's lower-case
/// hex, as curl's URL parser sends it; a raw byte above 0x7f is no valid request-target (RFC
/// 9112). The query goes as it is, as curl 7.88 sends it. A port that is the scheme's own
/// (`http://host:80/`) is left out, as curl's URL parser writes the absolute form a forward
/// proxy gets (`GET http://host/ HTTP/1.1`).
pub(crate) fn wire_uri(uri: &Uri) -> std::borrow::Cow<'_, Uri> {
    if let Some(plain) = without_default_port(uri) {
        return std::borrow::Cow::Owned(wire_uri(&plain).into_owned());
    }
    let path = uri.path();
    if path.is_ascii() {
        return std::borrow::Cow::Borrowed(uri);
    }
    let mut target = escape(path.as_bytes(), |b| !b.is_ascii());
    if let Some(query) = uri.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut parts = uri.clone().into_parts();
    match target.parse() {
        Ok(path_and_query) => {
            parts.path_and_query = Some(path_and_query);
            Uri::from_parts(parts).map_or(std::borrow::Cow::Borrowed(uri), std::borrow::Cow::Owned)
        }
        Err(_) => std::borrow::Cow::Borrowed(uri),
    }
}

/// The port a URL's scheme implies: 443 for `https`, 80 otherwise (curl mode speaks HTTP only).
pub(crate) fn default_port(uri: &Uri) -> u16 {
    match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    }
}

/// The port a request to `uri` connects to: its own, else its scheme's.
pub(crate) fn port_of(uri: &Uri) -> u16 {
    uri.port_u16().unwrap_or_else(|| default_port(uri))
}

/// `uri` without its port when that is the scheme's default (80 for `http`, 443 for
/// `https`); `None` when it names no port or another one.
fn without_default_port(uri: &Uri) -> Option<Uri> {
    let authority = uri.authority()?;
    if authority.port_u16()? != default_port(uri) {
        return None;
    }
    let plain = authority.as_str().rsplit_once(':')?.0;
    let mut parts = uri.clone().into_parts();
    parts.authority = Some(plain.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// `url` (with its scheme) with the `<`, `>` and `` ` `` of its path and query
/// percent-encoded. curl sends them as typed; `http::Uri` takes no such byte, and a request
/// for the encoded path is the same request to a server that decodes it (RFC 3986 section
/// 2.1), where refusing the URL would fail it.
fn encode_refused(url: String) -> String {
    let after_authority = url.find("://").map_or(0, |at| at + 3);
    let target = url[after_authority..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |at| after_authority + at);
    if !url[target..].contains(['<', '>', '`']) {
        return url;
    }
    let (origin, rest) = url.split_at(target);
    let mut encoded = String::from(origin);
    for c in rest.chars() {
        match c {
            '<' => encoded.push_str("%3c"),
            '>' => encoded.push_str("%3e"),
            '`' => encoded.push_str("%60"),
            c => encoded.push(c),
        }
    }
    encoded
}

/// Percent-encodes the bytes `http::Uri` refuses (controls, space, non-ASCII and a few
/// delimiters), as curl does with a `Location` it follows.
fn encode_unsafe(bytes: &[u8]) -> String {
    escape(bytes, |b| {
        b <= 0x20
            || b >= 0x7f
            || matches!(
                b,
                b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
    })
}

/// `bytes` with each one `escaped` says percent-encoded, in lower-case hex as curl's URL API
/// writes it.
fn escape(bytes: &[u8], escaped: impl Fn(u8) -> bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if escaped(b) {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_a_uri_refuses_in_a_target_are_encoded() {
        let target = |url: &str| {
            parse_url(url)
                .unwrap()
                .path_and_query()
                .unwrap()
                .to_string()
        };
        assert_eq!(target("http://h/a<b>?q=`x`"), "/a%3cb%3e?q=%60x%60");
        assert_eq!(target("http://h?q=<"), "/?q=%3c");
        assert_eq!(target("h/é<"), "/é%3c");
        // Not in the authority: a host with one stays refused.
        assert!(parse_url("http://a<b/").is_err());
    }

    #[test]
    fn numeric_ipv4_hosts_are_dotted_and_international_names_ascii() {
        let host = |url: &str| parse_url(url).unwrap().authority().unwrap().to_string();
        assert_eq!(host("http://127.1:8080/"), "127.0.0.1:8080");
        assert_eq!(host("http://0x7f.1/"), "127.0.0.1");
        assert_eq!(host("http://u:p@2130706433/"), "u:p@127.0.0.1");
        assert_eq!(host("http://0177.0.0.1/"), "127.0.0.1");
        assert_eq!(host("http://ünï.example:81/x"), "xn--n-nga1b.example:81");
        // Names, addresses already dotted, and what is neither, stay as written.
        for kept in [
            "LOCALHOST:81",
            "127.0.0.1",
            "cafe.de",
            "1.2.3.4.5",
            "[::1]:81",
            "a.123",
        ] {
            assert_eq!(host(&format!("http://{kept}/")), kept);
        }
    }

    #[test]
    fn effective_urls_keep_their_fragment() {
        let uri = parse_url("http://h/a#top").unwrap();
        let top = fragment(b"http://h/a#top");
        assert_eq!(effective(&uri, &uri, top), "http://h/a#top");
        assert_eq!(
            effective(&uri, &uri, fragment(b"http://h/a#")),
            "http://h/a"
        );
        assert_eq!(fragment(b"../x?y#z#w").as_deref(), Some("z#w"));
        let written = parse_url("http://u:p%40@h/a").unwrap();
        let (bare, _) = take_credentials(&written);
        assert_eq!(effective(&bare, &written, None), "http://u:p%40@h/a");
        assert!(keeps_authority(b"/a") && keeps_authority(b"x?y") && keeps_authority(b"?q"));
        assert!(!keeps_authority(b"//other/a") && !keeps_authority(b"http://h/"));
    }

    #[test]
    fn request_lines_carry_non_ascii_paths_encoded_and_queries_as_they_are() {
        let uri = parse_url("http://h/é/x?q=é").unwrap();
        assert_eq!(wire_uri(&uri).to_string(), "http://h/%c3%a9/x?q=é");
        let plain = parse_url("http://h/a%20b?c").unwrap();
        assert!(matches!(wire_uri(&plain), std::borrow::Cow::Borrowed(_)));
        // The scheme's own port is left out (a forward proxy's absolute form), another kept.
        let wire = |url: &str| wire_uri(&parse_url(url).unwrap()).to_string();
        assert_eq!(wire("http://H.test:80/é"), "http://H.test/%c3%a9");
        assert_eq!(wire("https://u@h:443/x?q"), "https://u@h/x?q");
        assert_eq!(wire("http://h:443/x"), "http://h:443/x");
        assert_eq!(wire("http://[::1]:80/"), "http://[::1]/");
    }

    fn resolve(base: &str, location: &str) -> String {
        resolve_location(&base.parse().unwrap(), location.as_bytes())
            .unwrap()
            .to_string()
    }

    #[test]
    fn command_line_urls() {
        assert_eq!(parse_url("http://a.test/x").unwrap().path(), "/x");
        assert_eq!(
            parse_url("localhost:8080/x").unwrap().to_string(),
            "http://localhost:8080/x"
        );
        assert_eq!(
            parse_url("HTTPS://a.test/").unwrap().scheme_str(),
            Some("https")
        );
        assert_eq!(parse_url("ftp://x/").unwrap_err().code(), 1);
        assert_eq!(
            parse_url("ftp://x/").unwrap_err().message(),
            "Protocol \"ftp\" not supported or disabled in libcurl"
        );
        assert_eq!(parse_url("http://[::1").unwrap_err().code(), 3);
        assert_eq!(parse_url("http://a b/").unwrap_err().code(), 3);
        // One to three slashes after the colon, as curl allows; four are malformed.
        for url in ["http:/a.test/x", "http:///a.test/x", "HTTP:/a.test/x"] {
            let uri = parse_url(url).unwrap();
            assert_eq!((uri.host(), uri.path()), (Some("a.test"), "/x"), "{url}");
        }
        assert_eq!(parse_url("http:////a.test/").unwrap_err().code(), 3);
        assert_eq!(parse_url("http:/").unwrap_err().code(), 3);
        assert_eq!(parse_url("http:///").unwrap_err().code(), 3);
        assert_eq!(parse_url("http:/?x").unwrap_err().code(), 3);
        // A scheme is a scheme with one slash too: `foo:/x` is unsupported, not a host `foo`.
        assert_eq!(parse_url("foo:/x").unwrap_err().code(), 1);
        assert_eq!(parse_url("localhost:/x").unwrap_err().code(), 1);
        // Without a slash after the colon it is a host and a port, or credentials.
        assert_eq!(parse_url("a.test:8080/x").unwrap().port_u16(), Some(8080));
        assert_eq!(parse_url("u:p@a.test/").unwrap().host(), Some("a.test"));
        // Dot segments are resolved, as curl does unless `--path-as-is`.
        let uri = parse_url("http://a.test/a/./b/../c?x=/../y").unwrap();
        assert_eq!(uri.to_string(), "http://a.test/a/c?x=/../y");
        assert_eq!(parse_url("http://a.test/..").unwrap().path(), "/");
        assert_eq!(parse_url("http://a.test/a/.").unwrap().path(), "/a/");
        let as_is = parse_url_with("http://a.test/a/./b/../c", true).unwrap();
        assert_eq!(as_is.path(), "/a/./b/../c");
        // The port as a number, as curl writes it back; an empty one goes.
        for (url, written) in [
            ("http://a.test:018090/x", "http://a.test:18090/x"),
            ("http://u:p@a.test:080", "http://u:p@a.test:80/"),
            ("http://[::1]:00443/x", "http://[::1]:443/x"),
            ("http://a.test:/x", "http://a.test/x"),
            ("a.test:0008080/x", "http://a.test:8080/x"),
            ("http://a.test:8080/x:007", "http://a.test:8080/x:007"),
        ] {
            assert_eq!(parse_url(url).unwrap().to_string(), written, "{url}");
        }
        assert_eq!(parse_url("http://a.test:99999/").unwrap().port_u16(), None);
    }

    #[test]
    fn relative_locations_follow_rfc_3986() {
        let base = "http://a.test:8080/b/c/d?q";
        assert_eq!(resolve(base, "g"), "http://a.test:8080/b/c/g");
        assert_eq!(resolve(base, "./g/"), "http://a.test:8080/b/c/g/");
        assert_eq!(resolve(base, "/g?x=1"), "http://a.test:8080/g?x=1");
        assert_eq!(resolve(base, "?y"), "http://a.test:8080/b/c/d?y");
        assert_eq!(resolve(base, "../g"), "http://a.test:8080/b/g");
        assert_eq!(resolve(base, "../../../g"), "http://a.test:8080/g");
        assert_eq!(resolve(base, ".."), "http://a.test:8080/b/");
        assert_eq!(resolve(base, "g#frag"), "http://a.test:8080/b/c/g");
        assert_eq!(resolve(base, "//other.test/x"), "http://other.test/x");
        assert_eq!(resolve(base, "https://other.test/"), "https://other.test/");
        assert_eq!(resolve(base, "/a b"), "http://a.test:8080/a%20b");
        assert_eq!(resolve("http://a.test", "x"), "http://a.test/x");
    }

    #[test]
    fn credentials_come_out_of_the_url() {
        let (uri, creds) =
            take_credentials(&parse_url("http://us%40r:p%3Ass@a.test:81/x?q").unwrap());
        assert_eq!(uri.to_string(), "http://a.test:81/x?q");
        assert_eq!(creds, Some(("us@r".to_owned(), "p:ss".to_owned())));
        let (uri, creds) = take_credentials(&parse_url("http://a.test/").unwrap());
        assert_eq!(
            (uri.to_string(), creds),
            ("http://a.test/".to_owned(), None)
        );
        assert_eq!(
            remote_name(&parse_url("http://a/b/c.txt?x").unwrap()).as_deref(),
            Some("c.txt")
        );
        assert_eq!(remote_name(&parse_url("http://a/b/").unwrap()), None);
    }

    #[test]
    fn redirects_to_other_protocols_are_unsupported() {
        let err =
            resolve_location(&"http://a.test/".parse().unwrap(), b"ftp://b.test/").unwrap_err();
        assert_eq!(err.code(), 1);
    }
}
