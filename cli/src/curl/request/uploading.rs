//! The template of a transfer that uploads: a whole file or a stream put in place of the
//! upload template's empty body ([`super::super::upload`]).

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;
use http::header::CONTENT_LENGTH;

use super::super::exit::CurlError;
use super::super::upload::{Streamed, UploadSource, resume};
use super::{Entry, Hop, RequestTemplate, Source};

impl RequestTemplate {
    /// This template (made with an upload payload) sending `source` instead of its body: a
    /// whole file with its `Content-Length`, a stream chunked, without one; `content_range`
    /// is what `-C`/`-r` made of the upload ([`super::super::upload::resume`]).
    pub(crate) fn with_upload(
        &self,
        source: UploadSource,
        content_range: Option<HeaderValue>,
    ) -> RequestTemplate {
        let mut template = self.clone();
        template.uploads = true;
        template.content_range = content_range;
        let is_length = |e: &Entry| e.name == CONTENT_LENGTH && e.source == Source::Data;
        match source {
            UploadSource::Whole(body) => {
                let length = HeaderValue::from(body.len());
                for entry in template.headers.iter_mut().filter(|e| is_length(e)) {
                    entry.value = length.clone();
                }
                template.body = body;
                template.stream = None;
            }
            UploadSource::Stream(stream) => {
                template.headers.retain(|e| !is_length(e));
                template.body = Bytes::new();
                template.stream = Some(stream);
            }
        }
        template
    }

    /// This template (a POST of `-d`'s data or of a `-F` form) with `-C N` and `-r` applied to
    /// what it sends, as curl 7.88 applies them to a POST (`Curl_http_resume`,
    /// `Curl_http_range`): the data goes from byte N with a `Content-Range`, as a `-T`
    /// upload's would ([`resume`]); a form goes whole, with neither header. Either way no
    /// `Range` asks for part of the response.
    ///
    /// # Errors
    ///
    /// Exit 18 when `-C` starts at or past the data's end.
    pub(crate) fn with_posted_range(
        &self,
        form: bool,
        continue_at: Option<&str>,
        range: Option<&str>,
    ) -> Result<RequestTemplate, CurlError> {
        let (body, content_range) = if form {
            (self.body.clone(), None)
        } else {
            resume(self.body.clone(), continue_at, range)?
        };
        Ok(self.with_upload(UploadSource::Whole(body), content_range))
    }

    /// Whether `-C` and `-r` shape what this template sends (a transfer's `-T` upload, a POST
    /// [`with_posted_range`](Self::with_posted_range)), not the response.
    pub(crate) fn uploads(&self) -> bool {
        self.uploads
    }

    /// The streamed upload `hop` sends, if it sends one.
    pub(crate) fn stream_for(&self, hop: &Hop) -> Option<&Arc<Streamed>> {
        self.stream.as_ref().filter(|_| hop.send_body)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Payload;
    use super::*;

    #[test]
    fn a_whole_file_takes_the_upload_templates_place_with_its_length_and_range() {
        let (args, _) = crate::curl::args::parse_test_args(&["-H", "X-A: 1", "http://a.test/"]);
        let proto =
            RequestTemplate::with_payload(&args.request, false, Payload::Upload(Bytes::new()), &[]);
        let range = HeaderValue::from_static("bytes 2-4/5");
        let t = proto.with_upload(
            UploadSource::Whole(Bytes::from_static(b"hello")),
            Some(range),
        );
        let hop = t.first_hop();
        assert_eq!(hop.method, http::Method::PUT);
        assert!(t.uploads() && t.stream_for(&hop).is_none());
        let request = t.build(&"http://a.test/".parse().unwrap(), &hop).unwrap();
        let headers = request.headers();
        assert_eq!(headers["content-length"], "5");
        assert_eq!(headers["content-range"], "bytes 2-4/5");
        assert!(!headers.contains_key("transfer-encoding"));
        assert!(!proto.uploads(), "the prototype stays as it was");
    }

    #[test]
    fn a_posts_range_shapes_its_data_and_leaves_a_form_whole() {
        let (args, _) = crate::curl::args::parse_test_args(&["http://a.test/"]);
        let data = |body: &'static [u8]| Payload::Data {
            body: Bytes::from_static(body),
            content_type: None,
        };
        let uri = "http://a.test/".parse().unwrap();
        let post = RequestTemplate::with_payload(&args.request, false, data(b"abcde"), &[]);
        let t = post.with_posted_range(false, Some("2"), None).unwrap();
        let request = t.build(&uri, &t.first_hop()).unwrap();
        assert_eq!(request.method(), http::Method::POST);
        assert_eq!(request.headers()["content-length"], "3");
        assert_eq!(request.headers()["content-range"], "bytes 2-4/5");
        assert_eq!(t.body_for(&t.first_hop()), "cde");
        assert!(t.uploads());
        let t = post.with_posted_range(false, None, Some("0-1")).unwrap();
        let request = t.build(&uri, &t.first_hop()).unwrap();
        assert_eq!(request.headers()["content-range"], "bytes 0-1/5");
        assert_eq!(t.body_for(&t.first_hop()), "abcde");
        let error = post.with_posted_range(false, Some("5"), None).unwrap_err();
        assert_eq!(error.code(), 18);
        let form = post
            .with_posted_range(true, Some("2"), Some("0-1"))
            .unwrap();
        let request = form.build(&uri, &form.first_hop()).unwrap();
        assert!(!request.headers().contains_key("content-range"));
        assert_eq!(request.headers()["content-length"], "5");
        assert!(form.uploads());
    }
}
