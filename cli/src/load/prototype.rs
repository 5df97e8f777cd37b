//! The requests of a run, built once per URL and copied for every request.
//!
//! A load run sends the same request to each URL again and again. Curl mode's
//! [`RequestTemplate`] builds one header by header through `http`'s builder, which grows the
//! header map entry by entry and moves the request's parts at each step; here it builds each
//! URL's request once, and a request of the run is a copy of those parts (the header map is
//! cloned whole, the URI and header values share their bytes).
//!
//! A request that can only go over HTTP/1.1 is built from a template that sends `Host`
//! ([`RequestTemplate::send_host`]), as curl mode's requests are: the pool adds one only when
//! it is missing, and adding it to each copy would grow the copy's header map (a clone has no
//! room to spare) on every request. Over HTTP/2 the pool would move it into `:authority`
//! instead, so a request that may go over HTTP/2 has none.
//!
//! Each partition copies from prototypes of its own ([`Prototype::own_copy`]): a copy shares
//! the prototype's bytes through one reference count per buffer, and a count that the threads
//! of two partitions both change on every request moves its cache line between their cores
//! each time (the pool's own state is kept per partition for the same reason).

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, Version};
use http_body_util::Full;

use crate::curl::request::RequestTemplate;

/// One URL's request, as every request of the run to that URL sends it.
#[derive(Debug)]
pub(crate) struct Prototype {
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
    body: Bytes,
    /// `-H 'Host:'`: the request is marked `OmitHost`, so the pool adds no `Host` either
    /// (the template's other extensions, such as `-H` names' spellings, are curl mode's and
    /// stay behind: a run sends names in lower case).
    omit_host: bool,
}

impl Prototype {
    /// The request `template` sends to `uri` (as the first hop of a transfer).
    ///
    /// # Errors
    ///
    /// The template's message when it cannot build the request.
    pub(crate) fn of(template: &RequestTemplate, uri: &Uri) -> Result<Prototype, String> {
        let hop = template.first_hop();
        let request = template
            .build(uri, &hop)
            .map_err(|e| e.message().to_owned())?;
        let (parts, _) = request.into_parts();
        Ok(Prototype {
            method: parts.method,
            uri: parts.uri,
            version: parts.version,
            headers: parts.headers,
            body: template.body_for(&hop),
            omit_host: parts.extensions.get::<pool::OmitHost>().is_some(),
        })
    }

    /// The same request in buffers of its own: nothing of it shares a reference count with
    /// `self` (see the module docs).
    pub(crate) fn own_copy(&self) -> Prototype {
        let uri = Uri::try_from(self.uri.to_string()).unwrap_or_else(|_| self.uri.clone());
        let mut headers = HeaderMap::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            let name =
                HeaderName::from_bytes(name.as_str().as_bytes()).unwrap_or_else(|_| name.clone());
            let mut copied =
                HeaderValue::from_bytes(value.as_bytes()).unwrap_or_else(|_| value.clone());
            copied.set_sensitive(value.is_sensitive());
            headers.append(name, copied);
        }
        Prototype {
            method: self.method.clone(),
            uri,
            version: self.version,
            headers,
            body: Bytes::copy_from_slice(&self.body),
            omit_host: self.omit_host,
        }
    }

    /// A request equal to the one [`of`](Self::of) built.
    pub(crate) fn request(&self) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(self.body.clone()));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.version_mut() = self.version;
        *request.headers_mut() = self.headers.clone();
        // Only when asked: an extension allocates the request's extension map.
        if self.omit_host {
            request.extensions_mut().insert(pool::OmitHost);
        }
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_copy_is_the_request_the_template_builds() {
        let argv = [
            "-H",
            "X-One: 1",
            "-H",
            "Accept: text/plain",
            "-d",
            "abc",
            "http://a/",
        ];
        let (args, matches) = crate::curl::args::parse_test_args(&argv);
        let data = args.request.data_in_order(&matches);
        let template = RequestTemplate::new(&args.request, false, &data).unwrap();
        let uri: Uri = "http://example.test:8080/path?q=1".parse().unwrap();
        let built = template.build(&uri, &template.first_hop()).unwrap();
        let copied = Prototype::of(&template, &uri).unwrap().request();
        assert_eq!(copied.method(), built.method());
        assert_eq!(copied.method(), Method::POST);
        assert_eq!(copied.uri(), built.uri());
        assert_eq!(copied.version(), built.version());
        assert_eq!(copied.headers(), built.headers());
        assert_eq!(copied.headers()["x-one"], "1");
        let built = built.into_body().collect().await.unwrap().to_bytes();
        let copied = copied.into_body().collect().await.unwrap().to_bytes();
        assert_eq!((copied, built), ("abc".into(), "abc".into()));
    }

    #[tokio::test]
    async fn an_own_copy_is_equal_and_shares_no_buffer() {
        let argv = ["-H", "X-Custom-Name: v", "-d", "abc", "http://a/"];
        let (args, matches) = crate::curl::args::parse_test_args(&argv);
        let data = args.request.data_in_order(&matches);
        let template = RequestTemplate::new(&args.request, false, &data).unwrap();
        let uri: Uri = "http://example.test:8080/path?q=1".parse().unwrap();
        let mut prototype = Prototype::of(&template, &uri).unwrap();
        let mut secret = HeaderValue::from_static("Bearer t");
        secret.set_sensitive(true);
        prototype
            .headers
            .insert(http::header::AUTHORIZATION, secret);
        let copy = prototype.own_copy();
        let (a, b) = (prototype.request(), copy.request());
        assert_eq!(
            (a.method(), a.uri(), a.version()),
            (b.method(), b.uri(), b.version())
        );
        assert_eq!(a.headers(), b.headers());
        let sensitive = |r: &Request<Full<Bytes>>| {
            r.headers()
                .iter()
                .filter(|(_, v)| v.is_sensitive())
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(sensitive(&b), [http::header::AUTHORIZATION]);
        let (a_path, b_path) = (a.uri().path(), b.uri().path());
        assert_eq!(a_path, b_path);
        assert_ne!(a_path.as_ptr(), b_path.as_ptr(), "the URI is not shared");
        for ((_, x), (_, y)) in a.headers().iter().zip(b.headers()) {
            assert_ne!(
                x.as_bytes().as_ptr(),
                y.as_bytes().as_ptr(),
                "values are not shared"
            );
        }
        let a = a.into_body().collect().await.unwrap().to_bytes();
        let b = b.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(a, b);
        assert_ne!(a.as_ptr(), b.as_ptr(), "the body is not shared");
    }

    #[test]
    fn a_request_bound_for_http1_carries_host_unless_the_user_removed_it() {
        use http::header::HOST;
        let uri: Uri = "http://example.test:8080/path".parse().unwrap();
        let prototype = |argv: &[&str], http1_only: bool| {
            let (args, matches) = crate::curl::args::parse_test_args(argv);
            let data = args.request.data_in_order(&matches);
            let mut template = RequestTemplate::new(&args.request, false, &data).unwrap();
            if http1_only {
                template.send_host();
            }
            Prototype::of(&template, &uri).unwrap().request()
        };
        let request = prototype(&["http://a/"], true);
        assert_eq!(request.headers()[HOST], "example.test:8080");
        assert!(
            prototype(&["http://a/"], false)
                .headers()
                .get(HOST)
                .is_none()
        );
        let removed = prototype(&["-H", "Host:", "http://a/"], true);
        assert!(removed.headers().get(HOST).is_none());
        // ... and the pool adds none either.
        assert!(removed.extensions().get::<pool::OmitHost>().is_some());
        assert!(request.extensions().get::<pool::OmitHost>().is_none());
        let set = prototype(&["-H", "Host: other.test", "http://a/"], true);
        assert_eq!(set.headers().get_all(HOST).iter().count(), 1);
        assert_eq!(set.headers()[HOST], "other.test");
    }
}
