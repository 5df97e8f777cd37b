//! How an [`Error`] prints: `Debug` with its classification, `Display` with this level's
//! message (and, in the alternate form, the whole chain; see the parent module's docs).

use std::error::Error as StdError;
use std::fmt;

use super::{Error, Retryable};

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("pool::Error");
        d.field("kind", &self.inner.kind);
        if let Some(source) = &self.inner.source {
            d.field("source", source);
        }
        if self.inner.retryable != Retryable::No {
            d.field("retryable", &self.inner.retryable);
        }
        if let Some(connection) = &self.inner.connection {
            d.field("connection", &connection.id());
            d.field("reused", &connection.is_reused());
        }
        d.finish()
    }
}

/// `{}` is this level alone (the cause is [`source`](StdError::source)'s); `{:#}` is the
/// whole chain on one line.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())?;
        if self.on_a_connection_allowing_no_streams() {
            // What the protocol's own error says varies (a refused stream, a request that never
            // became one, a connection the pool ended); this is what they have in common.
            f.write_str(
                ": the server allows no HTTP/2 stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)",
            )?;
        }
        // h2 words a NO_ERROR GOAWAY as "not a result of an error", which reads like a
        // contradiction inside an error message: this level says what happened instead, and the
        // alternate form leaves h2's wording out.
        let graceful = self.is_graceful_go_away();
        if graceful {
            f.write_str(": the server closed the connection gracefully (GOAWAY)")?;
        }
        match self.inner.retryable {
            Retryable::No => {}
            Retryable::NotProcessed => {
                f.write_str(" (the server did not process the request; it is safe to send again)")?
            }
            Retryable::Idempotent => f.write_str(
                " (no response began and the request is idempotent: it is safe to send again)",
            )?,
        }
        if !f.alternate() || graceful {
            return Ok(());
        }
        write_chain(f, self.source())
    }
}

/// Writes `: cause` for each level of a source chain, each level's own message once.
fn write_chain(
    f: &mut fmt::Formatter<'_>,
    mut next: Option<&(dyn StdError + 'static)>,
) -> fmt::Result {
    while let Some(cause) = next {
        write!(f, ": {cause}")?;
        next = cause.source();
    }
    Ok(())
}
