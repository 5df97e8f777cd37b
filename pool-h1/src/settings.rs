//! How the pool configures its HTTP/1 connections: hyper's builder plus what the pool adds.

use std::ops::{Deref, DerefMut};

use hyper::client::conn::http1::Builder;

use crate::raw_names::NamesParser;

/// hyper's HTTP/1 client builder, plus the pool's own settings for HTTP/1 connections.
///
/// It dereferences to hyper's [`Builder`], so hyper's settings (title-case names, buffer
/// sizes) are set on it directly. The settings that decide which response heads parse are
/// methods of this type instead, under hyper's names: they set hyper's builder and the second
/// reading of [`record_raw_header_names`](Self::record_raw_header_names) alike, so a head
/// hyper accepts never loses its names to a stricter parse.
#[derive(Clone, Debug)]
pub struct H1Settings {
    builder: Builder,
    raw_header_names: bool,
    names_parser: NamesParser,
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
            names_parser: NamesParser::default(),
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

    /// hyper's `allow_spaces_after_header_name_in_responses` (`Name : value`).
    pub fn allow_spaces_after_header_name_in_responses(&mut self, enabled: bool) -> &mut Self {
        self.builder
            .allow_spaces_after_header_name_in_responses(enabled);
        self.names_parser
            .config
            .allow_spaces_after_header_name_in_responses(enabled);
        self
    }

    /// hyper's `allow_obsolete_multiline_headers_in_responses` (folded header lines).
    pub fn allow_obsolete_multiline_headers_in_responses(&mut self, enabled: bool) -> &mut Self {
        self.builder
            .allow_obsolete_multiline_headers_in_responses(enabled);
        self.names_parser
            .config
            .allow_obsolete_multiline_headers_in_responses(enabled);
        self
    }

    /// hyper's `ignore_invalid_headers_in_responses` (header lines that do not parse are
    /// skipped).
    pub fn ignore_invalid_headers_in_responses(&mut self, enabled: bool) -> &mut Self {
        self.builder.ignore_invalid_headers_in_responses(enabled);
        self.names_parser
            .config
            .ignore_invalid_headers_in_responses(enabled);
        self
    }

    /// hyper's `max_headers`: the most header lines a response head may have.
    pub fn max_headers(&mut self, max: usize) -> &mut Self {
        self.builder.max_headers(max);
        self.names_parser.max_fields = max;
        self
    }

    /// How the second reading of a head parses it.
    pub(crate) fn names_parser(&self) -> NamesParser {
        self.names_parser.clone()
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
