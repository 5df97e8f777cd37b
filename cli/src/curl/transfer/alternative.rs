//! `--alt-svc` in a transfer: a request to an origin with a known alternative goes there, over
//! a client of its own whose connector dials the alternative for that origin (so its
//! connections stay apart from the origin's own, as curl's do); a response's `Alt-Svc` headers
//! are taken into the cache. The cache itself is [`crate::curl::alt_svc`].

use http::header::HeaderValue;
use http::response::Parts;
use http::{Uri, Version};

use super::super::alt_svc::Alpn;
use super::super::connect_to::ConnectToArgs;
use super::super::exit::CurlError;
use super::super::sink::Sink;
use super::super::{Session, lock, setup};
use super::send::Target;

/// Where an alternative sends a request.
#[derive(Debug)]
pub(super) struct Alternative {
    /// The client whose connector dials the alternative for the request's origin.
    pub(super) client: pool::Client,
    /// `Alt-Used: HOST:PORT`.
    pub(super) used: HeaderValue,
}

impl Session {
    /// Where a request for `uri` goes: where `--connect-to` sends it, else (over `https://`)
    /// to the alternative `--alt-svc` knows for its origin, else to the URL's host and port.
    ///
    /// # Errors
    ///
    /// Exit 49 for a `--connect-to` entry with a bad port; a pool that cannot be built for
    /// the alternative.
    pub(super) fn target_for(&self, uri: &Uri, sink: &Sink) -> Result<Target, CurlError> {
        let net = &self.args.net;
        let only_ipv6 = (net.ipv4 || net.ipv6).then_some(net.ipv6);
        let dial_with = (&self.connect_to, only_ipv6);
        let mut target = Target::of(uri, self.prior_knowledge(uri), dial_with, sink)?;
        let Some(cache) = &self.alt_svc else {
            return Ok(target);
        };
        if uri.scheme_str() != Some("https") || target.dial.names_host || target.dial.names_port {
            return Ok(target);
        }
        let host = Target::host_of(uri);
        let port = uri.port_u16().unwrap_or(443);
        let Some(entry) = cache.lookup(host, port) else {
            return Ok(target);
        };
        let (to_host, to_port) = (entry.dst_host.as_str(), entry.dst_port);
        target.alternative = Some(Alternative {
            client: self.alternative_client((host, port), (to_host, to_port))?,
            used: HeaderValue::from_str(&format!("{to_host}:{to_port}"))
                .map_err(|_| CurlError::malformed_url())?,
        });
        let dial = &mut target.dial;
        dial.alt_svc = Some(entry.connecting_note(host, port));
        dial.authority = match to_host.contains(':') {
            true => format!("[{to_host}]:{to_port}"),
            false => format!("{to_host}:{to_port}"),
        };
        dial.host = to_host.to_owned();
        dial.port = to_port;
        Ok(target)
    }

    /// The client that sends `origin`'s requests to `to`: built on first use with this
    /// group's flags, then kept.
    fn alternative_client(
        &self,
        origin: (&str, u16),
        to: (&str, u16),
    ) -> Result<pool::Client, CurlError> {
        let key = (
            origin.0.to_ascii_lowercase(),
            origin.1,
            to.0.to_owned(),
            to.1,
        );
        let mut clients = lock(&self.alternatives);
        if let Some((_, client)) = clients.iter().find(|(k, _)| *k == key) {
            return Ok(client.clone());
        }
        let connect_to = ConnectToArgs::behind(origin, to, &self.args.connect.connect_to);
        let client = setup::build_client(&self.args, &connect_to, self.proxies.as_ref())?;
        clients.push((key, client.clone()));
        Ok(client)
    }

    /// Takes the `Alt-Svc` headers of the response from `uri` into the cache; returns `-v`'s
    /// notes of what each header added.
    pub(super) fn take_alternatives(&self, uri: &Uri, parts: &Parts) -> Vec<Vec<String>> {
        let Some(cache) = &self.alt_svc else {
            return Vec::new();
        };
        let alpn = match parts.version {
            Version::HTTP_2 => Alpn::H2,
            _ => Alpn::H1,
        };
        cache.store_from(uri, alpn, &parts.headers)
    }
}
