//! A `101 Switching Protocols` poolcurl did not ask for (it never asks for an upgrade, but a
//! user's `-H 'Upgrade: websocket'` does): what the server sends on the switched connection is
//! the body, read until the server closes it, as curl reads it. A WebSocket handshake tried by
//! hand (`-i -N -H 'Connection: Upgrade' -H 'Upgrade: websocket' ...`) shows the server's
//! first frames. A server that switched and closed without a byte is curl's empty reply (exit
//! 52).
//!
//! What this does not do: speak the new protocol, or send anything after the request.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;

use hyper::rt::{Read, ReadBuf};
use hyper::upgrade::OnUpgrade;

use super::send::Target;
use crate::curl::Session;
use crate::curl::exit::CurlError;
use crate::curl::progress::Progress;
use crate::curl::record::TransferRecord;
use crate::curl::sink::Sink;

impl Session {
    /// Reads the switched connection `upgrade` hands over into `sink` until the server closes
    /// it (`None`: nothing is read, `-I`).
    ///
    /// # Errors
    ///
    /// Exit 52 when the server closed without sending anything; 56 when reading failed; 23
    /// when the output cannot be written.
    pub(super) async fn read_switched(
        &self,
        upgrade: Option<OnUpgrade>,
        target: &Target,
        record: &mut TransferRecord,
        sink: &mut Sink,
        progress: &mut Progress,
    ) -> Result<(), CurlError> {
        let Some(upgrade) = upgrade else {
            return Err(CurlError::new(52, "Empty reply from server"));
        };
        let mut io = upgrade.await.map_err(|e| receive_failed(&e))?;
        let mut buffer = vec![0_u8; 16 * 1024];
        let mut first = true;
        loop {
            let read = poll_fn(|cx| {
                let mut filled = ReadBuf::new(&mut buffer);
                match Pin::new(&mut io).poll_read(cx, filled.unfilled()) {
                    Poll::Ready(Ok(())) => Poll::Ready(Ok(filled.filled().len())),
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await
            .map_err(|e| receive_failed(&e))?;
            if read == 0 {
                break;
            }
            let data = &buffer[..read];
            self.verbose.received_data(data, first, target.quiet_data);
            first = false;
            record.size_download += read as u64;
            record.received += read as u64;
            sink.write_body(data)?;
            progress.update(record.size_download);
        }
        if first {
            return Err(CurlError::new(52, "Empty reply from server"));
        }
        Ok(())
    }
}

/// curl's error for a failed read.
fn receive_failed(error: &dyn std::fmt::Display) -> CurlError {
    CurlError::new(
        56,
        format!("Failure when receiving data from the peer: {error}"),
    )
}
