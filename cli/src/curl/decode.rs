//! `--compressed`: the `Accept-Encoding` curl sends and the decoding of the response body by
//! its `Content-Encoding`, as it streams in (`flate2` for gzip and deflate, `brotli`, `zstd`).
//!
//! Several codings (`gzip, br`) are undone last first. `identity` and an absent header pass the
//! body through; so does an unknown coding (curl writes such a body as it came too). A body that
//! does not decode is exit 61. Without `--compressed` nothing is decoded, whatever the server
//! sends. What this does not do: decode `Transfer-Encoding` codings other than chunked (hyper
//! removes chunking).

use std::io::{self, Write};

use http::HeaderMap;
use http::header::{CONTENT_ENCODING, HeaderValue};

use super::exit::CurlError;

/// The `Accept-Encoding` value of `--compressed`, curl's list.
pub(crate) const ACCEPT_ENCODING: HeaderValue = HeaderValue::from_static("deflate, gzip, br, zstd");

/// One decoding stage; each writes its output into a `Vec` the caller drains.
enum Stage {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stage::Gzip(_) => "gzip",
            Stage::Deflate(_) => "deflate",
            Stage::Brotli(_) => "br",
            Stage::Zstd(_) => "zstd",
        })
    }
}

impl Stage {
    fn new(coding: &str) -> io::Result<Option<Stage>> {
        Ok(Some(match coding {
            "gzip" | "x-gzip" => Stage::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
            "deflate" => Stage::Deflate(flate2::write::ZlibDecoder::new(Vec::new())),
            "br" => Stage::Brotli(Box::new(brotli::DecompressorWriter::new(Vec::new(), 8192))),
            "zstd" => Stage::Zstd(zstd::stream::write::Decoder::new(Vec::new())?),
            _ => return Ok(None),
        }))
    }

    /// Feeds `input`; returns what came out.
    fn push(&mut self, input: &[u8]) -> io::Result<Vec<u8>> {
        match self {
            Stage::Gzip(d) => {
                d.write_all(input)?;
                Ok(std::mem::take(d.get_mut()))
            }
            Stage::Deflate(d) => {
                d.write_all(input)?;
                Ok(std::mem::take(d.get_mut()))
            }
            Stage::Brotli(d) => {
                d.write_all(input)?;
                Ok(std::mem::take(d.get_mut()))
            }
            Stage::Zstd(d) => {
                d.write_all(input)?;
                d.flush()?;
                Ok(std::mem::take(d.get_mut()))
            }
        }
    }

    /// Ends the stream; returns the rest.
    fn finish(self) -> io::Result<Vec<u8>> {
        match self {
            Stage::Gzip(d) => d.finish(),
            Stage::Deflate(d) => d.finish(),
            Stage::Brotli(d) => d
                .into_inner()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "truncated brotli stream")),
            Stage::Zstd(mut d) => {
                d.flush()?;
                Ok(d.into_inner())
            }
        }
    }
}

/// Decodes one response body.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The stages, in the order bytes pass them (the last coding applied first).
    stages: Vec<Stage>,
}

impl Decoder {
    /// The decoder for a response with `headers`; a pass-through without `--compressed`
    /// (`enabled` false), without `Content-Encoding`, or with a coding it does not know.
    pub(crate) fn for_response(enabled: bool, headers: &HeaderMap) -> Decoder {
        if !enabled {
            return Decoder::default();
        }
        let mut codings: Vec<String> = headers
            .get_all(CONTENT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity")
            .collect();
        codings.reverse();
        let mut stages = Vec::new();
        for coding in &codings {
            match Stage::new(coding) {
                Ok(Some(stage)) => stages.push(stage),
                // An unknown coding: leave the whole body as it came.
                Ok(None) | Err(_) => return Decoder::default(),
            }
        }
        Decoder { stages }
    }

    /// Decodes a piece of the body.
    ///
    /// # Errors
    ///
    /// Exit 61 when the bytes do not decode.
    pub(crate) fn push(&mut self, input: &[u8]) -> Result<Vec<u8>, CurlError> {
        let mut data = input.to_vec();
        for stage in &mut self.stages {
            data = stage.push(&data).map_err(CurlError::bad_content_encoding)?;
        }
        Ok(data)
    }

    /// Ends the body and returns what the decoders still held.
    ///
    /// # Errors
    ///
    /// Exit 61 when the stream is truncated or corrupt.
    pub(crate) fn finish(self) -> Result<Vec<u8>, CurlError> {
        // Each stage gets what the one before it released when it ended, then ends itself.
        let mut carried: Vec<u8> = Vec::new();
        for mut stage in self.stages {
            let mut out = stage
                .push(&carried)
                .map_err(CurlError::bad_content_encoding)?;
            out.extend(stage.finish().map_err(CurlError::bad_content_encoding)?);
            carried = out;
        }
        Ok(carried)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(coding: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(CONTENT_ENCODING, HeaderValue::from_str(coding).unwrap());
        map
    }

    fn decode(coding: &str, body: &[u8]) -> Result<Vec<u8>, CurlError> {
        let mut decoder = Decoder::for_response(true, &headers(coding));
        let mut out = Vec::new();
        for piece in body.chunks(7) {
            out.extend(decoder.push(piece)?);
        }
        out.extend(decoder.finish()?);
        Ok(out)
    }

    const TEXT: &[u8] = b"hello hello hello compressed world\n";

    #[test]
    fn each_coding_round_trips() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(TEXT).unwrap();
        assert_eq!(decode("gzip", &gz.finish().unwrap()).unwrap(), TEXT);

        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(TEXT).unwrap();
        assert_eq!(decode("deflate", &zlib.finish().unwrap()).unwrap(), TEXT);

        let mut br = Vec::new();
        {
            let mut writer = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            writer.write_all(TEXT).unwrap();
        }
        assert_eq!(decode("br", &br).unwrap(), TEXT);

        let zst = zstd::stream::encode_all(TEXT, 3).unwrap();
        assert_eq!(decode("zstd", &zst).unwrap(), TEXT);
    }

    #[test]
    fn corrupt_bodies_exit_61_and_unknown_codings_pass_through() {
        assert_eq!(decode("gzip", b"not gzip at all").unwrap_err().code(), 61);
        assert_eq!(decode("x-unknown", TEXT).unwrap(), TEXT);
        let off = Decoder::for_response(false, &headers("gzip"));
        assert!(off.stages.is_empty());
    }
}
