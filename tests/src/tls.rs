//! Test certificates: a private CA (rcgen) and rustls configurations built from it.
//!
//! [`TestPki::new`] makes a CA and a server leaf valid for `localhost`, `127.0.0.1` and `::1`,
//! and a client leaf for mutual-TLS tests. Every config uses the ring provider explicitly, so
//! tests do not depend on a process-wide default provider. A second `TestPki` is an independent,
//! untrusted CA for negative tests; [`TestPki::server_config_for`] and
//! [`TestPki::expired_server_config`] give wrong-name and expired leaves from the trusted CA.
//!
//! What this module does not do: touch the system trust store, or write anything to disk except
//! through [`TestPki::write_ca_pem`] / [`TempDir`].

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The names the default server leaf is valid for.
pub const DEFAULT_NAMES: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// The ring crypto provider every config here is built with.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A certificate and its PKCS#8 private key.
#[derive(Debug, Clone)]
struct Leaf {
    /// The serial number, to revoke it by.
    serial: rcgen::SerialNumber,
    cert: CertificateDer<'static>,
    cert_pem: String,
    key_der: Vec<u8>,
    key_pem: String,
}

impl Leaf {
    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

/// A private test CA with a server leaf and a client leaf.
#[derive(Debug)]
pub struct TestPki {
    issuer: CertifiedIssuer<'static, KeyPair>,
    server: Leaf,
    client: Leaf,
}

/// Validity window of a leaf.
#[derive(Debug, Clone, Copy)]
enum Validity {
    Current,
    Expired,
}

impl Default for TestPki {
    fn default() -> Self {
        Self::new()
    }
}

impl TestPki {
    /// A new CA, a server leaf for [`DEFAULT_NAMES`] and a client leaf.
    ///
    /// # Panics
    ///
    /// If key generation or signing fails (it does not with the ring backend).
    pub fn new() -> Self {
        Self::with_names(DEFAULT_NAMES)
    }

    /// Like [`new`](Self::new) with a server leaf for `names` (DNS names or IP literals).
    ///
    /// # Panics
    ///
    /// If a name is not a valid DNS name or IP address.
    pub fn with_names(names: &[&str]) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        // A name of its own: a client trusting another test CA must not take this one's
        // certificates for that CA's (same name, wrong signature) but for an unknown issuer's.
        static NEXT_CA: AtomicU64 = AtomicU64::new(1);
        let name = format!("pool-tests CA {}", NEXT_CA.fetch_add(1, Ordering::Relaxed));
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("ca key");
        let issuer = CertifiedIssuer::self_signed(params, key).expect("self-sign ca");
        let server = issue(
            &issuer,
            names,
            ExtendedKeyUsagePurpose::ServerAuth,
            Validity::Current,
        );
        let client = issue(
            &issuer,
            &["client.pool-tests.invalid"],
            ExtendedKeyUsagePurpose::ClientAuth,
            Validity::Current,
        );
        Self {
            issuer,
            server,
            client,
        }
    }

    /// A certificate revocation list from this CA, in PEM, that revokes the server leaf
    /// (`revoke_server`) or nothing.
    ///
    /// # Panics
    ///
    /// If signing fails (it does not with the ring backend).
    pub fn crl_pem(&self, revoke_server: bool) -> String {
        let revoked = revoke_server.then(|| rcgen::RevokedCertParams {
            serial_number: self.server.serial.clone(),
            revocation_time: rcgen::date_time_ymd(2021, 1, 1),
            reason_code: Some(rcgen::RevocationReason::KeyCompromise),
            invalidity_date: None,
        });
        let params = rcgen::CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2021, 1, 1),
            next_update: rcgen::date_time_ymd(2100, 1, 1),
            crl_number: rcgen::SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: revoked.into_iter().collect(),
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        params
            .signed_by(&self.issuer)
            .expect("sign CRL")
            .pem()
            .expect("CRL PEM")
    }

    /// The CA certificate in PEM.
    pub fn ca_pem(&self) -> String {
        self.issuer.pem()
    }

    /// The CA certificate in DER.
    pub fn ca_der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A root store holding only this CA.
    pub fn root_store(&self) -> RootCertStore {
        let mut roots = RootCertStore::empty();
        roots.add(self.ca_der()).expect("add test CA");
        roots
    }

    /// Writes the CA certificate to `dir/ca.pem` and returns that path.
    ///
    /// # Errors
    ///
    /// If the file cannot be written.
    pub fn write_ca_pem(&self, dir: &Path) -> io::Result<PathBuf> {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.ca_pem())?;
        Ok(path)
    }

    /// The server leaf certificate in PEM.
    pub fn server_cert_pem(&self) -> String {
        self.server.cert_pem.clone()
    }

    /// The server leaf's public key in PEM (`PUBLIC KEY`: its DER SubjectPublicKeyInfo), the
    /// form curl's `--pinnedpubkey FILE` reads.
    ///
    /// # Panics
    ///
    /// If the key generated for the leaf does not parse back (it does).
    pub fn server_public_key_pem(&self) -> String {
        KeyPair::try_from(self.server.key_der.as_slice())
            .expect("the server key parses")
            .public_key_pem()
    }

    /// The server leaf's public key as a DER SubjectPublicKeyInfo (what a pin digests).
    ///
    /// # Panics
    ///
    /// If the key generated for the leaf does not parse back (it does).
    pub fn server_public_key_der(&self) -> Vec<u8> {
        use rcgen::PublicKeyData as _;
        KeyPair::try_from(self.server.key_der.as_slice())
            .expect("the server key parses")
            .subject_public_key_info()
    }

    /// The server leaf's private key in PKCS#8 PEM.
    pub fn server_key_pem(&self) -> String {
        self.server.key_pem.clone()
    }

    /// The client leaf (for mutual TLS): certificate chain and private key.
    pub fn client_identity(&self) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        (vec![self.client.cert.clone()], self.client.key())
    }

    /// The client leaf certificate and key in PEM (certificate first), e.g. for a CLI flag.
    pub fn client_identity_pem(&self) -> (String, String) {
        (self.client.cert_pem.clone(), self.client.key_pem.clone())
    }

    /// A server config presenting the server leaf, offering `alpn` (in preference order; empty
    /// for no ALPN), without client authentication.
    pub fn server_config(&self, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        build_server(&self.server, alpn, None)
    }

    /// Like [`server_config`](Self::server_config), stapling `ocsp` (see
    /// [`crate::ocsp::Staple`]) to every handshake, and sending the CA's certificate after its
    /// own when `with_ca` (where a real server sends its issuing intermediate: OpenSSL, and so
    /// curl, computes the status's certificate ID only from an issuer the server sent).
    pub fn server_config_with_ocsp(
        &self,
        alpn: &[&[u8]],
        ocsp: Vec<u8>,
        with_ca: bool,
    ) -> Arc<ServerConfig> {
        let mut chain = vec![self.server.cert.clone()];
        if with_ca {
            chain.push(self.ca_der());
        }
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert_with_ocsp(chain, self.server.key(), ocsp)
            .expect("server certificate");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }

    /// The server leaf, DER.
    pub fn server_cert_der(&self) -> CertificateDer<'static> {
        self.server.cert.clone()
    }

    /// A certificate from this CA with extended key usage `usage` (`OcspSigning` for a
    /// responder the CA delegates OCSP responses to), and its key.
    pub fn delegate(&self, usage: ExtendedKeyUsagePurpose) -> (CertificateDer<'static>, KeyPair) {
        let leaf = issue(&self.issuer, &[], usage, Validity::Current);
        let key = KeyPair::try_from(leaf.key_der.as_slice()).expect("delegate key");
        (leaf.cert, key)
    }

    /// `message` signed with the CA's key (ECDSA P-256 with SHA-256, DER), as the CA signs.
    pub fn ca_sign(&self, message: &[u8]) -> Vec<u8> {
        rcgen::SigningKey::sign(self.issuer.key(), message).expect("ca signature")
    }

    /// Like [`server_config`](Self::server_config), with `groups` as the only key exchange
    /// groups.
    pub fn server_config_with_groups(
        &self,
        alpn: &[&[u8]],
        groups: &[rustls::NamedGroup],
    ) -> Arc<ServerConfig> {
        let mut narrowed = rustls::crypto::ring::default_provider();
        narrowed.kx_groups.retain(|g| groups.contains(&g.name()));
        let mut config = ServerConfig::builder_with_provider(Arc::new(narrowed))
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![self.server.cert.clone()], self.server.key())
            .expect("server certificate");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }

    /// Like [`server_config`](Self::server_config) but requiring a client certificate issued by
    /// this CA (see [`client_identity`](Self::client_identity)).
    pub fn server_config_with_client_auth(&self, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(self.root_store()),
            provider(),
        )
        .build()
        .expect("client verifier");
        build_server(&self.server, alpn, Some(verifier))
    }

    /// A server config with a fresh leaf from this CA valid only for `names` (wrong-name tests).
    pub fn server_config_for(&self, names: &[&str], alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let leaf = issue(
            &self.issuer,
            names,
            ExtendedKeyUsagePurpose::ServerAuth,
            Validity::Current,
        );
        build_server(&leaf, alpn, None)
    }

    /// A server config with a leaf from this CA for [`DEFAULT_NAMES`] that expired in 2001.
    pub fn expired_server_config(&self, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let leaf = issue(
            &self.issuer,
            DEFAULT_NAMES,
            ExtendedKeyUsagePurpose::ServerAuth,
            Validity::Expired,
        );
        build_server(&leaf, alpn, None)
    }

    /// A server config presenting a self-signed certificate for [`DEFAULT_NAMES`] (no CA
    /// issued it; curl's `%{ssl_verify_result}` 18); `as_ca` makes it a CA certificate too,
    /// as `openssl req -x509` does.
    pub fn self_signed_server_config(&self, alpn: &[&[u8]], as_ca: bool) -> Arc<ServerConfig> {
        self.self_signed_server(alpn, as_ca).0
    }

    /// As [`self_signed_server_config`](Self::self_signed_server_config), with the
    /// certificate as PEM (for a client that trusts it as a root: `--cacert`).
    pub fn self_signed_server(&self, alpn: &[&[u8]], as_ca: bool) -> (Arc<ServerConfig>, String) {
        let (cert, key) = self_signed(as_ca);
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config = build_server_chain(vec![cert.der().clone()], key, alpn);
        (config, cert.pem())
    }

    /// A self-signed certificate for [`DEFAULT_NAMES`] and its key, as PEM, for a server
    /// configured from files (nginx); `as_ca` as in
    /// [`self_signed_server_config`](Self::self_signed_server_config).
    pub fn self_signed_pem(&self, as_ca: bool) -> (String, String) {
        let (cert, key) = self_signed(as_ca);
        (cert.pem(), key.serialize_pem())
    }

    /// A server config presenting the server leaf followed by this CA's own certificate, a
    /// self-signed root sent along as some servers do (curl's `%{ssl_verify_result}` 19 when
    /// the CA is not trusted).
    pub fn server_config_with_root(&self, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let chain = vec![self.server.cert.clone(), self.ca_der()];
        build_server_chain(chain, self.server.key(), alpn)
    }

    /// A client config trusting only this CA, offering `alpn`, without a client certificate.
    pub fn client_config(&self, alpn: &[&[u8]]) -> Arc<ClientConfig> {
        let mut config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(self.root_store())
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }

    /// Like [`client_config`](Self::client_config), presenting the client leaf.
    pub fn client_config_with_identity(&self, alpn: &[&[u8]]) -> Arc<ClientConfig> {
        let (chain, key) = self.client_identity();
        let mut config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(self.root_store())
            .with_client_auth_cert(chain, key)
            .expect("client identity");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

fn issue(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
    validity: Validity,
) -> Leaf {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("leaf names");
    params
        .distinguished_name
        .push(DnType::CommonName, "pool-tests leaf");
    params.extended_key_usages = vec![usage];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    if let Validity::Expired = validity {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);
    let serial = rcgen::SerialNumber::from(NEXT_SERIAL.fetch_add(1, Ordering::Relaxed));
    params.serial_number = Some(serial.clone());
    let key = KeyPair::generate().expect("leaf key");
    let cert = params.signed_by(&key, issuer).expect("sign leaf");
    Leaf {
        serial,
        cert: cert.der().clone(),
        cert_pem: cert.pem(),
        key_der: key.serialize_der(),
        key_pem: key.serialize_pem(),
    }
}

/// A server config presenting `chain` with `key`, offering `alpn`, without client
/// authentication.
fn build_server_chain(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    alpn: &[&[u8]],
) -> Arc<ServerConfig> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

fn build_server(
    leaf: &Leaf,
    alpn: &[&[u8]],
    client_auth: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
) -> Arc<ServerConfig> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match client_auth {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(vec![leaf.cert.clone()], leaf.key())
        .expect("server certificate");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A uniquely named directory under `std::env::temp_dir()`, removed (recursively) on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `{temp}/pool-tests-{prefix}-{pid}-{n}-{nanos}`.
    ///
    /// # Panics
    ///
    /// If the directory cannot be created.
    pub fn new(prefix: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "pool-tests-{prefix}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A self-signed certificate for [`DEFAULT_NAMES`] named "pool-tests self-signed", made as a
/// CA or not, and its key.
fn self_signed(as_ca: bool) -> (rcgen::Certificate, KeyPair) {
    let names: Vec<String> = DEFAULT_NAMES.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("leaf names");
    if as_ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    params
        .distinguished_name
        .push(DnType::CommonName, "pool-tests self-signed");
    let key = KeyPair::generate().expect("leaf key");
    let cert = params.self_signed(&key).expect("self-sign");
    (cert, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pki_builds_configs_and_writes_pem() {
        let pki = TestPki::new();
        assert!(pki.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        let _ = pki.server_config(&[b"h2", b"http/1.1"]);
        let _ = pki.server_config_with_client_auth(&[]);
        let _ = pki.server_config_for(&["other.invalid"], &[]);
        let _ = pki.expired_server_config(&[]);
        let _ = pki.client_config(&[b"h2"]);
        let _ = pki.client_config_with_identity(&[]);
        let dir = TempDir::new("pki");
        let path = pki.write_ca_pem(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), pki.ca_pem());
        let kept = dir.path().to_owned();
        drop(dir);
        assert!(!kept.exists());
    }
}
