//! A template's request for one URL and hop, its headers in curl's order (see the parent
//! module's docs for the order): the defaults, the per-hop values of a [`PerRequest`] in
//! their places, the `-H` headers, the payload's.

use bytes::Bytes;
use http::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_RANGE, COOKIE, HOST, HeaderName, HeaderValue,
    IF_MODIFIED_SINCE, PROXY_AUTHORIZATION, RANGE, REFERER, TRANSFER_ENCODING,
};
use http::{Request, Uri};
use http_body_util::Full;

use super::{Entry, Hop, PerRequest, RequestTemplate, Source, host_value};
use crate::curl::exit::CurlError;

impl RequestTemplate {
    /// Builds the request for `uri` as `hop` says.
    ///
    /// # Errors
    ///
    /// Exit 3 if `http` refuses the URI (it was parsed by the same crate, so this does not
    /// happen in practice).
    pub(crate) fn build(&self, uri: &Uri, hop: &Hop) -> Result<Request<Full<Bytes>>, CurlError> {
        self.build_for(uri, hop, &PerRequest::default())
    }

    /// Builds the request for `uri` as `hop` says, with the per-request headers of `extra`.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub(crate) fn build_for(
        &self,
        uri: &Uri,
        hop: &Hop,
        extra: &PerRequest,
    ) -> Result<Request<Full<Bytes>>, CurlError> {
        let mut builder = Request::builder()
            .method(self.method_for(hop))
            .uri(super::super::url::wire_uri(uri).into_owned())
            .version(self.version);
        let credential = |name: &HeaderName| [AUTHORIZATION, COOKIE].contains(name);
        // Without the data, its headers go too; `--digest`'s first request keeps them but
        // its length, which is 0 there.
        let data_dropped =
            |e: &Entry| !hop.send_body && (!extra.empty_length || e.name == CONTENT_LENGTH);
        let dropped = |e: &Entry| {
            (e.source == Source::Data && data_dropped(e))
                || (e.source == Source::User && hop.cross_host && e.name == HOST)
                || (e.source == Source::User && hop.drops_credentials() && credential(&e.name))
        };
        let user_host = self.headers.iter().find(|e| e.name == HOST && !dropped(e));
        if self.host_first {
            if let Some(entry) = user_host {
                builder = builder.header(HOST, entry.value.clone());
            } else if !self.removed.contains(&HOST) {
                if let Some(host) = host_value(uri) {
                    builder = builder.header(HOST, host);
                }
            }
        }
        // The proxy's answer before the server's credentials, in curl's order.
        let content_range = self.content_range.clone().filter(|_| hop.send_body);
        let mut per_hop = [
            (PROXY_AUTHORIZATION, &extra.proxy_authorization),
            (AUTHORIZATION, &extra.authorization),
            (RANGE, &extra.range),
            // An upload's `-C`/`-r`, in the place curl gives a range.
            (CONTENT_RANGE, &content_range),
        ];
        // A `-H` of the proxy's header goes as well, later: curl lets only `--proxy-header`
        // replace its `Proxy-Authorization` (which curl mode then leaves out).
        let replaced = |name: &HeaderName| *name != PROXY_AUTHORIZATION && self.overridden(name);
        for (name, value) in &mut per_hop {
            if let Some(value) = value.as_ref().filter(|_| !replaced(name)) {
                builder = builder.header(name.clone(), value.clone());
            }
            if *name == AUTHORIZATION {
                if let Some((date, value)) = &extra.signed_date {
                    builder = builder.header(date.clone(), value.clone());
                }
            }
        }
        let condition = self
            .time_condition
            .as_ref()
            .map(|(_, name, value)| (name, value));
        // curl's order: `Alt-Used` (RFC 7838 §5) after `Referer`, before the cookies; a
        // streamed upload's `Transfer-Encoding` after `Referer` too (HTTP/2 leaves it out:
        // hyper removes connection-specific fields there).
        let alt_used = HeaderName::from_static("alt-used");
        let proxy_connection = HeaderName::from_static("proxy-connection");
        let chunked = HeaderValue::from_static("chunked");
        let late = [
            (&REFERER, extra.referer.as_ref()),
            (&proxy_connection, extra.proxy_connection.as_ref()),
            (&TRANSFER_ENCODING, self.stream_for(hop).map(|_| &chunked)),
            (&alt_used, extra.alt_used.as_ref()),
            (&COOKIE, extra.cookie.as_ref()),
            (
                condition.map_or(&IF_MODIFIED_SINCE, |(name, _)| name),
                condition.map(|(_, value)| value),
            ),
        ];
        // The engine's cookies go whatever `-H` says of `Cookie` (its own line follows), as
        // curl sends them; `extra.cookie` leaves the `-b` strings out then.
        let overridden = |n: &HeaderName| *n != COOKIE && self.overridden(n);
        let mut late_sent = false;
        for entry in &self.headers {
            if entry.source != Source::Default && !late_sent {
                builder = add_late(builder, &late, overridden);
                late_sent = true;
            }
            if dropped(entry) || (self.host_first && entry.name == HOST) {
                continue;
            }
            if entry.name == REFERER && extra.referer.is_some() {
                continue;
            }
            builder = builder.header(entry.name.clone(), entry.value.clone());
        }
        if !late_sent {
            builder = add_late(builder, &late, overridden);
        }
        if extra.empty_length && !self.overridden(&CONTENT_LENGTH) {
            builder = builder.header(CONTENT_LENGTH, HeaderValue::from_static("0"));
        }
        if let Some(target) = &self.target {
            builder = builder.extension(target.clone());
        }
        if user_host.is_none() && self.removed.contains(&HOST) {
            // `-H 'Host:'`: the pool adds none either (HTTP/2's `:authority` stays).
            builder = builder.extension(pool::OmitHost);
        }
        if let Some(spellings) = self.spellings.as_ref().filter(|_| self.host_first) {
            builder = builder.extension(spellings.clone());
        }
        builder
            .body(Full::new(self.body_for(hop)))
            .map_err(|_| CurlError::malformed_url())
    }

    /// Whether `-H` set or removed `name`, so curl mode's own header of that name is not sent.
    pub(crate) fn overridden(&self, name: &HeaderName) -> bool {
        self.user_sets(name) || self.user_removes(name)
    }
}

/// Adds the per-hop headers that go after the defaults (`Referer`, `Cookie`, `-z`'s).
fn add_late(
    mut builder: http::request::Builder,
    late: &[(&HeaderName, Option<&HeaderValue>)],
    overridden: impl Fn(&HeaderName) -> bool,
) -> http::request::Builder {
    for &(name, value) in late {
        if let Some(value) = value.filter(|_| !overridden(name)) {
            builder = builder.header(name.clone(), value.clone());
        }
    }
    builder
}
