//! What a transfer draws on stderr while it runs: curl's default progress meter
//! ([`super::meter`]) when its output does not go to a terminal, or `-#`'s bar
//! ([`super::bar`]) when asked for, or nothing (`-s`, `--no-progress-meter`, output to a
//! terminal, and `-Z`, whose transfers draw none of their own).
//!
//! The meter's header and first line come when the transfer's first request starts, its line
//! is redrawn once a second, whether bytes came or not (while a connect, a response head or
//! the rest of a body is awaited, [`Progress::during`]: "Spent" goes on counting), and ends
//! with a line break after each request (a followed redirect, an authentication round), as
//! libcurl draws it; it is written before the transfer's error message, as curl's is. The
//! bar's line ends after the error message instead ([`Progress::end_line`]), as curl's tool
//! ends it.
//!
//! Under `-Z` a transfer draws nothing itself and reports its bytes to the run's one meter
//! ([`super::parallel_meter`]).

use std::future::Future;
use std::time::Instant;

use super::Session;
use super::bar::Bar;
use super::meter::Meter;
use super::sink::Sink;

/// What a transfer draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Nothing.
    Off,
    /// `-#`'s bar ([`Bar`]).
    Bar,
    /// curl's default meter.
    Meter,
    /// A share of `-Z`'s one meter ([`super::parallel_meter`]): the transfer's slot.
    Parallel(usize),
}

/// The progress display of one transfer.
#[derive(Debug)]
pub(crate) struct Progress {
    /// What is drawn.
    style: Style,
    /// The body's announced length.
    total: Option<u64>,
    /// `-#`'s bar.
    bar: Option<Bar>,
    /// The meter, once the attempt's first request started.
    meter: Option<Meter>,
    /// Whether the meter's header was drawn (by an earlier attempt, under `--retry`: curl
    /// draws it once per transfer).
    header_shown: bool,
    /// The body bytes received and sent by the current request (`-Z`'s meter).
    received: u64,
    sent: u64,
    /// When the meter's line is next redrawn while the transfer waits ([`Progress::during`]).
    tick: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Progress {
    /// A display in `style`.
    pub(crate) fn new(style: Style) -> Progress {
        Progress {
            style,
            total: None,
            bar: (style == Style::Bar).then(|| Bar::new(Bar::width_here())),
            meter: None,
            header_shown: false,
            received: 0,
            sent: 0,
            tick: None,
        }
    }

    /// A request of the transfer starts: the first time, the bar starts counting (from a
    /// resumed download's offset), or the meter draws its header (after curl's note of that
    /// offset) and its first line.
    pub(crate) fn start(&mut self, resume_from: Option<u64>) {
        if let Some(bar) = self.bar.as_mut().filter(|bar| !bar.started()) {
            bar.resume_from(resume_from.unwrap_or(0));
            self.draw_bar(0);
            return;
        }
        if self.style != Style::Meter || self.meter.is_some() {
            return;
        }
        let now = Instant::now();
        let mut meter = Meter::new(now, !self.header_shown);
        if let Some(offset) = resume_from.filter(|at| *at > 0 && !self.header_shown) {
            let note = format!("** Resuming transfer from byte position {offset}\n");
            super::errout::write(note.as_bytes());
        }
        if let Some(text) = meter.update(now) {
            super::errout::write(text.as_bytes());
        }
        self.meter = Some(meter);
    }

    /// The body's announced length (from `Content-Length`).
    pub(crate) fn set_total(&mut self, total: Option<u64>) {
        self.total = total;
        if let Some(meter) = &mut self.meter {
            meter.download(total, 0);
        }
        self.report();
    }

    /// The request went with `sent` body bytes.
    pub(crate) fn sent(&mut self, sent: u64) {
        self.sent = sent;
        if let Some(meter) = &mut self.meter {
            meter.upload(Some(sent), sent);
        }
        self.report();
    }

    /// Tells `-Z`'s meter what this transfer has moved (0: a length not known).
    fn report(&self) {
        if let Style::Parallel(slot) = self.style {
            let down = (self.received, self.total.unwrap_or(0));
            super::parallel_meter::report(slot, down, (self.sent, self.sent));
        }
    }

    /// `done` body bytes have arrived.
    pub(crate) fn update(&mut self, done: u64) {
        match self.style {
            Style::Off => {}
            Style::Bar => self.draw_bar(done),
            Style::Meter => {
                if let Some(meter) = &mut self.meter {
                    meter.download(self.total, done);
                    if let Some(text) = meter.update(Instant::now()) {
                        super::errout::write(text.as_bytes());
                    }
                }
            }
            Style::Parallel(_) => {
                self.received = done;
                self.report();
            }
        }
    }

    /// Awaits `work` (a connect and a response head, the next bytes of a body), redrawing the
    /// meter's line at each second meanwhile, as libcurl redraws it while a transfer waits.
    /// One timer serves the whole transfer: a body read frame by frame sets none per frame.
    pub(crate) async fn during<F: Future>(&mut self, work: F) -> F::Output {
        let Some(meter) = self.meter.as_mut() else {
            return work.await;
        };
        let tick = self.tick.get_or_insert_with(|| {
            Box::pin(tokio::time::sleep_until(
                meter.next_due(Instant::now()).into(),
            ))
        });
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                done = &mut work => return done,
                () = tick.as_mut() => {
                    let now = Instant::now();
                    if let Some(text) = meter.update(now) {
                        super::errout::write(text.as_bytes());
                    }
                    tick.as_mut().reset(meter.next_due(now).into());
                }
            }
        }
    }

    /// A request ended and another follows (a redirect, an authentication round): the meter's
    /// last line for it.
    pub(crate) fn request_done(&mut self) {
        self.total = None;
        (self.received, self.sent) = (0, 0);
        self.report();
        if let Some(meter) = &mut self.meter {
            super::errout::write(meter.request_done(Instant::now()).as_bytes());
        }
    }

    /// The attempt ended: the meter draws its last line (the bar's ends later, `end_line`).
    pub(crate) fn finish(&mut self) {
        if self.style == Style::Meter {
            self.request_done();
            // A retry draws a meter of its own, under this one's header.
            self.header_shown |= self.meter.take().is_some();
        }
    }

    /// The transfer is over (no retry follows), its error reported if it failed: the bar's
    /// line ends, if it was started.
    pub(crate) fn end_line(&mut self) {
        if self.bar.as_ref().is_some_and(Bar::started) {
            super::errout::write(b"\n");
        }
    }

    fn draw_bar(&mut self, done: u64) {
        let total = self.total;
        if let Some(text) = self
            .bar
            .as_mut()
            .and_then(|bar| bar.update(done, total, Instant::now()))
        {
            super::errout::write(text.as_bytes());
        }
    }
}

impl Session {
    /// Whether transfers draw a progress display at all: not under `-s` or
    /// `--no-progress-meter`.
    pub(in crate::curl) fn draws_progress(&self) -> bool {
        self.report.chatty() && !self.args.transfer.no_progress_meter
    }

    /// The progress display of a transfer to `sink`, for all its attempts; under `-Z`, its
    /// share of the run's meter in `parallel_slot`.
    pub(in crate::curl) fn progress_for(
        &self,
        sink: &Sink,
        parallel_slot: Option<usize>,
    ) -> Progress {
        Progress::new(match parallel_slot {
            Some(slot) => Style::Parallel(slot),
            None => self.progress_style(sink),
        })
    }

    /// What a transfer to `sink` draws: nothing under `-s`, `--no-progress-meter` or `-Z`
    /// (whose transfers report to the run's one meter instead, `Style::Parallel`);
    /// `-#`'s bar; else curl's meter, unless the body goes to a terminal (curl's rule).
    fn progress_style(&self, sink: &Sink) -> Style {
        let transfer = &self.args.transfer;
        if !self.draws_progress() || transfer.parallel {
            Style::Off
        } else if transfer.progress_bar {
            Style::Bar
        } else if sink.to_terminal() {
            Style::Off
        } else {
            Style::Meter
        }
    }
}
