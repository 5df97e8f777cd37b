//! `Expect: 100-continue` on HTTP/1, and the 1xx responses a caller asks to see.
//!
//! A request whose body should wait for the server's go-ahead carries `Expect: 100-continue`,
//! set by the caller or added here on the HTTP/1 path for a request marked [`ExpectContinue`]
//! (curl's rule: the header belongs to HTTP/1.1 only, and whether a connection speaks it is
//! known only once the pool has picked one). [`hold`] then puts the body behind a
//! [`BodyGate`] and installs the `hyper::ext::on_informational` hook that opens it on
//! `100 Continue`; the body's own timer opens it when the wait
//! ([`Builder::expect_continue_timeout`](crate::Builder::expect_continue_timeout)) runs out.
//! When the final response comes first, the exchange guard refuses the body: it is never sent,
//! and the connection retires once the response is read (see `pool_h1`'s `gate` module).
//!
//! [`hold`] also puts behind a gate, open from the start, any other body a response may come
//! before the end of (one not known to fit in a single piece, see `gated`): `h1` stops it, or
//! lets the caller wait for the rest.
//!
//! hyper keeps one informational hook per request, so the pool's would replace a caller's.
//! [`on_informational`] is the pool's way to see 1xx responses; it shares the hook. A request
//! that set its own hyper hook keeps it and is not held back.
//!
//! What this module does not do: HTTP/2 (the h2 path sends the body at once and ignores the
//! mark: an HTTP/2 server reads the body or resets the stream), or re-send a request refused
//! with `417 Expectation Failed` (that is the response; the caller decides).

use std::time::Duration;

use http::header::{EXPECT, HeaderValue};
use http::{Request, StatusCode, Version};
use http_body::Body as HttpBody;
use pool_core::sync::Arc;
use pool_h1::BodyGate;

use crate::body::RequestBody;
use crate::client::Client;

use super::gated::{GatedBody, Held, Wait, may_outlast_its_head};

/// How long a held-back body waits for `100 Continue` unless the builder says otherwise: one
/// second, curl's default and Go's `DefaultTransport`'s.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(1);

/// A request extension: on an HTTP/1.1 connection, send this request with `Expect:
/// 100-continue` and hold its body back for the server's go-ahead (as curl does for an upload);
/// on HTTP/2 or HTTP/1.0, send it as it is.
///
/// The header is added only when the request has no `Expect` header of its own and its body is
/// not empty. A request that sets the header itself is held back on HTTP/1.1 without this mark.
///
/// ```no_run
/// # async fn upload(client: pool::Client, bytes: bytes::Bytes) -> Result<(), Box<dyn std::error::Error>> {
/// let mut put = http::Request::put("https://example.com/bucket/key")
///     .body(pool::RequestBody::full(bytes))?;
/// put.extensions_mut().insert(pool::ExpectContinue);
/// let response = client.request(put).await?;
/// if response.extensions().get::<pool::BodyWithheld>().is_some() {
///     // Refused from the head (413, 401, 417...): none of the body was sent.
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpectContinue;

/// A response extension: this response came before `100 Continue`, so the request's body was
/// never sent (see [`Builder::expect_continue_timeout`](crate::Builder::expect_continue_timeout)).
/// The server saw the head only; the body can go again, elsewhere (a redirect) or after a fix
/// (credentials), without the server having read any of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyWithheld;

/// Asks to see the 1xx responses (`100 Continue`, `103 Early Hints`) an HTTP/1 server sends
/// before `request`'s response, in order, each as a `Response<()>` with its status, version and
/// headers. Use it in place of `hyper::ext::on_informational`, whose one hook per request the
/// pool needs for `Expect: 100-continue`. HTTP/2's 1xx responses are not passed on.
pub fn on_informational<B>(
    request: &mut Request<B>,
    callback: impl Fn(&http::Response<()>) + Send + Sync + 'static,
) {
    request
        .extensions_mut()
        .insert(InformationalHook(std::sync::Arc::new(callback)));
}

/// What [`on_informational`] calls with each 1xx response.
type Callback = dyn Fn(&http::Response<()>) + Send + Sync;

/// The caller's callback from [`on_informational`].
#[derive(Clone)]
struct InformationalHook(std::sync::Arc<Callback>);

/// Prepares `request` for the HTTP/1 connection it is about to go on: the `Expect` header for
/// a request marked [`ExpectContinue`], the informational hook, and the body behind a gate
/// when it has to wait, or may have to stop (see `gated`). Returns the gate, which the
/// exchange hands to the response's guard.
///
/// A request with no extensions and an empty body (almost every `GET`) returns at once.
#[inline]
pub(super) fn hold(client: &Client, request: &mut Request<RequestBody>) -> Option<Arc<BodyGate>> {
    if request.extensions().is_empty() && request.body().is_end_stream() {
        return None;
    }
    hold_slow(client, request)
}

#[cold]
#[inline(never)]
fn hold_slow(client: &Client, request: &mut Request<RequestBody>) -> Option<Arc<BodyGate>> {
    if let Some(Held(gate)) = request.extensions().get::<Held>() {
        return Some(gate.clone());
    }
    let http11 = request.version() == Version::HTTP_11;
    let has_body = !request.body().is_end_stream();
    if http11
        && has_body
        && request.extensions().get::<ExpectContinue>().is_some()
        && !request.headers().contains_key(EXPECT)
    {
        request
            .headers_mut()
            .insert(EXPECT, HeaderValue::from_static("100-continue"));
    }
    let expects = request
        .headers()
        .get(EXPECT)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let wait = client
        .pool
        .expect_continue
        .filter(|_| http11 && has_body && expects);
    let user = request.extensions().get::<InformationalHook>().cloned();
    // A request carrying its own hyper hook keeps it: no hook of the pool's, so no wait.
    let hooked = (wait.is_some() || user.is_some()) && !has_own_hook(request);
    let wait = wait.filter(|_| hooked);
    let gate = match wait {
        Some(_) => Some(Arc::new(BodyGate::waiting())),
        None if has_body && may_outlast_its_head(request.body()) => {
            Some(Arc::new(BodyGate::flowing()))
        }
        None => None,
    };
    if hooked {
        let opens = gate.clone();
        hyper::ext::on_informational(request, move |response| {
            if response.status() == StatusCode::CONTINUE {
                if let Some(gate) = &opens {
                    // Nothing for a gate that was open from the start.
                    gate.open();
                }
            }
            if let Some(InformationalHook(callback)) = &user {
                let mut copy = http::Response::new(());
                *copy.status_mut() = response.status();
                *copy.version_mut() = response.version();
                *copy.headers_mut() = response.headers().clone();
                callback(&copy);
            }
        });
    }
    let gate = gate?;
    let wait = wait.map(|wait| Wait {
        wait,
        timer: client.timer().clone(),
    });
    let body = std::mem::take(request.body_mut());
    *request.body_mut() = RequestBody::new(GatedBody::new(body, gate.clone(), wait));
    request.extensions_mut().insert(Held(gate.clone()));
    Some(gate)
}

/// Whether the caller set a `hyper::ext::on_informational` hook of their own: installing one
/// on a copy of the request's extensions adds nothing then (the type is hyper's, and private).
fn has_own_hook(request: &Request<RequestBody>) -> bool {
    let mut probe = Request::new(());
    *probe.extensions_mut() = request.extensions().clone();
    let before = probe.extensions().len();
    hyper::ext::on_informational(&mut probe, |_| {});
    probe.extensions().len() == before
}
