//! How far a connect got: each step notes itself as it begins, so that a connect timeout's
//! error says which ([`ConnectStep`]), as Go's `TLS handshake timeout` and curl's
//! `Resolving timed out` / `SSL connection timeout` tell a slow name server from an address
//! that does not answer or a server that never finishes its handshake, and so that the
//! request a connection is made for can read its step while it waits
//! ([`ConnectTarget::progress`](crate::ConnectTarget::progress)).
//!
//! The steps run deep in the connector's calls and the timer that ends them is outside them:
//! it wins by dropping the connect future, which can then report nothing. So the note is a
//! task-local that [`Steps::scope`] sets around every connect future (one allocation per
//! connection) and [`Steps::reached`] reads once the timer won.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

pub use pool_core::ConnectStep;
use pool_core::Progress;

/// Words for an error message: "while resolving the name", ...
pub(crate) fn doing(step: ConnectStep) -> &'static str {
    match step {
        ConnectStep::Resolve => "while resolving the name",
        ConnectStep::Dial => "while connecting",
        ConnectStep::Tls => "during the TLS handshake",
        ConnectStep::Tunnel => "while the proxy opened the tunnel",
        ConnectStep::Socks => "during the SOCKS handshake",
        // `ConnectStep` is `non_exhaustive` across crates.
        _ => "while connecting",
    }
}

/// No step began yet.
const NONE: u8 = u8::MAX;

/// Where the steps of the connect in scope are noted.
#[derive(Clone)]
struct Notes {
    /// The last step begun (its discriminant), for the timeout's error.
    reached: Arc<AtomicU8>,
    /// The progress of the request the connection is made for, if it follows one.
    progress: Option<Progress>,
}

tokio::task_local! {
    static NOTES: Notes;
}

/// The steps of one connect (see the module docs).
pub(crate) struct Steps(Notes);

impl Steps {
    /// Steps noted for a timeout's error and, when given, in a request's `progress`.
    pub(crate) fn new(progress: Option<Progress>) -> Steps {
        Steps(Notes {
            reached: Arc::new(AtomicU8::new(NONE)),
            progress,
        })
    }

    /// `connect`, with the steps it begins noted here.
    pub(crate) fn scope<F: Future>(&self, connect: F) -> impl Future<Output = F::Output> {
        NOTES.scope(self.0.clone(), connect)
    }

    /// The last step that began, if any.
    pub(crate) fn reached(&self) -> Option<ConnectStep> {
        ConnectStep::from_index(self.0.reached.load(Ordering::Relaxed))
    }
}

/// The connect in scope begins `step`.
pub(crate) fn begin(step: ConnectStep) {
    let _ = NOTES.try_with(|notes| {
        notes.reached.store(step as u8, Ordering::Relaxed);
        if let Some(progress) = &notes.progress {
            progress.connecting(Some(step));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use pool_core::RequestStage;

    #[tokio::test]
    async fn the_last_step_begun_in_scope_is_the_one_reached() {
        let progress = Progress::new();
        let steps = Steps::new(Some(progress.clone()));
        assert_eq!(steps.reached(), None);
        steps
            .scope(async {
                begin(ConnectStep::Resolve);
                assert_eq!(
                    progress.stage(),
                    RequestStage::Connecting(Some(ConnectStep::Resolve))
                );
                begin(ConnectStep::Dial);
            })
            .await;
        assert_eq!(steps.reached(), Some(ConnectStep::Dial));
        assert_eq!(
            progress.stage(),
            RequestStage::Connecting(Some(ConnectStep::Dial))
        );
        // Outside any scope nothing is noted, and nothing fails.
        begin(ConnectStep::Tls);
        assert_eq!(steps.reached(), Some(ConnectStep::Dial));
    }
}
