//! HTTP/1 response header names as the server wrote them.
//!
//! hyper lower-cases every header name into `http::HeaderMap` and keeps the original spelling
//! only in a type it does not export. When the pool is asked to keep them
//! ([`H1Settings::record_raw_header_names`](crate::H1Settings::record_raw_header_names)), the
//! connection's transport is wrapped in [`NamesIo`], which reads the head of each response a
//! second time with `httparse` as its bytes pass by, and [`H1Connection::send`] attaches the
//! result to the response as a [`RawHeaderNames`] extension.
//!
//! What it does: only the head bytes of each response are looked at (from the first read after
//! a request is written up to the end of the final, non-1xx head); body bytes pass straight
//! through. What it does not do: change what hyper parses or what the `HeaderMap` holds, or
//! cost anything on a connection of a pool that did not ask for it (the transport is not
//! wrapped at all). The second reading is as tolerant as hyper's was told to be ([`NamesParser`]:
//! spaces before a colon, folded lines, invalid lines skipped, the header count), so a head
//! hyper reads gets its names. A head that `httparse` cannot read, or one over [`MAX_HEAD`]
//! bytes, just gets no extension.
//!
//! [`H1Connection::send`]: crate::H1Connection::send

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};

use http::{HeaderMap, HeaderValue};
use hyper::rt::{Read, ReadBuf, ReadBufCursor, Write};

use crate::request_names::{SpellingSlot, respell};

/// Largest response head looked at; a longer one gets no [`RawHeaderNames`].
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// Most header fields in one head, unless the pool allows more (hyper's own default limit).
const MAX_FIELDS: usize = 100;

/// How the second reading parses a head: the tolerances and header count the pool gave hyper,
/// so that both readings accept the same heads (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct NamesParser {
    pub(crate) config: httparse::ParserConfig,
    pub(crate) max_fields: usize,
}

impl Default for NamesParser {
    fn default() -> Self {
        NamesParser {
            config: httparse::ParserConfig::default(),
            max_fields: MAX_FIELDS,
        }
    }
}

/// How much one read of a head may take (the copy buffer; body reads are not copied).
const SCRATCH: usize = 8 * 1024;

/// The header names of one HTTP/1 response as the server wrote them (`Content-Type`,
/// `X-Request-ID`), in the order it wrote them, duplicates included. A response extension,
/// present only when the pool was built with `http1_preserve_header_case(true)`.
///
/// The values stay in the response's `HeaderMap`; [`in_wire_order`](Self::in_wire_order)
/// pairs each written name with its value. The 1xx heads that came before the response
/// (`100 Continue`, `103 Early Hints`; hyper hands them to a request's
/// `hyper::ext::on_informational` callback, lower-cased) have theirs in
/// [`informational`](Self::informational).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawHeaderNames {
    /// The names one after the other.
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<usize>,
    /// The names of the 1xx heads before this one, in order.
    informational: Vec<RawHeaderNames>,
    /// The head's status line as written, without its line end (hyper passes the final
    /// head's reason phrase on as `hyper::ext::ReasonPhrase`, but not a 1xx head's, and
    /// neither says how the line was spaced).
    status_line: Box<str>,
}

impl RawHeaderNames {
    /// The names, in the order of the response head.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let name = &self.text[start..end];
            start = end;
            name
        })
    }

    /// The names of each 1xx head the server sent before the response, in the order they
    /// came (the order in which hyper calls a request's `on_informational` callback).
    pub fn informational(&self) -> &[RawHeaderNames] {
        &self.informational
    }

    /// The head's status line as the server wrote it (`HTTP/1.1 200 OK`, `HTTP/1.1 200`
    /// with no phrase), without its line end; invalid UTF-8 replaced. For a tool that shows
    /// heads as they came, as curl's `-i` does.
    pub fn status_line(&self) -> &str {
        &self.status_line
    }

    /// The reason phrase as the server wrote it: what follows the status code and its space
    /// (empty when there is none). hyper's `on_informational` callback does not carry a 1xx
    /// head's.
    pub fn reason(&self) -> &str {
        let line = self.status_line.trim_start_matches(|c| c != ' ');
        let after_code = line
            .trim_start_matches(' ')
            .trim_start_matches(|c| c != ' ');
        after_code.strip_prefix(' ').unwrap_or(after_code)
    }

    /// How many header fields the head had.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the head had no header fields.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Each field of `headers` as the server wrote it: the written name with its value, in the
    /// head's order. Fields of `headers` that the head did not have (added after the response
    /// arrived) follow at the end under their lower-case names.
    pub fn in_wire_order<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> impl Iterator<Item = (&'a str, &'a HeaderValue)> + 'a {
        // How many values of each (lower-case) name the written names have used.
        let mut used: Vec<(&'a str, usize)> = Vec::new();
        let mut out: Vec<(&'a str, &'a HeaderValue)> = Vec::with_capacity(headers.len());
        for name in self.iter() {
            let seen = match used.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                Some((_, count)) => {
                    *count += 1;
                    *count - 1
                }
                None => {
                    used.push((name, 1));
                    0
                }
            };
            let lower = name.to_ascii_lowercase();
            if let Some(value) = headers.get_all(lower.as_str()).iter().nth(seen) {
                out.push((name, value));
            }
        }
        for name in headers.keys() {
            let taken = used
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name.as_str()))
                .map_or(0, |(_, count)| *count);
            out.extend(
                headers
                    .get_all(name)
                    .iter()
                    .skip(taken)
                    .map(|value| (name.as_str(), value)),
            );
        }
        out.into_iter()
    }

    fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }
}

impl<'a> FromIterator<&'a str> for RawHeaderNames {
    /// Names in head order (for callers that build a response by hand, and tests).
    fn from_iter<T: IntoIterator<Item = &'a str>>(names: T) -> Self {
        let mut raw = RawHeaderNames::default();
        names.into_iter().for_each(|name| raw.push(name));
        raw
    }
}

/// Where the transport leaves the names of the latest final response head for the exchange
/// that waits for it, and finds the spellings of the request head it writes next
/// ([`crate::request_names`]).
#[derive(Debug, Default)]
pub(crate) struct NamesSlot {
    response: Mutex<Option<RawHeaderNames>>,
    pub(crate) request: SpellingSlot,
}

impl NamesSlot {
    fn put(&self, names: RawHeaderNames) {
        *self.response.lock().unwrap_or_else(PoisonError::into_inner) = Some(names);
    }

    /// The names of the response that just arrived, if its head was read.
    pub(crate) fn take(&self) -> Option<RawHeaderNames> {
        self.response
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// What the wrapper is doing with reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No response head expected: reads pass through untouched.
    Between,
    /// A request was written: the next bytes read are a response head (or several, 1xx first).
    Head,
}

/// A transport that reads each response head a second time for its header names (see the
/// module docs). Built only for pools that asked for the names.
#[derive(Debug)]
pub(crate) struct NamesIo<I> {
    inner: I,
    slot: Arc<NamesSlot>,
    parser: NamesParser,
    /// The names of the 1xx heads read since the request was written.
    informational: Vec<RawHeaderNames>,
    phase: Phase,
    /// Head bytes received so far when a head spans several reads.
    partial: Vec<u8>,
    /// Reads during [`Phase::Head`] land here before being copied into hyper's buffer.
    scratch: Box<[u8]>,
    /// A request head respelled for [`RequestHeaderNames`], and how much of it went.
    respelled: Option<(Vec<u8>, usize)>,
}

impl<I> NamesIo<I> {
    pub(crate) fn new(inner: I, slot: Arc<NamesSlot>, parser: NamesParser) -> NamesIo<I> {
        NamesIo {
            inner,
            slot,
            parser,
            informational: Vec::new(),
            phase: Phase::Between,
            partial: Vec::new(),
            scratch: vec![0; SCRATCH].into_boxed_slice(),
            respelled: None,
        }
    }

    /// Writes the respelled request head in place of `first`, hyper's next bytes, when the
    /// request handed over carries spellings (see [`crate::request_names`]); `None` when this
    /// write goes as hyper made it.
    fn poll_respelled(
        &mut self,
        cx: &mut Context<'_>,
        first: &[u8],
    ) -> Option<Poll<io::Result<usize>>>
    where
        I: Write + Unpin,
    {
        if self.respelled.is_none() {
            let names = self.slot.request.take()?;
            self.respelled = Some((respell(first, &names)?, 0));
        }
        let (head, sent) = self.respelled.as_mut()?;
        // hyper's buffer still holds the rest of the head, byte for byte but for case.
        let rest = &head[*sent..];
        let n = rest.len().min(first.len());
        let written = match Pin::new(&mut self.inner).poll_write(cx, &rest[..n]) {
            Poll::Ready(Ok(written)) => written,
            other => return Some(other),
        };
        *sent += written;
        if *sent == head.len() {
            self.respelled = None;
        }
        if written > 0 {
            self.request_written();
        }
        Some(Poll::Ready(Ok(written)))
    }

    /// The transport inside (tests read what was written to it).
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> I {
        self.inner
    }

    /// A request is being written: a response head comes next.
    fn request_written(&mut self) {
        if self.phase == Phase::Between {
            self.phase = Phase::Head;
            self.partial.clear();
            self.informational.clear();
        }
    }

    /// Looks at `bytes`, the next bytes of the response stream while a head is expected.
    fn observe(&mut self, bytes: &[u8]) {
        if self.partial.is_empty() {
            let used = self.parse_heads(bytes);
            if self.phase == Phase::Head {
                self.keep(&bytes[used..]);
            }
        } else {
            let mut partial = std::mem::take(&mut self.partial);
            partial.extend_from_slice(bytes);
            let used = self.parse_heads(&partial);
            if self.phase == Phase::Head {
                partial.drain(..used);
                self.partial = partial;
                if self.partial.len() > MAX_HEAD {
                    self.give_up();
                }
            }
        }
    }

    /// Parses as many complete heads from `bytes` as there are, up to the final one; returns how
    /// many bytes the 1xx heads took (the rest is an incomplete head, when still in
    /// [`Phase::Head`]).
    fn parse_heads(&mut self, bytes: &[u8]) -> usize {
        let mut used = 0;
        while self.phase == Phase::Head {
            let rest = &bytes[used..];
            let max = self.parser.max_fields;
            // hyper's default room on the stack; more on the heap only for a head that needs
            // it, on a pool that allows it.
            let mut stack = [httparse::EMPTY_HEADER; MAX_FIELDS];
            let parsed =
                match parse_one(&self.parser.config, rest, &mut stack[..max.min(MAX_FIELDS)]) {
                    Err(httparse::Error::TooManyHeaders) if max > MAX_FIELDS => {
                        let mut heap = vec![httparse::EMPTY_HEADER; max];
                        parse_one(&self.parser.config, rest, &mut heap)
                    }
                    parsed => parsed,
                };
            match parsed {
                Ok(httparse::Status::Complete((len, code, mut names))) => {
                    let informational =
                        code.is_some_and(|code| (100..200).contains(&code) && code != 101);
                    if informational {
                        self.informational.push(names);
                        used += len;
                        continue;
                    }
                    names.informational = std::mem::take(&mut self.informational);
                    self.slot.put(names);
                    self.phase = Phase::Between;
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => self.give_up(),
            }
        }
        used
    }

    fn keep(&mut self, rest: &[u8]) {
        if rest.len() > MAX_HEAD {
            self.give_up();
        } else {
            self.partial.extend_from_slice(rest);
        }
    }

    /// This head will get no names; reads pass through until the next request.
    fn give_up(&mut self) {
        self.phase = Phase::Between;
        self.partial = Vec::new();
    }
}

/// One response head from the start of `bytes`, read into `fields`: its length, status code,
/// and status line and header names when it is complete.
fn parse_one<'b>(
    config: &httparse::ParserConfig,
    bytes: &'b [u8],
    fields: &mut [httparse::Header<'b>],
) -> httparse::Result<(usize, Option<u16>, RawHeaderNames)> {
    let mut response = httparse::Response::new(fields);
    Ok(match config.parse_response(&mut response, bytes)? {
        httparse::Status::Complete(len) => {
            let mut names = RawHeaderNames {
                status_line: first_line(bytes),
                ..RawHeaderNames::default()
            };
            for field in response.headers.iter() {
                names.push(field.name);
            }
            httparse::Status::Complete((len, response.code, names))
        }
        httparse::Status::Partial => httparse::Status::Partial,
    })
}

/// The first line of a complete head, without its line end, past the empty lines httparse
/// skips before a status line.
fn first_line(head: &[u8]) -> Box<str> {
    let start = head
        .iter()
        .position(|b| !matches!(b, b'\r' | b'\n'))
        .unwrap_or(head.len());
    let line = &head[start..];
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into()
}

impl<I: Read + Unpin> Read for NamesIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.phase == Phase::Between {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let room = buf.remaining().min(this.scratch.len());
        let mut scratch = std::mem::take(&mut this.scratch);
        let mut read = ReadBuf::new(&mut scratch[..room]);
        let polled = Pin::new(&mut this.inner).poll_read(cx, read.unfilled());
        let result = match polled {
            Poll::Ready(Ok(())) => {
                let filled = read.filled();
                buf.put_slice(filled);
                this.observe(filled);
                Poll::Ready(Ok(()))
            }
            other => other,
        };
        this.scratch = scratch;
        result
    }
}

impl<I: Write + Unpin> Write for NamesIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(polled) = this.poll_respelled(cx, buf) {
            return polled;
        }
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        if written > 0 {
            this.request_written();
        }
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // The head is hyper's first slice; the rest follows in later writes.
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        if let Some(polled) = this.poll_respelled(cx, first) {
            return polled;
        }
        let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
        if written > 0 {
            this.request_written();
        }
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> NamesIo<()> {
        NamesIo::new((), Arc::new(NamesSlot::default()), NamesParser::default())
    }

    fn names(io: &NamesIo<()>) -> Option<Vec<String>> {
        io.slot
            .take()
            .map(|n| n.iter().map(str::to_owned).collect())
    }

    #[test]
    fn a_head_in_one_read_keeps_names_and_order() {
        let mut io = io();
        io.request_written();
        io.observe(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-ID: 1\r\nx-id: 2\r\nContent-Length: 2\r\n\r\nhi");
        assert_eq!(
            names(&io).unwrap(),
            ["Content-Type", "X-ID", "x-id", "Content-Length"]
        );
        assert_eq!(io.phase, Phase::Between);
    }

    #[test]
    fn the_status_line_is_kept_as_written() {
        for (head, line, reason) in [
            (&b"HTTP/1.1 200\r\n\r\n"[..], "HTTP/1.1 200", ""),
            (b"HTTP/1.1 200 \r\n\r\n", "HTTP/1.1 200 ", ""),
            (
                b"HTTP/1.0 404 Not  Found\n\n",
                "HTTP/1.0 404 Not  Found",
                "Not  Found",
            ),
        ] {
            let mut io = io();
            io.request_written();
            io.observe(head);
            let raw = io.slot.take().expect("a complete head");
            assert_eq!(raw.status_line(), line);
            assert_eq!(raw.reason(), reason, "{line}");
        }
    }

    #[test]
    fn a_head_split_over_reads_and_after_a_100_continue() {
        let mut io = io();
        io.request_written();
        io.observe(b"HTTP/1.1 100 Go On\r\nX-Early: 1\r\n\r\nHTTP/1.1 201 Cre");
        assert!(names(&io).is_none());
        io.observe(b"ated\r\nLocation: /a\r\n");
        assert!(names(&io).is_none());
        io.observe(b"ETag: \"x\"\r\n\r\nbody");
        let raw = io.slot.take().unwrap();
        assert_eq!(raw.iter().collect::<Vec<_>>(), ["Location", "ETag"]);
        let early: Vec<Vec<&str>> = raw
            .informational()
            .iter()
            .map(|h| h.iter().collect())
            .collect();
        assert_eq!(early, [vec!["X-Early"]]);
        assert_eq!(raw.informational()[0].reason(), "Go On");
        assert_eq!(raw.informational()[0].status_line(), "HTTP/1.1 100 Go On");
    }

    #[test]
    fn body_bytes_are_not_heads_until_the_next_request() {
        let mut io = io();
        io.request_written();
        io.observe(b"HTTP/1.1 200 OK\r\nA: 1\r\n\r\n");
        assert_eq!(names(&io).unwrap(), ["A"]);
        assert_eq!(io.phase, Phase::Between);
        io.request_written();
        io.observe(b"HTTP/1.1 204 No Content\r\nB-b: 2\r\n\r\n");
        assert_eq!(names(&io).unwrap(), ["B-b"]);
    }

    /// More header lines than hyper's default 100 keep their names only when the pool allows
    /// that many (as hyper then reads them).
    #[test]
    fn more_headers_than_the_default_when_allowed() {
        let head: String = (0..120).map(|i| format!("X-H{i}: v\r\n")).collect();
        let head = format!("HTTP/1.1 200 OK\r\n{head}\r\n");
        let mut strict = io();
        strict.request_written();
        strict.observe(head.as_bytes());
        assert!(names(&strict).is_none(), "over the default maximum");
        let allowing = NamesParser {
            max_fields: 150,
            ..NamesParser::default()
        };
        let mut io = NamesIo::new((), Arc::new(NamesSlot::default()), allowing);
        io.request_written();
        io.observe(head.as_bytes());
        let names = names(&io).unwrap();
        assert_eq!((names.len(), &names[119][..]), (120, "X-H119"));
    }

    #[test]
    fn garbage_gives_up_without_names() {
        let mut io = io();
        io.request_written();
        io.observe(b"NOT HTTP\r\n\r\n");
        assert!(names(&io).is_none());
        assert_eq!(io.phase, Phase::Between);
    }

    #[test]
    fn wire_order_pairs_names_with_values() {
        let raw: RawHeaderNames = ["X-Two", "Content-Type", "x-two"].into_iter().collect();
        let mut headers = HeaderMap::new();
        headers.append("x-two", HeaderValue::from_static("a"));
        headers.append("content-type", HeaderValue::from_static("text/plain"));
        headers.append("x-two", HeaderValue::from_static("b"));
        headers.append("added", HeaderValue::from_static("later"));
        let pairs: Vec<(&str, &str)> = raw
            .in_wire_order(&headers)
            .map(|(n, v)| (n, v.to_str().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("X-Two", "a"),
                ("Content-Type", "text/plain"),
                ("x-two", "b"),
                ("added", "later")
            ]
        );
    }
}
