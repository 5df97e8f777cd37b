//! The builder's HTTP/1 settings: how requests are written and how tolerant the response
//! parser is. Each is hyper's own (`hyper::client::conn::http1::Builder`), under the name
//! hyper-util's legacy client gives it, so a client configured for one reads the same here.
//! Buffer sizes are checked in [`build`](Builder::build) rather than passed on at once: hyper
//! panics on a maximum below its minimum.

use super::{BuildError, Builder};

/// hyper's smallest accepted maximum read buffer (`max_buf_size`).
const MIN_MAX_BUF_SIZE: usize = 8192;

impl Builder {
    /// Writes HTTP/1 header names in title case (`Content-Type`) instead of lower case.
    pub fn http1_title_case_headers(mut self, enabled: bool) -> Self {
        self.h1.title_case_headers(enabled);
        self
    }

    /// Keeps each HTTP/1 response's header names as the server wrote them (`Content-Type`),
    /// in order, as a [`RawHeaderNames`](crate::RawHeaderNames) response extension; the
    /// `HeaderMap` stays lower-case. Off by default, and then costs nothing: the head is parsed
    /// a second time (by `httparse`, as its bytes pass) only on pools that turn this on.
    ///
    /// The other way too: a request carrying a
    /// [`RequestHeaderNames`](crate::RequestHeaderNames) extension has the names it lists
    /// written as spelled there (`x-Request-ID`), whatever
    /// [`http1_title_case_headers`](Self::http1_title_case_headers) says for the rest.
    pub fn http1_preserve_header_case(mut self, enabled: bool) -> Self {
        self.h1.record_raw_header_names(enabled);
        self
    }

    /// Accepts response headers folded over several lines (obsolete `obs-fold`, RFC 9112
    /// §5.2), each fold read as a space, instead of failing the response. Off by default.
    pub fn http1_allow_obsolete_multiline_headers_in_responses(mut self, enabled: bool) -> Self {
        self.h1
            .allow_obsolete_multiline_headers_in_responses(enabled);
        self
    }

    /// Skips response header lines that do not parse (a space inside a name, a byte a name or
    /// value may not hold) instead of failing the response. Off by default.
    pub fn http1_ignore_invalid_headers_in_responses(mut self, enabled: bool) -> Self {
        self.h1.ignore_invalid_headers_in_responses(enabled);
        self
    }

    /// Accepts spaces between a response header's name and its colon (`Name : value`). Off by
    /// default.
    pub fn http1_allow_spaces_after_header_name_in_responses(mut self, enabled: bool) -> Self {
        self.h1.allow_spaces_after_header_name_in_responses(enabled);
        self
    }

    /// Accepts HTTP/0.9 responses (a body with no status line or headers, ended by the close
    /// of the connection). Off by default.
    pub fn http09_responses(mut self, enabled: bool) -> Self {
        self.h1.http09_responses(enabled);
        self
    }

    /// The most header lines a response head may have (hyper's default: 100); a response
    /// with more fails.
    pub fn http1_max_headers(mut self, max: usize) -> Self {
        self.h1.max_headers(max);
        self
    }

    /// Whether a request's head and body go out in one vectored write (the default when the
    /// transport supports it) or are copied into one buffer first.
    pub fn http1_writev(mut self, enabled: bool) -> Self {
        self.h1.writev(enabled);
        self
    }

    /// The largest read buffer a connection grows to (hyper's default: about 400 KiB); a
    /// response head larger than that fails. At least 8192 bytes, checked by
    /// [`build`](Self::build); it cannot be combined with
    /// [`http1_read_buf_exact_size`](Self::http1_read_buf_exact_size).
    pub fn http1_max_buf_size(mut self, max: usize) -> Self {
        self.h1_buffer.max = Some(max);
        self
    }

    /// Reads into a buffer of exactly this size instead of one that adapts to the traffic;
    /// `None` restores the adaptive buffer. It cannot be combined with
    /// [`http1_max_buf_size`](Self::http1_max_buf_size).
    pub fn http1_read_buf_exact_size(mut self, size: Option<usize>) -> Self {
        self.h1_buffer.exact = size;
        self
    }

    /// Checks the read buffer settings and hands them to hyper.
    pub(super) fn validate_h1(&mut self) -> Result<(), BuildError> {
        let H1Buffer { max, exact } = self.h1_buffer;
        match (max, exact) {
            (Some(max), Some(exact)) => Err(BuildError::new(
                "http1_max_buf_size",
                max,
                format!("hyper reads either up to a maximum or exactly {exact} bytes, not both"),
            )),
            (Some(max), None) if max < MIN_MAX_BUF_SIZE => Err(BuildError::new(
                "http1_max_buf_size",
                max,
                format!("hyper needs at least {MIN_MAX_BUF_SIZE} bytes"),
            )),
            (Some(max), None) => {
                self.h1.max_buf_size(max);
                Ok(())
            }
            (None, exact) => {
                self.h1.read_buf_exact_size(exact);
                Ok(())
            }
        }
    }
}

/// The read buffer settings, kept until [`Builder::build`] checks them.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct H1Buffer {
    /// [`Builder::http1_max_buf_size`].
    pub(super) max: Option<usize>,
    /// [`Builder::http1_read_buf_exact_size`].
    pub(super) exact: Option<usize>,
}
