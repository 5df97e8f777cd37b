//! The hickory resolver against a DNS server on loopback that this test scripts: positive
//! answers are cached for their TTL, negative answers for the zone's negative TTL, and a
//! cleared cache (or an expired TTL) sees a changed record.
#![cfg(feature = "hickory")]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, SOA};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use pool_tls::hickory_resolver::config::ResolverOpts;
use pool_tls::{HickoryResolver, Resolve};
use tokio::net::UdpSocket;

/// An authoritative server for `test.`: `svc.test.` has one A record (changeable, with a
/// chosen TTL) and no AAAA; every other name is NXDOMAIN. Negative answers carry an SOA
/// whose minimum is one hour.
struct DnsServer {
    addr: SocketAddr,
    answer: Arc<Mutex<Ipv4Addr>>,
    ttl: Arc<AtomicU32>,
    queries: Arc<AtomicUsize>,
}

impl DnsServer {
    async fn start(ttl: u32) -> DnsServer {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let server = DnsServer {
            addr: socket.local_addr().unwrap(),
            answer: Arc::new(Mutex::new(Ipv4Addr::new(127, 0, 0, 1))),
            ttl: Arc::new(AtomicU32::new(ttl)),
            queries: Arc::default(),
        };
        let (answer, ttl, queries) = (
            server.answer.clone(),
            server.ttl.clone(),
            server.queries.clone(),
        );
        tokio::spawn(async move {
            let mut buf = [0u8; 1500];
            loop {
                let Ok((n, peer)) = socket.recv_from(&mut buf).await else {
                    return;
                };
                let Ok(query) = Message::from_vec(&buf[..n]) else {
                    continue;
                };
                queries.fetch_add(1, Ordering::SeqCst);
                let ip = *answer.lock().unwrap();
                let reply = respond(&query, ip, ttl.load(Ordering::SeqCst));
                let _ = socket.send_to(&reply.to_vec().unwrap(), peer).await;
            }
        });
        server
    }

    fn queries(&self) -> usize {
        self.queries.load(Ordering::SeqCst)
    }

    fn resolver(&self) -> HickoryResolver {
        HickoryResolver::with_name_servers(&[self.addr], ResolverOpts::default())
    }
}

fn respond(query: &Message, ip: Ipv4Addr, ttl: u32) -> Message {
    let svc = Name::from_ascii("svc.test.").unwrap();
    let mut reply = Message::new();
    reply
        .set_id(query.id())
        .set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_authoritative(true)
        .set_recursion_desired(query.recursion_desired())
        .set_recursion_available(true)
        .add_queries(query.queries().to_vec());
    let soa = Record::from_rdata(
        Name::from_ascii("test.").unwrap(),
        3600,
        RData::SOA(SOA::new(
            Name::from_ascii("ns.test.").unwrap(),
            Name::from_ascii("admin.test.").unwrap(),
            1,
            3600,
            600,
            86400,
            3600,
        )),
    );
    for q in query.queries() {
        if q.name() == &svc && q.query_type() == RecordType::A {
            reply.add_answer(Record::from_rdata(svc.clone(), ttl, RData::A(A(ip))));
        } else if q.name() == &svc {
            // NODATA: the name exists without records of this type.
            reply.add_name_server(soa.clone());
        } else {
            reply.set_response_code(ResponseCode::NXDomain);
            reply.add_name_server(soa.clone());
        }
    }
    reply
}

async fn lookup(resolver: &HickoryResolver, host: &str) -> std::io::Result<Vec<SocketAddr>> {
    resolver.resolve(host, 8080).await
}

fn at(ip: [u8; 4]) -> Vec<SocketAddr> {
    vec![SocketAddr::new(IpAddr::from(ip), 8080)]
}

#[tokio::test]
async fn an_answer_is_cached_for_its_ttl() {
    let server = DnsServer::start(3600).await;
    let resolver = server.resolver();
    assert_eq!(
        lookup(&resolver, "svc.test").await.unwrap(),
        at([127, 0, 0, 1])
    );
    let asked = server.queries();
    *server.answer.lock().unwrap() = Ipv4Addr::new(127, 0, 0, 2);
    assert_eq!(
        lookup(&resolver, "svc.test").await.unwrap(),
        at([127, 0, 0, 1]),
        "within the TTL the cached answer is used"
    );
    assert_eq!(server.queries(), asked, "no query within the TTL");
    resolver.clear_cache();
    assert_eq!(
        lookup(&resolver, "svc.test").await.unwrap(),
        at([127, 0, 0, 2])
    );
}

#[tokio::test]
async fn an_answer_with_ttl_zero_is_not_kept() {
    let server = DnsServer::start(0).await;
    let resolver = server.resolver();
    assert_eq!(
        lookup(&resolver, "svc.test").await.unwrap(),
        at([127, 0, 0, 1])
    );
    *server.answer.lock().unwrap() = Ipv4Addr::new(127, 0, 0, 3);
    assert_eq!(
        lookup(&resolver, "svc.test").await.unwrap(),
        at([127, 0, 0, 3]),
        "an expired answer is asked for again"
    );
}

#[tokio::test]
async fn a_missing_name_is_cached_negatively() {
    let server = DnsServer::start(3600).await;
    let resolver = server.resolver();
    let error = lookup(&resolver, "missing.test").await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{error}");
    let asked = server.queries();
    assert!(asked > 0);
    let again = lookup(&resolver, "missing.test").await.unwrap_err();
    assert_eq!(again.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(server.queries(), asked, "the negative answer was cached");
}
