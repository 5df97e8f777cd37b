//! The credentials one request of a transfer carries (the URL's, or its host's `.netrc` entry),
//! and what `-v` says of them.
//!
//! In curl's order of precedence: the answer to a challenge this URL drew (`--digest`,
//! `--anyauth`, `--ntlm`'s authenticate message); `--aws-sigv4`'s signature, which wins over
//! every other scheme; `--ntlm`'s negotiate message on a URL's first request; then `-u`, the
//! URL's or `.netrc`'s credentials as Basic, or `--oauth2-bearer`. None of them go to another
//! host after a redirect unless `--location-trusted` (or they are that host's `.netrc` entry).

use http::Uri;
use http::header::{AUTHORIZATION, HeaderName, HeaderValue};

use super::super::exit::CurlError;
use super::super::netrc::Mode;
use super::super::{Session, request, sigv4};
use super::HopState;
use super::send::Target;
use crate::curl::request::Hop;

/// What a request carries to say who it is.
#[derive(Debug, Default)]
pub(super) struct Credentials {
    /// The `Authorization` value.
    pub(super) authorization: Option<HeaderValue>,
    /// `--aws-sigv4`'s date header, sent after `Authorization`.
    pub(super) signed_date: Option<(HeaderName, HeaderValue)>,
    /// `-v`'s `Server auth using SCHEME with user 'NAME'`.
    pub(super) note: Option<String>,
}

impl Session {
    /// The credentials a request to `uri` carries: the URL's (`url`), or the `.netrc` entry of
    /// its host unless `-u` (or `--oauth2-bearer`) says who the user is, or `--netrc-optional`
    /// finds a password in the URL; and whether they are the entry.
    pub(super) fn netrc_credentials(
        &self,
        uri: &Uri,
        url: Option<(String, String)>,
    ) -> Result<(Option<(String, String)>, bool), CurlError> {
        let Some(netrc) = &self.netrc else {
            return Ok((url, false));
        };
        let url_password = url.as_ref().is_some_and(|(_, p)| !p.is_empty());
        if self.composed.names_user() || (netrc.mode == Mode::Optional && url_password) {
            return Ok((url, false));
        }
        let host = Target::host_of(uri);
        let user = url.as_ref().map(|(user, _)| user.as_str());
        let found = netrc.lookup(host, user).inspect_err(|e| {
            self.verbose.info(e.message());
        })?;
        match found {
            Some(found) => Ok((Some(found), true)),
            None => {
                self.verbose.info(&format!(
                    "Couldn't find host {host} in the {} file; using defaults",
                    netrc.path.display()
                ));
                Ok((url, false))
            }
        }
    }

    /// The credentials of the request to `uri` in `hop`.
    ///
    /// # Errors
    ///
    /// `--aws-sigv4`'s (exit 43 or 3) when the request cannot be signed.
    pub(super) fn credentials(
        &self,
        uri: &Uri,
        hop: &Hop,
        state: &HopState<'_>,
    ) -> Result<Credentials, CurlError> {
        if hop.drops_credentials() && !state.own {
            return Ok(Credentials::default());
        }
        if let Some(answer) = &state.digest {
            // The challenge's answer says so where it is made.
            return Ok(Credentials {
                authorization: Some(answer.clone()),
                ..Credentials::default()
            });
        }
        let template = &self.composed.template;
        let given = template.user_sets(&AUTHORIZATION) || template.user_removes(&AUTHORIZATION);
        if let Some(setup) = &self.composed.sigv4 {
            let signed = match given {
                true => None,
                false => self.sign(setup, uri, hop, state)?,
            };
            return Ok(
                signed.map_or_else(Credentials::default, |signed| Credentials {
                    note: Some(format!(
                        "Server auth using AWS_SIGV4 with user '{}'",
                        signed.key
                    )),
                    authorization: Some(signed.authorization),
                    signed_date: Some(signed.date),
                }),
            );
        }
        if let Some(user) = self.composed.ntlm_user(state.credentials.as_ref()) {
            return Ok(Credentials {
                authorization: pool::AuthScheme::Ntlm.upfront(user),
                note: Some(format!("Server auth using NTLM with user '{}'", user.0)),
                signed_date: None,
            });
        }
        let authorization = self.composed.authorization(state.credentials.as_ref());
        let note = (authorization.is_some() && !given)
            .then(|| self.composed.auth_note(state.credentials.as_ref()))
            .flatten();
        Ok(Credentials {
            authorization,
            note,
            signed_date: None,
        })
    }

    /// `--aws-sigv4`: this hop's signature, with `-u`'s key (else the URL's or `.netrc`'s);
    /// `None` without a key (unless `--oauth2-bearer` was given, when curl signs with an empty
    /// one).
    fn sign(
        &self,
        setup: &sigv4::Setup,
        uri: &Uri,
        hop: &Hop,
        state: &HopState<'_>,
    ) -> Result<Option<sigv4::Signed>, CurlError> {
        let no_key = (String::new(), String::new());
        let composed = &self.composed;
        let Some((key, secret)) = composed
            .given_user
            .as_ref()
            .or(state.credentials.as_ref())
            .or(composed.bearer.then_some(&no_key))
        else {
            return Ok(None);
        };
        let host = request::host_value(uri);
        let host = host.as_ref().and_then(|h| h.to_str().ok());
        let names_host = setup
            .headers
            .iter()
            .any(|line| line.starts_with("host:") || line.starts_with("host;"));
        let now = sigv4::timestamp_now();
        let method = state.template.method_for(hop);
        let signing = sigv4::Signing {
            method: method.as_str(),
            host_name: Target::host_of(uri),
            host: host.filter(|_| !names_host),
            path: uri.path(),
            query: uri.query().unwrap_or_default(),
            headers: &setup.headers,
            data: setup.data.as_deref(),
            key,
            secret,
            now: &now,
        };
        setup.sigv4.sign(&signing).map(Some)
    }
}
