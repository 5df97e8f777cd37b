//! How far a connect got when its timeout ended it: each step notes itself as it begins, and
//! the timeout's error says which ([`ConnectStep`]), as Go's `TLS handshake timeout` and curl's
//! `Resolving timed out` / `SSL connection timeout` tell a slow name server from an address
//! that does not answer or a server that never finishes its handshake.
//!
//! The steps run deep in the connector's calls and the timer that ends them is outside them:
//! it wins by dropping the connect future, which can then report nothing. So the note is a
//! task-local that [`Steps::scope`] sets around the connect future and [`Steps::reached`]
//! reads once the timer won. A connect run outside such a scope (no connect timeout) notes
//! nothing, at the cost of one failed task-local lookup per step.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// A step of establishing a transport, as a connect timeout's error names it
/// ([`ConnectError::timed_out_during`](crate::ConnectError::timed_out_during)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum ConnectStep {
    /// Resolving a name: the origin's, a proxy's, or the origin's for a SOCKS proxy that is
    /// sent addresses.
    Resolve,
    /// The TCP connect to the origin or the proxy (every address happy eyeballs tries), or to
    /// a Unix socket.
    Dial,
    /// A TLS handshake: with the origin, or with an `https://` proxy.
    Tls,
    /// An HTTP proxy's `CONNECT` tunnel.
    Tunnel,
    /// A SOCKS proxy's handshake.
    Socks,
}

impl ConnectStep {
    /// Every step, each at its own discriminant.
    const ALL: [ConnectStep; 5] = [
        ConnectStep::Resolve,
        ConnectStep::Dial,
        ConnectStep::Tls,
        ConnectStep::Tunnel,
        ConnectStep::Socks,
    ];

    /// Words for an error message: "while resolving the name", ...
    pub(crate) fn doing(self) -> &'static str {
        match self {
            ConnectStep::Resolve => "while resolving the name",
            ConnectStep::Dial => "while connecting",
            ConnectStep::Tls => "during the TLS handshake",
            ConnectStep::Tunnel => "while the proxy opened the tunnel",
            ConnectStep::Socks => "during the SOCKS handshake",
        }
    }
}

/// No step began yet.
const NONE: u8 = u8::MAX;

tokio::task_local! {
    /// The step the connect future in scope reached (an index into [`ConnectStep::ALL`]).
    static REACHED: Arc<AtomicU8>;
}

/// The steps of one connect (see the module docs).
#[derive(Debug)]
pub(crate) struct Steps(Arc<AtomicU8>);

impl Steps {
    pub(crate) fn new() -> Steps {
        Steps(Arc::new(AtomicU8::new(NONE)))
    }

    /// `connect`, with the steps it begins noted here.
    pub(crate) fn scope<F: Future>(&self, connect: F) -> impl Future<Output = F::Output> {
        REACHED.scope(self.0.clone(), connect)
    }

    /// The last step that began, if any.
    pub(crate) fn reached(&self) -> Option<ConnectStep> {
        ConnectStep::ALL
            .get(usize::from(self.0.load(Ordering::Relaxed)))
            .copied()
    }
}

/// The connect in scope begins `step`.
pub(crate) fn begin(step: ConnectStep) {
    let _ = REACHED.try_with(|reached| reached.store(step as u8, Ordering::Relaxed));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_stands_at_its_own_index() {
        for (index, step) in ConnectStep::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(step as u8), index, "{step:?}");
        }
    }

    #[tokio::test]
    async fn the_last_step_begun_in_scope_is_the_one_reached() {
        let steps = Steps::new();
        assert_eq!(steps.reached(), None);
        steps
            .scope(async {
                begin(ConnectStep::Resolve);
                begin(ConnectStep::Dial);
            })
            .await;
        assert_eq!(steps.reached(), Some(ConnectStep::Dial));
        // Outside any scope nothing is noted, and nothing fails.
        begin(ConnectStep::Tls);
        assert_eq!(steps.reached(), Some(ConnectStep::Dial));
    }
}
