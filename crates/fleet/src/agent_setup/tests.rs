use super::*;

#[test]
fn the_agent_s_token_comes_from_its_file_and_must_be_long_enough() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("토큰");
    std::fs::write(&file, "0123456789abcdef\nsecond line ignored\n").unwrap();
    let t = agent_token(Some(&file)).unwrap();
    assert!(t.matches(b"0123456789abcdef"));
    std::fs::write(&file, "s3cret\n").unwrap();
    let e = agent_token(Some(&file)).unwrap_err();
    assert!(matches!(e, SetupError::Invalid(_)));
    let e = e.to_string();
    assert!(
        e.contains("at least 16") && e.contains("--token-file"),
        "{e}"
    );
    assert!(!e.contains("s3cret"), "{e}");
    std::fs::write(&file, "\n").unwrap();
    let e = agent_token(Some(&file)).unwrap_err().to_string();
    assert!(e.contains("needs a token"), "{e}");
    let e = agent_token(Some(&dir.path().join("missing")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--token-file"), "{e}");
}

#[test]
fn an_agent_others_reach_without_tls_is_warned_about_and_no_other() {
    for (listen, tls, warned) in [
        ("0.0.0.0:7070", false, true),
        ("10.0.0.5:7070", false, true),
        ("[::]:7070", false, true),
        ("0.0.0.0:7070", true, false),
        ("127.0.0.1:7070", false, false),
        ("[::1]:7070", false, false),
    ] {
        let w = cleartext_warning(listen.parse().unwrap(), tls);
        assert_eq!(w.is_some(), warned, "{listen} tls={tls}: {w:?}");
        if let Some(w) = w {
            assert!(w.contains("--tls") && w.contains("clear text"), "{w}");
        }
    }
}

#[test]
fn a_generated_certificate_is_written_when_asked_and_is_the_one_printed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("에이전트.pem");
    let listen: SocketAddr = "10.1.2.3:7070".parse().unwrap();
    let t = TlsSettings {
        tls: true,
        cert_out: Some(out.clone()),
        ..TlsSettings::default()
    };
    let id = tls_identity(&t, listen, &["gen-1.internal".into()])
        .unwrap()
        .unwrap();
    let pem = std::fs::read_to_string(&out).unwrap();
    assert_eq!(Some(pem.as_str()), id.generated_pem.as_deref());
    let line = certificate_line(&id);
    assert!(line.contains(&id.fingerprint.to_string()), "{line}");
    assert!(
        line.contains("gen-1.internal") && line.contains("10.1.2.3"),
        "{line}"
    );
    // On every address, the address is not a name the certificate is for.
    let any: SocketAddr = "0.0.0.0:7070".parse().unwrap();
    let t = TlsSettings {
        tls: true,
        ..TlsSettings::default()
    };
    let id = tls_identity(&t, any, &["gen-2".into()]).unwrap().unwrap();
    assert!(id.generated_for.iter().any(|n| n == "gen-2"));
    assert!(
        !id.generated_for.iter().any(|n| n == "0.0.0.0"),
        "{:?}",
        id.generated_for
    );
    // Without TLS there is no identity, and a missing key file is named.
    assert!(tls_identity(&TlsSettings::default(), listen, &[])
        .unwrap()
        .is_none());
    let t = TlsSettings {
        tls: true,
        cert: Some(out.clone()),
        key: Some(dir.path().join("없는.key")),
        cert_out: None,
    };
    let e = tls_identity(&t, listen, &[]).unwrap_err();
    assert!(matches!(e, SetupError::Invalid(_)));
    assert!(e.to_string().contains("없는.key"), "{e}");
}

#[test]
fn this_host_s_name_has_no_nul_and_no_blank() {
    if let Some(n) = system_host_name() {
        assert!(!n.is_empty() && !n.contains('\0') && n.trim() == n, "{n:?}");
    }
}
