//! The `/ntlm` and `/ntlm2` routes: a server that authenticates with NTLM (MS-NLMP), for the
//! `--ntlm` cases. A request without an NTLM message draws `401` and `WWW-Authenticate: NTLM`;
//! a negotiate message draws the challenge; an authenticate message is checked against the
//! password `s3cret` as a server checks it (the NT response recomputed).
//!
//! `/ntlm`'s challenge offers no extended session security, so the answer is NTLMv1, which
//! has nothing random in it: the reply quotes the whole message, compared byte for byte.
//! `/ntlm2`'s offers it with target information, so the answer is NTLMv2 (a timestamp and
//! random bytes in it): the reply says whose proof checked out.

use base64::Engine as _;
use des::cipher::{BlockEncrypt, KeyInit};
use hmac::{Hmac, Mac};
use md4::{Digest, Md4};
use pool_tests::h1::{RecordedRequest, Reply};

const PASSWORD: &str = "s3cret";
const NONCE: [u8; 8] = *b"\x01\x23\x45\x67\x89\xab\xcd\xef";
/// Unicode and NTLM; `/ntlm2` adds extended session security and target information.
const V1_FLAGS: u32 = 0x0000_0201;
const V2_FLAGS: u32 = V1_FLAGS | 0x0008_0000 | 0x0080_0000;

/// The reply to `req` on `/ntlm` (`v2` false) or `/ntlm2`.
pub(crate) fn answer(req: &RecordedRequest, v2: bool) -> Reply {
    let message = req
        .header("authorization")
        .and_then(|v| v.strip_prefix("NTLM "))
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok());
    let kind = message.as_ref().filter(|m| m.len() >= 12).map(|m| m[8]);
    match (message, kind) {
        (Some(_), Some(1)) => Reply::new(401)
            .header("www-authenticate", &format!("NTLM {}", challenge(v2)))
            .body("challenge\n"),
        (Some(m), Some(3)) => match verify(&m, v2) {
            Some(who) => {
                let quoted = if v2 {
                    String::new()
                } else {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(&m);
                    format!("message: {b64}\n")
                };
                let body = String::from_utf8_lossy(&req.body);
                Reply::ok(format!("ntlm ok: {who}\n{quoted}data: {body}\n"))
            }
            None => Reply::new(401)
                .header("www-authenticate", "NTLM")
                .body("ntlm refused\n"),
        },
        _ => Reply::new(401)
            .header("www-authenticate", "NTLM")
            .body("ntlm needed\n"),
    }
}

/// The challenge message, base64.
fn challenge(v2: bool) -> String {
    let utf16 = |s: &str| s.bytes().flat_map(|b| [b, 0]).collect::<Vec<u8>>();
    let mut info = vec![0x02, 0x00, 0x08, 0x00];
    info.extend(utf16("CORP"));
    info.extend([0, 0, 0, 0]);
    let mut m = b"NTLMSSP\0\x02\0\0\0".to_vec();
    // Target name: empty.
    m.extend([0, 0, 0, 0, 48, 0, 0, 0]);
    m.extend((if v2 { V2_FLAGS } else { V1_FLAGS }).to_le_bytes());
    m.extend(NONCE);
    m.extend([0; 8]);
    let len = if v2 { info.len() as u16 } else { 0 };
    m.extend(len.to_le_bytes());
    m.extend(len.to_le_bytes());
    m.extend(48u32.to_le_bytes());
    if v2 {
        m.extend(info);
    }
    base64::engine::general_purpose::STANDARD.encode(m)
}

/// `DOMAIN\user from WORKSTATION, vN` when the authenticate message `m` proves the password.
fn verify(m: &[u8], v2: bool) -> Option<String> {
    let field = |at: usize| -> Option<&[u8]> {
        let len = usize::from(u16::from_le_bytes([*m.get(at)?, *m.get(at + 1)?]));
        let offset = u32::from_le_bytes(m.get(at + 4..at + 8)?.try_into().ok()?) as usize;
        m.get(offset..offset + len)
    };
    let text = |b: &[u8]| {
        b.iter()
            .step_by(2)
            .map(|&c| char::from(c))
            .collect::<String>()
    };
    let (nt, domain, user, host) = (
        field(20)?,
        text(field(28)?),
        text(field(36)?),
        text(field(44)?),
    );
    let units: Vec<u8> = PASSWORD.bytes().flat_map(|b| [b, 0]).collect();
    let nt_hash: [u8; 16] = Md4::digest(&units).into();
    let proved = if v2 {
        let who: Vec<u8> = user
            .to_uppercase()
            .chars()
            .chain(domain.chars())
            .flat_map(|c| [c as u8, 0])
            .collect();
        let key = mac(&nt_hash, &[&who]);
        nt.len() > 16 && mac(&key, &[&NONCE, &nt[16..]]) == nt[..16]
    } else {
        let mut keys = [0u8; 21];
        keys[..16].copy_from_slice(&nt_hash);
        let expected: Vec<u8> = keys.chunks(7).flat_map(|k| des(k, &NONCE)).collect();
        nt == expected.as_slice()
    };
    let version = if v2 { 2 } else { 1 };
    proved.then(|| format!("{domain}\\{user} from {host}, v{version}"))
}

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut mac = <Hmac<md5::Md5> as Mac>::new_from_slice(key).expect("any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// DES under a 7-byte key, spread to 8 bytes.
fn des(k: &[u8], block: &[u8; 8]) -> [u8; 8] {
    let key: Vec<u8> = (0..8)
        .map(|i| {
            let bits = (u64::from_be_bytes([0, k[0], k[1], k[2], k[3], k[4], k[5], k[6]])
                >> (49 - 7 * i)) as u8;
            bits << 1
        })
        .collect();
    let cipher = des::Des::new_from_slice(&key).expect("8 bytes");
    let mut out = des::cipher::generic_array::GenericArray::clone_from_slice(block);
    cipher.encrypt_block(&mut out);
    out.into()
}
