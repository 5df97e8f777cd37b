//! Response body decoding, as curl 7.88 does it: the codings of `Transfer-Encoding` always
//! (hyper has already removed `chunked`), those of `Content-Encoding` with `--compressed`, and
//! the `Accept-Encoding` that `--compressed` sends (`flate2` for gzip and deflate, `brotli`,
//! `zstd`).
//!
//! Bytes pass the transfer codings first, then the content codings, each list undone last
//! first (`gzip, br` is brotli, then gzip). `identity` (or `none`) and an absent header pass the
//! body through. As curl's:
//!
//! * a coding it does not know fails the transfer (exit 61) when the first byte of body comes,
//!   so an empty body with an unknown coding is no error;
//! * more than five codings are refused (exit 61), here when the body is read;
//! * `deflate` takes a raw deflate stream too (servers that leave out the zlib header), and
//!   `gzip` a zlib stream: when the first bytes do not fit, the stream starts again as the
//!   other;
//! * a body that does not decode is exit 61.
//!
//! What this does not do: ask for a transfer coding (`--tr-encoding`'s headers are composed
//! with the others, [`super::compose`]) or keep `chunked` (`--raw`, refused): hyper reads
//! chunks itself.

use std::io::{self, Write};

use http::HeaderMap;
use http::header::{CONTENT_ENCODING, HeaderName, HeaderValue, TRANSFER_ENCODING};

use super::exit::CurlError;

/// The `Accept-Encoding` value of `--compressed`, curl's list.
pub(crate) const ACCEPT_ENCODING: HeaderValue = HeaderValue::from_static("deflate, gzip, br, zstd");

/// curl's limit on the codings of one response, transfer and content together.
const MAX_CODINGS: usize = 5;

/// One decoder; each writes its output into a `Vec` the caller drains.
enum Codec {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    RawDeflate(flate2::write::DeflateDecoder<Vec<u8>>),
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
    /// A coding curl does not know: the first byte fails.
    Unknown,
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Codec::Gzip(_) => "gzip",
            Codec::Zlib(_) => "deflate",
            Codec::RawDeflate(_) => "raw deflate",
            Codec::Brotli(_) => "br",
            Codec::Zstd(_) => "zstd",
            Codec::Unknown => "unknown",
        })
    }
}

impl Codec {
    /// The decoder for `coding` (lower case); `None` for identity.
    fn new(coding: &str) -> io::Result<Option<Codec>> {
        Ok(Some(match coding {
            "identity" | "none" => return Ok(None),
            "gzip" | "x-gzip" => Codec::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
            "deflate" => Codec::Zlib(flate2::write::ZlibDecoder::new(Vec::new())),
            "br" => Codec::Brotli(Box::new(brotli::DecompressorWriter::new(Vec::new(), 8192))),
            "zstd" => Codec::Zstd(zstd::stream::write::Decoder::new(Vec::new())?),
            _ => Codec::Unknown,
        }))
    }

    /// What to start again as when the first bytes do not fit: a zlib stream for gzip, a raw
    /// deflate stream for deflate, as curl's zlib setup accepts them.
    fn fallback(&self) -> Option<Codec> {
        match self {
            Codec::Gzip(_) => Some(Codec::Zlib(flate2::write::ZlibDecoder::new(Vec::new()))),
            Codec::Zlib(_) => Some(Codec::RawDeflate(flate2::write::DeflateDecoder::new(
                Vec::new(),
            ))),
            _ => None,
        }
    }

    /// Feeds `input`; returns what came out.
    fn push(&mut self, input: &[u8]) -> Result<Vec<u8>, CurlError> {
        let decoded = match self {
            Codec::Gzip(d) => d.write_all(input).map(|()| std::mem::take(d.get_mut())),
            Codec::Zlib(d) => d.write_all(input).map(|()| std::mem::take(d.get_mut())),
            Codec::RawDeflate(d) => d.write_all(input).map(|()| std::mem::take(d.get_mut())),
            Codec::Brotli(d) => d.write_all(input).map(|()| std::mem::take(d.get_mut())),
            Codec::Zstd(d) => d
                .write_all(input)
                .and_then(|()| d.flush())
                .map(|()| std::mem::take(d.get_mut())),
            Codec::Unknown if input.is_empty() => Ok(Vec::new()),
            Codec::Unknown => return Err(unknown_coding()),
        };
        decoded.map_err(CurlError::bad_content_encoding)
    }

    /// Ends the stream; returns the rest.
    fn finish(self) -> Result<Vec<u8>, CurlError> {
        let rest = match self {
            Codec::Gzip(d) => d.finish(),
            Codec::Zlib(d) => d.finish(),
            Codec::RawDeflate(d) => d.finish(),
            Codec::Brotli(d) => d
                .into_inner()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "truncated brotli stream")),
            Codec::Zstd(mut d) => d.flush().map(|()| d.into_inner()),
            Codec::Unknown => Ok(Vec::new()),
        };
        rest.map_err(CurlError::bad_content_encoding)
    }
}

/// curl's error for a coding it does not know.
fn unknown_coding() -> CurlError {
    CurlError::new(
        61,
        format!(
            "Unrecognized content encoding type. poolcurl understands {} content encodings.",
            ACCEPT_ENCODING.to_str().unwrap_or_default()
        ),
    )
}

/// How much input a stage keeps, while nothing has come out, to start again as its fallback:
/// a stream that does not fit shows it in its first bytes (a header check).
const REPLAY_LIMIT: usize = 64 * 1024;

/// One coding undone: its decoder, and the input it has taken while nothing came out, kept
/// so that the stream can start again as its fallback.
#[derive(Debug)]
struct Stage {
    codec: Codec,
    /// `None` once the decoder has put out a byte, or has fallen back already.
    replay: Option<Vec<u8>>,
}

impl Stage {
    fn push(&mut self, input: &[u8]) -> Result<Vec<u8>, CurlError> {
        match self.codec.push(input) {
            Ok(out) => {
                if let Some(seen) = &mut self.replay {
                    seen.extend_from_slice(input);
                    if !out.is_empty() || seen.len() > REPLAY_LIMIT {
                        self.replay = None;
                    }
                }
                Ok(out)
            }
            Err(error) => {
                let (Some(mut seen), Some(fallback)) = (self.replay.take(), self.codec.fallback())
                else {
                    return Err(error);
                };
                seen.extend_from_slice(input);
                self.codec = fallback;
                self.codec.push(&seen)
            }
        }
    }
}

/// Decodes one response body.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The stages, in the order bytes pass them.
    stages: Vec<Stage>,
    /// More codings than curl takes: the body fails with this.
    refused: Option<CurlError>,
}

impl Decoder {
    /// The decoder for a response with `headers`: its transfer codings, and its content codings
    /// when `compressed` (`--compressed`).
    pub(crate) fn for_response(compressed: bool, headers: &HeaderMap) -> Decoder {
        let mut codings = listed(headers, &TRANSFER_ENCODING);
        if compressed {
            codings.extend(listed(headers, &CONTENT_ENCODING));
        }
        if codings.len() > MAX_CODINGS {
            let message =
                format!("Reject response due to more than {MAX_CODINGS} content encodings");
            return Decoder {
                stages: Vec::new(),
                refused: Some(CurlError::new(61, message)),
            };
        }
        let mut stages = Vec::new();
        for coding in &codings {
            match Codec::new(coding) {
                Ok(Some(codec)) => stages.push(Stage {
                    replay: codec.fallback().map(|_| Vec::new()),
                    codec,
                }),
                Ok(None) => {}
                Err(error) => {
                    return Decoder {
                        stages: Vec::new(),
                        refused: Some(CurlError::bad_content_encoding(error)),
                    };
                }
            }
        }
        Decoder {
            stages,
            refused: None,
        }
    }

    /// Decodes a piece of the body.
    ///
    /// # Errors
    ///
    /// Exit 61 when the bytes do not decode, or name a coding curl does not know.
    pub(crate) fn push(&mut self, input: &[u8]) -> Result<Vec<u8>, CurlError> {
        if let Some(refused) = &self.refused {
            return Err(refused.clone());
        }
        let mut data = input.to_vec();
        for stage in &mut self.stages {
            data = stage.push(&data)?;
        }
        Ok(data)
    }

    /// Ends the body and returns what the decoders still held.
    ///
    /// # Errors
    ///
    /// Exit 61 when the stream is truncated or corrupt.
    pub(crate) fn finish(self) -> Result<Vec<u8>, CurlError> {
        if let Some(refused) = self.refused {
            return Err(refused);
        }
        // Each stage gets what the one before it released when it ended, then ends itself.
        let mut carried: Vec<u8> = Vec::new();
        for mut stage in self.stages {
            let mut out = stage.push(&carried)?;
            out.extend(stage.codec.finish()?);
            carried = out;
        }
        Ok(carried)
    }
}

/// The codings `name` lists, in the order bytes are to be undone (the last applied first),
/// without a transfer coding `chunked` (hyper undoes it).
fn listed(headers: &HeaderMap, name: &HeaderName) -> Vec<String> {
    let chunked = |c: &str| name == TRANSFER_ENCODING && c == "chunked";
    let mut codings: Vec<String> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && !chunked(c))
        .collect();
    codings.reverse();
    codings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(fields: &[(HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in fields {
            map.append(name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn decode_with(
        compressed: bool,
        fields: &[(HeaderName, &str)],
        body: &[u8],
    ) -> Result<Vec<u8>, CurlError> {
        let mut decoder = Decoder::for_response(compressed, &headers(fields));
        let mut out = Vec::new();
        for piece in body.chunks(7) {
            out.extend(decoder.push(piece)?);
        }
        out.extend(decoder.finish()?);
        Ok(out)
    }

    fn decode(coding: &str, body: &[u8]) -> Result<Vec<u8>, CurlError> {
        decode_with(true, &[(CONTENT_ENCODING, coding)], body)
    }

    const TEXT: &[u8] = b"hello hello hello compressed world\n";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        zlib.write_all(data).unwrap();
        zlib.finish().unwrap()
    }

    #[test]
    fn each_coding_round_trips() {
        assert_eq!(decode("gzip", &gzip(TEXT)).unwrap(), TEXT);
        assert_eq!(decode("x-gzip", &gzip(TEXT)).unwrap(), TEXT);
        assert_eq!(decode("deflate", &zlib(TEXT)).unwrap(), TEXT);

        let mut br = Vec::new();
        {
            let mut writer = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            writer.write_all(TEXT).unwrap();
        }
        assert_eq!(decode("br", &br).unwrap(), TEXT);

        let zst = zstd::stream::encode_all(TEXT, 3).unwrap();
        assert_eq!(decode("zstd", &zst).unwrap(), TEXT);
        assert_eq!(decode("identity, none", TEXT).unwrap(), TEXT);
    }

    #[test]
    fn deflate_takes_a_raw_stream_and_gzip_a_zlib_one() {
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(TEXT).unwrap();
        assert_eq!(decode("deflate", &raw.finish().unwrap()).unwrap(), TEXT);
        assert_eq!(decode("gzip", &zlib(TEXT)).unwrap(), TEXT);
        // A stream that fits neither is still exit 61.
        assert_eq!(
            decode("deflate", b"not deflate at all").unwrap_err().code(),
            61
        );
    }

    #[test]
    fn corrupt_bodies_and_unknown_codings_exit_61() {
        assert_eq!(decode("gzip", b"not gzip at all").unwrap_err().code(), 61);
        let unknown = decode("x-unknown", TEXT).unwrap_err();
        assert_eq!(unknown.code(), 61);
        assert!(
            unknown
                .message()
                .starts_with("Unrecognized content encoding type.")
        );
        // The error comes with the first byte: an empty body is none.
        assert_eq!(decode("x-unknown", b"").unwrap(), b"");
        let six = "identity, identity, identity, identity, identity, identity";
        let refused = decode(six, b"").unwrap_err();
        assert_eq!(
            refused.message(),
            "Reject response due to more than 5 content encodings"
        );
        assert_eq!(decode(&six[10..], TEXT).unwrap(), TEXT);
    }

    #[test]
    fn transfer_codings_always_content_codings_with_compressed() {
        let te = [(TRANSFER_ENCODING, "gzip, chunked")];
        assert_eq!(decode_with(false, &te, &gzip(TEXT)).unwrap(), TEXT);
        let ce = [(CONTENT_ENCODING, "gzip")];
        assert_eq!(decode_with(false, &ce, &gzip(TEXT)).unwrap(), gzip(TEXT));
        // Transfer codings come off first, then content codings.
        let both = [(CONTENT_ENCODING, "deflate"), (TRANSFER_ENCODING, "gzip")];
        let wire = gzip(&zlib(TEXT));
        assert_eq!(decode_with(true, &both, &wire).unwrap(), TEXT);
        assert_eq!(decode_with(false, &both, &wire).unwrap(), zlib(TEXT));
        let unknown = [(TRANSFER_ENCODING, "foo, chunked")];
        assert_eq!(decode_with(false, &unknown, TEXT).unwrap_err().code(), 61);
    }
}
