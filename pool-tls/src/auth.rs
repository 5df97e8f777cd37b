//! Authentication that answers a challenge: which scheme a proxy (or, for a caller that uses
//! [`AuthScheme::answer`] itself, a server) is answered with, and the answer.
//!
//! [`AuthScheme::Basic`] sends the credentials with the first request, unasked, as curl's
//! `-U` does. [`AuthScheme::Digest`] and [`AuthScheme::Any`] send nothing until the peer
//! challenges (`407` with `Proxy-Authenticate`, or `401` with `WWW-Authenticate`), then answer
//! once: Digest (RFC 7616: MD5, SHA-256 and SHA-512-256, `qop=auth` and `auth-int`, computed by
//! the `digest_auth` crate) when a challenge offers it, and with `Any`, Basic when Basic is
//! all that is offered. These are curl's `--proxy-digest` and `--proxy-anyauth` (and
//! `--digest`, `--anyauth` for servers). [`AuthScheme::Ntlm`] sends NTLM's negotiate message
//! with the first request and answers the peer's NTLM challenge with the authenticate message
//! (curl's `--proxy-ntlm` and `--ntlm`); NTLM authenticates a *connection*, so the answer only
//! counts on the connection the challenge came on.
//!
//! What this module does not do: keep a nonce for later requests (each challenge is answered
//! anew, one `nc=00000001` each), Negotiate (Kerberos), or send anything: the connector answers
//! a tunnel's challenge, and a caller answers a forward proxy's or a server's (see
//! [`Proxy::answer_challenge`](crate::Proxy::answer_challenge)).

use http::HeaderValue;

/// Which authentication scheme answers a peer that needs credentials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AuthScheme {
    /// Basic, sent with the first request, before any challenge (the default; curl's `-U`).
    #[default]
    Basic,
    /// Digest: nothing until the peer challenges, then the answer to its `Digest` challenge
    /// (curl's `--proxy-digest`).
    Digest,
    /// The first request goes without credentials; a challenge is answered with Digest when
    /// offered, else with Basic when that is offered (curl's `--proxy-anyauth`).
    Any,
    /// NTLM: the first request carries the negotiate message, and the peer's `NTLM` challenge
    /// is answered with the authenticate message, which must go on the same connection
    /// (curl's `--proxy-ntlm`). NTLMv2 when the challenge offers extended session security
    /// (every current peer does), NTLMv1 otherwise; a user may name a domain as
    /// `DOMAIN\user`.
    Ntlm,
}

/// The request a challenge refused, which a Digest answer covers.
#[derive(Clone, Copy, Debug)]
pub struct Challenged<'a> {
    /// The request's method (`CONNECT` for a tunnel).
    pub method: &'a str,
    /// The request target the answer names in its `uri`: the path and query (or, for
    /// `CONNECT`, `host:port`).
    pub target: &'a str,
    /// The request's body, for `qop=auth-int` (empty when it has none).
    pub body: &'a [u8],
}

/// An answer to a challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthAnswer {
    /// The `Authorization` or `Proxy-Authorization` value, marked sensitive.
    pub value: HeaderValue,
    /// The scheme that answered: `"Digest"`, `"Basic"` or `"NTLM"`.
    pub scheme: &'static str,
}

impl AuthScheme {
    /// Whether a challenge is waited for and answered: the first request goes without
    /// credentials (Digest, Any) or with NTLM's negotiate message, which draws the challenge.
    pub fn waits_for_challenge(self) -> bool {
        self != AuthScheme::Basic
    }

    /// What the first request carries before any challenge, as `user` with `password`:
    /// Basic's credentials, NTLM's negotiate message (which names nobody), or nothing.
    pub fn upfront(self, (user, password): (&str, &str)) -> Option<HeaderValue> {
        match self {
            AuthScheme::Basic => Some(basic(user, password)),
            AuthScheme::Ntlm => Some(crate::ntlm::negotiate()),
            AuthScheme::Digest | AuthScheme::Any => None,
        }
    }

    /// The answer to the challenges among `challenges` (the values of a response's
    /// `Proxy-Authenticate` or `WWW-Authenticate`), for `request`, as `user` with `password`:
    /// Digest when a challenge offers it and this scheme answers Digest, else Basic when one
    /// offers Basic and this scheme is [`Any`](AuthScheme::Any) or
    /// [`Basic`](AuthScheme::Basic); for [`Ntlm`](AuthScheme::Ntlm), the authenticate message
    /// for an `NTLM` challenge. `None` when nothing offered can be answered.
    pub fn answer<'h>(
        self,
        challenges: impl IntoIterator<Item = &'h HeaderValue>,
        request: Challenged<'_>,
        (user, password): (&str, &str),
    ) -> Option<AuthAnswer> {
        let offered: Vec<&str> = challenges
            .into_iter()
            .filter_map(|value| value.to_str().ok())
            .collect();
        let digest = || {
            let context = digest_auth::AuthContext::new_with_method(
                user,
                password,
                request.target,
                Some(request.body),
                digest_auth::HttpMethod::from(request.method),
            );
            offered
                .iter()
                .filter(|value| is_scheme(value, "digest"))
                .find_map(|value| {
                    let mut challenge = digest_auth::parse(value).ok()?;
                    let answer = challenge.respond(&context).ok()?;
                    HeaderValue::from_str(&answer.to_header_string()).ok()
                })
                .map(|value| (value, "Digest"))
        };
        let basic = || {
            offered
                .iter()
                .any(|value| is_scheme(value, "basic"))
                .then(|| (basic(user, password), "Basic"))
        };
        let ntlm = || {
            offered
                .iter()
                .find_map(|value| crate::ntlm::Challenge::from_header(value))
                .map(|challenge| {
                    (
                        crate::ntlm::authenticate(&challenge, (user, password)),
                        "NTLM",
                    )
                })
        };
        let (mut value, scheme) = match self {
            AuthScheme::Digest => digest(),
            AuthScheme::Any => digest().or_else(basic),
            AuthScheme::Basic => basic(),
            AuthScheme::Ntlm => ntlm(),
        }?;
        value.set_sensitive(true);
        Some(AuthAnswer { value, scheme })
    }
}

/// `Basic base64(user:password)`, marked sensitive.
///
/// RFC 7617 forbids `:` in a user name; one is encoded as is, and the peer will split at it.
pub(crate) fn basic(user: &str, password: &str) -> HeaderValue {
    let token = base64_encode(format!("{user}:{password}").as_bytes());
    let mut value = HeaderValue::try_from(format!("Basic {token}"))
        .expect("base64 and the scheme name are valid header bytes");
    value.set_sensitive(true);
    value
}

/// Whether a challenge is one of `scheme` (lower case): its first token, case-insensitively.
fn is_scheme(value: &str, scheme: &str) -> bool {
    let value = value.trim_start();
    value
        .get(..scheme.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
        && value[scheme.len()..].starts_with([' ', '\t'])
}

/// Standard base64 (RFC 4648 section 4) with `=` padding.
pub(crate) fn base64_encode(input: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(input)
}
