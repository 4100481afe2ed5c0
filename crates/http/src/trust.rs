//! Whom a TLS client trusts and who it says it is: the roots it verifies servers
//! against (the system's trust store and the bundled Mozilla roots, plus a CA file
//! of the user's, e.g. a company's internal CA), and a client certificate for
//! servers that require one (mutual TLS).
//!
//! Files are read once, before a run, so a wrong path or a file that is not PEM is
//! an error naming the file, not a failed request per VU.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A TLS file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsFileError {
    /// The file cannot be read or holds no usable PEM of the kind wanted.
    #[error("{what} {path}: {reason}")]
    Unusable {
        /// What the file was meant to be ("CA certificate file", ...).
        what: &'static str,
        /// The file as given.
        path: PathBuf,
        /// Why, in a sentence.
        reason: String,
    },
    /// The client certificate and key do not go together, or rustls refused them.
    #[error("client certificate {cert} with key {key}: {reason}")]
    ClientIdentity {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The client's certificate chain and private key (mutual TLS).
pub struct ClientIdentity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for ClientIdentity {
    /// Never the key: it is a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ClientIdentity({} certificates, key hidden)",
            self.chain.len()
        )
    }
}

/// What every TLS connection of a run trusts and presents, read once.
#[derive(Debug, Default)]
pub struct TlsSettings {
    /// Accept any server certificate (`--insecure`).
    pub insecure: bool,
    /// Certificates of the user's CA file, trusted besides the system's and the
    /// bundled roots.
    pub extra_roots: Vec<CertificateDer<'static>>,
    /// The certificate presented to servers that ask for one.
    pub client: Option<ClientIdentity>,
}

impl TlsSettings {
    /// Read the CA file (PEM, one or more certificates) and the client certificate
    /// (PEM chain) and key (PEM: PKCS#8, PKCS#1 or SEC1), checking that the key
    /// belongs to the certificate.
    pub fn from_files(
        insecure: bool,
        ca_cert: Option<&Path>,
        client: Option<(&Path, &Path)>,
    ) -> Result<TlsSettings, TlsFileError> {
        let extra_roots = match ca_cert {
            None => Vec::new(),
            Some(p) => read_certs(p, "CA certificate file")?,
        };
        let client = match client {
            None => None,
            Some((cert, key)) => {
                let chain = read_certs(cert, "client certificate file")?;
                let key_der =
                    PrivateKeyDer::from_pem_file(key).map_err(|e| TlsFileError::Unusable {
                        what: "client key file",
                        path: key.to_path_buf(),
                        reason: pem_reason(&e, "a private key"),
                    })?;
                let id = ClientIdentity {
                    chain,
                    key: key_der,
                };
                // Build once now so a key that does not match its certificate is
                // said before the run, not as a failed handshake per request.
                client_config_for(false, &[], Some(&id), &[b"http/1.1"]).map_err(|reason| {
                    TlsFileError::ClientIdentity {
                        cert: cert.to_path_buf(),
                        key: key.to_path_buf(),
                        reason,
                    }
                })?;
                Some(id)
            }
        };
        Ok(TlsSettings {
            insecure,
            extra_roots,
            client,
        })
    }

    /// The settings a script gives one connection as PEM text (k6's gRPC
    /// `connect(addr, { tls: { cacerts, cert, key } })`): CA certificates
    /// trusted besides the usual roots, and a client certificate and key (both or
    /// neither). `Err` says which part is unusable, never the key's text.
    pub fn from_pem(
        insecure: bool,
        cacerts: &[String],
        cert: &str,
        key: &str,
    ) -> Result<TlsSettings, String> {
        let mut extra_roots = Vec::new();
        for (i, pem) in cacerts.iter().enumerate() {
            let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("tls.cacerts[{i}]: {}", pem_reason(&e, "a certificate")))?;
            if certs.is_empty() {
                return Err(format!(
                    "tls.cacerts[{i}]: no certificate in it (expected PEM)"
                ));
            }
            extra_roots.extend(certs);
        }
        let client = match (cert.is_empty(), key.is_empty()) {
            (true, true) => None,
            (false, true) | (true, false) => {
                return Err("tls.cert and tls.key go together: give both or neither".into())
            }
            (false, false) => {
                let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("tls.cert: {}", pem_reason(&e, "a certificate")))?;
                if chain.is_empty() {
                    return Err("tls.cert: no certificate in it (expected PEM)".into());
                }
                if key.contains("ENCRYPTED") || key.contains("DEK-Info") {
                    return Err(
                        "tls.key is encrypted: pado reads unencrypted PEM keys only (decrypt it, e.g. `openssl pkey -in key.pem -out plain.pem`)"
                            .into(),
                    );
                }
                let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                    .map_err(|e| format!("tls.key: {}", pem_reason(&e, "a private key")))?;
                let id = ClientIdentity { chain, key };
                client_config_for(false, &[], Some(&id), &[b"h2"])
                    .map_err(|e| format!("tls.cert and tls.key do not go together: {e}"))?;
                Some(id)
            }
        };
        // Checked now, so `client_config_alpn` cannot fail later.
        client_config_for(insecure, &extra_roots, None, &[b"h2"])?;
        Ok(TlsSettings {
            insecure,
            extra_roots,
            client,
        })
    }

    /// The rustls configuration for these settings (HTTP/1.1 by ALPN).
    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        self.client_config_alpn(&[b"http/1.1"])
    }

    /// [`TlsSettings::client_config`] offering `alpn` (`h2` alone for HTTP/2, `h2`
    /// then `http/1.1` to let the server decide).
    pub fn client_config_alpn(&self, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
        Arc::new(
            client_config_for(self.insecure, &self.extra_roots, self.client.as_ref(), alpn)
                .expect("checked when the settings were read"),
        )
    }
}

fn read_certs(p: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsFileError> {
    pem_certificates(p).map_err(|reason| TlsFileError::Unusable {
        what,
        path: p.to_path_buf(),
        reason,
    })
}

/// The certificates of a PEM file (at least one), or why it has none usable, in a
/// sentence. Shared with the agents' TLS (crates/fleet), so a certificate file
/// reads and fails alike wherever pado is given one.
pub fn pem_certificates(p: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(p)
        .map_err(|e| pem_reason(&e, "a certificate"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_reason(&e, "a certificate"))?;
    if certs.is_empty() {
        return Err(
            "no certificate in it (expected PEM blocks `-----BEGIN CERTIFICATE-----`)".into(),
        );
    }
    Ok(certs)
}

/// A PEM reading error in a sentence (`wanted`: what the file should have held).
pub fn pem_reason(e: &rustls::pki_types::pem::Error, wanted: &str) -> String {
    use rustls::pki_types::pem::Error as E;
    match e {
        E::Io(io) => io.to_string(),
        E::NoItemsFound => format!("no {wanted} in it (expected PEM)"),
        other => format!("not valid PEM ({other:?})"),
    }
}

/// The system's trust store (as OpenSSL would find it: `SSL_CERT_FILE`,
/// `SSL_CERT_DIR`, the distribution's bundle), read once per process; empty where
/// there is none (a `scratch` container), which leaves the bundled roots.
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// Build a client configuration: any server certificate when `insecure`, else the
/// system's roots, the bundled roots and `extra`; `client` presented when asked;
/// ALPN offering `alpn`.
pub(crate) fn client_config_for(
    insecure: bool,
    extra: &[CertificateDer<'static>],
    client: Option<&ClientIdentity>,
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(crate::conn::AcceptAny::new(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // A system certificate rustls cannot parse is skipped, as browsers do.
        roots.add_parsable_certificates(system_roots().iter().cloned());
        for c in extra {
            roots
                .add(c.clone())
                .map_err(|e| format!("a CA certificate is not usable: {e}"))?;
        }
        builder.with_root_certificates(roots)
    };
    let mut cfg = match client {
        None => builder.with_no_client_auth(),
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(|e| e.to_string())?,
    };
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn files_are_read_and_a_wrong_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".into()]).unwrap();
        let other = rcgen::generate_simple_self_signed(vec!["other.test".into()]).unwrap();
        let ca_pem = write(dir.path(), "ca.pem", &ca.cert.pem());
        let key_pem = write(dir.path(), "key.pem", &ca.key_pair.serialize_pem());
        let other_key = write(dir.path(), "other.pem", &other.key_pair.serialize_pem());
        let junk = write(dir.path(), "junk.pem", "not a certificate\n");

        let s = TlsSettings::from_files(false, Some(&ca_pem), Some((&ca_pem, &key_pem))).unwrap();
        assert_eq!(s.extra_roots.len(), 1);
        assert!(s.client.is_some());
        assert!(
            !format!("{s:?}").contains("PRIVATE"),
            "the key is never shown"
        );
        let cfg = s.client_config();
        assert!(cfg.client_auth_cert_resolver.has_certs());

        let e = TlsSettings::from_files(false, Some(&junk), None).unwrap_err();
        assert!(e.to_string().contains("junk.pem"), "{e}");
        assert!(e.to_string().contains("no certificate"), "{e}");
        let missing = dir.path().join("nope.pem");
        let e = TlsSettings::from_files(false, Some(&missing), None).unwrap_err();
        assert!(e.to_string().contains("nope.pem"), "{e}");
        let e = TlsSettings::from_files(false, None, Some((&ca_pem, &junk))).unwrap_err();
        assert!(e.to_string().contains("client key file"), "{e}");
        // A key that is not the certificate's.
        let e = TlsSettings::from_files(false, None, Some((&ca_pem, &other_key))).unwrap_err();
        assert!(
            matches!(e, TlsFileError::ClientIdentity { .. }),
            "a key of another certificate must be refused before the run: {e}"
        );
    }
}
