//! A certificate's SHA-256 fingerprint: what `pado agent --tls` prints at start and
//! a coordinator pins with `--agent-fingerprint`, as SSH pins a host key. It is the
//! digest of the certificate's DER bytes, the same figure
//! `openssl x509 -noout -fingerprint -sha256 -in cert.pem` prints, so either can be
//! checked against the other.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The SHA-256 digest of a certificate's DER bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

/// Why a fingerprint given on the command line was not understood.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{given}` is not a SHA-256 fingerprint: {why}; give it as `pado agent --tls` prints it, `sha256:AB:CD:...` (32 bytes in hex)")]
pub struct FingerprintError {
    /// What was given (cut to 120 characters, so a pasted file stays readable).
    pub given: String,
    /// What is wrong with it, in a sentence.
    pub why: String,
}

impl Fingerprint {
    /// The fingerprint of the certificate whose DER bytes are `der`.
    pub fn of(der: &[u8]) -> Fingerprint {
        Fingerprint(Sha256::digest(der).into())
    }

    /// Whether `other` is this fingerprint, compared in time that does not depend on
    /// where they differ: what a server presented is checked against the pin
    /// without telling an observer how close it came.
    pub fn matches(&self, other: &Fingerprint) -> bool {
        self.0.ct_eq(&other.0).into()
    }

    /// The digest's bytes.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    /// `sha256:AB:CD:...`, upper-case hex bytes joined by `:` as OpenSSL prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02X}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Fingerprint {
    type Err = FingerprintError;

    /// Reads `sha256:AB:CD:...` (what pado prints), the same without the `sha256:`
    /// label or without the colons (`sha256:abcd...`, either case), and OpenSSL's
    /// `sha256 Fingerprint=AB:CD:...` line. Any other algorithm's label is refused
    /// by name: a SHA-1 fingerprint pasted by mistake must not be half-read.
    fn from_str(s: &str) -> Result<Fingerprint, FingerprintError> {
        let fail = |why: String| FingerprintError {
            given: s.chars().take(120).collect(),
            why,
        };
        let text = s.trim();
        const OPENSSL: &str = " fingerprint=";
        let is_byte = |l: &str| l.len() == 2 && l.bytes().all(|b| b.is_ascii_hexdigit());
        // `AB:CD:...` starts with a byte; anything else before the first `:` (or
        // OpenSSL's ` Fingerprint=`) is the algorithm's name.
        let (label, hex) = match text.to_ascii_lowercase().find(OPENSSL) {
            Some(at) => (Some(&text[..at]), &text[at + OPENSSL.len()..]),
            None => match text.split_once(':') {
                Some((l, rest)) if !is_byte(l) => (Some(l), rest),
                _ => (None, text),
            },
        };
        if let Some(l) = label {
            if !l.eq_ignore_ascii_case("sha256") && !l.eq_ignore_ascii_case("sha-256") {
                return Err(fail(format!(
                    "it is labelled `{}`, and only SHA-256 fingerprints are pinned",
                    l.to_ascii_lowercase()
                )));
            }
        }
        let mut out = [0u8; 32];
        let mut digits = 0usize;
        for (i, c) in hex.chars().enumerate() {
            if c == ':' {
                continue;
            }
            let Some(v) = c.to_digit(16) else {
                return Err(fail(format!(
                    "`{c}` (character {} after the label) is not a hex digit",
                    i + 1
                )));
            };
            if digits < 64 {
                out[digits / 2] |= (v as u8) << if digits.is_multiple_of(2) { 4 } else { 0 };
            }
            digits += 1;
        }
        if digits != 64 {
            return Err(fail(format!(
                "it has {digits} hex digits, and a SHA-256 fingerprint has 64"
            )));
        }
        Ok(Fingerprint(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SHA-256 of the empty input, the FIPS 180-2 test vector everyone quotes:
    /// e3b0c442 98fc1c14 9afbf4c8 996fb924 27ae41e4 649b934c a495991b 7852b855.
    const EMPTY: &str = "sha256:E3:B0:C4:42:98:FC:1C:14:9A:FB:F4:C8:99:6F:B9:24:27:AE:41:E4:64:9B:93:4C:A4:95:99:1B:78:52:B8:55";

    #[test]
    fn the_digest_is_sha256_of_the_der_bytes_printed_as_openssl_does() {
        assert_eq!(Fingerprint::of(b"").to_string(), EMPTY);
        // FIPS 180-2's "abc": ba7816bf 8f01cfea 414140de 5dae2223 b00361a3 96177a9c b410ff61 f20015ad.
        let abc = Fingerprint::of(b"abc");
        assert_eq!(abc.bytes()[..4], [0xba, 0x78, 0x16, 0xbf]);
        assert_eq!(abc.bytes()[28..], [0xf2, 0x00, 0x15, 0xad]);
    }

    #[test]
    fn every_usual_spelling_reads_back_and_only_the_same_digest_matches() {
        let want = Fingerprint::of(b"");
        let bare = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        for s in [
            EMPTY.to_string(),
            EMPTY.to_ascii_lowercase(),
            format!("SHA256:{bare}"),
            format!("sha-256:{bare}"),
            bare.to_string(),
            EMPTY.trim_start_matches("sha256:").to_string(),
            // OpenSSL 3's `x509 -noout -fingerprint -sha256` line, and 1.1's.
            format!("sha256 Fingerprint={}", EMPTY.trim_start_matches("sha256:")),
            format!(
                "SHA256 Fingerprint={}\n",
                EMPTY.trim_start_matches("sha256:")
            ),
        ] {
            let got: Fingerprint = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
            assert!(got.matches(&want), "{s}");
        }
        let other = Fingerprint::of(b"abc");
        assert!(!other.matches(&want));
        // One bit apart at the first and at the last byte.
        for i in [0, 31] {
            let mut b = *want.bytes();
            b[i] ^= 1;
            assert!(!Fingerprint(b).matches(&want), "byte {i}");
        }
    }

    #[test]
    fn a_malformed_fingerprint_is_a_clear_error() {
        let cases = [
            ("sha256:E3:B0", "4 hex digits"),
            ("", "0 hex digits"),
            (&format!("{EMPTY}:00")[..], "66 hex digits"),
            (&EMPTY.replace("E3", "G3")[..], "`G`"),
            (
                "sha1:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD",
                "`sha1`",
            ),
            ("md5:00", "`md5`"),
            ("SHA1 Fingerprint=AA:BB", "`sha1`"),
            ("파도", "`파`"),
        ];
        for (given, says) in cases {
            let e = given.parse::<Fingerprint>().unwrap_err();
            let text = e.to_string();
            assert!(text.contains(says), "{given}: {text}");
            assert!(text.contains("sha256:AB:CD:..."), "{given}: {text}");
        }
    }
}
