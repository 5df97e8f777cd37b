//! The `/dns-query` route: a DNS-over-HTTPS server (RFC 8484) for the `--doh-url` cases,
//! answering the DNS message a POST carries with records it knows:
//!
//! | name | answer |
//! |------|--------|
//! | `doh.test` | `A 127.0.0.1` (the case's server) |
//! | `far.test` | `A 127.0.0.2` (loopback, where nothing listens) |
//! | `v6.test` | `AAAA ::1` only |
//! | anything else | `NXDOMAIN` |

use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{RData, Record, RecordType};
use pool_tests::h1::{RecordedRequest, Reply};

/// The answer to the DNS query in `req`'s body; `400` when it carries none.
pub(crate) fn answer(req: &RecordedRequest) -> Reply {
    let is_dns = req.header("content-type") == Some("application/dns-message");
    let Some(query) = Message::from_vec(&req.body).ok().filter(|_| is_dns) else {
        return Reply::new(400).body("not a DNS query\n");
    };
    let mut response = Message::new();
    response
        .set_id(query.id())
        .set_message_type(MessageType::Response)
        .set_recursion_desired(query.recursion_desired())
        .set_recursion_available(true);
    for question in query.queries() {
        response.add_query(question.clone());
        let name = question.name().to_ascii().to_ascii_lowercase();
        let data = match (name.trim_end_matches('.'), question.query_type()) {
            ("doh.test", RecordType::A) => Some(RData::A(A(Ipv4Addr::LOCALHOST))),
            ("far.test", RecordType::A) => Some(RData::A(A(Ipv4Addr::new(127, 0, 0, 2)))),
            ("v6.test", RecordType::AAAA) => Some(RData::AAAA(AAAA(Ipv6Addr::LOCALHOST))),
            ("doh.test" | "far.test" | "v6.test", _) => None,
            _ => {
                response.set_response_code(ResponseCode::NXDomain);
                None
            }
        };
        if let Some(data) = data {
            response.add_answer(Record::from_rdata(question.name().clone(), 60, data));
        }
    }
    let body = response.to_vec().expect("a response encodes");
    Reply::ok(body).header("content-type", "application/dns-message")
}
