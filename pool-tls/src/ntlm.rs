//! NTLM's messages (MS-NLMP) for [`AuthScheme::Ntlm`](crate::AuthScheme::Ntlm), laid out as
//! curl 7.88 built on OpenSSL lays them out, so that a proxy or server that accepts curl's
//! `--proxy-ntlm` and `--ntlm` accepts these.
//!
//! NTLM authenticates a connection, not a request, in three messages:
//!
//! 1. the request (a `CONNECT`, or a request to a server) carries `NTLM <negotiate>`, a fixed
//!    message ([`negotiate`]);
//! 2. the peer answers `407` (or `401`) with `NTLM <challenge>`: its flags, an 8-byte nonce
//!    and, usually, target information ([`Challenge`]);
//! 3. the same request goes again **on the same connection** with `NTLM <authenticate>`
//!    ([`authenticate`]); what that gets is the answer.
//!
//! The authenticate message answers the nonce as curl answers it: NTLMv2 when the challenge
//! offers extended session security (the "NTLM2 key" flag, which every current server sets):
//! HMAC-MD5 under the NTLMv2 hash (the NT hash, keyed over the upper-case user and the domain)
//! of the nonce, a timestamp, 8 random bytes and the server's target information, and the
//! LMv2 answer beside it; NTLMv1 otherwise: DES of the nonce under the LM and NT hashes. The
//! user may name a domain (`DOMAIN\user` or `DOMAIN/user`); the workstation is named
//! `WORKSTATION`, as curl names it; strings are UTF-16LE when the server asks for Unicode. As in
//! curl, a password's bytes become UTF-16 code units one by one (so a non-ASCII password hashes
//! as curl hashes it, not as Windows would).
//!
//! The hashes come from the RustCrypto crates (`md4`, `des`, `md-5`, `hmac`); the messages are
//! laid out here, since no maintained crate writes them without a whole SSPI stack.
//!
//! What this module does not do: sign or seal messages (HTTP's NTLM authenticates the
//! connection and nothing more), or keep a connection's authentication for later requests.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use des::cipher::{BlockEncrypt, KeyInit};
use hmac::{Hmac, Mac};
use http::HeaderValue;
use md4::{Digest, Md4};
use md5::Md5;

/// Every message starts with this.
const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";

/// Strings are UTF-16LE.
const NEGOTIATE_UNICODE: u32 = 0x0000_0001;
/// Strings may be in the OEM character set.
const NEGOTIATE_OEM: u32 = 0x0000_0002;
/// The server is asked to name its target.
const REQUEST_TARGET: u32 = 0x0000_0004;
/// NTLM (v1) session security.
const NEGOTIATE_NTLM: u32 = 0x0000_0200;
/// A dummy signature on every message.
const ALWAYS_SIGN: u32 = 0x0000_8000;
/// Extended session security ("NTLM2 key"); curl answers with NTLMv2 when it is offered.
const EXTENDED_SECURITY: u32 = 0x0008_0000;
/// The challenge carries target information.
const TARGET_INFO: u32 = 0x0080_0000;

/// Seconds between 1601-01-01 (NTLM's epoch) and 1970-01-01.
const EPOCH_1601: u64 = 11_644_473_600;

/// The negotiate message's header value (`NTLM <base64>`), the same every time.
pub(crate) fn negotiate() -> HeaderValue {
    HeaderValue::from_str(&header(&negotiate_message())).expect("base64 is a header value")
}

/// The negotiate message: the signature, type 1, the flags curl sends, and empty domain and
/// workstation buffers (32 bytes in all).
fn negotiate_message() -> Vec<u8> {
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(SIGNATURE);
    message.extend_from_slice(&1u32.to_le_bytes());
    let flags = NEGOTIATE_OEM | REQUEST_TARGET | NEGOTIATE_NTLM | EXTENDED_SECURITY | ALWAYS_SIGN;
    message.extend_from_slice(&flags.to_le_bytes());
    message.extend_from_slice(&[0; 16]);
    message
}

/// A server's challenge (the type 2 message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    flags: u32,
    nonce: [u8; 8],
    target_info: Vec<u8>,
}

impl Challenge {
    /// The challenge in a `WWW-Authenticate` value (`NTLM <base64>`); `None` when the value is
    /// not one (another scheme, `NTLM` alone, or a message that does not read as a challenge).
    pub(crate) fn from_header(value: &str) -> Option<Challenge> {
        let rest = value.strip_prefix("NTLM")?.trim_start();
        if rest.is_empty() {
            return None;
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(rest.trim_end())
            .ok()?;
        Challenge::decode(&bytes)
    }

    /// Reads a challenge message: at least its 32-byte header, and its target information
    /// when the flags announce one that lies within the message.
    fn decode(bytes: &[u8]) -> Option<Challenge> {
        if bytes.len() < 32 || &bytes[..8] != SIGNATURE || bytes[8..12] != [2, 0, 0, 0] {
            return None;
        }
        let flags = u32::from_le_bytes(bytes[20..24].try_into().ok()?);
        let nonce = bytes[24..32].try_into().ok()?;
        let mut target_info = Vec::new();
        if flags & TARGET_INFO != 0 && bytes.len() >= 48 {
            let len = usize::from(u16::from_le_bytes([bytes[40], bytes[41]]));
            let offset = u32::from_le_bytes(bytes[44..48].try_into().ok()?) as usize;
            if len > 0 {
                let end = offset.checked_add(len)?;
                if offset < 48 || end > bytes.len() {
                    return None;
                }
                target_info = bytes[offset..end].to_vec();
            }
        }
        Some(Challenge {
            flags,
            nonce,
            target_info,
        })
    }
}

/// The authenticate message's header value (`NTLM <base64>`, marked sensitive) answering
/// `challenge` as `user` with `password`, with fresh random bytes and the time now for NTLMv2.
pub(crate) fn authenticate(challenge: &Challenge, (user, password): (&str, &str)) -> HeaderValue {
    let mut client = [0u8; 8];
    // A failing random source leaves zeros, which only weakens this one answer.
    let _ = getrandom::fill(&mut client);
    let since_1601 = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + EPOCH_1601;
    let message =
        authenticate_message(challenge, (user, password), client, since_1601 * 10_000_000);
    let mut value = HeaderValue::from_str(&header(&message)).expect("base64 is a header value");
    value.set_sensitive(true);
    value
}

/// The authenticate message, with the client's 8 random bytes and the time in tenths of a
/// microsecond since 1601 given (NTLMv2 only uses them).
fn authenticate_message(
    challenge: &Challenge,
    (user, password): (&str, &str),
    client: [u8; 8],
    timestamp: u64,
) -> Vec<u8> {
    let (domain, user) = match user.find(['\\', '/']) {
        Some(at) => (&user[..at], &user[at + 1..]),
        None => ("", user),
    };
    let nt_hash = nt_hash(password);
    let mut flags = challenge.flags;
    let (lm, nt) = if flags & EXTENDED_SECURITY != 0 {
        let key = ntlmv2_hash(&nt_hash, user, domain);
        let mut lm = hmac_md5(&key, &[&challenge.nonce, &client]).to_vec();
        lm.extend_from_slice(&client);
        let mut blob = vec![1, 1, 0, 0, 0, 0, 0, 0];
        blob.extend_from_slice(&timestamp.to_le_bytes());
        blob.extend_from_slice(&client);
        blob.extend_from_slice(&[0; 4]);
        blob.extend_from_slice(&challenge.target_info);
        blob.extend_from_slice(&[0; 4]);
        let mut nt = hmac_md5(&key, &[&challenge.nonce, &blob]).to_vec();
        nt.extend_from_slice(&blob);
        (lm, nt)
    } else {
        flags &= !EXTENDED_SECURITY;
        let lm = des_response(&lm_hash(password), &challenge.nonce);
        let nt = des_response(&nt_hash, &challenge.nonce);
        (lm.to_vec(), nt.to_vec())
    };
    let unicode = flags & NEGOTIATE_UNICODE != 0;
    let text = |s: &str| -> Vec<u8> {
        if unicode {
            s.bytes().flat_map(|b| [b, 0]).collect()
        } else {
            s.as_bytes().to_vec()
        }
    };
    let payload = [lm, nt, text(domain), text(user), text(WORKSTATION)];
    let mut message = Vec::with_capacity(64 + payload.iter().map(Vec::len).sum::<usize>());
    message.extend_from_slice(SIGNATURE);
    message.extend_from_slice(&3u32.to_le_bytes());
    let mut offset = 64;
    for part in &payload {
        buffer(&mut message, part.len(), offset);
        offset += part.len();
    }
    // The session key: empty, at offset 0.
    buffer(&mut message, 0, 0);
    message.extend_from_slice(&flags.to_le_bytes());
    for part in &payload {
        message.extend_from_slice(part);
    }
    message
}

/// A security buffer: length and allocated length (16 bits each), then the offset (32 bits).
fn buffer(message: &mut Vec<u8>, len: usize, offset: usize) {
    let len = u16::try_from(len).unwrap_or(u16::MAX).to_le_bytes();
    message.extend_from_slice(&len);
    message.extend_from_slice(&len);
    message.extend_from_slice(&u32::try_from(offset).unwrap_or(u32::MAX).to_le_bytes());
}

/// `NTLM <base64>`.
fn header(message: &[u8]) -> String {
    format!(
        "NTLM {}",
        base64::engine::general_purpose::STANDARD.encode(message)
    )
}

/// The NT hash: MD4 of the password's bytes, each as a UTF-16LE code unit (curl's way).
fn nt_hash(password: &str) -> [u8; 16] {
    let units: Vec<u8> = password.bytes().flat_map(|b| [b, 0]).collect();
    Md4::digest(&units).into()
}

/// The LM hash: the upper-cased password, cut or padded to 14 bytes, as two DES keys over
/// `KGS!@#$%`.
fn lm_hash(password: &str) -> [u8; 16] {
    let mut padded = [0u8; 14];
    for (slot, b) in padded.iter_mut().zip(password.bytes()) {
        *slot = b.to_ascii_uppercase();
    }
    let mut hash = [0u8; 16];
    for (half, key) in hash.chunks_mut(8).zip(padded.chunks(7)) {
        half.copy_from_slice(&des(key, b"KGS!@#$%"));
    }
    hash
}

/// The NTLMv2 hash: HMAC-MD5 under the NT hash of the upper-cased user and the domain, as
/// UTF-16LE code units.
fn ntlmv2_hash(nt_hash: &[u8; 16], user: &str, domain: &str) -> [u8; 16] {
    let identity: Vec<u8> = user
        .bytes()
        .map(|b| b.to_ascii_uppercase())
        .chain(domain.bytes())
        .flat_map(|b| [b, 0])
        .collect();
    hmac_md5(nt_hash, &[&identity])
}

/// NTLMv1's answer: the nonce encrypted under three DES keys cut from `hash` (zero-padded to
/// 21 bytes).
fn des_response(hash: &[u8; 16], nonce: &[u8; 8]) -> [u8; 24] {
    let mut keys = [0u8; 21];
    keys[..16].copy_from_slice(hash);
    let mut out = [0u8; 24];
    for (block, key) in out.chunks_mut(8).zip(keys.chunks(7)) {
        block.copy_from_slice(&des(key, nonce));
    }
    out
}

/// One DES block under the 56-bit `key` (7 bytes, spread over 8 with the parity bits left 0,
/// which DES ignores).
fn des(key: &[u8], block: &[u8; 8]) -> [u8; 8] {
    let k = key;
    let spread = [
        k[0],
        (k[0] << 7) | (k[1] >> 1),
        (k[1] << 6) | (k[2] >> 2),
        (k[2] << 5) | (k[3] >> 3),
        (k[3] << 4) | (k[4] >> 4),
        (k[4] << 3) | (k[5] >> 5),
        (k[5] << 2) | (k[6] >> 6),
        k[6] << 1,
    ];
    let cipher = des::Des::new_from_slice(&spread).expect("a DES key is 8 bytes");
    let mut out = des::cipher::generic_array::GenericArray::clone_from_slice(block);
    cipher.encrypt_block(&mut out);
    out.into()
}

/// HMAC-MD5 under `key` of the `parts` one after another.
fn hmac_md5(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut mac = <Hmac<Md5> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// The workstation every authenticate message names: curl 7.88 sends this rather than the
/// machine's name, which NTLM would otherwise give away.
const WORKSTATION: &str = "WORKSTATION";

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    const NONCE: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
    const CLIENT: [u8; 8] = [0xaa; 8];

    #[test]
    fn the_negotiate_message_is_curls() {
        // What curl 7.88.1 sends first with --ntlm.
        assert_eq!(
            negotiate(),
            "NTLM TlRMTVNTUAABAAAABoIIAAAAAAAAAAAAAAAAAAAAAAA="
        );
    }

    // MS-NLMP section 4.2's test values: user "User", domain "Domain", password "Password",
    // server challenge 0123456789abcdef, client challenge aa...aa, time 0.
    #[test]
    fn ntlmv1_answers_match_ms_nlmp() {
        let nt = nt_hash("Password");
        assert_eq!(hex(&nt), "a4f49c406510bdcab6824ee7c30fd852");
        let lm = lm_hash("Password");
        assert_eq!(hex(&lm), "e52cac67419a9a224a3b108f3fa6cb6d");
        assert_eq!(
            hex(&des_response(&nt, &NONCE)),
            "67c43011f30298a2ad35ece64f16331c44bdbed927841f94"
        );
        assert_eq!(
            hex(&des_response(&lm, &NONCE)),
            "98def7b87f88aa5dafe2df779688a172def11c7d5ccdef13"
        );
    }

    #[test]
    fn ntlmv2_answers_match_ms_nlmp() {
        let key = ntlmv2_hash(&nt_hash("Password"), "User", "Domain");
        assert_eq!(hex(&key), "0c868a403bfd7a93a3001ef22ef02e3f");
        // The target information: NetBIOS domain "Domain", computer "Server", end.
        let mut target_info = vec![0x02, 0x00, 0x0c, 0x00];
        target_info.extend("Domain".bytes().flat_map(|b| [b, 0]));
        target_info.extend([0x01, 0x00, 0x0c, 0x00]);
        target_info.extend("Server".bytes().flat_map(|b| [b, 0]));
        target_info.extend([0, 0, 0, 0]);
        let challenge = Challenge {
            flags: EXTENDED_SECURITY | TARGET_INFO | NEGOTIATE_UNICODE,
            nonce: NONCE,
            target_info,
        };
        let identity = ("Domain\\User", "Password");
        let message = authenticate_message(&challenge, identity, CLIENT, 0);
        let lm = &message[64..88];
        assert_eq!(hex(lm), "86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa");
        let nt_proof = &message[88..104];
        assert_eq!(hex(nt_proof), "68cd0ab851e51c96aabc927bebef6a1c");
    }

    #[test]
    fn the_authenticate_message_lays_out_its_buffers() {
        let challenge = Challenge {
            flags: NEGOTIATE_UNICODE | NEGOTIATE_NTLM,
            nonce: NONCE,
            target_info: Vec::new(),
        };
        let identity = ("Domain/User", "Password");
        let m = authenticate_message(&challenge, identity, CLIENT, 0);
        assert_eq!(&m[..12], b"NTLMSSP\0\x03\0\0\0");
        let field = |at: usize| {
            let len = usize::from(u16::from_le_bytes([m[at], m[at + 1]]));
            let offset = u32::from_le_bytes(m[at + 4..at + 8].try_into().unwrap()) as usize;
            &m[offset..offset + len]
        };
        assert_eq!(
            hex(field(12)),
            "98def7b87f88aa5dafe2df779688a172def11c7d5ccdef13"
        );
        assert_eq!(
            hex(field(20)),
            "67c43011f30298a2ad35ece64f16331c44bdbed927841f94"
        );
        let utf16 = |s: &str| s.bytes().flat_map(|b| [b, 0]).collect::<Vec<_>>();
        assert_eq!(field(28), utf16("Domain"));
        assert_eq!(field(36), utf16("User"));
        assert_eq!(field(44), utf16("WORKSTATION"));
        assert_eq!(field(52), b"");
        // NTLMv1 clears the extended security flag it did not use.
        let flags = u32::from_le_bytes(m[60..64].try_into().unwrap());
        assert_eq!(flags, NEGOTIATE_UNICODE | NEGOTIATE_NTLM);
    }

    #[test]
    fn a_challenge_reads_only_from_a_challenge_message() {
        let mut message = SIGNATURE.to_vec();
        message.extend([2, 0, 0, 0]);
        message.extend([0; 8]);
        message.extend((EXTENDED_SECURITY | TARGET_INFO).to_le_bytes());
        message.extend(NONCE);
        message.extend([0; 8]);
        // Target information: 4 bytes at offset 48.
        message.extend([4, 0, 4, 0, 48, 0, 0, 0]);
        message.extend([0, 0, 0, 0]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&message);
        let challenge = Challenge::from_header(&format!("NTLM {b64}")).unwrap();
        assert_eq!(challenge.nonce, NONCE);
        assert_eq!(challenge.target_info, [0, 0, 0, 0]);
        assert_eq!(Challenge::from_header("NTLM"), None);
        assert_eq!(Challenge::from_header("Basic realm=\"x\""), None);
        // Target information beyond the message's end.
        message[40] = 40;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&message);
        assert_eq!(Challenge::from_header(&format!("NTLM {b64}")), None);
        // A negotiate message is not a challenge.
        assert_eq!(Challenge::from_header(negotiate().to_str().unwrap()), None);
    }
}
