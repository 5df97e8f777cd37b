//! One transfer: the request for a URL and, with `-L`, its redirects, each response traced
//! (`-v`), recorded (`-w`), its cookies stored, its head dumped (`-D`) and written (`-i`), its
//! body decoded (transfer codings, and content codings with `--compressed`) and written to the
//! sink.
//!
//! ```text
//! bounded_transfer (-m) ── transfer: URL credentials out (.netrc's in) ── loop: exchange
//!   exchange: per-request headers (auth, range, referer, cookies) ── send ── head
//!     ├─ Content-Length over --max-filesize: exit 63, the head's lines written, no body
//!     ├─ 417 to a body held for 100 Continue (none of it sent): the same request again
//!     │  without Expect, counted as a redirect, as curl does
//!     ├─ 3xx + -L: drain the body, next hop (redirect rules in super::redirect)
//!     ├─ >= 400 + -f: exit 22, no body written, the head with -i/-I (--fail-with-body:
//!     │  the body written too, then 22)
//!     ├─ -C / -r and no 206: exit 33
//!     ├─ 101 nobody asked for: the switched connection's bytes to the sink until it closes
//!     │  (nothing at all: exit 52; switched.rs)
//!     └─ head (-i/-I) and body (decoded) to the sink; a body of unannounced length stops
//!        at --max-filesize (exit 63); --limit-rate paces it, -Y/-y abort a slow one (28)
//! ```

mod alternative;
mod challenge;
mod credentials;
mod send;
mod switched;

use std::time::Duration;

use http::header::{HeaderValue, LOCATION};
use http::{Method, Uri};

use super::compose;
use super::exit::CurlError;
use super::output;
use super::pace::PaceArgs;
use super::progress::Progress;
use super::record::TransferRecord;
use super::redirect;
use super::request::{Hop, PerRequest, RequestTemplate};
use super::sink::Sink;
use super::url;
use super::{Session, lock};
use send::{AskedAndRefused, content_length};

/// What follows an exchange.
#[derive(Debug)]
enum Next {
    /// The transfer is complete.
    Done,
    /// `-L` follows a redirect to this URL, from this `Location` (its fragment, and whether
    /// it kept the URL's authority, are what only `%{url_effective}` shows).
    Redirect(Uri, HeaderValue),
    /// `--digest`: the same request again, with this `Authorization`.
    Authenticate(HeaderValue),
    /// `--proxy-digest`: the same request again, with this `Proxy-Authorization`.
    ProxyAuthenticate(HeaderValue),
    /// `417 Expectation Failed` to a request that waited for `100 Continue` (its body never
    /// went): the same request again without `Expect`, as curl sends it.
    WithoutExpect,
}

/// What one hop of a transfer sends: the transfer's template (the session's, or one with the
/// transfer's `-T` upload in it) and what this hop adds to it.
#[derive(Debug)]
struct HopState<'t> {
    /// What every request of the transfer is made from.
    template: &'t RequestTemplate,
    /// Credentials from the URL of this hop, or its host's `.netrc` entry.
    credentials: Option<(String, String)>,
    /// Whether `credentials` are the `.netrc` entry of this hop's own host: a redirect from
    /// another host does not drop them.
    own: bool,
    /// `-e ";auto"`: the URL the redirect came from.
    referer: Option<HeaderValue>,
    /// `--digest`: the answer to this URL's challenge, once there was one.
    digest: Option<HeaderValue>,
    /// `--proxy-digest`: the answer to the forward proxy's challenge, once there was one.
    proxy_digest: Option<HeaderValue>,
    /// The server refused `Expect: 100-continue` (`417`): this URL's requests go without it.
    no_expect: bool,
}

impl<'t> HopState<'t> {
    /// A first hop's state, or a redirect's.
    fn new(template: &'t RequestTemplate) -> HopState<'t> {
        HopState {
            template,
            credentials: None,
            own: false,
            referer: None,
            digest: None,
            proxy_digest: None,
            no_expect: false,
        }
    }
}

impl Session {
    /// One transfer, bounded by `-m`.
    pub(super) async fn bounded_transfer(
        &self,
        template: &RequestTemplate,
        url: &str,
        sink: &mut Sink,
        record: &mut TransferRecord,
        progress: &mut Progress,
    ) -> Result<(), CurlError> {
        let transfer = self.transfer(template, url, sink, record, progress);
        let limit = self.args.max_time.filter(|t| !t.is_zero());
        let result = match limit {
            None => transfer.await,
            Some(limit) => match tokio::time::timeout(limit, transfer).await {
                Ok(result) => result,
                // curl counts the body of the response being read, and its announced length.
                Err(_elapsed) => Err(CurlError::time_ran_out(
                    record.stage.stage(),
                    // The host a `-Z` transfer waits for another's connection to.
                    (self.args.transfer.parallel)
                        .then(|| send::Target::host_in(&record.url))
                        .as_deref(),
                    record.elapsed(),
                    (
                        record.size_download,
                        send::announced_length(&record.headers),
                    ),
                )),
            },
        };
        // What was written so far stays written, as with curl.
        sink.flush();
        progress.finish();
        result
    }

    /// One transfer: the request for `url` and, with `-L`, its redirects.
    async fn transfer(
        &self,
        template: &RequestTemplate,
        url: &str,
        sink: &mut Sink,
        record: &mut TransferRecord,
        progress: &mut Progress,
    ) -> Result<(), CurlError> {
        let parsed = url::parse_url_with(url, self.args.path_as_is)?;
        self.protocols
            .any
            .check(parsed.scheme_str().unwrap_or_default())?;
        let (mut uri, credentials) = url::take_credentials(&parsed);
        if credentials.is_some() && self.args.send.disallow_username_in_url {
            return Err(CurlError::new(
                67,
                "Option --disallow-username-in-url given but URL contains a username",
            ));
        }
        self.hsts_upgrade(&mut uri);
        // What each redirect is compared with for credentials and a custom `Host`.
        let first = uri.clone();
        let (credentials, own) = self.netrc_credentials(&uri, credentials)?;
        record.url = url::effective(&uri, &parsed, url::fragment(url.as_bytes()));
        if let Some(zoned) = super::zone::split(url) {
            // curl shows the zone it dials with.
            record.url = record.url.replacen(&zoned.host, &zoned.shown, 1);
        }
        // The URL whose `user:password@` `%{url_effective}` shows, as written.
        let mut shown = parsed.clone();
        let mut hop = template.first_hop();
        hop.trusted = self.args.location_trusted;
        let mut state = HopState {
            credentials,
            own,
            ..HopState::new(template)
        };
        loop {
            let next = self
                .exchange(&uri, &hop, &state, sink, record, progress)
                .await?;
            if !matches!(next, Next::Done) {
                progress.request_done();
            }
            match next {
                Next::Done => {
                    if let Some((stream, chunked)) = record.streamed.clone() {
                        // The response can come before the upload is done: wait for it.
                        stream.settled().await;
                        record.size_upload = stream.sent(chunked);
                    }
                    return Ok(());
                }
                Next::Authenticate(answer) => {
                    self.verbose
                        .info(&format!("Issue another request to this URL: '{uri}'"));
                    state.digest = Some(answer);
                }
                Next::ProxyAuthenticate(answer) => {
                    self.verbose
                        .info(&format!("Issue another request to this URL: '{uri}'"));
                    state.proxy_digest = Some(answer);
                }
                Next::WithoutExpect => {
                    // curl follows to the same URL, and counts it as a redirect.
                    record.num_redirects += 1;
                    self.verbose
                        .info(&format!("Issue another request to this URL: '{uri}'"));
                    state.no_expect = true;
                }
                Next::Redirect(next, location) => {
                    if let Err(error) =
                        redirect::check_limit(record.num_redirects, self.args.redirect_limit())
                    {
                        // curl keeps the URL it would have gone to for `%{redirect_url}`.
                        record.redirect_url = Some(redirect::shown_location(&next, &location));
                        return Err(error);
                    }
                    self.protocols
                        .check_redirect(next.scheme_str().unwrap_or_default())?;
                    record.num_redirects += 1;
                    record.redirect_time = record.elapsed();
                    if !self.args.location_trusted {
                        if let Some(note) = redirect::clear_auth_note(&uri, &next) {
                            self.verbose.info(&note);
                        }
                    }
                    self.verbose
                        .info(&format!("Issue another request to this URL: '{next}'"));
                    let keep_post = redirect::KeepPost {
                        on301: self.args.post301,
                        on302: self.args.post302,
                        on303: self.args.post303,
                    };
                    hop = redirect::next_hop(
                        record.status.unwrap_or_default(),
                        &hop,
                        &first,
                        &next,
                        keep_post,
                    );
                    let written = next;
                    let (next, credentials) = url::take_credentials(&written);
                    let credentials = credentials
                        .or(state.credentials)
                        .filter(|_| !hop.drops_credentials());
                    // The new host's own entry, if the file has one.
                    let (credentials, own) = self.netrc_credentials(&next, credentials)?;
                    state = HopState {
                        credentials,
                        own,
                        referer: self
                            .composed
                            .auto_referer
                            .then(|| compose::auto_referer(&uri))
                            .flatten(),
                        ..HopState::new(template)
                    };
                    uri = next;
                    self.hsts_upgrade(&mut uri);
                    // A path or query reference keeps the URL's credentials in curl's view.
                    if !url::keeps_authority(location.as_bytes()) {
                        shown = written;
                    }
                    let fragment = url::fragment(location.as_bytes());
                    record.url = url::effective(&uri, &shown, fragment);
                }
            }
        }
    }

    /// `--hsts`: `uri` over HTTPS when the cache holds its host, said as curl says it.
    fn hsts_upgrade(&self, uri: &mut Uri) {
        if let Some(upgraded) = self.hsts.as_ref().and_then(|hsts| hsts.upgrade(uri)) {
            self.verbose.info(&format!(
                "Switched from HTTP to HTTPS due to HSTS => {upgraded}"
            ));
            *uri = upgraded;
        }
    }

    /// The headers of this hop that the template does not hold.
    ///
    /// # Errors
    ///
    /// `--aws-sigv4`'s (exit 43 or 3) when the request cannot be signed.
    fn per_request(
        &self,
        uri: &Uri,
        hop: &Hop,
        state: &HopState<'_>,
        resume: Option<u64>,
    ) -> Result<PerRequest, CurlError> {
        let credentials = self.credentials(uri, hop, state)?;
        let range = match resume {
            Some(offset) if offset > 0 => HeaderValue::from_str(&format!("bytes={offset}-")).ok(),
            // An upload's `-r` is its `Content-Range` (the template's).
            _ if state.template.uploads() => None,
            _ => self.composed.range.clone(),
        };
        let with_strings = !state.template.overridden(&http::header::COOKIE);
        let cookie = self
            .cookies
            .as_ref()
            .and_then(|jar| jar.header_for(uri, with_strings));
        let (proxy_authorization, proxy_connection) =
            self.forward_proxy_headers(uri, state.proxy_digest.as_ref());
        Ok(PerRequest {
            proxy_authorization,
            proxy_connection,
            authorization: credentials.authorization,
            auth_note: credentials.note,
            signed_date: credentials.signed_date,
            range,
            referer: state.referer.clone(),
            cookie,
            alt_used: None,
            empty_length: false,
            no_expect: state.no_expect,
        })
    }

    /// `error`, refused after the response head came on `connection` (which closes), with
    /// `-v`'s last lines: its message and the close, as curl ends the trace.
    fn failing(&self, connection: Option<&pool::ConnectionHandle>, error: CurlError) -> CurlError {
        self.verbose.failed(None, connection, error.message());
        error
    }

    /// `-C`: the offset to resume at (`-` is the size of the output file so far).
    fn resume_offset(&self, sink: &Sink) -> Option<u64> {
        match self.args.send.continue_at.as_deref()? {
            "-" => Some(
                sink.path()
                    .and_then(|p| std::fs::metadata(p).ok())
                    .map_or(0, |m| m.len()),
            ),
            offset => offset.parse().ok(),
        }
    }

    /// One request and its response: the head is recorded and traced, then the response is
    /// followed (`-L`), refused (`-f`) or written to the sink.
    async fn exchange(
        &self,
        uri: &Uri,
        hop: &Hop,
        state: &HopState<'_>,
        sink: &mut Sink,
        record: &mut TransferRecord,
        progress: &mut Progress,
    ) -> Result<Next, CurlError> {
        let target = self.target_for(uri, sink)?;
        // `--digest` or `--proxy-digest`, before this URL's challenge: the request that draws
        // it carries no data, which curl does not send twice.
        let pending = self.pending_challenges(uri, hop, state);
        let probe = (pending.awaited() && hop.send_body).then(|| Hop {
            send_body: false,
            ..hop.clone()
        });
        let (answered_hop, hop) = (hop, probe.as_ref().unwrap_or(hop));
        // Read once: the request's `Range` and the check of a whole response both need it.
        // An upload's `-C` shaped what it sends, not what comes back.
        let resume = (!state.template.uploads())
            .then(|| self.resume_offset(sink))
            .flatten();
        progress.start(resume);
        let mut extra = self.per_request(uri, hop, state, resume)?;
        extra.empty_length = probe.is_some();
        extra.alt_used = target.alternative.as_ref().map(|a| a.used.clone());
        let ranged = extra.range.is_some();
        let sent = progress
            .during(self.send(state.template, uri, hop, &extra, &target, record))
            .await;
        self.write_tunnel_heads(record, sink)?;
        let (mut parts, mut body) = sent?;
        progress.sent(record.size_upload);
        progress.set_total(content_length(&parts));
        let head = output::response_head(&parts);
        record.size_header += head.len() as u64;
        if let Some(jar) = &self.cookies {
            jar.store_from(uri, &parts.headers);
        }
        if let Some(hsts) = &self.hsts {
            hsts.store_from(uri, &parts.headers);
        }
        let connection = record.connection.clone();
        let connection = connection.as_ref();
        let include = self.args.include || self.args.head;
        if self
            .max_filesize()
            .is_some_and(|max| content_length(&parts) > Some(max))
        {
            // curl refuses once it has read the length, with the head's lines written and the
            // blank line that ends it not; nothing of the body is read (dropping it closes the
            // connection), so no output file is created.
            self.write_head(sink, include, &head[..head.len() - 2])?;
            return Err(self.failing(connection, CurlError::file_too_large()));
        }
        let challenge = (parts.status, &parts.headers);
        if let Some(answered) =
            self.answer_challenge(&pending, challenge, (uri, answered_hop), state.template)
        {
            self.write_head(sink, include, &head)?;
            self.verbose.info(&answered.info);
            self.verbose.info("Ignoring the response-body");
            self.read_body(&mut body, &parts, &target, record, None, progress)
                .await?;
            self.verbose
                .done(connection, &target.host, body.closes_connection());
            return Ok(answered.next);
        }

        if parts.extensions.get::<AskedAndRefused>().is_some() {
            self.write_head(sink, include, &head)?;
            self.verbose.info("Ignoring the response-body");
            self.read_body(&mut body, &parts, &target, record, None, progress)
                .await?;
            // The head went without its body: the pool retires the connection.
            self.verbose
                .done(connection, &target.host, body.closes_connection());
            return Ok(Next::WithoutExpect);
        }

        // An empty `Location` is no redirect (curl ignores it), not one to this same URL; of
        // several, curl takes the first that is not empty.
        let location = parts
            .headers
            .get_all(LOCATION)
            .iter()
            .find(|value| !value.as_bytes().trim_ascii().is_empty())
            .filter(|_| redirect::is_followed(parts.status));
        if let Some(location) = location {
            let next = url::resolve_location(uri, location.as_bytes());
            if self.args.location || self.args.location_trusted {
                self.write_head(sink, include, &head)?;
                // Read the redirect's body to its end so the connection can serve the next hop.
                self.read_body(&mut body, &parts, &target, record, None, progress)
                    .await?;
                self.verbose
                    .done(connection, &target.host, body.closes_connection());
                return Ok(Next::Redirect(next?, location.clone()));
            }
            record.redirect_url = next.ok().map(|u| redirect::shown_location(&u, location));
        }

        // The response whose body is written may name the `-O -J` file.
        sink.name_from_response(&parts.headers);
        let status = parts.status.as_u16();
        if self.args.fail && !self.args.transfer.fail_with_body && status >= 400 {
            // Nothing of the body is written (dropping it closes the connection); the head is,
            // with -i or -I, as curl writes it before it looks at the status.
            self.write_head(sink, include, &head)?;
            if include {
                sink.finish()?;
            }
            return Err(self.failing(connection, CurlError::http_error(status)));
        }
        // Only a GET is held to it, as in curl (`-I -C N` takes a whole head).
        let resuming = self.args.send.continue_at.is_some() && hop.method == Method::GET;
        if resuming && status == 416 && resume.is_some_and(|offset| offset > 0) {
            // curl's reading of a 416 to `-C`: the file is presumably complete. Its body (an
            // error page) is not appended to it, and (without `-f`) the transfer is no failure.
            self.write_head(sink, include, &head)?;
            self.read_body(&mut body, &parts, &target, record, None, progress)
                .await?;
            self.verbose
                .done(connection, &target.host, body.closes_connection());
            sink.finish()?;
            return Ok(Next::Done);
        }
        if ranged && status == 200 && resuming {
            self.write_head(sink, false, &head)?;
            // curl's exception: a whole resource exactly as long as what `-C` already has is
            // the download complete, not a server that cannot resume.
            let length = content_length(&parts);
            if length.is_some() && length == resume {
                self.verbose.done(connection, &target.host, true);
                sink.finish()?;
                return Ok(Next::Done);
            }
            return Err(self.failing(connection, CurlError::range_ignored()));
        }
        self.write_head(sink, include, &head)?;
        let time_condition = state.template.time_condition();
        let body_comes = !self.args.head;
        if let Some(cond) =
            time_condition.filter(|c| body_comes && !ranged && !c.met_by(&parts.headers))
        {
            // curl's answer to a server that ignored the condition, when the body would start:
            // a 304 of its own, no body written and no file made (the connection is not
            // reused).
            let age = if cond.unmodified { "old" } else { "new" };
            self.verbose
                .info(&format!("The requested document is not {age} enough"));
            self.verbose.info("Simulate an HTTP 304 response");
            record.status = Some(http::StatusCode::NOT_MODIFIED);
            self.verbose.done(connection, &target.host, true);
            return Ok(Next::Done);
        }
        let switched = parts.status == http::StatusCode::SWITCHING_PROTOCOLS;
        if let Some(upgrade) = switched
            .then(|| parts.extensions.remove::<hyper::upgrade::OnUpgrade>())
            .flatten()
        {
            // `-I` reads nothing after the head: curl's empty reply, as for a server that
            // switched and closed.
            let upgrade = Some(upgrade).filter(|_| body_comes);
            self.read_switched(upgrade, &target, record, sink, progress)
                .await?;
            sink.finish()?;
            // curl says "left intact" of a switched connection (which the pool hands over),
            // unless the head said close.
            let closes = output::server_closes(&parts);
            self.verbose.done(connection, &target.host, closes);
            return Ok(Next::Done);
        }
        let output = if self.args.head {
            None
        } else {
            Some(&mut *sink)
        };
        self.read_body(&mut body, &parts, &target, record, output, progress)
            .await?;
        if status == 304 {
            // curl takes any 304 for an unmet condition: no empty file is made for it.
            sink.flush();
        } else {
            sink.finish()?;
        }
        self.upload_finished(record).await;
        self.verbose
            .done(connection, &target.host, body.closes_connection());
        if self.args.transfer.fail_with_body && status >= 400 {
            return Err(CurlError::http_error(status));
        }
        Ok(Next::Done)
    }

    /// The heads of the proxy's answers to the `CONNECT` of a tunnel the last request opened
    /// (or the proxy refused), as curl writes them before the response's head: counted in
    /// `%{size_header}`, and written to `-D` and, with `-i` or `-I`, the output, unless
    /// `--suppress-connect-headers`.
    fn write_tunnel_heads(
        &self,
        record: &mut TransferRecord,
        sink: &mut Sink,
    ) -> Result<(), CurlError> {
        let heads = std::mem::take(&mut record.tunnel_heads);
        if heads.is_empty() {
            return Ok(());
        }
        record.size_header += heads.len() as u64;
        if self.args.transfer.suppress_connect_headers {
            return Ok(());
        }
        self.write_head(sink, self.args.include || self.args.head, &heads)
    }

    /// Writes a response head to `-D` and, with `include`, to the output (see
    /// [`super::sink::write_head`]).
    fn write_head(&self, sink: &mut Sink, include: bool, head: &[u8]) -> Result<(), CurlError> {
        let mut dump = self.dump_header.as_ref().map(lock);
        super::sink::write_head(dump.as_deref_mut(), include.then_some(sink), head)
    }

    /// `--limit-rate`, `-Y` and `-y`.
    fn pace_args(&self) -> PaceArgs {
        let transfer = &self.args.transfer;
        PaceArgs {
            limit_rate: transfer.limit_rate,
            speed_limit: transfer.speed_limit,
            speed_time: transfer.speed_time.map(Duration::from_secs),
        }
    }

    /// `--max-filesize`, if set to a limit (0 is none).
    fn max_filesize(&self) -> Option<u64> {
        self.args.transfer.max_filesize.filter(|&max| max > 0)
    }

    /// Whether requests to `uri` speak HTTP/2 with prior knowledge.
    fn prior_knowledge(&self, uri: &Uri) -> bool {
        self.args.connect.http2_prior_knowledge
            && !self.args.net.http1_0
            && uri.scheme_str() == Some("http")
    }
}
