//! The template of a transfer that uploads: a whole file or a stream put in place of the
//! upload template's empty body ([`super::super::upload`]).

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;
use http::header::CONTENT_LENGTH;

use super::super::upload::{Streamed, UploadSource};
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

    /// Whether this is a transfer's `-T` upload (`-C` and `-r` apply to it, not to the
    /// response).
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
}
