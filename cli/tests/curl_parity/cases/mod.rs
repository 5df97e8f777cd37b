//! The parity cases, by area; each bug of issue 19 has at least one.

mod alt_svc;
mod auth;
mod connections;
mod core;
mod flags;
mod forms;
mod invocation;
mod output;
mod proxy_auth;
mod requests;
mod tls_checks;
mod tls_identity;

use crate::Case;

/// Every case, area by area.
pub(crate) fn all() -> Vec<Case> {
    [
        core::cases(),
        tls_checks::cases(),
        tls_identity::cases(),
        alt_svc::cases(),
        requests::cases(),
        connections::cases(),
        auth::cases(),
        proxy_auth::cases(),
        output::cases(),
        forms::cases(),
        invocation::cases(),
        flags::cases(),
    ]
    .concat()
}
