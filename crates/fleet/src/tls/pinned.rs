//! The coordinator's check of an agent's certificate by its fingerprint
//! (`--agent-fingerprint`): the certificate the agent presents must be exactly the
//! pinned one, and the agent must prove in the handshake that it holds that
//! certificate's private key.
//!
//! Pinning trusts one certificate, not a name or an authority: the host name in
//! the URL, the certificate's validity dates and any intermediates are not
//! consulted (a generated self-signed certificate has no authority and the URL may
//! be an address). What keeps an impostor out is the digest compared in constant
//! time and the handshake's signature, checked with the pinned certificate's key:
//! copying the agent's certificate, which is public, is not enough.

use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

use super::fingerprint::Fingerprint;

/// Accepts only a server whose end-entity certificate has the pinned fingerprint.
/// It remembers the fingerprint of a certificate it refused, so the coordinator
/// can name both in its error.
#[derive(Debug)]
pub struct PinnedVerifier {
    pinned: Fingerprint,
    provider: Arc<CryptoProvider>,
    refused: Mutex<Option<Fingerprint>>,
}

impl PinnedVerifier {
    /// A verifier for `pinned`, checking handshake signatures with `provider`'s
    /// algorithms.
    pub fn new(pinned: Fingerprint, provider: Arc<CryptoProvider>) -> PinnedVerifier {
        PinnedVerifier {
            pinned,
            provider,
            refused: Mutex::new(None),
        }
    }

    /// The pinned fingerprint.
    pub fn pinned(&self) -> Fingerprint {
        self.pinned
    }

    /// The fingerprint of the last certificate refused, if one was.
    pub fn refused(&self) -> Option<Fingerprint> {
        *pado_base::lock(&self.refused)
    }
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let presented = Fingerprint::of(end_entity);
        if presented.matches(&self.pinned) {
            return Ok(ServerCertVerified::assertion());
        }
        *pado_base::lock(&self.refused) = Some(presented);
        Err(rustls::Error::InvalidCertificate(
            CertificateError::ApplicationVerificationFailure,
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::{AgentIdentity, AgentTrust};
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use rustls::server::{ClientHello, ResolvesServerCert};
    use rustls::sign::CertifiedKey;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A handshake between a client verifying with `trust` and a server configured
    /// with `server`, over an in-memory pipe; the client's verdict, and the pin's
    /// verifier when there is one.
    fn handshake(
        server: Arc<rustls::ServerConfig>,
        trust: &AgentTrust,
    ) -> (Result<(), String>, Option<Arc<PinnedVerifier>>) {
        let (cfg, verifier) = trust.client_config();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let verdict = rt.block_on(async move {
            let (c, s) = tokio::io::duplex(64 * 1024);
            let serve = tokio::spawn(async move {
                if let Ok(mut tls) = tokio_rustls::TlsAcceptor::from(server).accept(s).await {
                    let mut b = [0u8; 2];
                    if tls.read_exact(&mut b).await.is_ok() {
                        let _ = tls.write_all(&b).await;
                        let _ = tls.flush().await;
                    }
                }
            });
            let name = ServerName::try_from("127.0.0.1").unwrap();
            let out = match tokio_rustls::TlsConnector::from(cfg).connect(name, c).await {
                Ok(mut tls) => {
                    // The connection carries bytes both ways once accepted.
                    tls.write_all(b"ok").await.unwrap();
                    tls.flush().await.unwrap();
                    let mut b = [0u8; 2];
                    tls.read_exact(&mut b).await.map_err(|e| e.to_string())?;
                    assert_eq!(&b, b"ok");
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            };
            serve.abort();
            out
        });
        (verdict, verifier)
    }

    #[test]
    fn the_pinned_certificate_passes() {
        let agent = AgentIdentity::generate(&[]).unwrap();
        let (verdict, v) = handshake(agent.config, &AgentTrust::Pinned(agent.fingerprint));
        assert_eq!(verdict, Ok(()));
        assert_eq!(v.unwrap().refused(), None);
    }

    #[test]
    fn another_certificate_fails_and_its_fingerprint_is_kept_for_the_message() {
        let agent = AgentIdentity::generate(&[]).unwrap();
        let other = AgentIdentity::generate(&[]).unwrap();
        let (verdict, v) = handshake(agent.config, &AgentTrust::Pinned(other.fingerprint));
        let e = verdict.unwrap_err();
        assert!(e.to_lowercase().contains("certificate"), "{e}");
        let v = v.unwrap();
        assert_eq!(v.refused(), Some(agent.fingerprint));
        assert_eq!(v.pinned(), other.fingerprint);
    }

    /// Presents a certificate but signs the handshake with another key: what an
    /// impostor holding a copy of the agent's (public) certificate can do.
    #[derive(Debug)]
    struct Impostor(Arc<CertifiedKey>);

    impl ResolvesServerCert for Impostor {
        fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
            Some(self.0.clone())
        }
    }

    #[test]
    fn the_pinned_certificate_without_its_key_fails_the_signature_check() {
        let real = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
        let thief = rcgen::KeyPair::generate().unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = provider
            .key_provider
            .load_private_key(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
                thief.serialize_der(),
            )))
            .unwrap();
        let stolen = CertifiedKey::new(vec![real.cert.der().clone()], key);
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Impostor(Arc::new(stolen))));
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let pin = Fingerprint::of(real.cert.der());
        let (verdict, v) = handshake(Arc::new(cfg), &AgentTrust::Pinned(pin));
        let e = verdict.unwrap_err();
        assert!(e.to_lowercase().contains("signature"), "{e}");
        // The digest matched: it is the signature that kept the impostor out.
        assert_eq!(v.unwrap().refused(), None);
    }

    #[test]
    fn a_ca_file_trusts_its_own_certificates_only() {
        let dir = tempfile::tempdir().unwrap();
        let agent = AgentIdentity::generate(&[]).unwrap();
        let ca = dir.path().join("agent.pem");
        std::fs::write(&ca, agent.generated_pem.as_deref().unwrap()).unwrap();
        let trust = AgentTrust::ca_file(&ca).unwrap();
        assert_eq!(handshake(agent.config.clone(), &trust).0, Ok(()));
        let stranger = AgentIdentity::generate(&[]).unwrap();
        let e = handshake(stranger.config, &trust).0.unwrap_err();
        assert!(e.contains("UnknownIssuer"), "{e}");
        // Nor do the system's roots know a generated certificate.
        let e = handshake(agent.config, &AgentTrust::SystemRoots)
            .0
            .unwrap_err();
        assert!(e.contains("UnknownIssuer"), "{e}");
    }
}
