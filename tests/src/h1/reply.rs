//! A scripted reply: status, headers, a body split by gates, its framing (wrong on purpose
//! if the script says so) and what happens to the connection afterwards.

use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;

use crate::gate::{Gate, Signal, Wait};

/// One piece of a reply body.
#[derive(Debug, Clone)]
pub(super) enum Part {
    Data(Bytes),
    Wait(Wait),
}

/// How the reply body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// `Content-Length`: the real length, or the declared one if set.
    Length { declared: Option<u64> },
    /// `Transfer-Encoding: chunked`; `terminate` = write the final `0\r\n\r\n`.
    Chunked { terminate: bool },
    /// No length header: the body ends when the connection closes.
    CloseDelimited,
    /// No body-framing header at all (1xx, 204, 304, or as the script says).
    None,
}

/// What happens to the connection after the reply is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum After {
    KeepOpen,
    Close,
    Reset,
}

/// A scripted HTTP/1.x response: status, headers, a body that may be split by gates or delays,
/// body framing (possibly wrong on purpose) and what to do to the connection afterwards.
///
/// Automatic headers: `content-length` (the body length, or [`declared_length`](Self::declared_length))
/// unless a `content-length` header was set by hand, or the reply is chunked, close-delimited, or
/// has a 1xx/204/304 status; `transfer-encoding: chunked` for [`chunked`](Self::chunked) replies.
/// Nothing else is added (no `Date`, no `Connection`).
///
/// A reply to a `HEAD` request writes the head only (the `content-length` still announces the
/// body).
#[derive(Debug, Clone)]
pub struct Reply {
    /// Verbatim bytes to write instead of a generated message.
    pub(super) raw: Option<Bytes>,
    pub(super) status: StatusCode,
    pub(super) reason: Option<String>,
    pub(super) version: &'static str,
    pub(super) headers: Vec<(String, String)>,
    pub(super) before: Vec<Wait>,
    pub(super) body: Vec<Part>,
    pub(super) framing: Framing,
    pub(super) after: After,
}

impl Reply {
    /// A reply with `status` and an empty body.
    ///
    /// # Panics
    ///
    /// If `status` is not in 100..=999.
    pub fn new(status: u16) -> Self {
        let status = StatusCode::from_u16(status).expect("invalid status code");
        let framing = if status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            Framing::None
        } else {
            Framing::Length { declared: None }
        };
        Self {
            raw: None,
            status,
            reason: None,
            version: "HTTP/1.1",
            headers: Vec::new(),
            before: Vec::new(),
            body: Vec::new(),
            framing,
            after: After::KeepOpen,
        }
    }

    /// `200 OK` with `body` and a `content-length`.
    pub fn ok(body: impl Into<Bytes>) -> Self {
        Self::new(200).body(body)
    }

    /// `200 OK` whose body is split at `gate`: the head and `first` are written, then the server
    /// waits for the gate, then writes `rest`. `content-length` covers both parts.
    pub fn ok_split(first: impl Into<Bytes>, gate: Gate, rest: impl Into<Bytes>) -> Self {
        Self::new(200)
            .body_data(first)
            .body_gate(gate)
            .body_data(rest)
    }

    /// `101 Switching Protocols` with `connection: upgrade` and `upgrade: {protocol}`. Follow it
    /// with [`ConnPlan::echo`](super::ConnPlan::echo) or raw writes: after it the connection is no longer HTTP.
    pub fn switching_protocols(protocol: &str) -> Self {
        Self::new(101)
            .header("connection", "upgrade")
            .header("upgrade", protocol)
    }

    /// Writes `bytes` verbatim as the whole reply (for malformed or hand-made responses). The
    /// waits ([`delay`](Self::delay), [`gate`](Self::gate)), [`then_close`](Self::then_close) and
    /// [`then_reset`](Self::then_reset) still apply; everything else is ignored.
    pub fn raw(bytes: impl Into<Bytes>) -> Self {
        let mut reply = Self::new(200);
        reply.raw = Some(bytes.into());
        reply
    }

    /// Replaces the body with one piece.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = vec![Part::Data(body.into())];
        self
    }

    /// Appends bytes to the body (one chunk of its own if the reply is chunked; empty data is
    /// skipped in chunked replies since a zero-size chunk would end the body).
    pub fn body_data(mut self, data: impl Into<Bytes>) -> Self {
        self.body.push(Part::Data(data.into()));
        self
    }

    /// Appends a gate to the body: everything before it is written and flushed, then the server
    /// waits for the test to open it.
    pub fn body_gate(mut self, gate: Gate) -> Self {
        self.body.push(Part::Wait(Wait::Gate(gate)));
        self
    }

    /// Appends a delay to the body (`tokio::time::sleep`, so it follows paused time).
    pub fn body_delay(mut self, delay: Duration) -> Self {
        self.body.push(Part::Wait(Wait::Delay(delay)));
        self
    }

    /// Appends a signal raise to the body (the test learns what has been written so far).
    pub fn body_signal(mut self, signal: Signal) -> Self {
        self.body.push(Part::Wait(Wait::Signal(signal)));
        self
    }

    /// Adds a header (written in the order added; duplicates allowed; not validated).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Overrides the reason phrase (default: the canonical one for the status).
    pub fn reason(mut self, reason: &str) -> Self {
        self.reason = Some(reason.to_owned());
        self
    }

    /// Writes `HTTP/1.0` in the status line instead of `HTTP/1.1`.
    pub fn http_1_0(mut self) -> Self {
        self.version = "HTTP/1.0";
        self
    }

    /// Waits `delay` (after the request was read) before writing the head.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.before.push(Wait::Delay(delay));
        self
    }

    /// Waits for `gate` (after the request was read) before writing the head.
    pub fn gate(mut self, gate: Gate) -> Self {
        self.before.push(Wait::Gate(gate));
        self
    }

    /// Raises `signal` (after the request was read) before writing the head.
    pub fn signal(mut self, signal: Signal) -> Self {
        self.before.push(Wait::Signal(signal));
        self
    }

    /// Uses `transfer-encoding: chunked`; every data piece becomes one chunk.
    pub fn chunked(mut self) -> Self {
        self.framing = Framing::Chunked { terminate: true };
        self
    }

    /// For a chunked reply: do not write the final zero-size chunk (combine with
    /// [`then_close`](Self::then_close) or [`then_reset`](Self::then_reset) for a body cut short).
    pub fn unterminated(mut self) -> Self {
        if let Framing::Chunked { terminate } = &mut self.framing {
            *terminate = false;
        }
        self
    }

    /// Announces `content-length: {len}` whatever the body really is. With a larger value and
    /// [`then_close`](Self::then_close) the client sees an unexpected EOF mid-body; with
    /// [`then_reset`](Self::then_reset), a reset mid-body.
    pub fn declared_length(mut self, len: u64) -> Self {
        self.framing = Framing::Length {
            declared: Some(len),
        };
        self
    }

    /// No length header: the body is delimited by closing the connection (implies
    /// [`then_close`](Self::then_close)).
    pub fn close_delimited(mut self) -> Self {
        self.framing = Framing::CloseDelimited;
        self.after = After::Close;
        self
    }

    /// Writes no body-framing header at all and does not close (the client decides what the
    /// body is).
    pub fn no_framing(mut self) -> Self {
        self.framing = Framing::None;
        self
    }

    /// After writing the reply, close the connection cleanly (FIN). Later plan steps do not run.
    pub fn then_close(mut self) -> Self {
        self.after = After::Close;
        self
    }

    /// After writing the reply, abort the connection with a TCP RST. Later plan steps do not
    /// run.
    pub fn then_reset(mut self) -> Self {
        self.after = After::Reset;
        self
    }

    /// Adds `connection: close` and closes the connection after the reply, like a real server.
    pub fn connection_close(self) -> Self {
        self.header("connection", "close").then_close()
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The status line and headers, ending with the blank line.
    pub(super) fn head(&self) -> String {
        let reason = self
            .reason
            .as_deref()
            .or(self.status.canonical_reason())
            .unwrap_or("");
        let mut head = format!("{} {} {}\r\n", self.version, self.status.as_u16(), reason);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        match self.framing {
            Framing::Length { declared } if !self.has_header("content-length") => {
                let real: usize = self
                    .body
                    .iter()
                    .map(|p| match p {
                        Part::Data(d) => d.len(),
                        Part::Wait(_) => 0,
                    })
                    .sum();
                let len = declared.unwrap_or(real as u64);
                head.push_str(&format!("content-length: {len}\r\n"));
            }
            Framing::Chunked { .. } if !self.has_header("transfer-encoding") => {
                head.push_str("transfer-encoding: chunked\r\n");
            }
            _ => {}
        }
        head.push_str("\r\n");
        head
    }
}
