//! TLS for the agent protocol (`pado agent --tls`, `pado run --generators
//! https://...`): without it a coordinator's token and jobs cross the network in
//! clear text, which is only for loopback and networks you trust.
//!
//! - [`identity`]: the certificate the agent presents, from files or generated at
//!   start, and its server configuration;
//! - [`fingerprint`]: a certificate's SHA-256 fingerprint, printed by the agent and
//!   pinned by coordinators;
//! - [`pinned`]: the coordinator's verifier of a pinned fingerprint;
//! - [`trust`]: how a coordinator verifies agents (a pin, a CA file, the system's
//!   roots);
//! - [`accept`]: the agent's side of a connection: the handshake within the
//!   server's patience, a plain-HTTP request refused with a word on `https://`.

pub mod accept;
pub mod fingerprint;
pub mod identity;
pub mod pinned;
pub mod trust;

use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;

pub use fingerprint::{Fingerprint, FingerprintError};
pub use identity::AgentIdentity;
pub use trust::AgentTrust;

/// A TLS file or certificate that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file that cannot be read or holds no usable PEM of the kind wanted.
    #[error("{what} {path}: {reason}")]
    File {
        /// What the file was meant to be ("certificate file", ...).
        what: &'static str,
        /// The file as given.
        path: PathBuf,
        /// Why, in a sentence.
        reason: String,
    },
    /// A certificate and a key that do not go together, or that rustls refused.
    #[error("certificate {cert} with key {key}: {reason}")]
    KeyPair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why.
        reason: String,
    },
    /// No certificate could be generated.
    #[error("could not generate a certificate for {names}: {reason}")]
    Generate {
        /// The names it was to be valid for.
        names: String,
        /// Why.
        reason: String,
    },
}

/// The certificates of a PEM file (at least one), read as pado reads every
/// certificate file ([`pado_http::trust::pem_certificates`]).
fn read_certs(p: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    pado_http::trust::pem_certificates(p).map_err(|reason| TlsError::File {
        what,
        path: p.to_path_buf(),
        reason,
    })
}

// A PEM reading error in a sentence, worded as for every certificate file.
use pado_http::trust::pem_reason;
