//! Why the server ended an HTTP/2 connection, as what it sent shows it: the cause its close
//! event carries (`pool_core::connection::EndWitness`).
//!
//! h2 knows why a connection ended, but the pool hears it last: hyper's connection task drops
//! the transport when the connection ends, and a request the end failed reports at once, both
//! before the driver's future, which carries h2's error, completes; each of them closes the
//! record without a cause. So a connection Jetty ended for the rate of its `WINDOW_UPDATE`s
//! closed as `protocol_closed` and nothing more. The frame reader under hyper's adapter
//! (`frames.rs`) reads every frame header first, so it notes the peer's last words here as it
//! reads them, before h2 acts on them, and the record asks at its close:
//!
//! * a `GOAWAY` with an error code: the code's name, the last stream the server processed and
//!   the debug text it put in the frame (Jetty's `invalid_window_update_frame_rate`, nginx's
//!   none), up to [`DEBUG_KEPT`] bytes of it;
//! * a `GOAWAY` with `NO_ERROR`: nothing, the end was graceful;
//! * the end of the stream without a `GOAWAY`, and where: in the middle of a frame (Jetty
//!   closing while its writes were pending drops the `GOAWAY` it had queued, and the frame
//!   being written breaks off) or between two;
//! * a read or write error of the transport (a reset connection).
//!
//! A `GOAWAY` is the server's own word and outranks what the transport did, whichever came
//! first: a server that sends `GOAWAY` and closes with requests still unread resets the
//! connection, and the client's next write may fail before it reads the `GOAWAY` waiting in
//! its buffer (`reset.rs` reads on to it). Otherwise the first end counts. What it does not do: read anything h2 would not (it looks at the bytes the transport already
//! wrote into hyper's buffer), or say why the pool itself ended a connection (those closes
//! carry their own reason, and the record does not ask).

use std::error::Error;
use std::fmt;
use std::io;
use std::sync::OnceLock;

/// The frame type of GOAWAY.
pub(crate) const GOAWAY: u8 = 0x7;

/// The debug text of a `GOAWAY` kept for the close event, in bytes (Jetty's reasons are
/// shorter; a server that sends a long one gets it cut).
pub(crate) const DEBUG_KEPT: usize = 128;

/// The bytes of a `GOAWAY`'s payload kept: the last stream id, the error code, and the start
/// of the debug text.
pub(crate) const GOAWAY_KEPT: usize = 8 + DEBUG_KEPT;

/// The peer's last words on one connection.
#[derive(Debug, Default)]
pub(crate) struct LastWords {
    /// The server's `GOAWAY`: unset until read; `None` if graceful.
    goaway: OnceLock<Option<PeerEnded>>,
    /// The first end the transport met: the stream's end or an I/O error.
    transport: OnceLock<PeerEnded>,
}

/// Where the reader was in the server's frames when the stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Where {
    /// Between two frames.
    Between,
    /// Inside a frame header: this many of its 9 bytes had come.
    InHeader(u8),
    /// Inside the payload of a frame of this type: `missing` of its `length` bytes never came.
    InPayload {
        kind: u8,
        length: usize,
        missing: usize,
    },
}

impl LastWords {
    /// The cause noted, if the connection ended with an error: the `GOAWAY`'s if there was
    /// one, or what the transport met.
    pub(crate) fn cause(&self) -> Option<&PeerEnded> {
        match self.goaway.get() {
            Some(goaway) => goaway.as_ref(),
            None => self.transport.get(),
        }
    }

    /// The server's `GOAWAY`, whose payload began with `payload` (at most [`GOAWAY_KEPT`]
    /// bytes; a payload under 8 bytes is h2's to refuse, and says nothing here).
    pub(crate) fn goaway(&self, payload: &[u8]) {
        let (Some(last), Some(code)) = (payload.get(..4), payload.get(4..8)) else {
            return;
        };
        let last = u32::from_be_bytes([last[0], last[1], last[2], last[3]]) & 0x7fff_ffff;
        let code = u32::from_be_bytes([code[0], code[1], code[2], code[3]]);
        if code == 0 {
            let _ = self.goaway.set(None);
            return;
        }
        let mut text = format!(
            "the server sent GOAWAY {:?} (last stream processed {last})",
            h2::Reason::from(code)
        );
        let debug = String::from_utf8_lossy(&payload[8..]);
        let debug = debug.trim();
        if !debug.is_empty() {
            text.push_str(": ");
            text.push_str(debug);
        }
        let _ = self.goaway.set(Some(PeerEnded(text)));
    }

    /// The server's stream ended (a read returned no bytes), the reader being `at` that point.
    pub(crate) fn ended(&self, at: Where) {
        if self.transport.get().is_some() {
            return;
        }
        let text = match at {
            Where::Between => "the server ended the connection without a GOAWAY".to_owned(),
            Where::InHeader(have) => format!(
                "the server ended the connection without a GOAWAY, in the middle of a frame \
                 header ({have} of its 9 bytes came)"
            ),
            Where::InPayload {
                kind,
                length,
                missing,
            } => format!(
                "the server ended the connection without a GOAWAY, in the middle of a {} \
                 frame ({missing} of its {length} bytes never came)",
                frame_name(kind)
            ),
        };
        self.note(text);
    }

    /// Reading from (`reading`) or writing to the transport failed with `error`.
    pub(crate) fn failed(&self, reading: bool, error: &io::Error) {
        if self.transport.get().is_some() {
            return;
        }
        let direction = if reading {
            "reading from"
        } else {
            "writing to"
        };
        self.note(format!("{direction} the connection failed: {error}"));
    }

    /// Keeps `text` as the transport's end unless one was noted before (callers look first,
    /// so that a transport polled again after its end formats nothing).
    #[cold]
    fn note(&self, text: String) {
        let _ = self.transport.set(PeerEnded(text));
    }
}

/// The name of an HTTP/2 frame type (RFC 9113 §6), or its number.
fn frame_name(kind: u8) -> String {
    let name = match kind {
        0x0 => "DATA",
        0x1 => "HEADERS",
        0x2 => "PRIORITY",
        0x3 => "RST_STREAM",
        0x4 => "SETTINGS",
        0x5 => "PUSH_PROMISE",
        0x6 => "PING",
        GOAWAY => "GOAWAY",
        0x8 => "WINDOW_UPDATE",
        0x9 => "CONTINUATION",
        other => return format!("type {other:#x}"),
    };
    name.to_owned()
}

/// Why the server ended an HTTP/2 connection (see the module docs): the error a close event
/// carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerEnded(String);

impl fmt::Display for PeerEnded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for PeerEnded {}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `words` give as the cause, as text.
    fn said(words: &LastWords) -> Option<String> {
        words.cause().map(ToString::to_string)
    }

    fn goaway(last: u32, code: u32, debug: &[u8]) -> Vec<u8> {
        let mut payload = last.to_be_bytes().to_vec();
        payload.extend_from_slice(&code.to_be_bytes());
        payload.extend_from_slice(debug);
        payload
    }

    #[test]
    fn a_goaway_with_an_error_code_says_its_name_last_stream_and_debug_text() {
        let words = LastWords::default();
        words.goaway(&goaway(557, 0xb, b"invalid_window_update_frame_rate"));
        assert_eq!(
            said(&words).as_deref(),
            Some(
                "the server sent GOAWAY ENHANCE_YOUR_CALM (last stream processed 557): \
                 invalid_window_update_frame_rate"
            )
        );
        // The first word stands: the end of the stream that follows does not replace it.
        words.ended(Where::Between);
        assert!(said(&words).unwrap().contains("ENHANCE_YOUR_CALM"));
    }

    #[test]
    fn a_goaway_read_after_a_failed_write_is_still_the_reason() {
        let words = LastWords::default();
        words.failed(false, &io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(said(&words).unwrap().starts_with("writing to"));
        words.goaway(&goaway(3, 0xb, b""));
        assert_eq!(
            said(&words).unwrap(),
            "the server sent GOAWAY ENHANCE_YOUR_CALM (last stream processed 3)"
        );
    }

    #[test]
    fn a_graceful_goaway_is_no_error_and_is_not_replaced_by_the_close_after_it() {
        let words = LastWords::default();
        words.goaway(&goaway(9, 0, b""));
        words.ended(Where::Between);
        assert_eq!(words.cause(), None);
    }

    #[test]
    fn an_end_without_goaway_says_where_the_stream_broke_off() {
        let mid = LastWords::default();
        mid.ended(Where::InPayload {
            kind: 0x0,
            length: 16_384,
            missing: 4_628,
        });
        assert_eq!(
            said(&mid).unwrap(),
            "the server ended the connection without a GOAWAY, in the middle of a DATA frame \
             (4628 of its 16384 bytes never came)"
        );
        let header = LastWords::default();
        header.ended(Where::InHeader(4));
        assert!(said(&header).unwrap().contains("4 of its 9 bytes"));
        let reset = LastWords::default();
        reset.failed(true, &io::Error::from(io::ErrorKind::ConnectionReset));
        assert!(
            said(&reset)
                .unwrap()
                .starts_with("reading from the connection failed: "),
        );
    }

    #[test]
    fn a_goaway_too_short_to_read_says_nothing() {
        let words = LastWords::default();
        words.goaway(&[0, 0, 0, 1, 0, 0]);
        words.ended(Where::Between);
        assert!(said(&words).unwrap().contains("without a GOAWAY"));
    }
}
