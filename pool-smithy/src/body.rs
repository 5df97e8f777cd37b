//! Bodies across the boundary: `SdkBody` into the pool's `RequestBody`, the pool's response
//! `Body` into `SdkBody`.
//!
//! * An in-memory `SdkBody` (bytes, empty) becomes [`RequestBody::full`] /
//!   [`RequestBody::empty`] with the same `Bytes` (taken out by one poll, never copied): the
//!   pool's fast path, and a body hyper can hand back unsent for the pool's re-send.
//! * A streaming `SdkBody` is sent as a stream, never buffered.
//! * The response keeps hyper's body: `pool::Body` is wrapped, not collected, so the SDK reads
//!   the bytes as they arrive and the connection goes home when it reaches the end.

use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_types::body::SdkBody;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pool::RequestBody;

/// The pool's body for an `SdkBody`.
///
/// # Errors
///
/// An in-memory body that does not behave as one (never expected from the SDK's types).
pub(crate) fn request_body(mut body: SdkBody) -> Result<RequestBody, BoxError> {
    if body.is_streaming() || body.bytes().is_none() {
        return Ok(RequestBody::new(body));
    }
    // An in-memory body yields its one chunk (the same `Bytes`) on the first poll and is never
    // pending; an empty one ends at once.
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(&mut body).poll_frame(&mut cx) {
        Poll::Ready(None) => Ok(RequestBody::empty()),
        Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
            Ok(bytes) => Ok(RequestBody::full(bytes)),
            Err(_trailers) => Err("an in-memory SDK body yielded trailers".into()),
        },
        Poll::Ready(Some(Err(error))) => Err(error),
        Poll::Pending => Err("an in-memory SDK body was not ready".into()),
    }
}

/// The SDK's body for a pool response body.
pub(crate) fn response_body(body: pool::Body) -> SdkBody {
    SdkBody::from_body_1_x(SyncBody(Mutex::new(body)))
}

/// `SdkBody` requires `Sync` bodies; the pool's body is `Send` only (hyper's), and is only ever
/// polled through `&mut`. The mutex is never contended: polling uses `get_mut` (no locking),
/// and the `&self` queries lock an uncontended mutex.
struct SyncBody(Mutex<pool::Body>);

impl SyncBody {
    fn inner(self: Pin<&mut Self>) -> Pin<&mut pool::Body> {
        let body = Pin::into_inner(self)
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        Pin::new(body)
    }
}

impl HttpBody for SyncBody {
    type Data = Bytes;
    type Error = pool::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, pool::Error>>> {
        self.inner().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_memory_bodies_keep_their_bytes_and_streams_stay_streams() {
        let bytes = Bytes::from_static(b"payload");
        let body = request_body(SdkBody::from(bytes.clone())).expect("bytes");
        assert_eq!(body.size_hint().exact(), Some(7));
        assert!(format!("{body:?}").contains("Full(7 bytes)"), "{body:?}");

        let body = request_body(SdkBody::empty()).expect("empty");
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));

        let stream = SdkBody::from_body_1_x(http_body_util::Full::new(bytes));
        assert!(stream.is_streaming());
        let body = request_body(stream).expect("stream");
        assert_eq!(format!("{body:?}"), "RequestBody::Stream");
    }
}
