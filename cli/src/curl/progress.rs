//! `-#` / `--progress-bar`: one bar per transfer on stderr, as curl draws it
//! (`####...### 100.0%`), redrawn in place when the shown tenth of a percent changes. Without a
//! `Content-Length` the bar is drawn full when the transfer ends. Nothing is drawn with `-s`.
//!
//! What this does not do: curl's default progress meter (the table curl prints when stdout is
//! not a terminal); poolcurl prints no meter unless `-#` asks for a bar.

/// The width of the bar in `#`s.
const WIDTH: u64 = 72;

/// The bar of one transfer.
#[derive(Debug)]
pub(crate) struct Progress {
    /// Whether anything is drawn.
    enabled: bool,
    /// The body's announced length.
    total: Option<u64>,
    /// The last tenth of a percent drawn.
    shown: Option<u64>,
}

impl Progress {
    /// A bar that draws only if `enabled`.
    pub(crate) fn new(enabled: bool) -> Progress {
        Progress {
            enabled,
            total: None,
            shown: None,
        }
    }

    /// The body's announced length (from `Content-Length`).
    pub(crate) fn set_total(&mut self, total: Option<u64>) {
        self.total = total;
    }

    /// `done` body bytes have arrived.
    pub(crate) fn update(&mut self, done: u64) {
        if let Some(total) = self.total.filter(|t| *t > 0) {
            self.draw(done.min(total) * 1000 / total);
        }
    }

    /// The transfer ended: the bar is drawn full (if it got a response) and the line ends.
    pub(crate) fn finish(&mut self, completed: bool) {
        if !self.enabled {
            return;
        }
        if completed {
            self.draw(1000);
        }
        if self.shown.is_some() {
            super::errout::write(b"\n");
        }
        self.shown = None;
    }

    fn draw(&mut self, permille: u64) {
        if !self.enabled || self.shown == Some(permille) {
            return;
        }
        self.shown = Some(permille);
        let hashes = usize::try_from(WIDTH * permille / 1000).unwrap_or(0);
        let width = usize::try_from(WIDTH).unwrap_or(72);
        let line = format!(
            "\r{:<width$} {:>5.1}%",
            "#".repeat(hashes),
            permille as f64 / 10.0
        );
        super::errout::write(line.as_bytes());
    }
}
