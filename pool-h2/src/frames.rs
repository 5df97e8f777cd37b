//! The empty DATA frames a server sends on a connection, counted before h2 counts them.
//!
//! h2 (0.4.16 on) counts the DATA frames it receives that carry no data and do not end their
//! stream, over the connection's whole life, and ends the connection itself with
//! `GOAWAY(ENHANCE_YOUR_CALM, "too_many_data_frames")` past [`H2_EMPTY_DATA_LIMIT`], failing
//! every response still arriving on it. The limit guards against a flood; it has no setting.
//! But servers built on hyper send one such frame wherever a response body yields an empty
//! chunk, which a relay does once per response when its upstream's chunked body ends (hyper's
//! HTTP/1 client yields the terminator as an empty chunk; a gateway forwards it): against
//! such a server every connection ended under its hundred and first response, which failed
//! even when requests went one at a time.
//!
//! [`watch_frames`] puts a reader under hyper's transport that finds the frame boundaries in
//! what the server sends (every frame begins with a 9-byte header saying its length, type and
//! flags; the server's first bytes are its SETTINGS frame) and counts those frames in a
//! [`FrameWatch`]. Once the count is not zero the server is one that sends them: the
//! connection, and every later connection of its cell (`CalmHint::sends_empty_data`), takes
//! at most [`EMPTY_DATA_CEILING`] streams (more than about 90 streams at once would send h2
//! past its limit on their own, one frame each). Each dispatch, and each poll of the driver,
//! reads the count; once the frames counted plus the streams taken reach [`RETIRE_AT`], the
//! generation retires (`CloseReason::EmptyDataFrames`): the streams in flight end on the
//! connection, and the next requests go to a new one. A connection carries about 45 such
//! responses, where h2 would end it under the hundredth. A server that never sends an empty
//! frame costs the scan of each frame's header, and one load at each dispatch and poll.
//!
//! The first connection to such a server may still lose responses: before its first empty
//! frame it took as many streams as the server allows, and if more than about 90 were open
//! then, their frames reach h2's limit before they end. Later connections keep under it.
//!
//! The same reader notes the server's last words for the connection's close event (a
//! `GOAWAY`'s code and debug text, the stream ending mid-frame, a transport error: see
//! `last_words.rs`); the record asks [`FrameWatch`] for them once the driver installs it.
//!
//! What it does not do: change a byte (the reader only looks at what the transport wrote into
//! the buffer), count what h2 would not (it also counts frames on streams h2 has forgotten,
//! which only retires a connection a little early), or look at anything but frame headers
//! and the payload of a `GOAWAY`.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use pool_core::CloseReason;
use pool_core::connection::{ConnectionRecord, EndWitness};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::handshake::H2Home;
use crate::last_words::{GOAWAY, GOAWAY_KEPT, LastWords, Where};
use crate::streams::Streams;

/// h2's limit on empty DATA frames that do not end their stream, over a connection's life
/// (`MAX_RECV_EMPTY_DATA_FRAMES` in h2 0.4.20; h2 ends the connection at the next one).
pub(crate) const H2_EMPTY_DATA_LIMIT: usize = 100;

/// Room left below h2's limit for streams that send more than one such frame.
pub(crate) const RETIRE_MARGIN: usize = 10;

/// The most streams a connection takes once its server is known to send empty DATA frames.
pub(crate) const EMPTY_DATA_CEILING: usize = 45;

/// A connection retires once the empty DATA frames counted plus the streams taken reach this
/// (45). Between two checks (each dispatch and each poll of the driver check) that sum grows
/// only by the streams reserved meanwhile, at most the ceiling, so the first check past it
/// sees at most `RETIRE_AT - 1 + EMPTY_DATA_CEILING` (89); the streams then taken each add one
/// frame more, which stays within the margin below h2's limit.
pub(crate) const RETIRE_AT: usize = H2_EMPTY_DATA_LIMIT - RETIRE_MARGIN - EMPTY_DATA_CEILING;

/// The peer sent `empty` empty DATA frames that did not end their stream (the driver asks):
/// the connection, and the cell's further ones, take fewer streams from now on; and once the
/// frames and the streams taken reach [`RETIRE_AT`], the generation retires. Called after
/// every poll once the peer sent one: the generation's dispatches check too, but a connection
/// may get there between them.
#[cold]
#[inline(never)]
pub(crate) fn saw_empty_data(
    streams: &Streams,
    record: &pool_core::sync::Arc<ConnectionRecord>,
    home: &dyn H2Home,
    empty: usize,
) {
    if streams.saw_empty_data() {
        tracing::debug!(
            connection = record.info().id().as_u64(),
            empty_data_frames = empty,
            streams = EMPTY_DATA_CEILING,
            "the server sends empty DATA frames, which h2 allows a connection only so many of: \
             fewer streams per connection"
        );
    }
    if streams.frames_spent() {
        retire_before_the_frame_limit(record, home);
    }
}

/// The server's empty DATA frames plus the streams taken reached [`RETIRE_AT`]: the
/// generation takes no more streams, so that h2 does not end the connection under the next
/// responses; those in flight end on it. Only the first close counts (a record closes once).
#[cold]
#[inline(never)]
pub(crate) fn retire_before_the_frame_limit(
    record: &pool_core::sync::Arc<ConnectionRecord>,
    home: &dyn H2Home,
) {
    if record.close(CloseReason::EmptyDataFrames, None) {
        tracing::debug!(
            connection = record.info().id().as_u64(),
            "the server sent nearly as many empty DATA frames as h2 allows a connection: \
             retiring it"
        );
        home.retire(record);
    }
}

/// The frame type of DATA, and its flags.
const DATA: u8 = 0x0;
const END_STREAM: u8 = 0x1;
const PADDED: u8 = 0x8;

/// Whether a connection whose server sent `counted` empty DATA frames, with `taken` streams
/// taken, should retire ([`RETIRE_AT`]).
pub(crate) fn near_the_limit(counted: usize, taken: usize) -> bool {
    counted > 0 && counted + taken >= RETIRE_AT
}

/// What one connection's transport read of its server's frames, shared by the transport,
/// the driver and the record: the empty DATA frames counted, and the server's last words.
#[derive(Clone, Debug, Default)]
pub struct FrameWatch {
    seen: Arc<Seen>,
}

/// The shared part of a [`FrameWatch`].
#[derive(Debug, Default)]
struct Seen {
    empty: AtomicUsize,
    words: LastWords,
}

impl FrameWatch {
    /// Empty DATA frames that did not end their stream, received so far.
    pub(crate) fn empty_data(&self) -> usize {
        self.seen.empty.load(Ordering::Relaxed)
    }

    /// What the connection's record asks at its close for the cause (see `last_words.rs`).
    pub(crate) fn witness(&self) -> Arc<dyn EndWitness> {
        self.seen.clone()
    }
}

impl EndWitness for Seen {
    fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.words
            .cause()
            .map(|e| e as &(dyn std::error::Error + Send + Sync + 'static))
    }
}

/// Wraps an HTTP/2 client transport (before hyper's adapter) so that it counts the server's
/// empty DATA frames into the returned [`FrameWatch`], which [`handshake`](crate::handshake)
/// takes.
pub fn watch_frames<I>(io: I) -> (WatchedIo<I>, FrameWatch) {
    let watch = FrameWatch::default();
    let io = WatchedIo {
        io,
        scan: Scan::default(),
        watch: watch.clone(),
    };
    (io, watch)
}

/// A transport that counts the empty DATA frames it reads (see the module docs).
#[derive(Debug)]
pub struct WatchedIo<I> {
    io: I,
    scan: Scan,
    watch: FrameWatch,
}

impl<I: AsyncRead + Unpin> AsyncRead for WatchedIo<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let room = buf.remaining() > 0;
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        let seen = &this.watch.seen;
        match &polled {
            Poll::Ready(Ok(())) if buf.filled().len() == before && room => {
                seen.words.ended(this.scan.position());
            }
            Poll::Ready(Ok(())) => {
                let found = this.scan.feed(&buf.filled()[before..], &seen.words);
                if found > 0 {
                    seen.empty.fetch_add(found, Ordering::Relaxed);
                }
            }
            Poll::Ready(Err(e)) => seen.words.failed(true, e),
            Poll::Pending => {}
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WatchedIo<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.note_write_error(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.note_write_error(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.note_write_error(polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<I> WatchedIo<I> {
    /// Notes a write's error as the server's last word, if it is the first (see
    /// `last_words.rs`); passes the result on.
    fn note_write_error<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &polled {
            self.watch.seen.words.failed(false, e);
        }
        polled
    }
}

/// Where the reader is in the server's frames.
#[derive(Debug, Default)]
struct Scan {
    /// The current frame header's bytes read so far.
    header: [u8; 9],
    /// How many of `header` are read; 9 means the header is whole and its payload is read.
    have: u8,
    /// Payload bytes of the current frame still to pass.
    left: usize,
    /// The current frame is a padded DATA frame that does not end its stream, whose first
    /// payload byte (its padding's length) is next.
    pad_length_next: bool,
    /// The current frame is a `GOAWAY`: the start of its payload so far (see
    /// `last_words.rs`).
    goaway: Option<Vec<u8>>,
}

impl Scan {
    /// Reads `bytes`, the next the server sent; returns the empty DATA frames (not ending
    /// their stream) whose headers, or padding lengths, they completed. A `GOAWAY` they
    /// complete goes to `words`.
    fn feed(&mut self, mut bytes: &[u8], words: &LastWords) -> usize {
        let mut found = 0;
        while !bytes.is_empty() {
            if self.have < 9 {
                let take = (9 - usize::from(self.have)).min(bytes.len());
                let at = usize::from(self.have);
                self.header[at..at + take].copy_from_slice(&bytes[..take]);
                self.have += take as u8;
                bytes = &bytes[take..];
                if self.have == 9 {
                    found += self.header_done();
                    if self.header[3] == GOAWAY {
                        self.goaway_begins(words);
                    }
                }
                continue;
            }
            if self.pad_length_next {
                self.pad_length_next = false;
                // Data is what the payload holds besides the length byte and the padding.
                if usize::from(bytes[0]) + 1 == self.left {
                    found += 1;
                }
            }
            let pass = self.left.min(bytes.len());
            if let Some(kept) = &mut self.goaway {
                let room = GOAWAY_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&bytes[..pass.min(room)]);
            }
            self.left -= pass;
            bytes = &bytes[pass..];
            if self.left == 0 {
                self.have = 0;
                if let Some(kept) = self.goaway.take() {
                    words.goaway(&kept);
                }
            }
        }
        found
    }

    /// A `GOAWAY`'s header is whole: keep the start of its payload (an empty one says
    /// nothing).
    #[cold]
    fn goaway_begins(&mut self, words: &LastWords) {
        if self.left == 0 {
            words.goaway(&[]);
        } else {
            self.goaway = Some(Vec::with_capacity(self.left.min(GOAWAY_KEPT)));
        }
    }

    /// The payload length the current frame's header says (its first three bytes).
    fn payload_length(&self) -> usize {
        let [l0, l1, l2, ..] = self.header;
        usize::from(l0) << 16 | usize::from(l1) << 8 | usize::from(l2)
    }

    /// Where the reader is now, for a stream that ends here.
    fn position(&self) -> Where {
        match self.have {
            0 => Where::Between,
            have @ 1..=8 => Where::InHeader(have),
            _ => Where::InPayload {
                kind: self.header[3],
                length: self.payload_length(),
                missing: self.left,
            },
        }
    }

    /// A frame header is whole: notes its payload's length and counts an empty DATA frame
    /// that does not end its stream (a padded one once its padding length is read).
    fn header_done(&mut self) -> usize {
        let [.., kind, flags, _, _, _, _] = self.header;
        self.left = self.payload_length();
        let open_data = kind == DATA && flags & END_STREAM == 0;
        let mut found = 0;
        if open_data && flags & PADDED != 0 {
            self.pad_length_next = self.left > 0;
        } else if open_data && self.left == 0 {
            found = 1;
        }
        if self.left == 0 {
            self.have = 0;
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_be_bytes();
        let mut out = vec![len[1], len[2], len[3], kind, flags, 0, 0, 0, 1];
        out.extend_from_slice(payload);
        out
    }

    /// A server's bytes: SETTINGS, a response's HEADERS, DATA with data, an empty DATA, a
    /// padded DATA with no data, a padded one with data, and the empty DATA that ends the
    /// stream; then a SETTINGS ACK (empty, not DATA). Two of them count.
    fn sample() -> Vec<u8> {
        [
            frame(0x4, 0, &[0, 3, 0, 0, 0, 100]),
            frame(0x1, 0x4, &[0x88]),
            frame(DATA, 0, b"hello"),
            frame(DATA, 0, b""),
            frame(DATA, PADDED, &[3, 0, 0, 0]),
            frame(DATA, PADDED, &[1, b'x', 0]),
            frame(DATA, END_STREAM, b""),
            frame(0x4, 0x1, b""),
        ]
        .concat()
    }

    #[test]
    fn empty_data_frames_that_do_not_end_their_stream_count_however_the_bytes_are_split() {
        let bytes = sample();
        assert_eq!(
            Scan::default().feed(&bytes, &LastWords::default()),
            2,
            "in one read"
        );
        for size in 1..bytes.len() {
            let (mut scan, words) = (Scan::default(), LastWords::default());
            let found: usize = bytes
                .chunks(size)
                .map(|chunk| scan.feed(chunk, &words))
                .sum();
            assert_eq!(found, 2, "in reads of {size} bytes");
            assert_eq!((scan.have, scan.left), (0, 0), "at a frame boundary");
        }
    }

    #[test]
    fn a_padded_frame_counts_only_when_its_padding_is_all_it_holds() {
        let (mut scan, words) = (Scan::default(), LastWords::default());
        assert_eq!(
            scan.feed(&frame(DATA, PADDED, &[0]), &words),
            1,
            "no data, no padding"
        );
        assert_eq!(scan.feed(&frame(DATA, PADDED, &[2, 0, 0]), &words), 1);
        assert_eq!(scan.feed(&frame(DATA, PADDED, &[1, b'x', 0]), &words), 0);
        assert_eq!(
            scan.feed(&frame(DATA, PADDED | END_STREAM, &[0]), &words),
            0
        );
    }

    #[test]
    fn the_connection_retires_early_enough_for_a_ceiling_of_streams_reserved_meanwhile() {
        assert!(!near_the_limit(0, 200), "nothing counted: nothing to fear");
        assert!(!near_the_limit(44, 0));
        assert!(near_the_limit(45, 0));
        assert!(!near_the_limit(1, 43));
        assert!(near_the_limit(1, 44));
        // The worst a check can find, and what the streams it finds taken then add.
        let worst = RETIRE_AT - 1 + EMPTY_DATA_CEILING;
        assert!(worst + RETIRE_MARGIN <= H2_EMPTY_DATA_LIMIT);
    }

    /// A `GOAWAY(ENHANCE_YOUR_CALM)` with Jetty's debug text, after a DATA frame.
    fn calm_goaway() -> Vec<u8> {
        let mut payload = 557u32.to_be_bytes().to_vec();
        payload.extend_from_slice(&0xbu32.to_be_bytes());
        payload.extend_from_slice(b"invalid_window_update_frame_rate");
        let mut goaway = frame(GOAWAY, 0, &payload);
        goaway[5..9].copy_from_slice(&[0; 4]);
        [frame(DATA, 0, b"hello"), goaway].concat()
    }

    #[test]
    fn a_goaway_is_read_however_the_bytes_are_split() {
        let bytes = calm_goaway();
        for size in 1..=bytes.len() {
            let (mut scan, words) = (Scan::default(), LastWords::default());
            for chunk in bytes.chunks(size) {
                scan.feed(chunk, &words);
            }
            let said = words.cause().map(ToString::to_string);
            assert_eq!(
                said.as_deref(),
                Some(
                    "the server sent GOAWAY ENHANCE_YOUR_CALM (last stream processed 557): \
                     invalid_window_update_frame_rate"
                ),
                "in reads of {size} bytes"
            );
            assert_eq!(scan.position(), Where::Between);
        }
    }

    #[test]
    fn the_reader_knows_where_a_stream_that_ends_broke_off() {
        let (mut scan, words) = (Scan::default(), LastWords::default());
        let data = frame(DATA, 0, b"hello");
        scan.feed(&data[..4], &words);
        assert_eq!(scan.position(), Where::InHeader(4));
        scan.feed(&data[4..11], &words);
        assert_eq!(
            scan.position(),
            Where::InPayload {
                kind: DATA,
                length: 5,
                missing: 3
            }
        );
        assert_eq!(words.cause(), None, "nothing said yet");
    }

    #[tokio::test]
    async fn the_watched_transport_notes_an_end_mid_frame_and_keeps_the_first_word() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, mut server) = tokio::io::duplex(256);
        let (mut io, watch) = watch_frames(client);
        let data = frame(DATA, 0, b"hello");
        server.write_all(&data[..11]).await.unwrap();
        drop(server);
        let mut read = Vec::new();
        io.read_to_end(&mut read).await.unwrap();
        assert_eq!(read, data[..11]);
        let witness = watch.witness();
        assert_eq!(
            witness.cause().map(ToString::to_string).as_deref(),
            Some(
                "the server ended the connection without a GOAWAY, in the middle of a DATA \
                 frame (3 of its 5 bytes never came)"
            )
        );
        // A write after the end fails; the first word stands.
        let _ = io.write_all(b"more").await;
        assert!(witness.cause().unwrap().to_string().contains("DATA frame"));
    }

    #[tokio::test]
    async fn the_watched_transport_counts_what_it_reads_and_passes_every_byte() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, mut server) = tokio::io::duplex(64);
        let (mut io, watch) = watch_frames(client);
        let bytes = sample();
        let writer = tokio::spawn(async move {
            server.write_all(&bytes).await.unwrap();
            server
        });
        let mut read = vec![0; sample().len()];
        io.read_exact(&mut read).await.unwrap();
        assert_eq!(read, sample());
        assert_eq!(watch.empty_data(), 2);
        drop(writer.await.unwrap());
    }
}
