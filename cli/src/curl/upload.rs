//! `-T FILE`: what a transfer uploads, opened when the transfer starts, as curl opens it.
//!
//! A regular file is read whole and goes with its `Content-Length`. Anything whose size is not
//! known ahead (`-T -` and `-T .`, stdin; a pipe, a FIFO or a device named as a file) is
//! *streamed*: read in blocks while the request goes, sent `Transfer-Encoding: chunked` over
//! HTTP/1.1 (DATA frames over HTTP/2), as curl 7.88 sends it. curl refuses such an upload
//! under `--http1.0` (exit 25), and so does poolcurl.
//!
//! A request that has to go again (a redirect that keeps the method, a `417`, an authentication
//! challenge) reads the stream again from where it started, as curl's seek callback does: a
//! regular file (stdin redirected from one) goes back to its starting offset; a pipe or a
//! terminal cannot, so unless nothing has been read from it yet (the server answered before the
//! body went, as it does to a request that waited for `100 Continue`) the request fails with
//! curl's exit 65 ("seek callback returned error 2"). `--limit-rate` paces it as it paces a
//! whole file. What is not done: `-H "Transfer-Encoding:"` does not turn the chunking off (curl
//! then sends the bytes unframed).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::Frame;
use std::os::fd::AsFd as _;

use tokio::io::{AsyncRead, AsyncSeek, ReadBuf};

use super::exit::CurlError;
use super::lock;

/// The data a streamed upload reads at a time: curl's upload buffer less the room it keeps for
/// a chunk's framing, so each block is one chunk of curl's size.
const BLOCK: usize = 64 * 1024 - 12;

/// What one transfer uploads.
#[derive(Debug, Clone)]
pub(crate) enum UploadSource {
    /// A regular file's contents, sent with their length.
    Whole(Bytes),
    /// A source of unknown size, streamed.
    Stream(Arc<Streamed>),
}

/// Opens what `-T NAME` names for one transfer: `-` and `.` are stdin.
///
/// # Errors
///
/// Exit 26 when the file cannot be opened or read.
pub(crate) fn open(name: &str) -> Result<UploadSource, CurlError> {
    let cannot = |error: io::Error| CurlError::read_failed(name, &error);
    let file = if name == "-" || name == "." {
        // Its own descriptor for stdin, so that a file redirected to it can be sought.
        std::fs::File::from(io::stdin().as_fd().try_clone_to_owned().map_err(cannot)?)
    } else {
        std::fs::File::open(name).map_err(cannot)?
    };
    let meta = file.metadata().map_err(cannot)?;
    if meta.is_file() && name != "-" && name != "." {
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        io::Read::read_to_end(&mut &file, &mut bytes).map_err(cannot)?;
        return Ok(UploadSource::Whole(bytes.into()));
    }
    // stdin, whatever it is, and a FIFO, a device or a socket: curl ignores their size and
    // streams them.
    let reader = if meta.is_file() {
        let start = io::Seek::stream_position(&mut &file).map_err(cannot)?;
        Reader::Seekable {
            file: tokio::fs::File::from_std(file),
            start,
            seeking: false,
        }
    } else {
        Reader::Once(Box::new(tokio::fs::File::from_std(file)))
    };
    Ok(UploadSource::Stream(Streamed::new(reader)))
}

/// Where a stream's bytes come from.
enum Reader {
    /// A regular file: can go back to the offset it started at.
    Seekable {
        file: tokio::fs::File,
        start: u64,
        /// A seek back to `start` has been started and not completed.
        seeking: bool,
    },
    /// A pipe, a terminal, a device: read once.
    Once(Box<dyn AsyncRead + Send + Unpin>),
}

impl Reader {
    /// Goes back to where the stream started.
    fn poll_rewind(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Reader::Seekable {
            file,
            start,
            seeking,
        } = self
        else {
            return Poll::Ready(Ok(()));
        };
        let mut file = Pin::new(file);
        if !*seeking {
            // A read the last body left in flight completes first (tokio refuses to seek
            // while one is pending).
            ready!(file.as_mut().poll_complete(cx))?;
            file.as_mut().start_seek(io::SeekFrom::Start(*start))?;
            *seeking = true;
        }
        ready!(file.poll_complete(cx))?;
        *seeking = false;
        Poll::Ready(Ok(()))
    }

    fn poll_read(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self {
            Reader::Seekable { file, .. } => Pin::new(file).poll_read(cx, buf),
            Reader::Once(reader) => Pin::new(reader).poll_read(cx, buf),
        }
    }
}

/// `-C` and `-r` on the upload of a whole file, as curl 7.88 applies them to a PUT: `-C N`
/// sends the file from byte N with `Content-Range: bytes N-LAST/SIZE` (exit 18 when nothing is
/// left), `-C -` the whole file as `bytes 0-LAST/SIZE` (curl does not ask the server how much
/// it has), and `-r RANGE` the whole file as `bytes RANGE/SIZE`. A streamed upload takes
/// neither (its size is not known ahead).
///
/// # Errors
///
/// Exit 18 when `-C` starts at or past the file's end.
pub(crate) fn resume(
    bytes: Bytes,
    continue_at: Option<&str>,
    range: Option<&str>,
) -> Result<(Bytes, Option<http::HeaderValue>), CurlError> {
    let size = bytes.len() as u64;
    let last = i128::from(size) - 1;
    let header = |text: String| http::HeaderValue::from_str(&text).ok();
    match continue_at.map(|at| (at, at.parse::<u64>())) {
        Some(("-", _)) => return Ok((bytes, header(format!("bytes 0-{last}/{size}")))),
        Some((_, Ok(from))) if from >= size && from > 0 => {
            return Err(CurlError::new(18, "File already completely uploaded"));
        }
        Some((_, Ok(from))) if from > 0 => {
            let rest = bytes.slice(from as usize..);
            return Ok((rest, header(format!("bytes {from}-{last}/{size}"))));
        }
        _ => {}
    }
    Ok(match range {
        Some(range) => (bytes, header(format!("bytes {range}/{size}"))),
        None => (bytes, None),
    })
}

/// A streamed upload's source, shared by the bodies of the requests that may send it.
pub(crate) struct Streamed {
    state: Mutex<State>,
    /// Signalled when the source ends or a body is dropped (see [`settled`](Self::settled)).
    settle: tokio::sync::Notify,
}

impl std::fmt::Debug for Streamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("Streamed")
            .field("read", &state.read)
            .field("ended", &state.ended)
            .finish_non_exhaustive()
    }
}

struct State {
    /// stdin or the file; one reader for every body, so a read in flight when a body is
    /// dropped is not lost to the next.
    reader: Reader,
    /// The next body reads from the start again: the reader goes back first.
    rewind: bool,
    /// The block being read into (kept across `Pending`).
    buffer: Vec<u8>,
    /// Data bytes read so far.
    read: u64,
    /// The bytes the blocks take as HTTP/1.1 chunks, with their size lines and CRLFs.
    chunked: u64,
    /// Whether the source reached its end.
    ended: bool,
    /// The blocks sent, kept for `-v` and `--trace` when [`Streamed::keep_blocks`] asked.
    blocks: Option<Vec<Bytes>>,
    /// Whether every block is kept (a `--trace` dump), or only the first (`-v` shows no more:
    /// a stream of any length costs one block).
    keep_all: bool,
    /// Whether a request's body is reading the source.
    active: bool,
}

impl Streamed {
    fn new(reader: Reader) -> Arc<Streamed> {
        Arc::new(Streamed {
            state: Mutex::new(State {
                reader,
                rewind: false,
                buffer: Vec::new(),
                read: 0,
                chunked: 0,
                ended: false,
                blocks: None,
                keep_all: false,
                active: false,
            }),
            settle: tokio::sync::Notify::new(),
        })
    }

    /// Keeps a copy of the blocks sent, for the trace: `all` of them for a dump, else the
    /// first.
    pub(crate) fn keep_blocks(&self, all: bool) {
        let mut state = lock(&self.state);
        if state.blocks.is_none() {
            state.blocks = Some(Vec::new());
        }
        state.keep_all |= all;
    }

    /// A body for one request, from the stream's start (its counts start again too).
    ///
    /// # Errors
    ///
    /// Exit 65 once data has been read from a stream that cannot go back.
    pub(crate) fn body(self: &Arc<Self>) -> Result<StreamBody, CurlError> {
        let mut state = lock(&self.state);
        if state.read > 0 {
            if matches!(state.reader, Reader::Once(_)) {
                return Err(CurlError::new(65, "seek callback returned error 2"));
            }
            state.rewind = true;
            state.read = 0;
            state.chunked = 0;
            state.ended = false;
            if let Some(blocks) = &mut state.blocks {
                blocks.clear();
            }
        }
        state.active = true;
        Ok(StreamBody {
            source: self.clone(),
            block: BLOCK,
        })
    }

    /// Waits until the last body has sent everything or was dropped (its request ended
    /// without it, or its connection closed). A server may answer before an upload is done;
    /// curl's transfer still ends only once the upload has.
    pub(crate) async fn settled(&self) {
        loop {
            let notified = self.settle.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the state is read: a signal in between is not lost.
            notified.as_mut().enable();
            {
                let state = lock(&self.state);
                if state.ended || !state.active {
                    return;
                }
            }
            notified.await;
        }
    }

    /// The bytes sent so far as curl counts `%{size_upload}`: each chunk with its framing and
    /// the last chunk's 5 bytes over HTTP/1.1 (`chunked`), the data alone over HTTP/2.
    pub(crate) fn sent(&self, chunked: bool) -> u64 {
        let state = lock(&self.state);
        match chunked {
            true => {
                state.chunked
                    + if state.ended {
                        LAST_CHUNK.len() as u64
                    } else {
                        0
                    }
            }
            false => state.read,
        }
    }

    /// The blocks sent so far as the trace shows them (each with its chunk framing when
    /// `chunked`), and whether the upload ended; only what [`keep_blocks`](Self::keep_blocks)
    /// kept.
    pub(crate) fn shown(&self, chunked: bool) -> (Vec<u8>, bool) {
        let state = lock(&self.state);
        let mut shown = Vec::new();
        for block in state.blocks.iter().flatten() {
            if chunked {
                shown.extend_from_slice(format!("{:X}\r\n", block.len()).as_bytes());
                shown.extend_from_slice(block);
                shown.extend_from_slice(b"\r\n");
            } else {
                shown.extend_from_slice(block);
            }
        }
        (shown, state.ended)
    }
}

/// A streamed upload's source failed to read (`-T DIR`, an I/O error): curl's exit 26, not
/// the peer's failure that a body error would otherwise read as ([`super::exit::classify`]
/// finds it inside the `io::Error` the body yields).
#[derive(Debug)]
pub(crate) struct UploadReadFailed(pub(crate) io::Error);

impl UploadReadFailed {
    fn wrap(error: io::Error) -> io::Error {
        io::Error::new(error.kind(), UploadReadFailed(error))
    }
}

impl std::fmt::Display for UploadReadFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "reading the upload failed: {}", self.0)
    }
}

impl std::error::Error for UploadReadFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The last chunk of a chunked body, as hyper writes it (no trailers).
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// One request's body reading a [`Streamed`] source.
#[derive(Debug)]
pub(crate) struct StreamBody {
    source: Arc<Streamed>,
    /// The most one read (one chunk) takes.
    block: usize,
}

impl StreamBody {
    /// Reads at most `block` bytes at a time (at least 1), so that a pace cutting the upload
    /// into blocks of that size sends each as it was read and counted: one chunk each.
    pub(crate) fn in_blocks_of(mut self, block: usize) -> StreamBody {
        self.block = block.clamp(1, BLOCK);
        self
    }
}

impl http_body::Body for StreamBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let mut state = lock(&self.source.state);
        let state = &mut *state;
        if state.rewind {
            ready!(state.reader.poll_rewind(cx))?;
            state.rewind = false;
        }
        if state.ended {
            return Poll::Ready(None);
        }
        if state.buffer.len() != BLOCK {
            state.buffer.resize(BLOCK, 0);
        }
        let mut buf = ReadBuf::new(&mut state.buffer[..self.block]);
        ready!(state.reader.poll_read(cx, &mut buf)).map_err(UploadReadFailed::wrap)?;
        let n = buf.filled().len();
        if n == 0 {
            state.ended = true;
            self.source.settle.notify_waiters();
            return Poll::Ready(None);
        }
        let block = Bytes::copy_from_slice(&state.buffer[..n]);
        state.read += n as u64;
        state.chunked += chunk_len(n);
        let keep_all = state.keep_all;
        if let Some(blocks) = state.blocks.as_mut().filter(|b| keep_all || b.is_empty()) {
            blocks.push(block.clone());
        }
        Poll::Ready(Some(Ok(Frame::data(block))))
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        lock(&self.source.state).active = false;
        self.source.settle.notify_waiters();
    }
}

/// The bytes a chunk of `n` data bytes takes on the wire: its size in hex, CRLF, the data,
/// CRLF.
fn chunk_len(n: usize) -> u64 {
    let digits = format!("{n:X}").len();
    (digits + 2 + n + 2) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    fn streamed(bytes: &'static [u8]) -> Arc<Streamed> {
        Streamed::new(Reader::Once(Box::new(bytes)))
    }

    #[tokio::test]
    async fn a_stream_counts_its_chunks_and_goes_once() {
        let source = streamed(b"stdin-data\n");
        source.keep_blocks(true);
        let body = source.body().unwrap();
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(&collected[..], b"stdin-data\n");
        // curl's figures for the same 11 bytes: 16 for the chunk, 5 for the last one.
        assert_eq!(source.sent(true), 21);
        assert_eq!(source.sent(false), 11);
        assert_eq!(
            source.shown(true),
            (b"B\r\nstdin-data\n\r\n".to_vec(), true)
        );
        let error = source.body().unwrap_err();
        assert_eq!(error.code(), 65);
    }

    #[tokio::test]
    async fn settled_waits_for_the_end_or_the_body_to_go() {
        let source = streamed(b"abc");
        source.settled().await; // no body yet: nothing to wait for
        let body = source.body().unwrap();
        let waiting = tokio::spawn({
            let source = source.clone();
            async move { source.settled().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the body has not been read");
        drop(body);
        waiting.await.unwrap();
        let source = streamed(b"abc");
        let body = source.body().unwrap();
        let mut body = std::pin::pin!(body);
        while body.frame().await.is_some() {}
        source.settled().await; // ended, with the body still alive
    }

    #[tokio::test]
    async fn smaller_blocks_are_smaller_chunks_counted_as_sent() {
        let source = streamed(b"abcdef");
        source.keep_blocks(false);
        let body = source.body().unwrap().in_blocks_of(4);
        let mut body = std::pin::pin!(body);
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.unwrap().into_data().unwrap());
        }
        assert_eq!(frames, [&b"abcd"[..], &b"ef"[..]]);
        assert_eq!(source.sent(true), (1 + 2 + 4 + 2) + (1 + 2 + 2 + 2) + 5);
        // -v keeps the first block only: all it shows is that block's size.
        assert_eq!(source.shown(true), (b"4\r\nabcd\r\n".to_vec(), true));
    }

    #[tokio::test]
    async fn an_unread_stream_can_be_sent_again_and_empty_is_one_last_chunk() {
        let source = streamed(b"");
        drop(source.body().unwrap());
        let body = source
            .body()
            .expect("nothing was read: the stream is still whole");
        assert!(body.collect().await.unwrap().to_bytes().is_empty());
        assert_eq!(source.sent(true), LAST_CHUNK.len() as u64);
        assert_eq!(source.shown(true), (Vec::new(), true), "no blocks kept");
    }

    #[tokio::test]
    async fn a_regular_file_goes_back_to_where_it_started() {
        let dir = crate::scratch::Scratch::new("rewind");
        let path = dir.join("in.txt");
        std::fs::write(&path, "skip|sent twice").unwrap();
        let mut file = std::fs::File::open(&path).unwrap();
        io::Seek::seek(&mut file, io::SeekFrom::Start(5)).unwrap();
        let reader = Reader::Seekable {
            file: tokio::fs::File::from_std(file),
            start: 5,
            seeking: false,
        };
        let source = Streamed::new(reader);
        for _ in 0..2 {
            let body = source.body().expect("a file can go back");
            let sent = body.collect().await.unwrap().to_bytes();
            assert_eq!(&sent[..], b"sent twice");
            assert_eq!(source.sent(false), 10, "each request counts its own");
        }
    }

    #[test]
    fn resuming_an_upload_sends_the_rest_with_curls_content_range() {
        let file = Bytes::from_static(b"0123456789\n");
        let text = |r: (Bytes, Option<http::HeaderValue>)| {
            let range = r.1.map(|v| v.to_str().unwrap().to_owned());
            (String::from_utf8(r.0.to_vec()).unwrap(), range)
        };
        let range = |s: &str| Some(s.to_owned());
        let whole = "0123456789\n".to_owned();
        assert_eq!(
            text(resume(file.clone(), Some("5"), None).unwrap()),
            ("56789\n".to_owned(), range("bytes 5-10/11"))
        );
        assert_eq!(
            text(resume(file.clone(), Some("-"), None).unwrap()),
            (whole.clone(), range("bytes 0-10/11"))
        );
        assert_eq!(
            text(resume(file.clone(), None, Some("2-4")).unwrap()),
            (whole.clone(), range("bytes 2-4/11"))
        );
        assert_eq!(
            text(resume(file.clone(), Some("3"), Some("1-2")).unwrap()),
            ("3456789\n".to_owned(), range("bytes 3-10/11")),
            "-C wins over -r"
        );
        assert_eq!(
            text(resume(file.clone(), Some("0"), None).unwrap()),
            (whole, None)
        );
        assert_eq!(resume(file, Some("11"), None).unwrap_err().code(), 18);
    }

    #[test]
    fn chunk_framing_is_counted_in_hex_digits() {
        assert_eq!(chunk_len(1), 1 + 2 + 1 + 2);
        assert_eq!(chunk_len(BLOCK), (4 + 2 + BLOCK + 2) as u64);
        assert_eq!(chunk_len(0x1_0000), 5 + 2 + 0x1_0000 + 2);
    }

    #[test]
    fn regular_files_are_whole_and_missing_ones_exit_26() {
        let dir = crate::scratch::Scratch::new("upload");
        let file = dir.join("up.txt");
        std::fs::write(&file, "hello\n").unwrap();
        match open(file.to_str().unwrap()).unwrap() {
            UploadSource::Whole(bytes) => assert_eq!(&bytes[..], b"hello\n"),
            UploadSource::Stream(_) => panic!("a regular file has a length"),
        }
        let error = open(dir.join("missing").to_str().unwrap()).unwrap_err();
        assert_eq!(error.code(), 26);
    }
}
