//! How a failed HTTP/2 request is classified: whether the peer provably did not process it,
//! whether hyper held it back unsent, whether the connection under it was lost, and whether
//! the failure concerns the whole connection or only its stream.

use std::error::Error as StdError;

use pool_core::ResendReason;

/// Whether the peer provably did not process the request that failed with `error`:
///
/// * [`ResendReason::GoAway`]: the peer's `GOAWAY` covered the stream (its id was above the
///   frame's last stream id, or the stream was opened after the frame arrived). h2 fails exactly
///   those streams with the peer's GOAWAY error; streams at or below the last stream id go on,
///   and if the connection then dies they fail with an I/O error, which is not proof.
///   RFC 9113 §6.8.
/// * [`ResendReason::RefusedStream`]: the peer reset the stream with `REFUSED_STREAM`
///   (RFC 9113 §8.7), typically because it was over the peer's stream limit before the client
///   learnt it.
///
/// A GOAWAY or reset that this side raised (a protocol error h2 detected) proves nothing.
pub fn not_processed(error: &hyper::Error) -> Option<ResendReason> {
    let h2 = first_h2(error)?;
    if !h2.is_remote() {
        return None;
    }
    if h2.is_go_away() {
        return Some(ResendReason::GoAway);
    }
    if h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM) {
        return Some(ResendReason::RefusedStream);
    }
    None
}

/// Whether the peer reset the stream with `ENHANCE_YOUR_CALM` (a stream error, not a
/// `GOAWAY`): it is shedding load (see `calm.rs`). Not a proof that it did not process the
/// request.
pub(crate) fn asked_for_calm(error: &hyper::Error) -> bool {
    first_h2(error).is_some_and(|h2| {
        h2.is_remote() && h2.is_reset() && h2.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM)
    })
}

/// Whether the peer ended the connection with `GOAWAY(ENHANCE_YOUR_CALM)`: something sent on it
/// cost the server too much (Tomcat's overhead protection, see `uploads.rs`).
pub(crate) fn go_away_asking_for_calm(error: &hyper::Error) -> bool {
    peer_go_away_with(error, h2::Reason::ENHANCE_YOUR_CALM)
}

/// Whether the peer's `GOAWAY` behind `error` was a graceful one (`NO_ERROR`), as a server
/// sends when a connection has carried its quota of requests. A `GOAWAY` with an error code
/// ends the connection for what was sent on it (Tomcat's `ENHANCE_YOUR_CALM` when frames cost
/// it too much, a `PROTOCOL_ERROR`), so the count it came at says nothing of a quota, however
/// steady.
pub(crate) fn graceful_go_away(error: &hyper::Error) -> bool {
    peer_go_away_with(error, h2::Reason::NO_ERROR)
}

/// Whether the peer's `GOAWAY` behind `error` carried `code`.
fn peer_go_away_with(error: &hyper::Error, code: h2::Reason) -> bool {
    first_h2(error).is_some_and(|h2| h2.is_remote() && h2.is_go_away() && h2.reason() == Some(code))
}

/// The first h2 error in `error`'s source chain: the one that says what the peer did.
fn first_h2(error: &hyper::Error) -> Option<&h2::Error> {
    let mut source: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(err) = source {
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            return Some(h2);
        }
        source = err.source();
    }
    None
}

/// Whether `error` says hyper dropped the request inside its dispatch task before h2 opened its
/// stream, so that it never left.
///
/// hyper's dispatch task keeps a request whose stream h2 cannot open yet (h2 is at the peer's
/// stream limit: the peer lowered it before the pool read it, or a cancelled stream is still
/// counted by h2 until hyper's task for it sends the reset, a moment after the pool freed it).
/// When the connection fails meanwhile, the task ends and drops that request with its callback,
/// whose drop answers hyper's "dispatch task is gone" without the request. Every other request
/// the dispatch task took is answered by its own task (hyper's per-stream future) with the
/// stream's error. So the error names the held request only when the dispatch task ended on
/// its own, which the driver records before it drops the task. When a runtime shuts down, the
/// per-stream tasks of sent requests die with the same error; the driver is then dropped, not
/// ended, so those stay failures. One order is left that this takes for unsent: a connection
/// failing on its own and its runtime shutting down before the per-stream tasks it woke have
/// run, within one pass of the scheduler.
///
/// hyper has no predicate for this error: it is a user error whose text is fixed.
pub(crate) fn held_back(error: &hyper::Error, dispatcher_ended: bool) -> bool {
    dispatcher_ended && error.is_user() && error.to_string() == "dispatch task is gone"
}

/// Whether the stream failed with `error` because the connection under it was lost: the peer
/// reset or closed the transport (an I/O error of those kinds, or the end of the stream h2 reports
/// as a broken pipe) while no `GOAWAY` or `RST_STREAM` said what became of the stream, or h2
/// ended the connection itself (its own `GOAWAY` with an error code) on a protocol error of the
/// peer's, such as Traffic Server's second `GOAWAY` raising the last stream id (RFC 9113 §6.8
/// forbids it): either way the connection is gone before the response began.
///
/// Unlike [`not_processed`] this proves nothing: the server may have processed the request and
/// lost its response with the connection (nginx, shutting a worker down on reload, closes with
/// the client's newest frames unread, and its kernel's reset discards what it had not sent yet).
/// The caller may repeat only what is safe to repeat.
pub fn is_connection_lost(error: &hyper::Error) -> bool {
    let lost = pool_core::close::is_closed_or_reset;
    // hyper reports h2's I/O errors as its own I/O kind over the `io::Error`, and h2's other
    // errors as an `h2::Error`; the first of either in the chain decides.
    let mut source: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(err) = source {
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            return h2.get_io().is_some_and(lost) || ended_on_protocol_error(h2);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return lost(io);
        }
        source = err.source();
    }
    false
}

/// Whether h2 itself ended the connection with an error code (a `GOAWAY` of its own, not a
/// graceful one): the peer broke the protocol, or flooded it.
fn ended_on_protocol_error(h2: &h2::Error) -> bool {
    h2.is_go_away() && h2.is_library() && h2.reason() != Some(h2::Reason::NO_ERROR)
}

/// Whether `error` concerns the whole HTTP/2 connection rather than one stream.
///
/// Connection-level: GOAWAY (graceful or not), an I/O error, a closed or canceled dispatcher,
/// a keep-alive timeout. Stream-level: `RST_STREAM` for this stream, a malformed response on
/// this stream. A stream-level failure must not retire the generation.
pub fn is_connection_error(error: &hyper::Error) -> bool {
    if error.is_closed() || error.is_canceled() || error.is_timeout() {
        return true;
    }
    let mut source: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(err) = source {
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            return h2.is_go_away() || h2.is_io() || !h2.is_reset();
        }
        if err.is::<std::io::Error>() {
            return true;
        }
        source = err.source();
    }
    false
}
