//! curl mode's requests from its flags: the [`RequestTemplate`] every transfer shares and the
//! per-request headers (credentials, `-e`, `-r`), assembled in curl's order.
//!
//! | flag | effect |
//! |------|--------|
//! | `-A NAME` | replaces the default `User-Agent` (`-A ""` sends none) |
//! | `-e URL` | a `Referer` default; `URL;auto` / `;auto` also sets it to the previous URL after a redirect |
//! | `-u USER:PASSWORD`, URL userinfo | `Authorization: Basic` (`-u` wins over the URL) |
//! | `--oauth2-bearer TOKEN` | `Authorization: Bearer TOKEN` (wins over `-u`, as in curl) |
//! | `--url-query DATA` | a piece added to every URL's query, encoded as `--data-urlencode` encodes it (`+DATA`: as given); left out when `-G` has data, as curl leaves it |
//! | `--json DATA` | data as `--data-binary`, with `Content-Type` and `Accept` `application/json` |
//! | `-G` | the data goes into the URL's query; the request is a GET (HEAD with `-I`) |
//! | `-F`, `--form-string` | a `multipart/form-data` POST ([`super::form`]); a `-H Content-Type` names the type instead, the boundary added, in the form's place |
//! | `-T FILE` | a PUT of the file, for the URL it pairs with (`Composed::upload_template`, [`super::upload`]) |
//! | `-r RANGE` | `Range: bytes=RANGE` (on a `-T` upload, `Content-Range`: [`super::upload::resume`]) |
//! | `--compressed` | `Accept-Encoding: deflate, gzip, br, zstd` |
//! | `--tr-encoding` | `Connection: TE` (with the value of a `-H` `Connection` before it, which is left out) and `TE: gzip`, unless `-H` names `TE` |
//! | `--etag-compare FILE` | `If-None-Match` with the file's tag, after the `-H` headers ([`super::file_meta`]) |
//! | `--http1.0` | HTTP/1.0 requests |

use base64::Engine as _;
use bytes::Bytes;
use clap::ArgMatches;
use http::header::{
    ACCEPT, ACCEPT_ENCODING, CONNECTION, CONTENT_TYPE, HeaderName, HeaderValue, IF_NONE_MATCH,
    REFERER, TE, USER_AGENT,
};
use http::{Uri, Version};

use super::args::{CurlArgs, DataArg, HeaderAction, HeaderArg};
use super::data::{UNRESERVED, read_data, url_encode_piece};
use super::decode::ACCEPT_ENCODING as COMPRESSED;
use super::exit::CurlError;
use super::fail_mode;
use super::file_meta;
use super::form::{self, FormArg};
use super::method;
use super::request::{Payload, RequestTemplate};
use super::sigv4;
use super::upload::UploadSource;

/// What curl mode's requests are made from.
#[derive(Debug, Clone)]
pub(crate) struct Composed {
    /// What every request starts from.
    pub(crate) template: RequestTemplate,
    /// `-G`: the data to add to every URL's query.
    pub(crate) query: Option<String>,
    /// With `-T`: what an upload's requests are made from, its body left empty (see
    /// [`upload_template`](Self::upload_template)); `template` then serves the URLs that
    /// upload nothing.
    pub(crate) upload: Option<RequestTemplate>,
    /// `-u`: the `Authorization` value (none with `--digest`, which answers a challenge).
    pub(crate) user: Option<HeaderValue>,
    /// `-u`'s user and password, as given.
    pub(crate) given_user: Option<(String, String)>,
    /// `--oauth2-bearer` was given.
    pub(crate) bearer: bool,
    /// `--digest`, `--anyauth` or `--ntlm` without `--oauth2-bearer` or `--aws-sigv4`: how a
    /// challenge is answered (`Digest`, `Any` or `Ntlm`); requests wait for one (NTLM's first
    /// request draws it with the negotiate message).
    pub(crate) challenged: Option<pool::AuthScheme>,
    /// `-e URL;auto`: set `Referer` to the previous URL after a redirect.
    pub(crate) auto_referer: bool,
    /// `--aws-sigv4`: requests are signed (no `-u` Basic or Digest then).
    pub(crate) sigv4: Option<sigv4::Setup>,
    /// `-r`: the `Range` value.
    pub(crate) range: Option<HeaderValue>,
    /// Whether the body is request data (`-d`, `--json`, `--data-urlencode`, ...), which curl
    /// sends with an HTTP/1 head and counts in `%{size_request}`; `-F` and `-T` bodies follow
    /// the head and are not counted.
    pub(crate) inline_data: bool,
    /// The request kind the flags settled on, which a `-T` upload (a PUT) cannot go with,
    /// and the refusal that ends the run at the group's first transfer, if any.
    pub(crate) chosen: method::Chosen,
    /// What curl warns about while reading the arguments (`-F`'s unknown modifiers), each
    /// printed after `Warning: ` once the transfers start.
    pub(crate) warnings: Vec<String>,
    /// Why the `-F` form could not be made (a part's file, its encoder): the first transfer
    /// fails with it and no other starts, as in curl.
    pub(crate) form_refusal: Option<CurlError>,
}

/// Assembles curl mode's requests from the command line.
///
/// # Errors
///
/// Exit 26 when a data or upload file cannot be read; exit 2 for a malformed `-F`, `-A`, `-e`
/// or `-r` value. (A form that cannot be made is [`Composed::form_refusal`].)
pub(crate) fn compose(args: &CurlArgs, matches: &ArgMatches) -> Result<Composed, CurlError> {
    if args.transfer.remote_header_name && (args.include || args.head) {
        // curl's rule: the head would go into a file the head has not named yet.
        return Err(CurlError::usage(
            "showing headers and --remote-header-name cannot be combined",
            None,
        ));
    }
    fail_mode::check(matches)?;
    let data = args.data_in_order(matches);
    let forms = forms_in_order(args, matches);
    let send = &args.send;
    let mut query = None;
    let mut inline_data = false;
    let mut warnings = Vec::new();
    let mut form_refusal = None;
    let payload = if !forms.is_empty() {
        let escape = match send.form_escape {
            true => form::Escape::Backslash,
            false => form::Escape::Percent,
        };
        match form::build(&forms, escape, form_type(&args.request.headers).as_deref()) {
            Ok(multipart) => {
                warnings.extend(multipart.warnings);
                Payload::Data {
                    body: multipart.body,
                    content_type: Some(header_value("-F", &multipart.content_type)?),
                }
            }
            // A part's file that cannot be read, an encoder curl does not know: curl finds them
            // as the first transfer starts, which fails (with its `-w` line) and ends the run.
            Err(error) if !error.is_usage() => {
                form_refusal = Some(error);
                Payload::None
            }
            Err(error) => return Err(error),
        }
    } else if data.is_empty() {
        Payload::None
    } else if send.get {
        query = Some(String::from_utf8_lossy(&read_data(&data)?).into_owned());
        Payload::None
    } else {
        inline_data = true;
        Payload::Data {
            body: read_data(&data)?,
            content_type: Some(HeaderValue::from_static(
                "application/x-www-form-urlencoded",
            )),
        }
    };
    let chosen = method::choose(matches, send.get, args.head, !data.is_empty())?;
    let query = join_queries(url_query(&send.url_query)?, query);
    let postfields = match &payload {
        Payload::Data { body, .. } if inline_data => Some(body.clone()),
        _ => None,
    };
    let mut defaults: Vec<(HeaderName, HeaderValue)> = Vec::new();
    // curl appends --etag-compare's header to the -H list.
    let mut request = args.request.clone();
    if send.tr_encoding {
        defaults.extend(transfer_coding(&mut request.headers)?);
    }
    if send.compressed {
        defaults.push((ACCEPT_ENCODING, COMPRESSED));
    }
    let (referer, auto_referer) = match send.referer.as_deref() {
        Some(text) => match text.strip_suffix(";auto") {
            Some(url) => (url, true),
            None => (text, false),
        },
        None => ("", false),
    };
    if !referer.is_empty() {
        defaults.push((REFERER, header_value("-e", referer)?));
    }
    if let Some(file) = &args.transfer.etag_compare {
        let saving = args.transfer.etag_save.is_some();
        request.headers.push(HeaderArg {
            name: IF_NONE_MATCH,
            spelling: "If-None-Match".to_owned(),
            action: HeaderAction::Set(file_meta::etag_to_compare(file, saving)?),
        });
    }
    let json = data.iter().any(|d| matches!(d, DataArg::Json(_)));
    let mut template = match forms.is_empty() {
        true => finish_template(args, &request, payload, &defaults, json)?,
        // curl sends a `-H Content-Type` of a form in the form's own place, boundary added
        // (`form_type`), not among the `-H` headers. (It still signs it as given.)
        false => {
            let mut form_request = request.clone();
            form_request.headers.retain(|h| h.name != CONTENT_TYPE);
            finish_template(args, &form_request, payload, &defaults, json)?
        }
    };
    if defaults.iter().any(|(name, _)| name == TE) {
        template.spell("TE");
    }
    // `-C N` and `-r` on a POST shape what it sends, as on a `-T` upload. (`-C -` resumes from
    // the output file; curl 7.88 does that for a POST's data too, which poolcurl does not.)
    let resume_at = send.continue_at.as_deref().filter(|at| *at != "-");
    let posts = inline_data || !forms.is_empty();
    if posts && (resume_at.is_some() || send.range.is_some()) {
        template =
            template.with_posted_range(!forms.is_empty(), resume_at, send.range.as_deref())?;
    }
    // Built as every other request is, with an empty body in its place: each transfer puts
    // its own `-T` upload in (`Composed::upload_template`).
    let upload = (!send.upload_file.is_empty())
        .then(|| {
            finish_template(
                args,
                &request,
                Payload::Upload(Bytes::new()),
                &defaults,
                json,
            )
        })
        .transpose()?;
    let split = |user: &str| {
        let (name, password) = user.split_once(':').unwrap_or((user, ""));
        (name.to_owned(), password.to_owned())
    };
    let sigv4 = send.aws_sigv4.as_deref().map(|arg| sigv4::Setup {
        sigv4: sigv4::SigV4::parse(arg),
        headers: signed_lines(&request.headers, json),
        data: postfields,
    });
    let given_user = send.user.as_deref().map(split);
    let challenge = send.digest || send.anyauth || send.ntlm;
    let (user, challenged) = match (&send.oauth2_bearer, challenge) {
        // curl signs instead of any other authentication.
        _ if sigv4.is_some() => (None, None),
        (Some(token), _) => (
            Some(header_value("--oauth2-bearer", &format!("Bearer {token}"))?),
            None,
        ),
        (None, true) => {
            // The three flags override each other: one is set.
            let scheme = if send.ntlm {
                pool::AuthScheme::Ntlm
            } else if send.anyauth {
                pool::AuthScheme::Any
            } else {
                pool::AuthScheme::Digest
            };
            (None, Some(scheme))
        }
        (None, false) => (
            given_user
                .as_ref()
                .map(|(name, password)| basic(name, password)),
            None,
        ),
    };
    let range = send
        .range
        .as_deref()
        .map(|r| header_value("-r", &format!("bytes={r}")))
        .transpose()?;
    Ok(Composed {
        template,
        query,
        upload,
        chosen,
        user,
        given_user,
        bearer: send.oauth2_bearer.is_some(),
        challenged,
        auto_referer,
        sigv4,
        range,
        inline_data,
        warnings,
        form_refusal,
    })
}

/// The template for `payload`: the `-H` list (`request`, with `--etag-compare`'s header), the
/// default headers, `--request-target`, `-A`, `--json`'s implied headers and curl mode's
/// version.
fn finish_template(
    args: &CurlArgs,
    request: &super::args::RequestArgs,
    payload: Payload,
    defaults: &[(HeaderName, HeaderValue)],
    json: bool,
) -> Result<RequestTemplate, CurlError> {
    let send = &args.send;
    let mut template = RequestTemplate::with_payload(request, args.head, payload, defaults);
    if let Some(text) = &send.request_target {
        let target = text.parse::<pool::RequestTarget>().map_err(|_| {
            CurlError::new(
                2,
                format!(
                    "option --request-target: {text:?} cannot be sent: poolcurl sends * or a \
                     target that starts with /"
                ),
            )
        })?;
        template.set_target(target);
    }
    if let Some(agent) = &send.user_agent {
        let value = (!agent.is_empty())
            .then(|| header_value("-A", agent))
            .transpose()?;
        template.override_default(&USER_AGENT, value);
    }
    if json {
        let json = HeaderValue::from_static("application/json");
        template.add_implied(&[(CONTENT_TYPE, json.clone()), (ACCEPT, json)]);
    }
    let version = if args.net.http1_0 {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    template.curl_mode(version);
    Ok(template)
}

/// The type a `-F` form is sent as when `-H` names one: the first `-H Content-Type`'s value,
/// empty for `-H 'Content-Type:'`, as curl's MIME code reads it (which also makes the parts
/// `attachment`s unless the type is `multipart/form-data`).
fn form_type(headers: &[HeaderArg]) -> Option<String> {
    headers
        .iter()
        .find(|h| h.name == CONTENT_TYPE)
        .map(|h| match &h.action {
            HeaderAction::Set(value) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
            HeaderAction::Remove => String::new(),
        })
}

/// `--tr-encoding`'s headers, as curl adds them: `Connection: TE` and `TE: gzip`, unless `-H`
/// names `TE` (then the user handles it all). A `-H` `Connection` is merged into curl's
/// (`Connection: close, TE`) and left out of `headers`; an empty one (`-H 'Connection:'`)
/// leaves `TE` alone.
fn transfer_coding(
    headers: &mut Vec<HeaderArg>,
) -> Result<Vec<(HeaderName, HeaderValue)>, CurlError> {
    if headers.iter().any(|h| h.name == TE) {
        return Ok(Vec::new());
    }
    let custom = headers
        .iter()
        .find(|h| h.name == CONNECTION)
        .and_then(|h| match &h.action {
            HeaderAction::Set(value) => Some(value.as_bytes().to_vec()),
            HeaderAction::Remove => None,
        })
        .filter(|value| !value.is_empty());
    headers.retain(|h| h.name != CONNECTION);
    let connection = match custom {
        Some(mut value) => {
            value.extend_from_slice(b", TE");
            HeaderValue::from_bytes(&value)
                .map_err(|_| CurlError::new(2, "option -H: the Connection value cannot be sent"))?
        }
        None => HeaderValue::from_static("TE"),
    };
    Ok(vec![
        (CONNECTION, connection),
        (TE, HeaderValue::from_static("gzip")),
    ])
}

/// The `-H` lines `--aws-sigv4` signs: each `-H` argument, then `--json`'s `Content-Type` and
/// `Accept` unless `-H` names them (curl adds those two to its `-H` list).
fn signed_lines(headers: &[HeaderArg], json: bool) -> Vec<String> {
    let mut lines = sigv4::canonical_lines(headers);
    if json {
        for name in [CONTENT_TYPE, ACCEPT] {
            if !headers.iter().any(|h| h.name == name) {
                lines.push(format!("{name}:application/json"));
            }
        }
    }
    lines
}

impl Composed {
    /// The URL a transfer requests: with `-G`'s query added and the name of the file it uploads
    /// (`upload`, `-T`'s; not stdin's) appended to a path ending in `/`, percent-encoded as
    /// curl encodes it.
    pub(crate) fn target_url(&self, url: &str, upload: Option<&str>) -> String {
        let mut url = url.to_owned();
        let name = upload
            .filter(|file| *file != "-" && *file != ".")
            .map(|file| file.rsplit(['/', '\\']).next().unwrap_or(file));
        if let Some(name) = name {
            // The path, between the authority and a query or fragment, as curl's URL API
            // splits it: one that ends in `/` (or is empty) gets the file's name.
            let authority = url.find("://").map_or(0, |i| i + 3);
            let path_start = url[authority..]
                .find(['/', '?', '#'])
                .map_or(url.len(), |i| authority + i);
            let path_end = url[path_start..]
                .find(['?', '#'])
                .map_or(url.len(), |i| path_start + i);
            let path = &url[path_start..path_end];
            // As `curl_easy_escape` writes it.
            let escaped = percent_encoding::utf8_percent_encode(name, UNRESERVED).to_string();
            if path.is_empty() {
                url.insert_str(path_start, &format!("/{escaped}"));
            } else if path.ends_with('/') {
                url.insert_str(path_end, &escaped);
            }
        }
        if let Some(query) = &self.query {
            let (base, fragment) = match url.split_once('#') {
                Some((base, fragment)) => (base.to_owned(), Some(fragment.to_owned())),
                None => (url.clone(), None),
            };
            // As curl's URL API appends a query: after the URL's own query and a `&` (unless
            // that query is empty or already ends in one); an empty result leaves no `?`.
            let (path, own) = base.split_once('?').unwrap_or((base.as_str(), ""));
            let joined = match own {
                "" => query.clone(),
                own if own.ends_with('&') => format!("{own}{query}"),
                own => format!("{own}&{query}"),
            };
            url = match joined.is_empty() {
                true => path.to_owned(),
                false => format!("{path}?{joined}"),
            };
            if let Some(fragment) = fragment {
                url.push('#');
                url.push_str(&fragment);
            }
        }
        url
    }

    /// The template of a transfer that uploads `source`: the upload template with the body in
    /// (and the `Content-Range` `-C`/`-r` made of it).
    pub(crate) fn upload_template(
        &self,
        source: UploadSource,
        content_range: Option<HeaderValue>,
    ) -> RequestTemplate {
        // `compose` makes the upload template whenever the group has a `-T`, and only a `-T`
        // gives a transfer something to upload.
        let proto = self
            .upload
            .as_ref()
            .expect("a group with a -T upload has its upload template");
        proto.with_upload(source, content_range)
    }

    /// The `Authorization` for a request to `uri` whose URL carried `credentials`: `-u` wins.
    /// With `--digest` there is none until a challenge is answered.
    pub(crate) fn authorization(
        &self,
        credentials: Option<&(String, String)>,
    ) -> Option<HeaderValue> {
        if self.challenged.is_some() {
            return None;
        }
        self.user
            .clone()
            .or_else(|| credentials.map(|(user, password)| basic(user, password)))
    }

    /// What `-v` says of the `Authorization` [`authorization`](Self::authorization) gives for
    /// the URL's `credentials`, as curl says it: `Server auth using Basic with user 'NAME'`.
    pub(crate) fn auth_note(&self, credentials: Option<&(String, String)>) -> Option<String> {
        if self.challenged.is_some() {
            return None;
        }
        // curl names the user its connection has, whichever scheme goes: `-u`'s, else the
        // URL's or `.netrc`'s, else none (a bearer needs no user).
        let user = self
            .given_user
            .as_ref()
            .or(credentials)
            .map(|(user, _)| user.as_str());
        let (scheme, user) = match self.bearer {
            true => ("Bearer", user.unwrap_or_default()),
            false => ("Basic", user?),
        };
        Some(format!("Server auth using {scheme} with user '{user}'"))
    }

    /// With `--ntlm`, the user and password the first request of a URL negotiates as (`-u`'s,
    /// else the URL's `credentials`); `None` otherwise.
    pub(crate) fn ntlm_user<'a>(
        &'a self,
        credentials: Option<&'a (String, String)>,
    ) -> Option<(&'a str, &'a str)> {
        (self.challenged == Some(pool::AuthScheme::Ntlm))
            .then(|| self.challenge_credentials(credentials))
            .flatten()
    }

    /// Whether `-u` says who the user is, so that neither the URL nor a `.netrc` does. Only
    /// `-u`, as in curl: `--oauth2-bearer` and `--aws-sigv4` still read a `.netrc` (the bearer
    /// goes, and `-v` names the entry's user; a signature takes the entry's key).
    pub(crate) fn names_user(&self) -> bool {
        self.given_user.is_some()
    }

    /// With `--digest`, `--anyauth` or `--ntlm`, the user and password a challenge is answered
    /// with: `-u`'s, else the URL's `credentials`; `None` without such a flag or a user.
    pub(crate) fn challenge_credentials<'a>(
        &'a self,
        credentials: Option<&'a (String, String)>,
    ) -> Option<(&'a str, &'a str)> {
        self.challenged?;
        let given = self.given_user.as_ref().or(credentials)?;
        Some((given.0.as_str(), given.1.as_str()))
    }
}

/// The `--url-query` pieces joined with `&`: each encoded as a `--data-urlencode` piece, or
/// taken as given after a leading `+`.
fn url_query(pieces: &[String]) -> Result<Option<String>, CurlError> {
    let mut encoded = Vec::with_capacity(pieces.len());
    for piece in pieces {
        encoded.push(match piece.strip_prefix('+') {
            Some(verbatim) => verbatim.to_owned(),
            None => url_encode_piece(piece, "--url-query")?,
        });
    }
    Ok((!encoded.is_empty()).then(|| encoded.join("&")))
}

/// What goes into every URL's query: `-G`'s data, or else `--url-query`'s pieces (curl uses
/// the pieces only when `-G` has no data), with the hex digits of their percent-escapes in
/// lower case: curl 7.88 appends them to the URL's query through its URL API, which writes
/// `%2f` for `%2F` (the URL's own query stays as written).
fn join_queries(pieces: Option<String>, get_data: Option<String>) -> Option<String> {
    get_data.or(pieces).map(|query| lower_escapes(&query))
}

/// `text` with the two hex digits after each `%` in lower case (a `%` without two hex digits
/// after it stays as it is).
fn lower_escapes(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    let mut at = 0;
    while at + 2 < out.len() {
        if out[at] == b'%' && out[at + 1].is_ascii_hexdigit() && out[at + 2].is_ascii_hexdigit() {
            out[at + 1].make_ascii_lowercase();
            out[at + 2].make_ascii_lowercase();
            at += 3;
        } else {
            at += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII hex digits changed")
}

/// `Basic base64(user:password)`.
pub(crate) fn basic(user: &str, password: &str) -> HeaderValue {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    HeaderValue::from_str(&format!("Basic {token}")).expect("base64 is a valid header value")
}

/// A header value from a flag's text.
fn header_value(flag: &str, text: &str) -> Result<HeaderValue, CurlError> {
    HeaderValue::from_str(text)
        .map_err(|_| CurlError::new(2, format!("option {flag}: invalid header value {text:?}")))
}

/// `-F` and `--form-string` arguments in command-line order.
fn forms_in_order(args: &CurlArgs, matches: &ArgMatches) -> Vec<FormArg> {
    let mut parts: Vec<(usize, FormArg)> = Vec::new();
    let mut collect = |id: &str, values: &[String], make: fn(String) -> FormArg| {
        let indices: Vec<usize> = matches
            .indices_of(id)
            .map(Iterator::collect)
            .unwrap_or_default();
        for (i, value) in values.iter().enumerate() {
            let index = indices.get(i).copied().unwrap_or(usize::MAX);
            parts.push((index, make(value.clone())));
        }
    };
    collect("form", &args.send.form, FormArg::Form);
    collect("form_string", &args.send.form_string, FormArg::Literal);
    parts.sort_by_key(|(index, _)| *index);
    parts.into_iter().map(|(_, part)| part).collect()
}

/// The `Referer` after a redirect from `from`, with `-e ";auto"`.
pub(crate) fn auto_referer(from: &Uri) -> Option<HeaderValue> {
    HeaderValue::from_str(&from.to_string()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn composed(argv: &[&str]) -> Composed {
        let (args, matches) = crate::curl::args::parse_test_args(argv);
        compose(&args, &matches).unwrap()
    }

    fn headers(c: &Composed, url: &str) -> Vec<(String, String)> {
        let uri: Uri = url.parse().unwrap();
        let request = c
            .template
            .build_for(
                &uri,
                &c.template.first_hop(),
                &super::super::request::PerRequest::default(),
            )
            .unwrap();
        request
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn tr_encoding_merges_connection_unless_te_is_given() {
        let sent = |argv: &[&str]| {
            headers(&composed(argv), "http://a/")
                .into_iter()
                .skip(3)
                .map(|(n, v)| format!("{n}: {v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            sent(&["--tr-encoding", "-H", "Connection: close", "http://a/"]),
            ["connection: close, TE", "te: gzip"]
        );
        assert_eq!(
            sent(&["--tr-encoding", "-H", "Connection:", "http://a/"]),
            ["connection: TE", "te: gzip"]
        );
        assert_eq!(
            sent(&[
                "--tr-encoding",
                "-H",
                "te: x",
                "-H",
                "Connection: a",
                "http://a/"
            ]),
            ["te: x", "connection: a"]
        );
    }

    #[test]
    fn agent_json_and_compressed() {
        let c = composed(&["-A", "agent/1", "--compressed", "--json", "{}", "http://a/"]);
        let h = headers(&c, "http://a/");
        let names: Vec<&str> = h.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "host",
                "user-agent",
                "accept-encoding",
                "content-type",
                "accept",
                "content-length"
            ]
        );
        assert_eq!(h[1].1, "agent/1");
        assert_eq!(h[4].1, "application/json");
        let c = composed(&["-A", "", "http://a/"]);
        assert!(
            headers(&c, "http://a/")
                .iter()
                .all(|(n, _)| n != "user-agent")
        );
    }

    #[test]
    fn get_moves_data_into_the_query_and_upload_names_the_file() {
        let c = composed(&["-G", "-d", "a=1", "--data-urlencode", "b=x y", "http://a/p"]);
        assert_eq!(c.target_url("http://a/p", None), "http://a/p?a=1&b=x+y");
        assert_eq!(
            c.target_url("http://a/p?z=0#f", None),
            "http://a/p?z=0&a=1&b=x+y#f"
        );
        assert_eq!(c.template.first_hop().method, http::Method::GET);
        // As curl's URL API joins them: no `&` after an empty query or one that ends in `&`,
        // and no `?` for an empty result.
        assert_eq!(c.target_url("http://a/p?", None), "http://a/p?a=1&b=x+y");
        assert_eq!(
            c.target_url("http://a/p?z&", None),
            "http://a/p?z&a=1&b=x+y"
        );
        let empty = composed(&["-G", "-d", "", "http://a/p"]);
        assert_eq!(empty.target_url("http://a/p", None), "http://a/p");
        assert_eq!(empty.target_url("http://a/p?#f", None), "http://a/p#f");
        assert_eq!(empty.target_url("http://a/p?z", None), "http://a/p?z&");
        // What is appended gets curl's lower-case escapes; the URL's own query keeps its own.
        // -G's data leaves --url-query out, as in curl.
        let c = composed(&["-G", "-d", "a=%2F%G1%", "--url-query", "é", "http://a/"]);
        assert_eq!(
            c.target_url("http://a/?z=%2F", None),
            "http://a/?z=%2F&a=%2f%G1%"
        );
        let c = composed(&["--url-query", "é", "--url-query", "+x=%2F", "http://a/"]);
        assert_eq!(c.target_url("http://a/", None), "http://a/?%c3%a9&x=%2f");
        let c = composed(&["http://a/"]);
        let f = Some("up/f.txt");
        assert_eq!(c.target_url("http://a/dir/", f), "http://a/dir/f.txt");
        assert_eq!(c.target_url("http://a", f), "http://a/f.txt");
        assert_eq!(c.target_url("http://a/x", f), "http://a/x");
        // The path ends before a query or a fragment.
        assert_eq!(c.target_url("http://a/d/?q=1/", f), "http://a/d/f.txt?q=1/");
        assert_eq!(c.target_url("http://a?q", f), "http://a/f.txt?q");
        assert_eq!(c.target_url("http://a/d?q=/", f), "http://a/d?q=/");
        assert_eq!(c.target_url("http://a/", Some("-")), "http://a/");
        assert_eq!(
            c.target_url("http://a/", Some("a b+é")),
            "http://a/a%20b%2B%C3%A9"
        );
    }

    #[test]
    fn user_wins_over_url_credentials() {
        let c = composed(&["-u", "a:b", "http://a/"]);
        let url = ("x".to_owned(), "y".to_owned());
        assert_eq!(c.authorization(Some(&url)).unwrap(), "Basic YTpi");
        let c = composed(&["http://a/"]);
        assert_eq!(c.authorization(Some(&url)).unwrap(), "Basic eDp5");
        assert_eq!(c.authorization(None), None);
        let c = composed(&["-u", "alone", "http://a/"]);
        assert_eq!(c.authorization(None).unwrap(), "Basic YWxvbmU6");
    }

    #[test]
    fn verbose_names_the_scheme_and_user_as_curl_does() {
        let url = ("x".to_owned(), "y".to_owned());
        let note = |argv: &[&str], credentials| composed(argv).auth_note(credentials);
        assert_eq!(
            note(&["-u", "a:b", "http://a/"], Some(&url)).unwrap(),
            "Server auth using Basic with user 'a'"
        );
        assert_eq!(
            note(&["http://a/"], Some(&url)).unwrap(),
            "Server auth using Basic with user 'x'"
        );
        assert_eq!(note(&["http://a/"], None), None);
        assert_eq!(
            note(&["--oauth2-bearer", "t", "http://a/"], None).unwrap(),
            "Server auth using Bearer with user ''"
        );
        assert_eq!(
            note(&["--oauth2-bearer", "t", "-u", "u:p", "http://a/"], None).unwrap(),
            "Server auth using Bearer with user 'u'"
        );
        // The URL's (or a `.netrc`'s) user is named beside a bearer too.
        assert_eq!(
            note(&["--oauth2-bearer", "t", "http://a/"], Some(&url)).unwrap(),
            "Server auth using Bearer with user 'x'"
        );
        // Digest says so when it answers the challenge; a signature says so itself.
        assert_eq!(note(&["--digest", "-u", "a:b", "http://a/"], None), None);
    }
}
