//! `k6/net/grpc`'s `connect(addr, { tls: { cert, key, password } })`: a client
//! key encrypted with a password, decrypted in memory before the TLS client
//! reads it. Two forms are read:
//!
//! - PKCS#8 `-----BEGIN ENCRYPTED PRIVATE KEY-----` (PBES2: PBKDF2 or scrypt with
//!   AES-CBC, or 3DES), what `openssl pkcs8 -topk8 -v2 aes-256-cbc` and OpenSSL 3's
//!   `genpkey -aes256` write. k6 refuses this form; pado reads it, since it is
//!   the one today's tools make.
//! - The legacy OpenSSL form (`Proc-Type: 4,ENCRYPTED` and `DEK-Info` headers,
//!   `openssl rsa -aes256`), the only one k6 reads (Go's `x509.DecryptPEMBlock`):
//!   the key derived from the password and the IV's first 8 bytes with MD5
//!   (OpenSSL's `EVP_BytesToKey`, one round), DES, 3DES or AES-128/192/256 in CBC
//!   mode.
//!
//! The password never appears in an error: a wrong one is said as such, naming
//! the `tls.password` field.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, KeyIvInit};
use md5::{Digest, Md5};
use pkcs8::der::{Decode, Encode};

/// Why a client key could not be read with its password.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// The key is not PEM text.
    #[error("tls.key is not a PEM formatted key")]
    NotPem,
    /// The password does not decrypt the key (or the key is damaged).
    #[error("tls.password does not decrypt tls.key (a wrong password, or a damaged key)")]
    WrongPassword,
    /// An encrypted key given without a password.
    #[error("tls.key is encrypted: give its password as tls.password")]
    NoPassword,
    /// A cipher or scheme pado does not read.
    #[error("tls.key is encrypted with {0}, which pado cannot decrypt (re-encrypt it: `openssl pkcs8 -topk8 -v2 aes-256-cbc`)")]
    Unsupported(String),
}

/// One PEM block: its label, its headers (`Name: value`) and its bytes.
struct Block {
    label: String,
    headers: Vec<(String, String)>,
    der: Vec<u8>,
}

/// The first PEM block of `text`.
fn first_block(text: &str) -> Option<Block> {
    let mut lines = text.lines().map(str::trim);
    let label = lines.find_map(|l| {
        l.strip_prefix("-----BEGIN ")
            .and_then(|r| r.strip_suffix("-----"))
    })?;
    let end = format!("-----END {label}-----");
    let mut headers = Vec::new();
    let mut body = String::new();
    for l in lines.by_ref() {
        if l == end {
            let der = STANDARD.decode(body.as_bytes()).ok()?;
            return Some(Block {
                label: label.to_string(),
                headers,
                der,
            });
        }
        match l.split_once(':') {
            Some((k, v)) if body.is_empty() => headers.push((k.trim().into(), v.trim().into())),
            _ => body.push_str(l),
        }
    }
    None
}

/// `key_pem` readable by the TLS client: decrypted with `password` when it is
/// encrypted, as it was otherwise (an empty password and a plain key: the key).
pub(crate) fn decrypt(key_pem: &str, password: &str) -> Result<String, KeyError> {
    let block = first_block(key_pem).ok_or(KeyError::NotPem)?;
    let legacy = block
        .headers
        .iter()
        .any(|(k, v)| k == "Proc-Type" && v.contains("ENCRYPTED"));
    if block.label == "ENCRYPTED PRIVATE KEY" {
        if password.is_empty() {
            return Err(KeyError::NoPassword);
        }
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(block.der.as_slice())
            .map_err(|_| KeyError::NotPem)?;
        let plain = info.decrypt(password.as_bytes()).map_err(|e| match e {
            pkcs8::Error::EncryptedPrivateKey(pkcs8::pkcs5::Error::UnsupportedAlgorithm {
                oid,
            }) => KeyError::Unsupported(format!("the scheme {oid}")),
            _ => KeyError::WrongPassword,
        })?;
        // A wrong password may still unpad cleanly (1 in 256): the result must be
        // a private key.
        pkcs8::PrivateKeyInfo::try_from(plain.as_bytes()).map_err(|_| KeyError::WrongPassword)?;
        let pem = plain
            .to_pem("PRIVATE KEY", pkcs8::LineEnding::LF)
            .map_err(|_| KeyError::WrongPassword)?;
        return Ok(pem.to_string());
    }
    if !legacy {
        // A plain key; a password given with it is not needed (as k6, which
        // fails on it, pado says nothing: the key is usable).
        return Ok(key_pem.to_string());
    }
    if password.is_empty() {
        return Err(KeyError::NoPassword);
    }
    let dek = block
        .headers
        .iter()
        .find(|(k, _)| k == "DEK-Info")
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| KeyError::Unsupported("no DEK-Info header".into()))?;
    let (cipher, iv_hex) = dek
        .split_once(',')
        .ok_or_else(|| KeyError::Unsupported(format!("DEK-Info {dek:?}")))?;
    let iv = hex(iv_hex.trim()).ok_or(KeyError::NotPem)?;
    let plain = legacy_decrypt(cipher.trim(), password.as_bytes(), &iv, &block.der)?;
    // As Go: the result must be one DER value, else the password was wrong.
    match pkcs8::der::asn1::AnyRef::from_der(&plain) {
        Ok(any)
            if any.encoded_len().ok().and_then(|l| usize::try_from(l).ok())
                == Some(plain.len()) => {}
        _ => return Err(KeyError::WrongPassword),
    }
    let body = STANDARD.encode(&plain);
    let mut pem = format!("-----BEGIN {}-----\n", block.label);
    for chunk in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {}-----\n", block.label));
    Ok(pem)
}

/// Bytes of a hex string, or `None`.
fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// OpenSSL's `EVP_BytesToKey` with MD5 and one round: `len` bytes of key from
/// the password and the IV's first 8 bytes (the salt).
fn bytes_to_key(password: &[u8], salt: &[u8], len: usize) -> Vec<u8> {
    let mut key = Vec::with_capacity(len + 16);
    let mut last: Vec<u8> = Vec::new();
    while key.len() < len {
        let mut h = Md5::new();
        h.update(&last);
        h.update(password);
        h.update(salt);
        last = h.finalize().to_vec();
        key.extend_from_slice(&last);
    }
    key.truncate(len);
    key
}

/// A legacy block's bytes decrypted with `cipher` (its DEK-Info name).
fn legacy_decrypt(
    cipher: &str,
    password: &[u8],
    iv: &[u8],
    data: &[u8],
) -> Result<Vec<u8>, KeyError> {
    let (key_len, block_len) = match cipher {
        "DES-CBC" => (8, 8),
        "DES-EDE3-CBC" => (24, 8),
        "AES-128-CBC" => (16, 16),
        "AES-192-CBC" => (24, 16),
        "AES-256-CBC" => (32, 16),
        other => return Err(KeyError::Unsupported(other.to_string())),
    };
    if iv.len() != block_len || iv.len() < 8 {
        return Err(KeyError::NotPem);
    }
    let key = bytes_to_key(password, &iv[..8], key_len);
    fn run<C: BlockDecryptMut + KeyIvInit>(key: &[u8], iv: &[u8], data: &[u8]) -> Option<Vec<u8>> {
        C::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .ok()
    }
    let out = match cipher {
        "DES-CBC" => run::<cbc::Decryptor<des::Des>>(&key, iv, data),
        "DES-EDE3-CBC" => run::<cbc::Decryptor<des::TdesEde3>>(&key, iv, data),
        "AES-128-CBC" => run::<cbc::Decryptor<aes::Aes128>>(&key, iv, data),
        "AES-192-CBC" => run::<cbc::Decryptor<aes::Aes192>>(&key, iv, data),
        _ => run::<cbc::Decryptor<aes::Aes256>>(&key, iv, data),
    };
    out.ok_or(KeyError::WrongPassword)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWORD: &str = "파도-비밀";

    fn fixture(name: &str) -> String {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tls");
        std::fs::read_to_string(dir.join(name)).unwrap()
    }

    fn der_of(pem: &str) -> Vec<u8> {
        first_block(pem).unwrap().der
    }

    #[test]
    fn an_openssl_pkcs8_pbes2_key_decrypts_to_its_plain_twin() {
        let got = decrypt(&fixture("pkcs8-aes256.pem"), PASSWORD).unwrap();
        assert!(got.starts_with("-----BEGIN PRIVATE KEY-----"), "{got}");
        assert_eq!(der_of(&got), der_of(&fixture("plain-pkcs8.pem")));
    }

    #[test]
    fn legacy_openssl_keys_decrypt_as_gos_decrypt_pem_block() {
        for name in ["legacy-aes256.pem", "legacy-des3.pem"] {
            let got = decrypt(&fixture(name), PASSWORD).unwrap();
            assert!(
                got.starts_with("-----BEGIN EC PRIVATE KEY-----"),
                "{name}: {got}"
            );
            assert!(!got.contains("Proc-Type"), "{name}");
            assert_eq!(der_of(&got), der_of(&fixture("plain-sec1.pem")), "{name}");
        }
    }

    #[test]
    fn a_wrong_or_missing_password_is_said_without_the_password() {
        for name in ["pkcs8-aes256.pem", "legacy-aes256.pem", "legacy-des3.pem"] {
            let e = decrypt(&fixture(name), "not-the-password").unwrap_err();
            assert_eq!(e, KeyError::WrongPassword, "{name}");
            let shown = e.to_string();
            assert!(shown.contains("tls.password"), "{shown}");
            assert!(!shown.contains("not-the-password"), "{shown}");
            assert_eq!(
                decrypt(&fixture(name), "").unwrap_err(),
                KeyError::NoPassword
            );
        }
    }

    #[test]
    fn a_plain_key_passes_as_it_is_and_junk_is_not_a_key() {
        let plain = fixture("plain-pkcs8.pem");
        assert_eq!(decrypt(&plain, "").unwrap(), plain);
        assert_eq!(decrypt(&plain, PASSWORD).unwrap(), plain);
        assert_eq!(
            decrypt("not a key", PASSWORD).unwrap_err(),
            KeyError::NotPem
        );
        let odd = fixture("legacy-aes256.pem").replace("AES-256-CBC", "CAMELLIA-256-CBC");
        let e = decrypt(&odd, PASSWORD).unwrap_err();
        assert!(
            matches!(e, KeyError::Unsupported(ref c) if c == "CAMELLIA-256-CBC"),
            "{e:?}"
        );
    }

    #[test]
    fn bytes_to_key_is_openssls_evp_bytes_to_key_with_md5() {
        // OpenSSL's own answer: `openssl enc -aes-256-cbc -md md5 -P -pass
        // pass:password -S 0102030405060708` prints this key and IV (48 bytes
        // of EVP_BytesToKey).
        let k = bytes_to_key(b"password", &[1, 2, 3, 4, 5, 6, 7, 8], 48);
        let want = hex(concat!(
            "E7B0971E52CA5CC8D0539FB3412F6316F7BA2E6EE293D9F3457B99436B51CE02",
            "8D450E2ED75A84A923D4EAC9FE49226B"
        ))
        .unwrap();
        assert_eq!(k, want);
    }
}
