//! TLS for pado's own servers (feature `tls`): a throw-away self-signed certificate
//! made at start, the protocols offered in ALPN, and, when asked, client
//! certificates required (mutual TLS). The demo target (`pado target serve --tls`)
//! and the test kit's servers share it, so both speak TLS the same way.

use std::io;
use std::sync::Arc;

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Makes a fresh self-signed certificate (SANs `localhost` and `127.0.0.1`)
/// and a TLS acceptor serving it. Returns the acceptor and the certificate
/// as PEM, which clients use as their only trusted root.
pub fn make_acceptor(client_ca_pem: Option<&str>) -> io::Result<(TlsAcceptor, String)> {
    make_acceptor_alpn(
        client_ca_pem,
        vec![b"http/1.1".to_vec(), b"http/1.0".to_vec()],
    )
}

/// [`make_acceptor`] choosing among `alpn`, in the server's order of preference (an
/// HTTP/2 server offers `h2`; the demo target `h2` then `http/1.1`).
pub fn make_acceptor_alpn(
    client_ca_pem: Option<&str>,
    alpn: Vec<Vec<u8>>,
) -> io::Result<(TlsAcceptor, String)> {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .map_err(io_err)?;
    let pem = certified.cert.pem();
    let cert_der = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
    // An explicit provider, so that the process-wide default (which depends
    // on which rustls features other crates enable) does not matter.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(io_err)?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            // Mutual TLS: a client must present a certificate this CA signed.
            use rustls::pki_types::pem::PemObject;
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(c.map_err(io_err)?).map_err(io_err)?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(io_err)?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(vec![cert_der], key)
        .map_err(io_err)?;
    config.alpn_protocols = alpn;
    Ok((TlsAcceptor::from(Arc::new(config)), pem))
}
