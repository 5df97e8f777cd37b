//! `--doh-url URL`: host names resolved over DNS-over-HTTPS (RFC 8484), as curl 7.88
//! resolves them.
//!
//! [`DohResolver`] is a [`pool::Resolve`], so the pool asks it wherever it would ask the system
//! resolver; `--resolve` entries stay in front of it and `-4`/`-6` filter what it finds. For
//! each name it POSTs two DNS queries (`application/dns-message`, ID 0, recursion desired): `A`,
//! and `AAAA` unless `-4` is given, at once, and connects to the IPv4 answers, then the IPv6
//! ones. `localhost` and names under `.localhost` never reach it: curl mode answers them in front
//! of every resolver ([`super::localhost`]). The DNS messages are built and read by `hickory-proto`.
//!
//! The queries go through a pool of their own (HTTP/2 when the server offers it), as curl's go
//! through transfers of their own: they trust what the transfers trust (`--cacert`,
//! `--capath`, `--crlfile`) but not `-k`; `--doh-insecure` turns verification off for them
//! alone and `--doh-cert-status` requires a good OCSP staple from the DoH server. They use no
//! proxy, and `--resolve` applies to the DoH server's own name. The URL must be `https://`, as
//! curl's release builds require; any other URL, an unreachable or untrusted server, or answers
//! with no address fail the transfer with exit 6, "Couldn't resolve host name", curl's words.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};

use bytes::Bytes;
use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, RecordType};
use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use pool::{Resolve, ResolveFuture};

/// The media type of DNS messages over HTTP.
const DNS_MESSAGE: &str = "application/dns-message";

/// The largest answer read, as curl's buffer for one.
const MAX_ANSWER: usize = 3000;

/// Resolves names by asking a DoH server.
#[derive(Clone)]
pub(crate) struct DohResolver {
    /// The client of the pool the queries go through.
    client: pool::Client,
    /// The server's URL; `None` when `--doh-url` cannot be used (not `https://`), which fails
    /// every lookup.
    url: Option<Uri>,
    /// Whether `AAAA` is asked too (not under `-4`).
    ipv6: bool,
}

impl fmt::Debug for DohResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DohResolver")
            .field("url", &self.url)
            .field("ipv6", &self.ipv6)
            .finish_non_exhaustive()
    }
}

/// Why a DoH lookup found no address. Its text is curl's message for the exit code 6 that
/// follows; [`failed`] finds it in an error's chain.
#[derive(Debug)]
pub(crate) struct DohFailed;

impl fmt::Display for DohFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Couldn't resolve host name")
    }
}

impl StdError for DohFailed {}

impl DohResolver {
    /// Asks the server at `url` through `client`; `ipv6`: ask for `AAAA` too.
    pub(crate) fn new(client: pool::Client, url: &str, ipv6: bool) -> DohResolver {
        let url = url
            .parse::<Uri>()
            .ok()
            .filter(|u| u.scheme_str() == Some("https") && u.host().is_some());
        DohResolver { client, url, ipv6 }
    }

    /// The addresses of `host` in the answers to the `A` query, then the `AAAA` one.
    async fn lookup(&self, host: &str) -> Option<Vec<IpAddr>> {
        let url = self.url.as_ref()?;
        let ask = |kind| self.ask(url, host, kind);
        let (v4, v6) = if self.ipv6 {
            tokio::join!(ask(RecordType::A), ask(RecordType::AAAA))
        } else {
            (ask(RecordType::A).await, None)
        };
        let found: Vec<IpAddr> = v4.into_iter().chain(v6).flatten().collect();
        (!found.is_empty()).then_some(found)
    }

    /// One query; `None` when it could not be sent or its answer not read.
    async fn ask(&self, url: &Uri, host: &str, kind: RecordType) -> Option<Vec<IpAddr>> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static(DNS_MESSAGE))
            .header(ACCEPT, HeaderValue::from_static("*/*"))
            .body(Full::new(Bytes::from(query(host, kind)?)))
            .ok()?;
        let response = self.client.request(request).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .ok()?
            .to_bytes();
        Some(addresses(&body, kind))
    }
}

impl Resolve for DohResolver {
    fn resolve(&self, host: &str, port: u16) -> ResolveFuture {
        let resolver = self.clone();
        let host = host.to_owned();
        Box::pin(async move {
            match resolver.lookup(&host).await {
                Some(found) => Ok(found
                    .into_iter()
                    .map(|ip| SocketAddr::new(ip, port))
                    .collect()),
                None => Err(io::Error::new(io::ErrorKind::NotFound, DohFailed)),
            }
        })
    }
}

/// Whether `error` failed because a DoH lookup found no address.
pub(crate) fn failed(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        let inner = error
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .map(|inner| inner as &(dyn StdError + 'static));
        if error.is::<DohFailed>() || inner.is_some_and(|e| e.is::<DohFailed>()) {
            return true;
        }
        next = error.source();
    }
    false
}

/// The DNS query for `host`'s records of `kind`, as curl sends it: ID 0, recursion desired.
fn query(host: &str, kind: RecordType) -> Option<Vec<u8>> {
    let name = Name::from_ascii(host).ok()?;
    let mut message = Message::new();
    message
        .set_id(0)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true)
        .add_query(Query::query(name, kind));
    message.to_vec().ok()
}

/// The addresses of `kind` among the answers of the DNS message `body` (none when it does not
/// read as one).
fn addresses(body: &[u8], kind: RecordType) -> Vec<IpAddr> {
    let Ok(message) = Message::from_vec(body) else {
        return Vec::new();
    };
    message
        .answers()
        .iter()
        .filter_map(|record| match (record.data(), kind) {
            (RData::A(a), RecordType::A) => Some(IpAddr::V4(a.0)),
            (RData::AAAA(aaaa), RecordType::AAAA) => Some(IpAddr::V6(aaaa.0)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::ResponseCode;
    use hickory_proto::rr::Record;
    use hickory_proto::rr::rdata::{A, AAAA, CNAME};
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn the_query_is_curls_bytes() {
        // curl 7.88.1's A query for doh.test, as a DoH server received it.
        let expected = "00000100000100000000000003646f6804746573740000010001";
        let sent = query("doh.test", RecordType::A).unwrap();
        let hex: String = sent.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, expected);
    }

    fn answer(records: Vec<Record>, code: ResponseCode) -> Vec<u8> {
        let mut message = Message::new();
        message
            .set_message_type(MessageType::Response)
            .set_response_code(code);
        message.add_answers(records);
        message.to_vec().unwrap()
    }

    #[test]
    fn answers_give_their_addresses_of_the_kind_asked() {
        let name = Name::from_ascii("doh.test.").unwrap();
        let alias = Name::from_ascii("real.test.").unwrap();
        let body = answer(
            vec![
                Record::from_rdata(name.clone(), 60, RData::CNAME(CNAME(alias.clone()))),
                Record::from_rdata(alias.clone(), 60, RData::A(A::new(127, 0, 0, 9))),
                Record::from_rdata(alias, 60, RData::AAAA(AAAA::new(0, 0, 0, 0, 0, 0, 0, 1))),
            ],
            ResponseCode::NoError,
        );
        assert_eq!(
            addresses(&body, RecordType::A),
            [IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9))]
        );
        assert_eq!(
            addresses(&body, RecordType::AAAA),
            [IpAddr::V6(Ipv6Addr::LOCALHOST)]
        );
        assert!(addresses(&answer(vec![], ResponseCode::NXDomain), RecordType::A).is_empty());
        assert!(addresses(b"<html>not DNS</html>", RecordType::A).is_empty());
    }

    #[test]
    fn a_failed_lookup_is_found_in_an_error_chain() {
        let io = io::Error::new(io::ErrorKind::NotFound, DohFailed);
        let wrapped = pool::ConnectError::resolve(io);
        assert!(failed(&wrapped));
        let other = pool::ConnectError::resolve(io::Error::other("no such host"));
        assert!(!failed(&other));
    }
}
