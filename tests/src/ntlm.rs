//! A server's side of NTLM (MS-NLMP), for scripted peers that demand it: the challenge a
//! negotiate message draws, and the check of an authenticate message against a password.
//!
//! Written apart from the pool's own NTLM code (`pool-tls/src/ntlm.rs`), from the protocol's
//! definitions, so that a fault there cannot pass here. The check recomputes the NT response:
//! NTLMv1's three DES blocks of the nonce, or NTLMv2's HMAC-MD5 proof over the nonce and the
//! client's blob.

use base64::Engine as _;
use des::cipher::{BlockEncrypt, KeyInit};
use hmac::{Hmac, Mac};
use md4::{Digest, Md4};

/// The server's nonce in every challenge.
pub const NONCE: [u8; 8] = *b"\x01\x23\x45\x67\x89\xab\xcd\xef";
/// Unicode and NTLM: a challenge NTLMv1 answers.
const V1_FLAGS: u32 = 0x0000_0201;
/// And extended session security with target information: a challenge NTLMv2 answers.
const V2_FLAGS: u32 = V1_FLAGS | 0x0008_0000 | 0x0080_0000;

/// The type (1 negotiate, 2 challenge, 3 authenticate) and bytes of the NTLM message in an
/// `Authorization` or `Proxy-Authorization` value (`NTLM <base64>`).
pub fn message(value: &str) -> Option<(u8, Vec<u8>)> {
    let b64 = value.strip_prefix("NTLM ")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    (bytes.len() >= 12 && bytes.starts_with(b"NTLMSSP\0")).then(|| (bytes[8], bytes))
}

/// The challenge's header value (`NTLM <base64>`): NTLMv2's, with target information naming
/// the domain `CORP`, when `v2`; NTLMv1's otherwise.
pub fn challenge(v2: bool) -> String {
    let utf16 = |s: &str| s.bytes().flat_map(|b| [b, 0]).collect::<Vec<u8>>();
    let mut info = vec![0x02, 0x00, 0x08, 0x00];
    info.extend(utf16("CORP"));
    info.extend([0, 0, 0, 0]);
    let mut m = b"NTLMSSP\0\x02\0\0\0".to_vec();
    // The target name: empty.
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
    format!(
        "NTLM {}",
        base64::engine::general_purpose::STANDARD.encode(m)
    )
}

/// `DOMAIN\user from WORKSTATION, vN` when the authenticate message `m` (type 3) answers
/// [`challenge`]`(v2)` with `password`; `None` when it does not.
pub fn verify(m: &[u8], v2: bool, password: &str) -> Option<String> {
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
    let units: Vec<u8> = password.bytes().flat_map(|b| [b, 0]).collect();
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

/// DES under a 7-byte key, spread to 8 bytes (each 7 bits shifted over the parity bit).
fn des(k: &[u8], block: &[u8; 8]) -> [u8; 8] {
    let bits = u64::from_be_bytes([0, k[0], k[1], k[2], k[3], k[4], k[5], k[6]]);
    let key: Vec<u8> = (0..8)
        .map(|i| ((bits >> (49 - 7 * i)) as u8) << 1)
        .collect();
    let cipher = des::Des::new_from_slice(&key).expect("8 bytes");
    let mut out = des::cipher::generic_array::GenericArray::clone_from_slice(block);
    cipher.encrypt_block(&mut out);
    out.into()
}
