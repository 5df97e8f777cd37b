//! The transparent re-send: when a request goes round the dispatch loop again.
//!
//! An exchange that ends with a proof that the server did not process the request reports
//! [`Again`]; [`next`] decides. It re-sends only what the [`RetryPolicy`] allows, within its
//! budget (which HTTP/1's keep-alive race does not spend: see [`Resends::next`]), and only
//! when the request can be sent again: hyper handed it back, or the pool kept a
//! [`ReplayCopy`] (an empty or single-chunk body; never a streaming one). From a request's
//! second counted re-send on, the loop first waits as the policy paces it. Everything else
//! fails with an error that says whether the request is safe to send again
//! ([`Error::is_retryable`]). The rules and their RFCs are in the [`retry`](crate::retry)
//! module's docs.

use std::time::Duration;

use http::{Extensions, HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, Version};
use pool_core::{Protocol, ResendReason};

use crate::body::RequestBody;
use crate::client::Client;
use crate::error::Error;
use crate::retry::RetryPolicy;

use super::Served;

/// An exchange ended without a response, and the server provably did not process the request
/// (or, for [`ResendReason::ClosedBeforeResponse`], no byte of a response arrived).
pub(super) struct Again {
    pub(super) reason: ResendReason,
    pub(super) error: hyper::Error,
    /// The connection that failed the request, and whether it had served a request before.
    pub(super) served: Served,
    /// The request, if hyper handed it back.
    pub(super) request: Option<Request<RequestBody>>,
    /// Whether the connection had shown it was being served before it failed: the `unsent`
    /// and `closed_before_response` proofs only hold for such a connection. Mostly that it had
    /// taken a request before (`served.reused`). For `closed_before_response` on HTTP/2 it is
    /// that the server had sent something on the connection (its SETTINGS at least), the same
    /// for every stream of it: the server took the connection and began HTTP/2 on it, so its
    /// loss is the connection's end (a restart closing it, say), not the origin refusing it.
    /// Taking `reused` there would decide by the order in which streams sent at once were
    /// dispatched: on a new connection lost under sixteen, fifteen would go again and the
    /// first would fail.
    pub(super) served_before: bool,
    /// An `enhance_your_calm` refusal that lowered the connection's stream cap: the pool had
    /// opened more streams than the server took (`pool_h2`'s `calm.rs`), so the re-send is not
    /// counted (see [`Resends::next`]).
    pub(super) cap_lowered: bool,
}

/// Everything needed to build the request again after hyper consumed it. Cloning the parts
/// shares their bytes (`Uri`, header values and a single-chunk body are reference-counted), so
/// keeping a copy allocates only for a non-empty header map or extensions. An empty header map
/// or extension set is not copied at all (`None`): every request pays for its copy, and a
/// clone and drop of an empty map is still code the request path would otherwise not run.
///
/// The headers are kept as their lines, not as a `HeaderMap`: a map's clone allocates twice
/// (its index table and its entries) and copies the table, where the lines take one
/// allocation; the map is built again from them only for a re-send, which is rare. Nearly
/// every real request has headers (`User-Agent`, `Accept`, credentials), so this is on the
/// path they all take.
pub(super) struct ReplayCopy {
    method: Method,
    uri: Uri,
    version: Version,
    headers: Option<Box<[(HeaderName, HeaderValue)]>>,
    extensions: Option<Extensions>,
    body: RequestBody,
}

impl ReplayCopy {
    /// A copy of `request` if `policy` re-sends consumed requests and the body can be replayed.
    pub(super) fn keep(request: &Request<RequestBody>, policy: &RetryPolicy) -> Option<ReplayCopy> {
        if !policy.keeps_copies() {
            return None;
        }
        let body = request.body().try_clone()?;
        Some(ReplayCopy {
            method: request.method().clone(),
            uri: request.uri().clone(),
            version: request.version(),
            headers: (!request.headers().is_empty()).then(|| lines(request.headers())),
            extensions: (!request.extensions().is_empty()).then(|| request.extensions().clone()),
            body,
        })
    }

    /// The request again (the copy stays for a later re-send).
    fn make(&self) -> Request<RequestBody> {
        let body = self
            .body
            .try_clone()
            .expect("a kept body is always replayable");
        let mut request = Request::new(body);
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.version_mut() = self.version;
        if let Some(lines) = &self.headers {
            let headers = request.headers_mut();
            headers.reserve(lines.len());
            for (name, value) in lines {
                headers.append(name.clone(), value.clone());
            }
        }
        if let Some(extensions) = &self.extensions {
            *request.extensions_mut() = extensions.clone();
        }
        request
    }
}

/// The lines of `headers` in the map's order (each name's values together, as hyper writes
/// them), in one allocation.
fn lines(headers: &HeaderMap) -> Box<[(HeaderName, HeaderValue)]> {
    let mut lines = Vec::with_capacity(headers.len());
    lines.extend(
        headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    lines.into_boxed_slice()
}

/// Whether repeating `request` is safe by its semantics: an idempotent method (RFC 9110
/// §9.2.2) or an `Idempotency-Key` header, as Go's `Transport` decides.
pub(super) fn is_idempotent(request: &Request<RequestBody>) -> bool {
    matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    ) || request.headers().contains_key("idempotency-key")
        || request.headers().contains_key("x-idempotency-key")
}

/// What the request's loop knows across its attempts.
pub(super) struct Resends<'a> {
    pub(super) policy: RetryPolicy,
    pub(super) copy: Option<ReplayCopy>,
    pub(super) idempotent: bool,
    /// Re-sends so far, the event's attempt number.
    pub(super) done: u32,
    /// Re-sends counted against the policy's budget (see `next`).
    pub(super) counted: u32,
    /// Re-sends after a refusal that lowered a calm cap, not counted against the budget but
    /// bounded by the same number (see `next`).
    pub(super) uncounted_calm: u32,
    pub(super) client: &'a Client,
}

impl Resends<'_> {
    /// Decides what comes of `again`: the request to send next, with how long to wait before
    /// sending it (the policy's pace), or the error to fail with. Cold: kept out of the
    /// request's own code so the path every request runs stays short.
    #[cold]
    #[inline(never)]
    pub(super) fn next(
        &mut self,
        again: Again,
    ) -> Result<(Request<RequestBody>, Option<Duration>), Error> {
        let Again {
            reason,
            error,
            served,
            request,
            served_before,
            cap_lowered,
        } = again;
        let reused = served.reused;
        // Closing before any byte of the response, or a reset asking for calm, proves nothing
        // about processing; repeating is safe only for requests that are idempotent.
        let unproven = matches!(
            reason,
            ResendReason::ClosedBeforeResponse | ResendReason::EnhanceYourCalm
        );
        let repeatable = !unproven || (served_before && self.idempotent);
        // A fresh connection that cannot take its first request says something about the
        // origin, not about a stale connection: fail rather than dial again. GOAWAY and
        // REFUSED_STREAM are proofs whatever the connection's age.
        let stale = served_before
            || matches!(
                reason,
                ResendReason::GoAway | ResendReason::RefusedStream | ResendReason::EnhanceYourCalm
            );
        // After HTTP/1's keep-alive race the re-send is free: the race closed a connection
        // that had delivered a whole response, so such re-sends end with the stale
        // connections (`RetryPolicy`'s docs). So is one after an `ENHANCE_YOUR_CALM` that
        // lowered the connection's cap: the pool had opened too many streams, and backs off.
        // One request has at most as many such as its budget. Other HTTP/2 re-sends are
        // always counted.
        let free = (reused && served.record.info().protocol() == Protocol::Http1)
            || (cap_lowered && self.policy.has_budget(self.uncounted_calm));
        let spent = if free { 0 } else { self.counted };
        let fail = |served: Served| {
            let error = Error::request(error);
            served.fail(match (repeatable, unproven) {
                (false, _) => error,
                (true, false) => error.not_processed(),
                (true, true) => error.idempotent_unanswered(),
            })
        };
        if !repeatable || !stale || !self.policy.allows(reason) || !self.policy.has_budget(spent) {
            return Err(fail(served));
        }
        let next = match request {
            Some(request) => request,
            None => match &self.copy {
                Some(copy) => copy.make(),
                None => return Err(fail(served)),
            },
        };
        let record = served.record;
        self.done += 1;
        self.counted += u32::from(!free);
        self.uncounted_calm += u32::from(cap_lowered && free);
        let wait = if free {
            None
        } else {
            self.policy.wait_before(self.counted)
        };
        let shared = &self.client.pool.shared;
        shared.count_resend(reason);
        tracing::debug!(connection = %record.info().id(), %reason, attempt = self.done, ?wait, "re-sending a request the server did not process");
        if let Some(listener) = &shared.listener {
            pool_core::events::notify("request_resent", || {
                listener.request_resent(record.info(), reason, self.done)
            });
        }
        Ok((next, wait))
    }
}
