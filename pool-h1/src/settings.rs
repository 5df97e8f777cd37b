//! How the pool configures its HTTP/1 connections: hyper's builder plus what the pool adds.

use std::ops::{Deref, DerefMut};

use hyper::client::conn::http1::Builder;

/// hyper's HTTP/1 client builder, plus the pool's own settings for HTTP/1 connections.
///
/// It dereferences to hyper's [`Builder`], so hyper's settings (title-case names, buffer
/// sizes) are set on it directly.
#[derive(Clone, Debug)]
pub struct H1Settings {
    builder: Builder,
    raw_header_names: bool,
}

impl Default for H1Settings {
    fn default() -> Self {
        H1Settings::from(Builder::new())
    }
}

impl From<Builder> for H1Settings {
    /// hyper's settings as given, with the pool's own off.
    fn from(builder: Builder) -> Self {
        H1Settings {
            builder,
            raw_header_names: false,
        }
    }
}

impl H1Settings {
    /// Attach each response's header names as the server wrote them, as a
    /// [`RawHeaderNames`](crate::RawHeaderNames) extension. Off by default; when off, the
    /// transport is not wrapped and nothing is parsed twice.
    pub fn record_raw_header_names(&mut self, enabled: bool) -> &mut Self {
        self.raw_header_names = enabled;
        self
    }

    /// Whether responses carry [`RawHeaderNames`](crate::RawHeaderNames).
    pub fn records_raw_header_names(&self) -> bool {
        self.raw_header_names
    }
}

impl Deref for H1Settings {
    type Target = Builder;

    fn deref(&self) -> &Builder {
        &self.builder
    }
}

impl DerefMut for H1Settings {
    fn deref_mut(&mut self) -> &mut Builder {
        &mut self.builder
    }
}
