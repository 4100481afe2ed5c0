//! The coordinator's side of TLS: how it decides that an `https://` agent is the
//! one it means, one of three ways, chosen once for the run:
//!
//! - a pinned fingerprint (`--agent-fingerprint`), for an agent's generated
//!   certificate ([`super::pinned`]);
//! - a CA file (`--agent-ca`): only its certificates are trusted, not the public
//!   authorities, since an agent's certificate comes from your own CA (or is the
//!   agent's own, written with `--tls-cert-out`); the URL's host must be one the
//!   certificate names;
//! - the system's trust store and the bundled roots, as for any HTTPS site (an
//!   agent with a certificate from a public or company-wide CA).
//!
//! The first two are explicit: with either, an agent's URL without a scheme means
//! `https://`, and a `http://` one is an error, so a coordinator told to verify
//! never talks to an agent in clear text.

use std::path::Path;
use std::sync::Arc;

use super::fingerprint::Fingerprint;
use super::pinned::PinnedVerifier;
use super::TlsError;

/// How agents' certificates are verified.
#[derive(Clone, Debug, Default)]
pub enum AgentTrust {
    /// The system's trust store and the bundled roots.
    #[default]
    SystemRoots,
    /// Only the certificates of a CA file.
    Ca(Arc<rustls::RootCertStore>),
    /// Exactly the certificate with this fingerprint.
    Pinned(Fingerprint),
}

impl AgentTrust {
    /// Trust only the CA certificates in `path` (PEM).
    pub fn ca_file(path: &Path) -> Result<AgentTrust, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for c in super::read_certs(path, "CA certificate file")? {
            roots.add(c).map_err(|e| TlsError::File {
                what: "CA certificate file",
                path: path.to_path_buf(),
                reason: format!("a certificate in it is not usable as a CA: {e}"),
            })?;
        }
        Ok(AgentTrust::Ca(Arc::new(roots)))
    }

    /// Whether the user chose how to verify (a pin or a CA file): then only
    /// `https://` agents are reached.
    pub fn is_explicit(&self) -> bool {
        !matches!(self, AgentTrust::SystemRoots)
    }

    /// The client configuration for one agent (ALPN `http/1.1`), and for a pin its
    /// verifier, which can say what certificate it refused.
    pub fn client_config(&self) -> (Arc<rustls::ClientConfig>, Option<Arc<PinnedVerifier>>) {
        match self {
            AgentTrust::SystemRoots => (pado_http::tls_client_config(false), None),
            AgentTrust::Ca(roots) => {
                let mut cfg = builder()
                    .with_root_certificates(roots.clone())
                    .with_no_client_auth();
                cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
                (Arc::new(cfg), None)
            }
            AgentTrust::Pinned(fp) => {
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let verifier = Arc::new(PinnedVerifier::new(*fp, provider));
                let mut cfg = builder()
                    .dangerous()
                    .with_custom_certificate_verifier(verifier.clone())
                    .with_no_client_auth();
                cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
                (Arc::new(cfg), Some(verifier))
            }
        }
    }
}

fn builder() -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier> {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
}
