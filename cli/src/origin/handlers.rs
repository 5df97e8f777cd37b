//! The local origin's routes.
//!
//! | path | response |
//! |------|----------|
//! | `/` | 200, a short text body |
//! | `/bytes/N` | 200, `N` bytes (`x`), streamed in 64 KiB frames; N up to 1 GiB |
//! | `/delay/MS` | 200 after `MS` milliseconds (up to 10 minutes), a short text body |
//! | `/status/CODE` | `CODE` (200..=599), a short text body (none for 204 and 304) |
//! | `/close` | 200 with `Connection: close` over HTTP/1.1: the server closes after it |
//! | anything else | 404 |
//!
//! Every route answers any method and reads the request body to its end first (discarding it),
//! so an HTTP/1.1 connection stays reusable after a request with data. `HEAD` gets the head a
//! `GET` would, with its `Content-Length`, and no body, over either protocol. Over HTTP/2,
//! `/close` answers like `/` (HTTP/2 has no per-response close; `Connection` is not allowed
//! there).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Response, StatusCode, Version};
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::BodyExt;

/// The body of `/`.
const HELLO: &[u8] = b"hello from the poolcurl local origin\n";

/// The largest `/bytes/N`.
const MAX_BYTES: u64 = 1 << 30;

/// The longest `/delay/MS`.
const MAX_DELAY_MS: u64 = 600_000;

/// The frame `/bytes/N` is cut from.
static CHUNK: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// A response body: `remaining` bytes cut from `chunk`, one frame per chunk.
#[derive(Debug)]
pub(crate) struct OriginBody {
    /// What each frame is cut from.
    chunk: Bytes,
    /// Bytes not yet sent.
    remaining: u64,
}

impl OriginBody {
    /// The whole of `bytes`.
    fn full(bytes: Bytes) -> OriginBody {
        OriginBody {
            remaining: bytes.len() as u64,
            chunk: bytes,
        }
    }

    /// `len` filler bytes.
    fn filler(len: u64) -> OriginBody {
        OriginBody {
            chunk: Bytes::from_static(&CHUNK),
            remaining: len,
        }
    }

    /// No body.
    fn empty() -> OriginBody {
        OriginBody::full(Bytes::new())
    }
}

impl http_body::Body for OriginBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.remaining == 0 {
            return Poll::Ready(None);
        }
        let len = usize::try_from(this.remaining)
            .unwrap_or(usize::MAX)
            .min(this.chunk.len());
        this.remaining -= len as u64;
        Poll::Ready(Some(Ok(Frame::data(this.chunk.slice(..len)))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// Answers one request.
///
/// # Errors
///
/// Never; the signature is what hyper's `service_fn` wants.
pub(crate) async fn handle<B>(request: Request<B>) -> Result<Response<OriginBody>, Infallible>
where
    B: http_body::Body + Unpin,
{
    let path = request.uri().path().to_owned();
    let http1 = request.version() < Version::HTTP_2;
    let head = request.method() == Method::HEAD;
    // Read the request body to its end so the connection stays usable.
    let mut body = request.into_body();
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
    let response = route(&path, http1).await;
    Ok(if head {
        without_body(response)
    } else {
        response
    })
}

/// `response` as the answer to a `HEAD`: the length its body has, and no body. hyper leaves
/// the body out of an HTTP/1.1 `HEAD` response itself, but over HTTP/2 it sent the body's
/// DATA frames after the head, and clients reset the stream (curl exits 92, poolcurl 56).
fn without_body(mut response: Response<OriginBody>) -> Response<OriginBody> {
    let bodiless = matches!(response.status().as_u16(), 204 | 304);
    if let (false, Some(len)) = (bodiless, response.body().size_hint().exact()) {
        response
            .headers_mut()
            .insert(CONTENT_LENGTH, HeaderValue::from(len));
    }
    *response.body_mut() = OriginBody::empty();
    response
}

/// The response for `path`.
async fn route(path: &str, http1: bool) -> Response<OriginBody> {
    let mut segments = path.trim_start_matches('/').splitn(2, '/');
    let first = segments.next().unwrap_or_default();
    let argument = segments.next();
    match (first, argument) {
        ("", None) => text(StatusCode::OK, Bytes::from_static(HELLO)),
        ("bytes", Some(n)) => match n.parse::<u64>() {
            Ok(n) if n <= MAX_BYTES => respond(StatusCode::OK, OriginBody::filler(n)),
            _ => bad_request("/bytes/N takes a byte count up to 1073741824"),
        },
        ("delay", Some(ms)) => match ms.parse::<u64>() {
            Ok(ms) if ms <= MAX_DELAY_MS => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text(StatusCode::OK, Bytes::from(format!("delayed {ms} ms\n")))
            }
            _ => bad_request("/delay/MS takes milliseconds up to 600000"),
        },
        ("status", Some(code)) => match code.parse::<u16>().map(StatusCode::from_u16) {
            Ok(Ok(status)) if (200..=599).contains(&status.as_u16()) => {
                if matches!(status.as_u16(), 204 | 304) {
                    respond(status, OriginBody::empty())
                } else {
                    text(status, Bytes::from(format!("{}\n", status.as_u16())))
                }
            }
            _ => bad_request("/status/CODE takes a status from 200 to 599"),
        },
        ("close", None) => {
            let mut response = text(StatusCode::OK, Bytes::from_static(b"closing\n"));
            if http1 {
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
        _ => text(StatusCode::NOT_FOUND, Bytes::from_static(b"not found\n")),
    }
}

fn respond(status: StatusCode, body: OriginBody) -> Response<OriginBody> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

fn text(status: StatusCode, body: Bytes) -> Response<OriginBody> {
    let mut response = respond(status, OriginBody::full(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn bad_request(message: &'static str) -> Response<OriginBody> {
    text(StatusCode::BAD_REQUEST, Bytes::from(format!("{message}\n")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Empty;

    async fn get(path: &str, version: Version) -> (u16, Option<String>, Bytes) {
        let request = Request::builder()
            .uri(path)
            .version(version)
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = handle(request).await.unwrap();
        let status = response.status().as_u16();
        let connection = response
            .headers()
            .get(CONNECTION)
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, connection, body)
    }

    /// `HEAD` over either protocol: the length a `GET` would get, and no body.
    #[tokio::test]
    async fn head_gets_the_length_and_no_body() {
        for version in [Version::HTTP_11, Version::HTTP_2] {
            for (path, length) in [("/", Some("37")), ("/bytes/70000", Some("70000"))] {
                let request = Request::head(path)
                    .version(version)
                    .body(Empty::<Bytes>::new())
                    .unwrap();
                let response = handle(request).await.unwrap();
                let header = response.headers().get(CONTENT_LENGTH);
                assert_eq!(header.map(|v| v.to_str().unwrap()), length, "{path}");
                assert!(response.body().is_end_stream(), "{path} over {version:?}");
            }
            let request = Request::head("/status/204").version(version);
            let response = handle(request.body(Empty::<Bytes>::new()).unwrap()).await;
            assert_eq!(response.unwrap().headers().get(CONTENT_LENGTH), None);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn routes_answer_as_documented() {
        let v1 = Version::HTTP_11;
        assert_eq!(get("/", v1).await.2, HELLO);
        let (status, _, body) = get("/bytes/100000", v1).await;
        assert_eq!((status, body.len()), (200, 100_000));
        assert!(body.iter().all(|b| *b == b'x'));
        assert_eq!(get("/bytes/0", v1).await.2.len(), 0);
        assert_eq!(get("/bytes/x", v1).await.0, 400);
        assert_eq!(get("/status/503", v1).await.0, 503);
        assert_eq!(get("/status/204", v1).await.2.len(), 0);
        assert_eq!(get("/status/99", v1).await.0, 400);
        assert_eq!(get("/close", v1).await.1.as_deref(), Some("close"));
        assert_eq!(get("/close", Version::HTTP_2).await.1, None);
        assert_eq!(get("/nope", v1).await.0, 404);
        // Paused time: the delay completes without waiting.
        let (status, _, body) = get("/delay/1500", v1).await;
        assert_eq!((status, &body[..]), (200, &b"delayed 1500 ms\n"[..]));
    }

    #[test]
    fn filler_bodies_have_an_exact_size() {
        let body = OriginBody::filler(70_000);
        assert_eq!(http_body::Body::size_hint(&body).exact(), Some(70_000));
    }
}
