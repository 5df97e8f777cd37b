//! curl's default progress meter: the table a transfer draws on stderr when its output does not
//! go to a terminal (`poolcurl -o file URL`, `poolcurl URL | less`), as libcurl 7.88 draws it.
//!
//! ```text
//!   % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current
//!                                  Dload  Upload   Total   Spent    Left  Speed
//! 100  1234  100  1234    0     0  12345      0 --:--:-- --:--:-- --:--:-- 12345
//! ```
//!
//! The two header lines come when the transfer starts, with a line of zeros; the line is
//! redrawn in place (`\r`) at most once a second (counted from the start; libcurl counts the
//! clock's seconds), and once more when each request of the transfer ends (a followed redirect
//! too), followed by a line break. "Current" is the speed over the last five seconds (the
//! average in the first), as libcurl's `progress_calc` measures it; sizes above 99999 bytes
//! read `1234k`, `12.3M`, `1234M`, ... (`max5data`).
//!
//! This module computes what to draw from the byte counts and the time it is given and returns
//! the text; [`super::progress::Progress`] decides when a meter is drawn at all and writes it.
//! Uploads are counted as the request is handed over, not byte by byte as it goes.

use std::time::{Duration, Instant};

/// How many once-a-second samples "Current" spans, plus one (libcurl's `CURR_TIME`).
const SAMPLES: usize = 6;

/// What a meter has drawn and counted.
#[derive(Debug)]
pub(crate) struct Meter {
    /// When the transfer started: "Spent" and the averages count from here.
    start: Instant,
    /// Whether the two header lines were written.
    header_out: bool,
    /// The second of the clock of the last line drawn (`None`: draw at the next update).
    last_shown: Option<u64>,
    /// Bytes moved (down and up) and when, once a second, for "Current".
    samples: [(u64, Instant); SAMPLES],
    /// How many samples were taken (since the last request ended).
    taken: usize,
    /// The last "Current" speed, bytes per second.
    current: u64,
    /// The request's body bytes received, and the announced length.
    downloaded: u64,
    download_size: Option<u64>,
    /// The request's body bytes sent, and their announced length.
    uploaded: u64,
    upload_size: Option<u64>,
}

impl Meter {
    /// A meter for a transfer that starts at `start`, which draws the header first if
    /// `header` (not for a retry, whose transfer drew it).
    pub(crate) fn new(start: Instant, header: bool) -> Meter {
        Meter {
            start,
            header_out: !header,
            last_shown: None,
            samples: [(0, start); SAMPLES],
            taken: 0,
            current: 0,
            downloaded: 0,
            download_size: None,
            uploaded: 0,
            upload_size: None,
        }
    }

    /// The response's announced body length (`Content-Length`), and the bytes received of it.
    pub(crate) fn download(&mut self, size: Option<u64>, received: u64) {
        self.download_size = size;
        self.downloaded = received;
    }

    /// The request body's length, and the bytes of it sent.
    pub(crate) fn upload(&mut self, size: Option<u64>, sent: u64) {
        self.upload_size = size;
        self.uploaded = sent;
    }

    /// What to draw at `now`: the header first, then the line if this second has none yet.
    pub(crate) fn update(&mut self, now: Instant) -> Option<String> {
        let second = now.saturating_duration_since(self.start).as_secs();
        let due = self.last_shown != Some(second);
        let mut text = String::new();
        if !self.header_out {
            self.header_out = true;
            text.push_str(
                "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  \
                 Current\n                                 Dload  Upload   Total   Spent    \
                 Left  Speed\n",
            );
        }
        if due {
            self.last_shown = Some(second);
            self.sample(now);
            text.push_str(&self.line(now));
        }
        (!text.is_empty()).then_some(text)
    }

    /// When the next line is due after `now`: the start of the next second of the transfer.
    pub(crate) fn next_due(&self, now: Instant) -> Instant {
        let second = now.saturating_duration_since(self.start).as_secs();
        self.start + Duration::from_secs(second + 1)
    }

    /// What to draw when a request of the transfer ends at `now`: its last line, whatever the
    /// second, and a line break; the next request counts its own bytes and "Current" anew.
    pub(crate) fn request_done(&mut self, now: Instant) -> String {
        self.last_shown = None;
        let mut text = self.update(now).unwrap_or_default();
        text.push('\n');
        self.taken = 0;
        self.downloaded = 0;
        self.download_size = None;
        self.uploaded = 0;
        self.upload_size = None;
        text
    }

    /// Takes this second's sample and works out "Current" from the oldest one kept.
    fn sample(&mut self, now: Instant) {
        let moved = self.downloaded + self.uploaded;
        let at = self.taken % SAMPLES;
        self.samples[at] = (moved, now);
        self.taken += 1;
        if self.taken == 1 {
            // The first second: the averages, as libcurl uses them.
            let spent = self.spent_us(now);
            self.current = speed(self.downloaded, spent) + speed(self.uploaded, spent);
            return;
        }
        let oldest = if self.taken >= SAMPLES {
            self.taken % SAMPLES
        } else {
            0
        };
        let (then_moved, then) = self.samples[oldest];
        let span_ms = now.saturating_duration_since(then).as_millis().max(1) as u64;
        self.current = moved.saturating_sub(then_moved).saturating_mul(1000) / span_ms;
    }

    fn spent_us(&self, now: Instant) -> u64 {
        let spent = now.saturating_duration_since(self.start);
        u64::try_from(spent.as_micros()).unwrap_or(u64::MAX)
    }

    /// The meter's line at `now`, after its `\r`.
    fn line(&self, now: Instant) -> String {
        let spent_us = self.spent_us(now);
        let spent = spent_us / 1_000_000;
        let dl_speed = speed(self.downloaded, spent_us);
        let ul_speed = speed(self.uploaded, spent_us);
        // The estimates (and the percentages) need a known size and some speed.
        let estimate = |size: Option<u64>, done: u64, speed: u64| match size {
            Some(size) if speed > 0 => (size / speed, percent(done, size)),
            _ => (0, 0),
        };
        let (dl_estimate, dl_percent) = estimate(self.download_size, self.downloaded, dl_speed);
        let (ul_estimate, ul_percent) = estimate(self.upload_size, self.uploaded, ul_speed);
        let total_estimate = dl_estimate.max(ul_estimate);
        let left = match total_estimate {
            0 => 0,
            estimate => estimate.saturating_sub(spent),
        };
        let expected = self.upload_size.unwrap_or(self.uploaded)
            + self.download_size.unwrap_or(self.downloaded);
        let moved = self.downloaded + self.uploaded;
        format!(
            "\r{:>3} {}  {:>3} {}  {:>3} {}  {}  {} {} {} {} {}",
            percent(moved, expected),
            size5(expected),
            dl_percent,
            size5(self.downloaded),
            ul_percent,
            size5(self.uploaded),
            size5(dl_speed),
            size5(ul_speed),
            clock(total_estimate),
            clock(spent),
            clock(left),
            size5(self.current),
        )
    }
}

/// Bytes per second for `bytes` in `us` microseconds (libcurl's `trspeed`).
fn speed(bytes: u64, us: u64) -> u64 {
    match us {
        0 => bytes.saturating_mul(1_000_000),
        us => (u128::from(bytes) * 1_000_000 / u128::from(us)) as u64,
    }
}

/// `done` of `size` in whole percent, as libcurl divides (by `size / 100` above 10000 bytes).
fn percent(done: u64, size: u64) -> u64 {
    match size {
        0 => 0,
        size if size > 10_000 => done / (size / 100),
        size => done * 100 / size,
    }
}

/// A byte count in five columns (libcurl's `max5data`; the `-Z` meter's too).
pub(crate) fn size5(bytes: u64) -> String {
    const K: u64 = 1024;
    const M: u64 = K * K;
    const G: u64 = M * K;
    const T: u64 = G * K;
    const P: u64 = T * K;
    if bytes < 100_000 {
        format!("{bytes:>5}")
    } else if bytes < 10_000 * K {
        format!("{:>4}k", bytes / K)
    } else if bytes < 100 * M {
        format!("{:>2}.{}M", bytes / M, (bytes % M) / (M / 10))
    } else if bytes < 10_000 * M {
        format!("{:>4}M", bytes / M)
    } else if bytes < 100 * G {
        format!("{:>2}.{}G", bytes / G, (bytes % G) / (G / 10))
    } else if bytes < 10_000 * G {
        format!("{:>4}G", bytes / G)
    } else if bytes < 10_000 * T {
        format!("{:>4}T", bytes / T)
    } else {
        format!("{:>4}P", bytes / P)
    }
}

/// A number of seconds in eight columns (libcurl's `time2str`): `--:--:--` for none.
pub(crate) fn clock(seconds: u64) -> String {
    if seconds == 0 {
        return "--:--:--".to_owned();
    }
    let hours = seconds / 3600;
    if hours <= 99 {
        return format!("{hours:>2}:{:02}:{:02}", seconds % 3600 / 60, seconds % 60);
    }
    let days = seconds / 86_400;
    match days {
        0..=999 => format!("{days:>3}d {:02}h", seconds % 86_400 / 3600),
        _ => format!("{days:>7}d"),
    }
}

/// `millis` after `start`: the moments the display tests hand their states.
#[cfg(test)]
pub(crate) fn at(start: Instant, millis: u64) -> Instant {
    start + std::time::Duration::from_millis(millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  \
                          Current\n                                 Dload  Upload   Total   \
                          Spent    Left  Speed\n";

    #[test]
    fn a_quick_download_draws_the_header_zeros_and_its_last_line() {
        let start = Instant::now();
        let mut meter = Meter::new(start, true);
        let first = meter.update(start).unwrap();
        assert_eq!(
            first,
            format!(
                "{HEADER}\r  0     0    0     0    0     0      0      0 --:--:-- --:--:-- \
                 --:--:--     0"
            )
        );
        // Within the same second nothing more is drawn.
        meter.download(Some(6), 6);
        assert_eq!(meter.update(at(start, 1)), None);
        assert_eq!(
            meter.request_done(at(start, 2)),
            "\r100     6  100     6    0     0   3000      0 --:--:-- --:--:-- --:--:--  3000\n"
        );
    }

    #[test]
    fn a_slow_download_shows_estimates_and_the_current_speed() {
        let start = Instant::now();
        let mut meter = Meter::new(start, true);
        meter.download(Some(10_000_000), 0);
        meter.update(start);
        meter.download(Some(10_000_000), 1_000_000);
        // One line per second of the clock.
        let line = meter.update(at(start, 1000)).unwrap();
        assert_eq!(
            line,
            "\r 10 9765k   10  976k    0     0   976k      0  0:00:10  0:00:01  0:00:09  976k"
        );
        assert_eq!(meter.update(at(start, 1500)), None);
        meter.download(Some(10_000_000), 3_000_000);
        let line = meter.update(at(start, 2000)).unwrap();
        assert!(line.ends_with(" 1464k"), "{line}");
    }

    #[test]
    fn sizes_and_clocks_fit_their_columns() {
        assert_eq!(size5(99_999), "99999");
        assert_eq!(size5(100_000), "  97k");
        assert_eq!(size5(12_900_000), "12.3M");
        assert_eq!(size5(5_000_000_000), "4768M");
        assert_eq!(size5(50_000_000_000), "46.5G");
        assert_eq!(clock(0), "--:--:--");
        assert_eq!(clock(3_661), " 1:01:01");
        assert_eq!(clock(100 * 3600), "  4d 04h");
        assert_eq!(clock(1_000 * 86_400), "   1000d");
        assert_eq!(percent(5_000, 10_000), 50);
        assert_eq!(percent(50_000, 100_001), 50);
    }

    #[test]
    fn an_upload_counts_toward_the_total() {
        let start = Instant::now();
        let mut meter = Meter::new(start, true);
        meter.update(start);
        meter.upload(Some(4), 4);
        meter.download(Some(2), 2);
        assert_eq!(
            meter.request_done(at(start, 1)),
            "\r100     6  100     2  100     4   2000   4000 --:--:-- --:--:-- --:--:--  6000\n"
        );
    }
}
