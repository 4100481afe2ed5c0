//! `k6/crypto`'s digests and HMACs on RustCrypto: the natives under
//! `js/crypto.js`. A script hashes a password or signs a request the way its
//! server expects, so the bytes must be exactly k6's: UTF-8 for strings, the raw
//! bytes of an `ArrayBuffer`, and k6's output encodings.

use base64::Engine as _;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, TypedArray, Value};
use sha2::Digest;

/// What a `k6/crypto` call can get wrong, in the script author's words.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum CryptoError {
    /// An algorithm k6 does not give.
    #[error("invalid algorithm: {0} (k6/crypto gives md4, md5, sha1, sha256, sha384, sha512, sha512_224, sha512_256, ripemd160)")]
    Algorithm(String),
    /// An output encoding k6 does not give.
    #[error("invalid output encoding: {0} (k6/crypto gives hex, base64, base64url, base64rawurl, binary)")]
    Encoding(String),
    /// `randomBytes` with a size that is not a non-negative integer.
    #[error("randomBytes: invalid size {0}: a whole number of bytes, 0 or more")]
    Size(f64),
    /// The operating system gave no random bytes.
    #[error("randomBytes: the system's random source failed: {0}")]
    Random(String),
}

/// The digest of `parts` (concatenated) with `alg`, keyed (HMAC) when `key` is
/// given.
pub(crate) fn digest(
    alg: &str,
    key: Option<&[u8]>,
    parts: &[&[u8]],
) -> Result<Vec<u8>, CryptoError> {
    fn plain<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
        let mut h = D::new();
        for p in parts {
            h.update(p);
        }
        h.finalize().to_vec()
    }
    fn keyed<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        // HMAC takes a key of any length (RFC 2104: longer ones are hashed).
        let mut m = <M as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes().to_vec()
    }
    macro_rules! pick {
        ($($name:literal => $d:ty),* $(,)?) => {
            match (alg, key) {
                $(($name, None) => Ok(plain::<$d>(parts)),
                  ($name, Some(k)) => Ok(keyed::<Hmac<$d>>(k, parts)),)*
                _ => Err(CryptoError::Algorithm(alg.to_string())),
            }
        };
    }
    pick! {
        "md4" => md4::Md4,
        "md5" => md5::Md5,
        "sha1" => sha1::Sha1,
        "sha256" => sha2::Sha256,
        "sha384" => sha2::Sha384,
        "sha512" => sha2::Sha512,
        "sha512_224" => sha2::Sha512_224,
        "sha512_256" => sha2::Sha512_256,
        "ripemd160" => ripemd::Ripemd160,
    }
}

/// A digest's bytes in one of k6's output encodings (`binary` is handed to JS
/// as an `ArrayBuffer` by the caller, so it is not one here).
pub(crate) fn encode(bytes: &[u8], enc: &str) -> Result<String, CryptoError> {
    use base64::engine::general_purpose as gp;
    Ok(match enc {
        "hex" => bytes
            .iter()
            .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                s.push(HEX[usize::from(b >> 4)] as char);
                s.push(HEX[usize::from(b & 15)] as char);
                s
            }),
        "base64" => gp::STANDARD.encode(bytes),
        "base64url" => gp::URL_SAFE.encode(bytes),
        "base64rawurl" => gp::URL_SAFE_NO_PAD.encode(bytes),
        other => return Err(CryptoError::Encoding(other.to_string())),
    })
}

/// `n` bytes from the operating system's random source.
pub(crate) fn random_bytes(n: f64) -> Result<Vec<u8>, CryptoError> {
    if !(n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX)) {
        return Err(CryptoError::Size(n));
    }
    let mut b = vec![0u8; n as usize];
    getrandom::fill(&mut b).map_err(|e| CryptoError::Random(e.to_string()))?;
    Ok(b)
}

/// The bytes of a script's value as k6 reads an input: a string as UTF-8, an
/// `ArrayBuffer` or a typed array as its bytes, anything else as its string.
pub(crate) fn bytes_of<'js>(ctx: &Ctx<'js>, v: &Value<'js>) -> rquickjs::Result<Vec<u8>> {
    if let Some(s) = v.as_string() {
        return Ok(s.to_string()?.into_bytes());
    }
    if let Some(o) = v.as_object() {
        if let Some(ab) = ArrayBuffer::from_object(o.clone()) {
            return Ok(ab.as_bytes().unwrap_or_default().to_vec());
        }
        if let Ok(ta) = TypedArray::<u8>::from_object(o.clone()) {
            return Ok(ta.as_bytes().unwrap_or_default().to_vec());
        }
    }
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    let s: rquickjs::convert::Coerced<String> = rquickjs::FromJs::from_js(ctx, v.clone())?;
    Ok(s.0.into_bytes())
}

/// Install `__pado.cryptoDigest(alg, key, parts, enc)` and
/// `__pado.randomBytes(n)` on the natives object `p`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, p: &Object<'js>) -> rquickjs::Result<()> {
    p.set(
        "cryptoDigest",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             alg: String,
             key: Value<'js>,
             parts: Vec<Value<'js>>,
             enc: String|
             -> rquickjs::Result<Value<'js>> {
                let throw = |e: CryptoError| Exception::throw_message(&ctx, &e.to_string());
                let key = if key.is_undefined() || key.is_null() {
                    None
                } else {
                    Some(bytes_of(&ctx, &key)?)
                };
                let parts = parts
                    .iter()
                    .map(|v| bytes_of(&ctx, v))
                    .collect::<rquickjs::Result<Vec<_>>>()?;
                let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                let sum = digest(&alg, key.as_deref(), &refs).map_err(throw)?;
                if enc == "binary" {
                    return Ok(crate::lazy_builtins::array_buffer(&ctx, sum)?.into_value());
                }
                let text = encode(&sum, &enc).map_err(throw)?;
                Ok(rquickjs::String::from_str(ctx.clone(), &text)?.into_value())
            },
        )?,
    )?;
    p.set(
        "randomBytes",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, n: f64| -> rquickjs::Result<ArrayBuffer<'js>> {
                let b =
                    random_bytes(n).map_err(|e| Exception::throw_message(&ctx, &e.to_string()))?;
                crate::lazy_builtins::array_buffer(&ctx, b)
            },
        )?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(alg: &str, key: Option<&[u8]>, data: &[u8]) -> String {
        encode(&digest(alg, key, &[data]).unwrap(), "hex").unwrap()
    }

    #[test]
    fn digests_match_the_published_vectors() {
        // RFC 1320 (MD4), RFC 1321 (MD5), FIPS 180 examples ("abc"), RIPEMD-160's
        // authors' page.
        assert_eq!(hex("md4", None, b"abc"), "a448017aaf21d8525fc10ae87aa6729d");
        assert_eq!(hex("md5", None, b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            hex("sha1", None, b"abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex("sha256", None, b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex("sha384", None, b"abc"),
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
        );
        assert_eq!(
            hex("sha512", None, b"abc"),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
        assert_eq!(
            hex("sha512_224", None, b"abc"),
            "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa"
        );
        assert_eq!(
            hex("sha512_256", None, b"abc"),
            "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23"
        );
        assert_eq!(
            hex("ripemd160", None, b"abc"),
            "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc"
        );
    }

    #[test]
    fn hmac_matches_rfc_4231_and_rfc_2202() {
        // RFC 4231 test case 2: key "Jefe".
        let data = b"what do ya want for nothing?";
        assert_eq!(
            hex("sha256", Some(b"Jefe"), data),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex("sha512", Some(b"Jefe"), data),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        );
        // RFC 2202: HMAC-MD5 and HMAC-SHA1, same key and data.
        assert_eq!(
            hex("md5", Some(b"Jefe"), data),
            "750c783e6ab0b503eaa86e310a5db738"
        );
        assert_eq!(
            hex("sha1", Some(b"Jefe"), data),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        // A key longer than the block is hashed first (RFC 4231 case 6).
        let long = [0xaau8; 131];
        assert_eq!(
            hex(
                "sha256",
                Some(&long),
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn parts_hash_as_their_concatenation_and_encodings_are_k6s() {
        let whole = digest("sha256", None, &["파도 abc".as_bytes()]).unwrap();
        let split = digest("sha256", None, &["파".as_bytes(), "도 a".as_bytes(), b"bc"]).unwrap();
        assert_eq!(whole, split);
        let b = [0xfbu8, 0xff, 0xfe, 0x01];
        assert_eq!(encode(&b, "hex").unwrap(), "fbfffe01");
        assert_eq!(encode(&b, "base64").unwrap(), "+//+AQ==");
        assert_eq!(encode(&b, "base64url").unwrap(), "-__-AQ==");
        assert_eq!(encode(&b, "base64rawurl").unwrap(), "-__-AQ");
    }

    #[test]
    fn unknown_algorithms_encodings_and_sizes_are_refused_in_words() {
        assert_eq!(
            digest("sha3", None, &[]),
            Err(CryptoError::Algorithm("sha3".into()))
        );
        assert!(encode(b"x", "base32")
            .unwrap_err()
            .to_string()
            .contains("base32"));
        assert!(random_bytes(-1.0).is_err());
        assert!(random_bytes(1.5).is_err());
        let a = random_bytes(32.0).unwrap();
        let b = random_bytes(32.0).unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
