//! Following one response to the end of its message.

use std::fmt;

use http::header::{CONNECTION, HeaderMap, HeaderValue};
use http::{Response, StatusCode, Version};
use hyper::body::Incoming;
use pool_core::CloseReason;
use pool_core::connection::{ConnectionRecord, QuotaCheck};
use pool_core::sync::Arc;

use crate::connection::H1Connection;
use crate::gate::BodyGate;
use crate::parking::{Parked, Returning};

/// What happens to the connection when the exchange ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disposition {
    /// Return it to its cell once hyper is ready for another request.
    Reuse,
    /// Retire it with this reason.
    Retire(CloseReason),
}

/// Holds an HTTP/1 connection while its response body is read, and decides at the end of the
/// exchange whether it goes home or is retired (see the crate's return policy).
///
/// The response body wrapper calls [`end_of_body`](Self::end_of_body) when hyper yields the end
/// of the body, and [`finish`](Self::finish) when the body is dropped.
///
/// # Drop behavior
///
/// Dropping the guard without either call retires the connection as
/// [`CloseReason::IncompleteH1Exchange`]: nothing proved the message boundary.
pub struct ExchangeGuard<B> {
    conn: Option<H1Connection<B>>,
    disposition: Disposition,
    // The gate of a request body this response came before the end of (see `gate`). One the
    // response refused or stopped is aborted when the exchange ends, so hyper closes the
    // connection; one that goes on is told when the exchange is over.
    gate: Option<Arc<BodyGate>>,
}

impl<B: Send + 'static> ExchangeGuard<B> {
    /// The guard of `conn` for `response`; `request_closes` says the request asked to close
    /// the connection (`Connection: close`), which hyper obeys whatever the response says.
    pub(crate) fn new(
        conn: H1Connection<B>,
        response: &Response<Incoming>,
        request_closes: bool,
    ) -> Self {
        let disposition = if response.status() == StatusCode::SWITCHING_PROTOCOLS {
            Disposition::Retire(CloseReason::Upgraded)
        } else if request_closes || !keeps_alive(response.version(), response.headers()) {
            Disposition::Retire(CloseReason::ProtocolClosed)
        } else {
            let served = conn.record().requests_served();
            // Read from the connection's first response only: servers announce one timeout
            // for all their connections, and a header lookup on every response would cost
            // every request (about 150 instructions) for nothing new.
            if served == 1 {
                if let Some(limit) = crate::keep_alive::idle_limit(response.headers()) {
                    conn.record().set_idle_limit(limit);
                }
            }
            // A server that closes its connections after so many requests without saying so
            // (see pool-core's `cell/quota.rs`): the response that spends the quota retires
            // the connection, as if it had said `Connection: close`.
            match conn.record().check_request_quota(served) {
                QuotaCheck::Within => Disposition::Reuse,
                QuotaCheck::Spent => Disposition::Retire(CloseReason::RequestQuota),
                QuotaCheck::PastProbe(served) => {
                    conn.served_past_request_quota(served);
                    Disposition::Reuse
                }
            }
        };
        let mut guard = ExchangeGuard {
            conn: Some(conn),
            disposition,
            gate: None,
        };
        if disposition == Disposition::Retire(CloseReason::Upgraded) {
            // The pool's record ends here; the I/O now belongs to whoever calls
            // `hyper::upgrade::on` and lives until they drop it.
            guard.retire(CloseReason::Upgraded);
        }
        guard
    }

    /// The request of this exchange held its body back for `100 Continue` behind `gate` (see
    /// [`BodyGate`]). If the gate is still waiting, this response refused the body: it is
    /// never sent, the connection retires when the exchange ends, and the body is aborted then.
    /// Returns whether the body was refused.
    pub fn expected_continue(&mut self, gate: Arc<BodyGate>) -> bool {
        if !gate.refuse() {
            return false;
        }
        self.keep_back(gate);
        true
    }

    /// This response refuses the rest of the request's body, which was going behind `gate`
    /// (RFC 9112 §9.5: a client stops sending a body the server does not want). If some is
    /// still to go, no further byte goes, the connection retires when the exchange ends, and
    /// the body is aborted then. Returns the body bytes handed to hyper before the stop, or
    /// `None` if the body had all gone (or still waited for `100 Continue`).
    pub fn stop_body(&mut self, gate: Arc<BodyGate>) -> Option<u64> {
        let sent = gate.stop()?;
        self.keep_back(gate);
        Some(sent)
    }

    /// The body behind `gate` will not all be sent: the framing is broken.
    fn keep_back(&mut self, gate: Arc<BodyGate>) {
        if self.disposition == Disposition::Reuse {
            self.disposition = Disposition::Retire(CloseReason::IncompleteH1Exchange);
        }
        self.gate = Some(gate);
    }

    /// This response came while the request's body, behind `gate`, was still going, and it
    /// goes on: the gate learns when the exchange is over (the connection went home once hyper
    /// wrote the body's end, or retired), so that a caller can wait for the upload.
    pub fn body_goes_on(&mut self, gate: Arc<BodyGate>) {
        self.gate = Some(gate);
    }

    /// Whether the connection ends with this exchange instead of going home: the request or
    /// the response closes it (`Connection: close`, or a response of HTTP/1.0 without
    /// `keep-alive`, by hyper's rule),
    /// switched protocols, or refused or stopped the request's body, or the connection was
    /// poisoned or has closed meanwhile. `false` while the guard holds a connection that goes
    /// home once the body is read to its end.
    pub fn closes(&self) -> bool {
        let Some(conn) = &self.conn else {
            return true;
        };
        self.disposition != Disposition::Reuse || conn.record().is_retiring()
    }

    /// The record of the connection this exchange runs on, while the guard holds it.
    pub fn record(&self) -> Option<&Arc<ConnectionRecord>> {
        self.conn.as_ref().map(H1Connection::record)
    }

    /// hyper yielded the end of the body: the message boundary is proven. The connection goes
    /// home now if hyper is already ready for another request, or once it is (in a task on the
    /// owner partition).
    pub fn end_of_body(&mut self) {
        let Some(conn) = self.conn.take() else {
            self.end_gate();
            return;
        };
        match self.disposition {
            Disposition::Retire(reason) => {
                conn.record().close(reason, None);
                self.end_gate();
            }
            Disposition::Reuse => {
                // Any gate here is a body's that goes on: a refused one retires the connection.
                let upload = self.gate.take();
                return_when_ready(Returning { conn, upload });
            }
        }
    }

    /// The body is being dropped. `ended` says whether the whole body was received (hyper
    /// reported `is_end_stream`), in which case this is the end of the message; otherwise the
    /// connection is retired because its framing can no longer be trusted.
    pub fn finish(&mut self, ended: bool) {
        if ended {
            self.end_of_body();
        } else {
            self.retire(CloseReason::IncompleteH1Exchange);
        }
    }

    fn retire(&mut self, reason: CloseReason) {
        if let Some(conn) = self.conn.take() {
            conn.record().close(reason, None);
        }
        self.end_gate();
    }
}

/// Returns the connection to its home as soon as hyper's dispatcher is ready for another
/// request. The common case costs nothing: the dispatcher marks itself ready in the same poll
/// that ends the body, before the reader can run. When the reader ran first (on another worker
/// thread), the connection parks with its driver, which returns it (see [`ParkingSpot`]).
///
/// [`ParkingSpot`]: crate::ParkingSpot
fn return_when_ready<B: Send + 'static>(mut returning: Returning<B>) {
    let conn = &mut returning.conn;
    if conn.sender_mut().is_ready() {
        returning.go_home();
        return;
    }
    if conn.sender_mut().is_closed() {
        returning.retire(CloseReason::ProtocolClosed, None);
        return;
    }
    let spot = conn.spot().clone();
    spot.park(returning);
}

/// Whether hyper keeps the connection after `response`, by the rule its HTTP/1 parser applies
/// (RFC 9112 §9.3): an HTTP/1.1 response unless a `Connection` header lists `close`, an
/// HTTP/1.0 response only if one lists `keep-alive` and none `close`. Deciding it here, where
/// hyper decides it, retires the connection at the response's end instead of sending it home
/// to find hyper closing, so that [`ExchangeGuard::closes`] answers before the body is read.
fn keeps_alive(version: Version, headers: &HeaderMap) -> bool {
    let values = headers.get_all(CONNECTION);
    if lists_token(values.iter(), "close") {
        return false;
    }
    match version {
        Version::HTTP_11 => true,
        Version::HTTP_10 => lists_token(values.iter(), "keep-alive"),
        _ => false,
    }
}

/// Whether a request's headers ask to close its connection after the exchange (hyper then
/// disables keep-alive before it writes the request, RFC 9112 section 9.6).
pub(crate) fn asks_to_close(headers: &HeaderMap) -> bool {
    lists_token(headers.get_all(CONNECTION), "close")
}

/// Whether any of the `Connection` header `values` lists `token` (ASCII case-insensitive).
/// On bytes, not `str`: every response's `Connection` is read, and a value is almost always a
/// single short token that needs no UTF-8 check or character search.
fn lists_token<'a>(values: impl IntoIterator<Item = &'a HeaderValue>, token: &str) -> bool {
    values.into_iter().any(|value| {
        value
            .as_bytes()
            .split(|b| *b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    })
}

impl<B> ExchangeGuard<B> {
    /// The exchange ended without the connection going home: a refused or stopped request
    /// body is aborted, so that hyper stops waiting for it and closes, and one that went on
    /// learns the exchange is over. Almost always a `None` check: only an exchange whose
    /// response came before its body's end has a gate.
    #[inline]
    fn end_gate(&mut self) {
        if let Some(gate) = self.gate.take() {
            gate.abort();
            gate.exchange_over();
        }
    }
}

impl<B> Drop for ExchangeGuard<B> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.record().close(CloseReason::IncompleteH1Exchange, None);
        }
        self.end_gate();
    }
}

impl<B> fmt::Debug for ExchangeGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExchangeGuard")
            .field("conn", &self.conn)
            .field("disposition", &self.disposition)
            .field("gate", &self.gate.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_close_token_is_found_case_insensitively_in_lists() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        let close = |values: &[&HeaderValue]| lists_token(values.iter().copied(), "close");
        assert!(close(&[&v("close")]));
        assert!(close(&[&v("Keep-Alive, Close")]));
        assert!(close(&[&v("upgrade"), &v("CLOSE")]));
        assert!(!close(&[&v("keep-alive")]));
        assert!(!close(&[&v("closed")]));
        assert!(!close(&[&v(" , close-ish ,")]));
        assert!(close(&[&v("\tclose\t, te")]));
        assert!(!close(&[]));
    }

    #[test]
    fn http_1_0_keeps_the_connection_only_when_asked_and_1_1_unless_told_to_close() {
        let headers = |values: &[&'static str]| {
            let mut map = HeaderMap::new();
            for value in values {
                map.append(CONNECTION, HeaderValue::from_static(value));
            }
            map
        };
        assert!(keeps_alive(Version::HTTP_11, &headers(&[])));
        assert!(keeps_alive(Version::HTTP_11, &headers(&["keep-alive"])));
        assert!(!keeps_alive(Version::HTTP_11, &headers(&["Close"])));
        assert!(!keeps_alive(Version::HTTP_10, &headers(&[])));
        assert!(keeps_alive(Version::HTTP_10, &headers(&["Keep-Alive"])));
        // hyper: once any line says close, a later keep-alive does not undo it.
        assert!(!keeps_alive(
            Version::HTTP_10,
            &headers(&["close", "keep-alive"])
        ));
        assert!(!keeps_alive(Version::HTTP_09, &headers(&["keep-alive"])));
    }
}
