//! One scripted connection running its plan: reading and recording requests, writing replies
//! byte by byte, and the waits, closes and resets between them.

use std::io;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Version};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::counters::{Log, Shared};
use crate::server::ServerIo;

use super::RecordedRequest;
use super::plan::{ConnPlan, Step};
use super::reply::{After, Framing, Part, Reply};

/// Largest request head (request line + headers) the server buffers before calling it malformed.
const MAX_HEAD: usize = 64 * 1024;
/// Largest chunk-size or trailer line.
const MAX_LINE: usize = 16 * 1024;
/// Most headers in one request.
const MAX_HEADERS: usize = 128;

/// Why reading a request stopped without one.
enum ReadErr {
    /// Clean EOF before any byte of a new request.
    Eof,
    /// The client went away mid-request or the socket failed: the connection just ends.
    Gone,
    /// Unparseable input: recorded as an error, then the connection closes.
    Malformed(String),
}

/// What to do after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    End,
}

/// The state of one scripted connection.
pub(super) struct H1Conn {
    pub(super) id: u64,
    /// The socket; `None` once the script closed or reset it.
    pub(super) io: Option<ServerIo>,
    /// Bytes read but not consumed yet (the start of a pipelined request, say).
    pub(super) buf: BytesMut,
    pub(super) shared: Arc<Shared>,
    pub(super) requests: Arc<Log<RecordedRequest>>,
    /// Requests read on this connection.
    pub(super) served: usize,
    /// Whether the last request read was `HEAD` (its reply carries no body).
    pub(super) last_was_head: bool,
    /// Whether a head asking for `100 Continue` gets it before the body is read.
    pub(super) continue_expected: bool,
}

impl H1Conn {
    pub(super) async fn run(&mut self, plan: ConnPlan) {
        for step in plan.steps {
            if self.step(step).await == Flow::End {
                return;
            }
        }
        self.after_plan().await;
    }

    async fn step(&mut self, step: Step) -> Flow {
        match step {
            Step::ReadRequest => match self.read_request().await {
                Some(_) => Flow::Continue,
                None => Flow::End,
            },
            Step::Reply(reply) => self.write_reply(&reply).await,
            Step::Respond(reply) => match self.read_request().await {
                Some(_) => self.write_reply(&reply).await,
                None => Flow::End,
            },
            Step::Wait(wait) => {
                wait.run().await;
                Flow::Continue
            }
            Step::WriteRaw(bytes) => self.write(&bytes).await,
            Step::HalfClose => {
                if let Some(io) = self.io.as_mut() {
                    let _ = io.shutdown().await;
                }
                Flow::Continue
            }
            Step::Close => {
                self.close().await;
                Flow::End
            }
            Step::Reset => {
                self.reset();
                Flow::End
            }
            Step::Echo => {
                self.echo().await;
                Flow::End
            }
            Step::ServeForever(reply) => {
                while self.read_request().await.is_some() {
                    if self.write_reply(&reply).await == Flow::End {
                        break;
                    }
                }
                Flow::End
            }
            Step::ServeWith(f) => {
                while let Some(req) = self.read_request().await {
                    if self.write_reply(&f(&req)).await == Flow::End {
                        break;
                    }
                }
                Flow::End
            }
        }
    }

    /// After the last step: EOF is fine, anything else is plan exhaustion.
    async fn after_plan(&mut self) {
        while self.buf.is_empty() {
            match self.fill().await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let first_line = self.buf[..]
            .split(|b| *b == b'\n')
            .next()
            .unwrap_or_default();
        let first_line = String::from_utf8_lossy(first_line);
        self.shared.error(format!(
            "conn {}: plan exhausted after {} request(s); unexpected input: {:?}",
            self.id,
            self.served,
            first_line.trim_end()
        ));
        self.close().await;
    }

    async fn fill(&mut self) -> io::Result<usize> {
        let io = self
            .io
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
        self.buf.reserve(8 * 1024);
        io.read_buf(&mut self.buf).await
    }

    async fn write(&mut self, bytes: &[u8]) -> Flow {
        let Some(io) = self.io.as_mut() else {
            return Flow::End;
        };
        let res = async {
            io.write_all(bytes).await?;
            io.flush().await
        }
        .await;
        match res {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::End,
        }
    }

    pub(super) async fn close(&mut self) {
        if let Some(mut io) = self.io.take() {
            let _ = io.shutdown().await;
        }
    }

    fn reset(&mut self) {
        if let Some(io) = self.io.take() {
            io.reset();
        }
    }

    async fn echo(&mut self) {
        loop {
            if !self.buf.is_empty() {
                let data = self.buf.split().freeze();
                if self.write(&data).await == Flow::End {
                    return;
                }
            }
            match self.fill().await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }

    /// Reads and records one request. `None` ends the connection (EOF, failure, or a malformed
    /// request, which is recorded as an error and closes the connection).
    async fn read_request(&mut self) -> Option<RecordedRequest> {
        match self.parse_request().await {
            Ok(req) => {
                self.served += 1;
                self.last_was_head = req.method == Method::HEAD;
                self.requests.push(req.clone());
                Some(req)
            }
            Err(ReadErr::Eof | ReadErr::Gone) => None,
            Err(ReadErr::Malformed(why)) => {
                self.shared.error(format!(
                    "conn {}: malformed request #{}: {why}",
                    self.id, self.served
                ));
                self.close().await;
                None
            }
        }
    }

    async fn more(&mut self) -> Result<(), ReadErr> {
        match self.fill().await {
            Ok(0) | Err(_) => Err(ReadErr::Gone),
            Ok(_) => Ok(()),
        }
    }

    async fn parse_request(&mut self) -> Result<RecordedRequest, ReadErr> {
        // Head.
        let (head_len, method, target, version, headers, names) = loop {
            if !self.buf.is_empty() {
                let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut req = httparse::Request::new(&mut slots);
                match req.parse(&self.buf) {
                    Ok(httparse::Status::Complete(len)) => {
                        break (
                            len,
                            req.method.unwrap_or_default().to_owned(),
                            req.path.unwrap_or_default().to_owned(),
                            req.version.unwrap_or(1),
                            header_map(req.headers)?,
                            req.headers.iter().map(|h| h.name.to_owned()).collect(),
                        );
                    }
                    Ok(httparse::Status::Partial) if self.buf.len() > MAX_HEAD => {
                        return Err(ReadErr::Malformed("request head too large".into()));
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(e) => return Err(ReadErr::Malformed(format!("{e}"))),
                }
            }
            match self.fill().await {
                Ok(0) if self.buf.is_empty() => return Err(ReadErr::Eof),
                Ok(0) | Err(_) => return Err(ReadErr::Gone),
                Ok(_) => {}
            }
        };
        let _ = self.buf.split_to(head_len);
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| ReadErr::Malformed(format!("method: {e}")))?;
        let version = if version == 0 {
            Version::HTTP_10
        } else {
            Version::HTTP_11
        };

        let expects = headers
            .get("expect")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if self.continue_expected
            && expects
            && self.write(b"HTTP/1.1 100 Continue\r\n\r\n").await == Flow::End
        {
            return Err(ReadErr::Gone);
        }

        // Body.
        let chunked = match headers.get_all("transfer-encoding").iter().next_back() {
            Some(te) => {
                let te = te.to_str().unwrap_or_default().to_ascii_lowercase();
                if te.rsplit(',').next().map(str::trim) == Some("chunked") {
                    true
                } else {
                    return Err(ReadErr::Malformed(format!(
                        "unsupported transfer-encoding {te:?}"
                    )));
                }
            }
            None => false,
        };
        let mut trailers = HeaderMap::new();
        let body = if chunked {
            self.read_chunked(&mut trailers).await?
        } else {
            let mut lengths = headers.get_all("content-length").iter().map(|v| {
                v.to_str()
                    .ok()
                    .and_then(|s| s.trim().parse::<usize>().ok())
                    .ok_or_else(|| ReadErr::Malformed(format!("bad content-length {v:?}")))
            });
            let len = match lengths.next() {
                None => 0,
                Some(first) => {
                    let first = first?;
                    for other in lengths {
                        if other? != first {
                            return Err(ReadErr::Malformed("conflicting content-length".into()));
                        }
                    }
                    first
                }
            };
            self.read_exact(len).await?
        };

        Ok(RecordedRequest {
            conn_id: self.id,
            index: self.served,
            method,
            target,
            version,
            headers,
            names,
            body,
            chunked,
            trailers,
        })
    }

    async fn read_exact(&mut self, len: usize) -> Result<Bytes, ReadErr> {
        while self.buf.len() < len {
            self.more().await?;
        }
        Ok(self.buf.split_to(len).freeze())
    }

    /// One line without its line ending (`\r\n` or a bare `\n`).
    async fn read_line(&mut self) -> Result<Bytes, ReadErr> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let mut line = self.buf.split_to(pos + 1);
                line.truncate(pos);
                if line.last() == Some(&b'\r') {
                    line.truncate(pos - 1);
                }
                return Ok(line.freeze());
            }
            if self.buf.len() > MAX_LINE {
                return Err(ReadErr::Malformed("line too long in chunked body".into()));
            }
            self.more().await?;
        }
    }

    async fn read_chunked(&mut self, trailers: &mut HeaderMap) -> Result<Bytes, ReadErr> {
        let mut body = BytesMut::new();
        loop {
            let line = self.read_line().await?;
            let line = String::from_utf8_lossy(&line);
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| ReadErr::Malformed(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                loop {
                    let line = self.read_line().await?;
                    if line.is_empty() {
                        return Ok(body.freeze());
                    }
                    let text = String::from_utf8_lossy(&line);
                    let (name, value) = text
                        .split_once(':')
                        .ok_or_else(|| ReadErr::Malformed(format!("bad trailer {text:?}")))?;
                    let name = HeaderName::from_bytes(name.trim().as_bytes())
                        .map_err(|e| ReadErr::Malformed(format!("trailer name: {e}")))?;
                    let value = HeaderValue::from_str(value.trim())
                        .map_err(|e| ReadErr::Malformed(format!("trailer value: {e}")))?;
                    trailers.append(name, value);
                }
            }
            body.extend_from_slice(&self.read_exact(size).await?);
            if !self.read_line().await?.is_empty() {
                return Err(ReadErr::Malformed("missing CRLF after chunk data".into()));
            }
        }
    }

    /// Writes a reply as scripted. Write failures (the client left) end the connection.
    async fn write_reply(&mut self, reply: &Reply) -> Flow {
        for wait in &reply.before {
            wait.run().await;
        }
        if let Some(raw) = &reply.raw {
            if self.write(raw).await == Flow::End {
                return Flow::End;
            }
        } else if self.write_message(reply).await == Flow::End {
            return Flow::End;
        }
        match reply.after {
            After::KeepOpen => Flow::Continue,
            After::Close => {
                self.close().await;
                Flow::End
            }
            After::Reset => {
                self.reset();
                Flow::End
            }
        }
    }

    async fn write_message(&mut self, reply: &Reply) -> Flow {
        if self.write(reply.head().as_bytes()).await == Flow::End {
            return Flow::End;
        }
        let head_only = self.last_was_head;
        if head_only {
            return Flow::Continue;
        }
        let chunked = matches!(reply.framing, Framing::Chunked { .. });
        for part in &reply.body {
            let flow = match part {
                Part::Data(data) if chunked => {
                    if data.is_empty() {
                        continue;
                    }
                    let mut chunk = BytesMut::with_capacity(data.len() + 16);
                    chunk.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
                    chunk.extend_from_slice(data);
                    chunk.extend_from_slice(b"\r\n");
                    self.write(&chunk).await
                }
                Part::Data(data) => self.write(data).await,
                Part::Wait(wait) => {
                    wait.run().await;
                    Flow::Continue
                }
            };
            if flow == Flow::End {
                return Flow::End;
            }
        }
        if reply.framing == (Framing::Chunked { terminate: true }) {
            return self.write(b"0\r\n\r\n").await;
        }
        Flow::Continue
    }
}

fn header_map(headers: &[httparse::Header<'_>]) -> Result<HeaderMap, ReadErr> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for h in headers {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|e| ReadErr::Malformed(format!("header name {:?}: {e}", h.name)))?;
        let value = HeaderValue::from_bytes(h.value)
            .map_err(|e| ReadErr::Malformed(format!("header value for {:?}: {e}", h.name)))?;
        map.append(name, value);
    }
    Ok(map)
}
