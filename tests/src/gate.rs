//! Test-controlled synchronisation: [`Gate`] (the test releases the server) and [`Signal`] (the
//! server tells the test it got somewhere).
//!
//! These replace sleeps. A scripted peer parks at a gate until the test calls [`Gate::open`]; the
//! test learns that the peer is parked with [`Gate::wait_arrived`] or with a [`Signal`] the script
//! raises. Both are built on `tokio::sync::watch`, so every wait is cancel safe and composes with
//! `tokio::time::timeout` and paused time.
//!
//! What this module does not do: reset. A gate is one-shot; once open it stays open. Make a new
//! gate for every release point.

use tokio::sync::watch;

/// State shared by all clones of one [`Gate`].
#[derive(Debug, Clone, Copy, Default)]
struct GateState {
    /// Set once by [`Gate::open`]; never cleared.
    open: bool,
    /// How many calls to [`Gate::wait`] have started, cumulatively (also after the gate opened).
    arrived: usize,
}

/// A cloneable one-shot barrier that a test opens.
///
/// Scripted peers call [`Gate::wait`] at a scripted point (before a reply, in the middle of a
/// body, before a GOAWAY, ...). The test observes that a peer reached the gate with
/// [`Gate::wait_arrived`], acts, then calls [`Gate::open`] to release every current and future
/// waiter.
///
/// ```
/// # async fn demo() {
/// use pool_tests::gate::Gate;
/// let gate = Gate::new();
/// let waiter = tokio::spawn({
///     let gate = gate.clone();
///     async move { gate.wait().await }
/// });
/// gate.wait_arrived(1).await; // the task is parked at the gate now
/// gate.open();
/// waiter.await.unwrap();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Gate {
    state: std::sync::Arc<watch::Sender<GateState>>,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A new, closed gate.
    pub fn new() -> Self {
        Self {
            state: std::sync::Arc::new(watch::Sender::new(GateState::default())),
        }
    }

    /// A gate that is already open (waiting on it returns at once; arrivals are still counted).
    pub fn opened() -> Self {
        let gate = Self::new();
        gate.open();
        gate
    }

    /// Opens the gate: every parked waiter is released and later waits return at once.
    /// Opening twice is harmless.
    pub fn open(&self) {
        self.state.send_modify(|s| s.open = true);
    }

    /// Whether [`Gate::open`] has been called.
    pub fn is_open(&self) -> bool {
        self.state.borrow().open
    }

    /// How many waits have started on this gate (cumulative, including ones already released).
    pub fn arrived(&self) -> usize {
        self.state.borrow().arrived
    }

    /// Parks until the gate is open. Counts one arrival as soon as it is first polled.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe. A cancelled wait still counts as an arrival.
    pub async fn wait(&self) {
        self.state.send_modify(|s| s.arrived += 1);
        let mut rx = self.state.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|s| s.open).await;
    }

    /// Resolves once at least `n` waits have started on this gate, i.e. once `n` peers are parked
    /// at it (or went through it, if it is already open).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe. Never resolves if fewer than `n` arrivals happen: bound it with
    /// `tokio::time::timeout`.
    pub async fn wait_arrived(&self, n: usize) {
        let mut rx = self.state.subscribe();
        let _ = rx.wait_for(|s| s.arrived >= n).await;
    }
}

/// A cumulative counter a script raises and a test awaits: "the server reached step X".
///
/// ```
/// # async fn demo() {
/// use pool_tests::gate::Signal;
/// let reached = Signal::new();
/// reached.raise();
/// reached.wait_for(1).await;
/// assert_eq!(reached.count(), 1);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Signal {
    count: std::sync::Arc<watch::Sender<usize>>,
}

impl Default for Signal {
    fn default() -> Self {
        Self::new()
    }
}

impl Signal {
    /// A new signal with count 0.
    pub fn new() -> Self {
        Self {
            count: std::sync::Arc::new(watch::Sender::new(0)),
        }
    }

    /// Adds one to the count and wakes waiters.
    pub fn raise(&self) {
        self.count.send_modify(|c| *c += 1);
    }

    /// How many times [`Signal::raise`] was called.
    pub fn count(&self) -> usize {
        *self.count.borrow()
    }

    /// Resolves once the count is at least `n`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe. Never resolves if the count stays below `n`: bound it with
    /// `tokio::time::timeout`.
    pub async fn wait_for(&self, n: usize) {
        let mut rx = self.count.subscribe();
        let _ = rx.wait_for(|c| *c >= n).await;
    }
}

/// A point in a script where the peer waits (or announces progress) between writes.
#[derive(Debug, Clone)]
pub(crate) enum Wait {
    /// `tokio::time::sleep`, so paused time applies.
    Delay(std::time::Duration),
    /// Park until the test opens the gate.
    Gate(Gate),
    /// Raise the signal and go on at once.
    Signal(Signal),
}

impl Wait {
    pub(crate) async fn run(&self) {
        match self {
            Wait::Delay(d) => tokio::time::sleep(*d).await,
            Wait::Gate(g) => g.wait().await,
            Wait::Signal(s) => s.raise(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn gate_counts_arrivals_and_releases_all() {
        let gate = Gate::new();
        let a = tokio::spawn({
            let gate = gate.clone();
            async move { gate.wait().await }
        });
        let b = tokio::spawn({
            let gate = gate.clone();
            async move { gate.wait().await }
        });
        gate.wait_arrived(2).await;
        assert!(!gate.is_open());
        assert!(!a.is_finished());
        gate.open();
        a.await.unwrap();
        b.await.unwrap();
        // A late waiter passes at once but is counted.
        gate.wait().await;
        assert_eq!(gate.arrived(), 3);
        assert!(Gate::opened().is_open());
    }

    #[tokio::test]
    async fn signal_counts() {
        let signal = Signal::new();
        let waiter = tokio::spawn({
            let signal = signal.clone();
            async move { signal.wait_for(2).await }
        });
        signal.raise();
        signal.raise();
        waiter.await.unwrap();
        assert_eq!(signal.count(), 2);
    }
}
