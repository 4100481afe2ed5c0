//! The agent's side of TLS (`pado agent --tls`): the certificate it presents and
//! its key, read from PEM files or generated at start, and the rustls server
//! configuration made of them once, before the agent listens.
//!
//! A generated certificate is self-signed, valid for the names the agent was
//! configured with, and new at every start: no authority vouches for it, so a
//! coordinator trusts it by its fingerprint, which the agent prints, or by the
//! certificate itself given as a CA file (`--tls-cert-out`, then `--agent-ca`).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::fingerprint::Fingerprint;
use super::{pem_reason, TlsError};

/// What the agent presents in a TLS handshake.
pub struct AgentIdentity {
    /// The server configuration every connection is accepted with (ALPN
    /// `http/1.1`, rustls's safe protocol versions).
    pub config: Arc<rustls::ServerConfig>,
    /// The fingerprint of the certificate presented, for coordinators to pin.
    pub fingerprint: Fingerprint,
    /// A generated certificate as PEM (to write with `--tls-cert-out`); `None` for
    /// one read from files.
    pub generated_pem: Option<String>,
    /// The names and addresses a generated certificate is valid for (empty for
    /// one read from files).
    pub generated_for: Vec<String>,
}

impl std::fmt::Debug for AgentIdentity {
    /// Never the key: the configuration holds it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AgentIdentity({}, key hidden)", self.fingerprint)
    }
}

impl AgentIdentity {
    /// The certificate chain in `cert` (PEM, the agent's own first) and its private
    /// key in `key` (PEM: PKCS#8, PKCS#1 or SEC1). A key that is not the
    /// certificate's is refused here, not at the first handshake.
    pub fn from_files(cert: &Path, key: &Path) -> Result<AgentIdentity, TlsError> {
        let chain = super::read_certs(cert, "certificate file")?;
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::File {
            what: "key file",
            path: key.to_path_buf(),
            reason: pem_reason(&e, "a private key"),
        })?;
        let fingerprint = Fingerprint::of(&chain[0]);
        let config = server_config(chain, key_der).map_err(|e| TlsError::KeyPair {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(AgentIdentity {
            config,
            fingerprint,
            generated_pem: None,
            generated_for: Vec::new(),
        })
    }

    /// A new self-signed certificate valid for `names` (host names and IP
    /// addresses; duplicates and names a certificate cannot hold, such as a
    /// non-ASCII host name, are left out) and always for `localhost`, `127.0.0.1`
    /// and `::1`.
    pub fn generate(names: &[String]) -> Result<AgentIdentity, TlsError> {
        let mut sans: Vec<String> = Vec::new();
        for n in names
            .iter()
            .map(|n| n.trim().trim_end_matches('.').to_string())
            .chain(["localhost".into(), "127.0.0.1".into(), "::1".into()])
        {
            if certifiable(&n) && !sans.iter().any(|s| s.eq_ignore_ascii_case(&n)) {
                sans.push(n);
            }
        }
        let fail = |e: rcgen::Error| TlsError::Generate {
            names: sans.join(", "),
            reason: e.to_string(),
        };
        let key_pair = rcgen::KeyPair::generate().map_err(fail)?;
        let mut params = rcgen::CertificateParams::new(sans.clone()).map_err(fail)?;
        // A name of its own (its key's digest), so that a coordinator trusting
        // another agent's certificate as a CA is told "unknown issuer", not that
        // the issuer it found signed badly.
        let key_id = Fingerprint::of(&key_pair.public_key_der());
        let key_id: String = key_id.bytes()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("pado agent {key_id}"));
        let cert = params.self_signed(&key_pair).map_err(fail)?;
        let der = cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_pair.serialize_der()));
        let config = server_config(vec![der.clone()], key).map_err(|e| TlsError::Generate {
            names: sans.join(", "),
            reason: e.to_string(),
        })?;
        Ok(AgentIdentity {
            config,
            fingerprint: Fingerprint::of(&der),
            generated_pem: Some(cert.pem()),
            generated_for: sans,
        })
    }
}

/// Whether `name` can be a certificate's subject alternative name: an IP address
/// or an ASCII DNS name.
fn certifiable(name: &str) -> bool {
    name.parse::<std::net::IpAddr>().is_ok()
        || (!name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'))
}

/// The server configuration of `chain` and `key` (checked to belong together).
fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_names_the_agent_and_its_fingerprint_is_its_digest() {
        let id = AgentIdentity::generate(&[
            "gen-1.internal".into(),
            "10.0.0.5".into(),
            "파도-호스트".into(),
            "GEN-1.internal".into(),
        ])
        .unwrap();
        assert_eq!(
            id.generated_for,
            [
                "gen-1.internal",
                "10.0.0.5",
                "localhost",
                "127.0.0.1",
                "::1"
            ]
        );
        let pem = id.generated_pem.as_deref().unwrap();
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        assert_eq!(id.fingerprint, Fingerprint::of(&der));
        // A new one at every start.
        let again = AgentIdentity::generate(&[]).unwrap();
        assert_ne!(again.fingerprint, id.fingerprint);
        assert!(!format!("{id:?}").contains("PRIVATE"));
    }

    #[test]
    fn files_are_read_and_a_wrong_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let a = rcgen::generate_simple_self_signed(vec!["a.test".into()]).unwrap();
        let b = rcgen::generate_simple_self_signed(vec!["b.test".into()]).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let cert = write("cert.pem", &a.cert.pem());
        let key = write("key.pem", &a.key_pair.serialize_pem());
        let other_key = write("other.pem", &b.key_pair.serialize_pem());
        let junk = write("junk.pem", "파도\n");

        let id = AgentIdentity::from_files(&cert, &key).unwrap();
        assert_eq!(id.fingerprint, Fingerprint::of(a.cert.der()));
        assert!(id.generated_pem.is_none());

        let e = AgentIdentity::from_files(&junk, &key)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("junk.pem") && e.contains("no certificate"),
            "{e}"
        );
        let e = AgentIdentity::from_files(&cert, &junk)
            .unwrap_err()
            .to_string();
        assert!(e.contains("key file") && e.contains("junk.pem"), "{e}");
        let e = AgentIdentity::from_files(&cert, &dir.path().join("nope.pem"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope.pem"), "{e}");
        let e = AgentIdentity::from_files(&cert, &other_key).unwrap_err();
        assert!(matches!(e, TlsError::KeyPair { .. }), "{e}");
        assert!(e.to_string().contains("other.pem"), "{e}");
    }
}
