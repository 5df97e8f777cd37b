//! The few HTTP/2 wire pieces the frame-level peers (`h2frames`, `h2settings`) share: frame
//! types and flags, the client preface, reading one frame and writing one.

use tokio::io::{AsyncRead, AsyncReadExt};

pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
/// HPACK: indexed header field 8 of the static table, `:status 200`.
pub(crate) const STATUS_200: &[u8] = &[0x88];

/// One frame as read: type, flags, stream id, payload.
pub(crate) struct Frame {
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    pub(crate) stream: u32,
    pub(crate) payload: Vec<u8>,
}

/// Reads one frame; `None` at the end of the stream or on an error.
pub(crate) async fn read_frame(io: &mut (impl AsyncRead + Unpin)) -> Option<Frame> {
    let mut head = [0u8; 9];
    io.read_exact(&mut head).await.ok()?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let mut payload = vec![0u8; len];
    io.read_exact(&mut payload).await.ok()?;
    Some(Frame {
        kind: head[3],
        flags: head[4],
        stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        payload,
    })
}

/// Reads the client's connection preface; `false` if the stream ended first or it was not one.
pub(crate) async fn read_preface(io: &mut (impl AsyncRead + Unpin)) -> bool {
    let mut preface = [0u8; 24];
    io.read_exact(&mut preface).await.is_ok() && preface == PREFACE
}

/// One frame's bytes.
pub(crate) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The parameters (identifier, value) of a SETTINGS frame's payload, in its order.
pub(crate) fn parameters(payload: &[u8]) -> Vec<(u16, u32)> {
    payload
        .chunks_exact(6)
        .map(|p| {
            let id = u16::from_be_bytes([p[0], p[1]]);
            (id, u32::from_be_bytes([p[2], p[3], p[4], p[5]]))
        })
        .collect()
}

/// An empty `200` response that ends the stream.
pub(crate) fn ok_response(stream: u32) -> Vec<u8> {
    frame(HEADERS, END_HEADERS | END_STREAM, stream, STATUS_200)
}
