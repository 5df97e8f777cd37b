//! `--limit-rate` and `-Y`/`-y` (`--speed-limit`/`--speed-time`): the pace of a response body.
//!
//! `--limit-rate` holds the average download speed of a body to at most that many bytes per
//! second: after each frame the transfer waits until the bytes received so far are due at the
//! limit. Like curl's, the limit is an average from the body's start, so a pause earns a short
//! burst afterwards. An upload (`-T`, `-F`, a streamed `-T -` too) is paced ([`PacedUpload`]): each
//! block of it goes once the bytes before it are due. `-d`'s data is not, as curl sends it with the
//! request's head in one go.
//!
//! `-Y BYTES` with `-y SECONDS` aborts a transfer that stays slower than `BYTES` per second for
//! `SECONDS` (exit 28, curl's "Operation too slow"): each window of `SECONDS` must bring
//! `BYTES × SECONDS` bytes, and a window in which the server sends nothing at all ends on time,
//! not when the next byte arrives. Without `-y` the window is curl's 30 seconds; without `-Y`
//! the limit is 1 byte per second. The wait for the response head counts as one such window
//! ([`LowSpeed::time`]).

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::time::{Instant, Sleep};

use super::exit::CurlError;

/// curl's `--speed-time` when only `--speed-limit` is given.
const DEFAULT_SPEED_TIME: Duration = Duration::from_secs(30);

/// The pace flags of a transfer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PaceArgs {
    /// `--limit-rate`: bytes per second at most.
    pub(crate) limit_rate: Option<u64>,
    /// `-Y`: bytes per second at least.
    pub(crate) speed_limit: Option<u64>,
    /// `-y`: for how long a transfer may stay below `speed_limit`.
    pub(crate) speed_time: Option<Duration>,
}

impl PaceArgs {
    /// The low-speed rule, if `-Y` or `-y` asks for one (a zero in either turns it off).
    pub(crate) fn low_speed(&self) -> Option<LowSpeed> {
        if self.speed_limit.is_none() && self.speed_time.is_none() {
            return None;
        }
        let limit = self.speed_limit.unwrap_or(1);
        let time = self.speed_time.unwrap_or(DEFAULT_SPEED_TIME);
        (limit > 0 && !time.is_zero()).then_some(LowSpeed { limit, time })
    }
}

/// `-Y`/`-y` in effect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LowSpeed {
    limit: u64,
    /// How long a window lasts; also how long the response head may take (a head that takes
    /// a whole window has brought 0 bytes in it).
    pub(crate) time: Duration,
}

impl LowSpeed {
    /// The error of a transfer that stayed too slow.
    pub(crate) fn error(&self) -> CurlError {
        CurlError::new(
            28,
            format!(
                "Operation too slow. Less than {} bytes/sec transferred the last {} seconds",
                self.limit,
                self.time.as_secs()
            ),
        )
    }
}

/// The pace of one response body.
#[derive(Debug)]
pub(crate) struct Pace {
    limit_rate: Option<u64>,
    low_speed: Option<LowSpeed>,
    /// When the body started.
    start: Instant,
    /// Bytes of the body so far.
    bytes: u64,
    /// When the current low-speed window started, and the bytes it has brought.
    window: (Instant, u64),
}

impl Pace {
    /// The pace of a body starting now.
    pub(crate) fn start(args: &PaceArgs) -> Pace {
        let now = Instant::now();
        Pace {
            limit_rate: args.limit_rate.filter(|&rate| rate > 0),
            low_speed: args.low_speed(),
            start: now,
            bytes: 0,
            window: (now, 0),
        }
    }

    /// The body's next frame; `Err` when the transfer stayed too slow (exit 28), also while
    /// the server sends nothing.
    pub(crate) async fn next_frame(
        &mut self,
        body: &mut pool::Body,
    ) -> Result<Option<Result<Frame<Bytes>, pool::Error>>, CurlError> {
        let Some(low) = self.low_speed else {
            return Ok(body.frame().await);
        };
        loop {
            let window_end = self.window.0 + low.time;
            match tokio::time::timeout_at(window_end, body.frame()).await {
                Ok(frame) => return Ok(frame),
                // The window ended in silence (or nearly): judge it, and wait on in the next.
                Err(_) => self.judge(low, Instant::now())?,
            }
        }
    }

    /// Counts `bytes` received, then waits as long as `--limit-rate` needs; `Err` when the
    /// window that just ended was too slow.
    pub(crate) async fn received(&mut self, bytes: usize) -> Result<(), CurlError> {
        self.bytes += bytes as u64;
        self.window.1 += bytes as u64;
        if let Some(low) = self.low_speed {
            let now = Instant::now();
            if now >= self.window.0 + low.time {
                self.judge(low, now)?;
            }
        }
        if let Some(rate) = self.limit_rate {
            let due = self.start + Duration::from_secs_f64(self.bytes as f64 / rate as f64);
            tokio::time::sleep_until(due).await;
        }
        Ok(())
    }

    /// Ends the current window at `now`: too slow is the error, anything else starts the next.
    fn judge(&mut self, low: LowSpeed, now: Instant) -> Result<(), CurlError> {
        let (started, bytes) = self.window;
        let seconds = now.duration_since(started).as_secs_f64();
        if (bytes as f64) < low.limit as f64 * seconds {
            return Err(low.error());
        }
        self.window = (now, 0);
        Ok(())
    }
}

/// `--limit-rate` for an upload: its bytes in blocks of a tenth of a second's worth (at most
/// 16 KiB), each handed over once the bytes before it are due at the limit, counted from the
/// first poll (when the request goes out). `B` is the upload: a whole file's bytes
/// (`Full<Bytes>`) or a stream read as it goes ([`super::upload::StreamBody`]), whose blocks
/// are cut to the pace's as they arrive.
#[derive(Debug)]
pub(crate) struct PacedUpload<B> {
    inner: B,
    /// What the inner body handed over and has not gone yet.
    rest: Bytes,
    limit: u64,
    block: usize,
    /// When the first block went, and the bytes handed over since.
    start: Option<Instant>,
    sent: u64,
    /// The wait for the next block to be due.
    wait: Option<Pin<Box<Sleep>>>,
}

/// The size of the blocks an upload goes in at `limit`: a tenth of a second's worth, at most
/// 16 KiB.
pub(crate) fn upload_block(limit: u64) -> usize {
    usize::try_from(limit / 10)
        .unwrap_or(usize::MAX)
        .clamp(1, 16 * 1024)
}

impl<B> PacedUpload<B> {
    /// `body` paced at `limit` bytes per second (more than 0).
    pub(crate) fn new(body: B, limit: u64) -> PacedUpload<B> {
        PacedUpload {
            inner: body,
            rest: Bytes::new(),
            limit,
            block: upload_block(limit),
            start: None,
            sent: 0,
            wait: None,
        }
    }
}

impl<B> http_body::Body for PacedUpload<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        while this.rest.is_empty() {
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                None => return Poll::Ready(None),
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.rest = data,
                    // Trailers go as they come.
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
            }
        }
        let start = *this.start.get_or_insert_with(Instant::now);
        let due = start + Duration::from_secs_f64(this.sent as f64 / this.limit as f64);
        if Instant::now() < due {
            let wait = this
                .wait
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
            ready!(wait.as_mut().poll(cx));
        }
        this.wait = None;
        let block = this.rest.split_to(this.block.min(this.rest.len()));
        this.sent += block.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(block))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        hint.set_lower(hint.lower() + rest);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;
    use http_body_util::Full;

    use super::*;

    #[test]
    fn the_low_speed_rule_takes_curls_defaults() {
        let only_limit = PaceArgs {
            speed_limit: Some(100),
            ..PaceArgs::default()
        };
        let low = only_limit.low_speed().unwrap();
        assert_eq!((low.limit, low.time), (100, Duration::from_secs(30)));
        let only_time = PaceArgs {
            speed_time: Some(Duration::from_secs(2)),
            ..PaceArgs::default()
        };
        let low = only_time.low_speed().unwrap();
        assert_eq!((low.limit, low.time), (1, Duration::from_secs(2)));
        assert!(PaceArgs::default().low_speed().is_none());
        let off = PaceArgs {
            speed_limit: Some(0),
            speed_time: Some(Duration::from_secs(5)),
            ..PaceArgs::default()
        };
        assert!(off.low_speed().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_limit_spaces_the_bytes_out() {
        let args = PaceArgs {
            limit_rate: Some(1000),
            ..PaceArgs::default()
        };
        let mut pace = Pace::start(&args);
        let start = Instant::now();
        pace.received(500).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(500));
        pace.received(1500).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn an_upload_goes_in_blocks_each_when_the_bytes_before_it_are_due() {
        let whole = Full::new(Bytes::from(vec![7u8; 2500]));
        let mut body = PacedUpload::new(whole, 1000);
        assert_eq!(body.size_hint().exact(), Some(2500));
        let start = Instant::now();
        let mut sent = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            sent.push((start.elapsed(), data.len()));
        }
        // Blocks of 100 bytes: the last one goes once 2,400 bytes are due, at 2.4 s.
        assert_eq!(sent.len(), 25);
        assert!(sent.iter().all(|&(_, len)| len == 100));
        assert_eq!(sent[0].0, Duration::ZERO);
        assert_eq!(sent[10].0, Duration::from_secs(1));
        assert_eq!(sent[24].0, Duration::from_millis(2400));
        assert!(body.is_end_stream());
        // A high limit sends blocks of 16 KiB at most.
        let whole = Full::new(Bytes::from(vec![0u8; 40_000]));
        let mut fast = PacedUpload::new(whole, 10_000_000);
        let first = fast.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first.len(), 16 * 1024);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_is_paced_block_by_block_as_its_frames_arrive() {
        let frames = [&[1u8; 250][..], &[2u8; 50][..]]
            .map(|data| Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(data))));
        let stream = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        let mut body = PacedUpload::new(stream, 1000);
        let start = Instant::now();
        let mut sent = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            sent.push((start.elapsed().as_millis(), data.len()));
        }
        // Blocks of 100 bytes at most, cut from each frame as it comes.
        assert_eq!(sent, [(0, 100), (100, 100), (200, 50), (250, 50)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_window_below_the_speed_limit_is_too_slow() {
        let args = PaceArgs {
            speed_limit: Some(100),
            speed_time: Some(Duration::from_secs(2)),
            ..PaceArgs::default()
        };
        let mut pace = Pace::start(&args);
        // 300 bytes in the first 2 s: fast enough (200 needed); a new window starts.
        pace.received(300).await.unwrap();
        tokio::time::advance(Duration::from_secs(2)).await;
        pace.received(0).await.unwrap();
        // 150 bytes in the next 2 s: too slow.
        tokio::time::advance(Duration::from_secs(1)).await;
        pace.received(150).await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let error = pace.received(0).await.unwrap_err();
        assert_eq!(error.code(), 28);
    }
}
