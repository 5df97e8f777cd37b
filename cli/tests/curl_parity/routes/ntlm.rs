//! The `/ntlm` and `/ntlm2` routes: a server that authenticates with NTLM (MS-NLMP), for the
//! `--ntlm` cases, and `/proxy-ntlm`, the same as a forward proxy (`407` and
//! `Proxy-Authenticate`) for `--proxy-ntlm`. A request without an NTLM message draws `401` and
//! `WWW-Authenticate: NTLM`;
//! a negotiate message draws the challenge; an authenticate message is checked against the
//! password `s3cret` as a server checks it ([`pool_tests::ntlm::verify`]).
//!
//! `/ntlm`'s challenge offers no extended session security, so the answer is NTLMv1, which
//! has nothing random in it: the reply quotes the whole message, compared byte for byte.
//! `/ntlm2`'s offers it with target information, so the answer is NTLMv2 (a timestamp and
//! random bytes in it): the reply says whose proof checked out.

use base64::Engine as _;
use pool_tests::h1::{RecordedRequest, Reply};
use pool_tests::ntlm;

/// Who asks: a server (`401`, `WWW-Authenticate`) or a forward proxy (`407`,
/// `Proxy-Authenticate`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Asker {
    Server,
    Proxy,
}

/// The reply to `req` on `/ntlm` (`v2` false), `/ntlm2` or, as a forward proxy, `/proxy-ntlm`.
pub(crate) fn answer(req: &RecordedRequest, v2: bool, asker: Asker) -> Reply {
    let (asked, status, challenge) = match asker {
        Asker::Server => ("authorization", 401, "www-authenticate"),
        Asker::Proxy => ("proxy-authorization", 407, "proxy-authenticate"),
    };
    let message = req.header(asked).and_then(ntlm::message);
    match message {
        Some((1, _)) => Reply::new(status)
            .header(challenge, &ntlm::challenge(v2))
            .body("challenge\n"),
        Some((3, m)) => match ntlm::verify(&m, v2, "s3cret") {
            Some(who) => {
                let quoted = if v2 {
                    String::new()
                } else {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(&m);
                    format!("message: {b64}\n")
                };
                let body = String::from_utf8_lossy(&req.body);
                Reply::ok(format!("ntlm ok: {who}\n{quoted}data: {body}\n"))
            }
            None => Reply::new(status)
                .header(challenge, "NTLM")
                .body("ntlm refused\n"),
        },
        _ => Reply::new(status)
            .header(challenge, "NTLM")
            .body("ntlm needed\n"),
    }
}
