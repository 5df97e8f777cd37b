//! HTTP/1 request header names written as the caller spelled them.
//!
//! `http::HeaderMap` keeps names in lower case and hyper writes them in lower case or, with
//! `title_case_headers`, in title case; a caller that needs `x-Custom-ID` on the wire (a
//! case-sensitive server, a replay of a captured request, curl's `-H`, which sends a name as
//! typed) has no way to say so. A request carrying [`RequestHeaderNames`] gets those spellings
//! on a pool that wraps its transport for header names (`http1_preserve_header_case`): the
//! transport ([`NamesIo`](crate::raw_names::NamesIo)) finds the request's head in hyper's first
//! write after the request was handed over and rewrites each listed name's letters in a copy
//! of the head. Only letter case changes, so the head keeps its length and hyper's count of
//! bytes written stays true.
//!
//! What it does not do: add, remove or reorder fields; touch HTTP/2 (whose names are lower case
//! by definition); or cost anything on a pool that did not ask for header names, or for a
//! request without the extension. A head that does not parse as a request, or whose end is not
//! in that first write, goes as hyper wrote it.

use std::sync::{Mutex, PoisonError};

/// Request header names as they should go on the wire over HTTP/1 (`x-Custom-ID`), a request
/// extension. A field whose name equals one of these, ignoring case, is written with this
/// spelling; other fields are written as the pool writes them. Several fields of one name take
/// that name's spellings in order (`X-A` then `x-a`), the last one for any after them.
/// Honoured on pools built with `http1_preserve_header_case(true)`; ignored otherwise and over
/// HTTP/2.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHeaderNames {
    names: Vec<String>,
}

impl RequestHeaderNames {
    /// Adds `name` as the spelling of the fields of that name.
    pub fn push(&mut self, name: impl Into<String>) {
        self.names.push(name.into());
    }

    /// The spelling for a field named `name` (any case), if one was given: the first.
    pub fn spelling(&self, name: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|n| n.eq_ignore_ascii_case(name))
            .map(String::as_str)
    }

    /// The spelling of each field of a head whose names are `names`, in order: a name's
    /// spellings go to its fields in turn, the last one to any fields after them.
    pub fn assign<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Vec<Option<&str>> {
        let mut used = vec![false; self.names.len()];
        names
            .into_iter()
            .map(|name| {
                let matching = |(_, n): &(usize, &String)| n.eq_ignore_ascii_case(name);
                let mut of_name = self.names.iter().enumerate().filter(matching);
                let (at, spelling) = match of_name.clone().find(|(i, _)| !used[*i]) {
                    Some(found) => found,
                    None => of_name.next_back()?,
                };
                used[at] = true;
                Some(spelling.as_str())
            })
            .collect()
    }
}

impl<S: Into<String>> FromIterator<S> for RequestHeaderNames {
    fn from_iter<T: IntoIterator<Item = S>>(iter: T) -> Self {
        RequestHeaderNames {
            names: iter.into_iter().map(Into::into).collect(),
        }
    }
}

/// Where [`H1Connection::send`](crate::H1Connection::send) leaves the spellings of the request
/// it hands to hyper, for the transport's next write of a head.
#[derive(Debug, Default)]
pub(crate) struct SpellingSlot(Mutex<Option<RequestHeaderNames>>);

impl SpellingSlot {
    pub(crate) fn put(&self, names: Option<RequestHeaderNames>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = names;
    }

    pub(crate) fn take(&self) -> Option<RequestHeaderNames> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The request head at the start of `bytes` with the names `names` lists respelled; `None`
/// when `bytes` does not start with a complete request head.
pub(crate) fn respell(bytes: &[u8], names: &RequestHeaderNames) -> Option<Vec<u8>> {
    let mut fields = vec![httparse::EMPTY_HEADER; 256];
    let mut request = httparse::Request::new(&mut fields);
    let httparse::Status::Complete(len) = request.parse(bytes).ok()? else {
        return None;
    };
    let mut head = bytes[..len].to_vec();
    let spellings = names.assign(request.headers.iter().map(|field| field.name));
    for (field, spelling) in request.headers.iter().zip(spellings) {
        let Some(spelling) = spelling else {
            continue;
        };
        // The name lies in `bytes`; its offset is where it lies in the copy.
        let at = field.name.as_ptr() as usize - bytes.as_ptr() as usize;
        head[at..at + spelling.len()].copy_from_slice(spelling.as_bytes());
    }
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_names_are_respelled_and_nothing_else_moves() {
        let names: RequestHeaderNames = ["x-Mixed-CASE", "x-a"].into_iter().collect();
        let head =
            b"PUT /a HTTP/1.1\r\nHost: h\r\nX-Mixed-Case: 3\r\nX-A: 1\r\nX-B: x-a\r\n\r\nbody";
        let out = respell(head, &names).unwrap();
        assert_eq!(
            out,
            b"PUT /a HTTP/1.1\r\nHost: h\r\nx-Mixed-CASE: 3\r\nx-a: 1\r\nX-B: x-a\r\n\r\n"
        );
        assert_eq!(names.spelling("X-MIXED-case"), Some("x-Mixed-CASE"));
        assert_eq!(names.spelling("x-b"), None);
    }

    #[test]
    fn fields_of_one_name_take_its_spellings_in_turn() {
        let names: RequestHeaderNames = ["X-A", "x-a"].into_iter().collect();
        assert_eq!(
            names.assign(["x-a", "host", "x-a", "x-a"]),
            [Some("X-A"), None, Some("x-a"), Some("x-a")]
        );
    }

    /// A transport that takes at most 7 bytes a write.
    #[derive(Default)]
    struct Trickle(Vec<u8>);

    impl hyper::rt::Write for Trickle {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let n = buf.len().min(7);
            self.get_mut().0.extend_from_slice(&buf[..n]);
            std::task::Poll::Ready(Ok(n))
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// hyper's writes resume where the transport stopped; the respelled head goes on from the
    /// same offset, and the body after it goes untouched.
    #[test]
    fn a_head_written_in_pieces_goes_respelled_then_the_body_as_is() {
        use crate::raw_names::{NamesIo, NamesParser, NamesSlot};
        let slot = std::sync::Arc::new(NamesSlot::default());
        let mut io = NamesIo::new(Trickle::default(), slot.clone(), NamesParser::default());
        slot.request
            .put(Some(["x-Mixed-CASE"].into_iter().collect()));
        let wire = b"POST / HTTP/1.1\r\nX-Mixed-Case: 1\r\nContent-Length: 12\r\n\r\nx-mixed-case";
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut at = 0;
        while at < wire.len() {
            let polled =
                hyper::rt::Write::poll_write(std::pin::Pin::new(&mut io), &mut cx, &wire[at..]);
            let std::task::Poll::Ready(Ok(n)) = polled else {
                panic!("the transport is always ready");
            };
            assert!(n > 0 && n <= 7);
            at += n;
        }
        let written = io.into_inner().0;
        assert_eq!(
            written,
            b"POST / HTTP/1.1\r\nx-Mixed-CASE: 1\r\nContent-Length: 12\r\n\r\nx-mixed-case"
        );
    }

    #[test]
    fn a_partial_or_foreign_head_is_left_alone() {
        let names: RequestHeaderNames = ["x-a"].into_iter().collect();
        assert_eq!(respell(b"GET / HTTP/1.1\r\nX-A: 1\r\n", &names), None);
        assert_eq!(respell(b"\x00\x01binary", &names), None);
    }
}
