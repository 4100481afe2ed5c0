//! Whom TLS trusts and who pado says it is: a CA file (`--ca-cert`,
//! `defaults.tls.ca_cert`) instead of `--insecure`, and a client certificate for a
//! server that requires one (mutual TLS), checked against a test server that counts
//! what reached it.

use pado_testkit::h2server::{H2Options, H2Server};
use pado_testkit::{ServerOptions, TestServer};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

use crate::harness::{num, pado, run, tmp, write_file, write_fixture};

/// A CA and a client certificate it signed, as PEM: (ca, client cert, client key).
fn client_pki() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(vec![]).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client = CertificateParams::new(vec!["pado-client".into()])
        .unwrap()
        .signed_by(&client_key, &ca_cert, &ca_key)
        .unwrap();
    (ca_cert.pem(), client.pem(), client_key.serialize_pem())
}

#[test]
fn a_ca_file_is_trusted_instead_of_insecure() {
    let srv = TestServer::start_with(ServerOptions {
        tls: true,
        ..Default::default()
    });
    let dir = tmp("tls-ca");
    let ca = write_file(&dir, "server-ca.pem", &srv.cert_pem().unwrap());
    let url = srv.url("/");
    let r = run(
        "tls-ca",
        &[
            "--url",
            &url,
            "--vus",
            "2",
            "--duration",
            "1s",
            "--ca-cert",
            ca.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert!(num(&s, "requests") > 0.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(num(&s, "requests") as u64, srv.stats().requests);

    // A file that is not a certificate: named before anything is sent.
    let junk = write_file(&dir, "junk.pem", "hello\n");
    let r = run(
        "tls-ca-junk",
        &[
            "--url",
            &url,
            "--duration",
            "1s",
            "--ca-cert",
            junk.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code(), 2, "{}", r.stdout());
    assert!(r.stderr().contains("junk.pem"), "{}", r.stderr());
    assert!(r.stderr().contains("no certificate"), "{}", r.stderr());
}

#[test]
fn mutual_tls_presents_the_client_certificate() {
    let (ca, cert, key) = client_pki();
    let srv = TestServer::start_with(ServerOptions {
        tls: true,
        client_ca_pem: Some(ca),
        ..Default::default()
    });
    let dir = tmp("mtls");
    write_file(&dir, "server.pem", &srv.cert_pem().unwrap());
    write_file(&dir, "client.pem", &cert);
    write_file(&dir, "client.key", &key);
    // The files are named in the scenario, relative to it.
    let file = write_fixture(
        &dir,
        "tls_trust_mutual_tls_presents_the_client_certificate.yaml",
        "mtls.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("mtls", &[file.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 20.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(srv.stats().requests, 20);
    // The key never shows in what pado writes.
    let key_line = key.lines().nth(1).unwrap();
    for f in std::fs::read_dir(&r.dir).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
        assert!(!text.contains(key_line));
    }

    // Without the client certificate the server refuses every handshake: counted
    // as TLS failures, nothing reached the server.
    srv.reset_stats();
    let server_ca = dir.join("server.pem");
    let r = run(
        "mtls-none",
        &[
            "--url",
            &srv.url("/"),
            "--vus",
            "1",
            "--duration",
            "1s",
            "--ca-cert",
            server_ca.to_str().unwrap(),
        ],
    );
    // Every request failed: the run's verdict fails (exit 99), never a quiet 0.
    assert_eq!(r.code(), 99, "{}", r.stderr());
    let s = r.summary();
    assert!(num(&s, "requests") > 0.0, "{s}");
    assert_eq!(num(&s, "failed"), num(&s, "requests"), "{s}");
    assert_eq!(srv.stats().requests, 0);

    // The same with the flags: every request passes again.
    let r = run(
        "mtls-flags",
        &[
            "--url",
            &srv.url("/"),
            "--vus",
            "1",
            "--duration",
            "1s",
            "--ca-cert",
            server_ca.to_str().unwrap(),
            "--client-cert",
            dir.join("client.pem").to_str().unwrap(),
            "--client-key",
            dir.join("client.key").to_str().unwrap(),
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert!(num(&s, "requests") > 0.0, "{s}");

    // The key is a secret: never put into a Kubernetes ConfigMap (or an agent's job).
    let out = pado(&["k8s", "render", file.to_str().unwrap(), "--generators", "2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("client key") && err.contains("--segment"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(key_line));

    // A key without its certificate is refused with the field's line.
    let half = write_fixture(
        &dir,
        "tls_trust_mutual_tls_presents_the_client_certificate_half.yaml",
        "half.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("mtls-half", &[half.to_str().unwrap()]);
    assert_eq!(r.code(), 2, "{}", r.stdout());
    assert!(r.stderr().contains("half.yaml:4"), "{}", r.stderr());
    assert!(r.stderr().contains("client_cert"), "{}", r.stderr());
}

#[test]
fn http2_over_tls_trusts_the_ca_file_too() {
    let srv = H2Server::start(H2Options {
        tls: true,
        ..Default::default()
    })
    .unwrap();
    let dir = tmp("h2-ca");
    let ca = write_file(&dir, "h2-ca.pem", srv.cert_pem.as_deref().unwrap());
    let url = format!("https://{}/", srv.addr);
    let r = run(
        "h2-ca",
        &[
            "--url",
            &url,
            "--http2",
            "--vus",
            "2",
            "--duration",
            "1s",
            "--ca-cert",
            ca.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    assert!(num(&s, "requests") > 0.0, "{s}");
    assert_eq!(num(&s, "failed"), 0.0, "{s}");
    assert_eq!(num(&s, "requests") as u64, srv.requests());
}
