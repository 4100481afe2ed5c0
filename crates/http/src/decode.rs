//! Decoding a response's `Content-Encoding` (gzip, br, zstd, deflate) as its body
//! streams through the connection's buffer: decoded bytes are counted, and kept for
//! checks and extraction up to the body cap, never held whole.
//!
//! A VU owns one [`BodyDecoder`]; only an encoded response touches it (an identity
//! response costs one comparison per header while the head is parsed). The decoders
//! themselves come from flate2, brotli-decompressor and zstd and are made per encoded
//! response (none of their writer forms can be reset and handed a new output); the
//! buffer the decoded bytes are kept in is the VU's, reused. Decoding stops at the
//! decoder's cap ([`decoded_cap`]: four times the body cap, at least
//! [`MIN_DECODED_CAP`]), so a small body that inflates without end (a decompression
//! bomb) costs a few milliseconds of CPU and no memory beyond the body cap, even when
//! no check reads the body and it is only counted.

use std::io::{self, Write};

/// The least a response may decode to before it fails as `decode`, whatever the
/// body cap: far above what an API answers (a JSON page of 16 MiB is rare), and
/// small enough that a decompression bomb costs milliseconds of CPU per response,
/// not the half second a 256 MiB cap let a brotli bomb take.
pub const MIN_DECODED_CAP: u64 = 16 * 1024 * 1024;

/// Most bytes one response may decode to when checks see up to `max_body` bytes:
/// four times `max_body`, at least [`MIN_DECODED_CAP`]. A body that is only counted
/// still costs CPU to decode, so the cap follows what the step can use rather
/// than a fixed ceiling; four times leaves room for a body a little past `max_body`
/// (cut for the checks, counted whole) without failing it.
pub fn decoded_cap(max_body: usize) -> u64 {
    (max_body as u64).saturating_mul(4).max(MIN_DECODED_CAP)
}

/// A content coding pado decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// gzip.
    Gzip,
    /// zlib-wrapped deflate (HTTP's `deflate`).
    Deflate,
    /// Brotli.
    Br,
    /// Zstandard.
    Zstd,
}

impl Coding {
    /// The coding of a `Content-Encoding` value, `None` for identity or one pado does
    /// not decode (several codings in a row among them: rare, and left as sent).
    #[inline]
    pub fn of_header(value: &[u8]) -> Option<Coding> {
        let v = value.trim_ascii();
        if v.eq_ignore_ascii_case(b"gzip") || v.eq_ignore_ascii_case(b"x-gzip") {
            Some(Coding::Gzip)
        } else if v.eq_ignore_ascii_case(b"br") {
            Some(Coding::Br)
        } else if v.eq_ignore_ascii_case(b"zstd") {
            Some(Coding::Zstd)
        } else if v.eq_ignore_ascii_case(b"deflate") {
            Some(Coding::Deflate)
        } else {
            None
        }
    }
}

/// Where decoded bytes go: counted, capped, the first `keep_cap` of them kept.
#[derive(Debug, Default)]
struct Sink {
    decoded: u64,
    max_decoded: u64,
    keep: Vec<u8>,
    keep_cap: usize,
    over: bool,
}

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.decoded += b.len() as u64;
        if self.decoded > self.max_decoded {
            self.over = true;
            return Err(io::Error::other("decoded-size cap"));
        }
        let room = self.keep_cap.saturating_sub(self.keep.len());
        self.keep.extend_from_slice(&b[..b.len().min(room)]);
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Active {
    Gzip(flate2::write::GzDecoder<Sink>),
    Deflate(flate2::write::ZlibDecoder<Sink>),
    Br(Box<brotli_decompressor::DecompressorWriter<Sink>>),
    Zstd(zstd::stream::write::Decoder<'static, Sink>),
}

/// Why an encoded body could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeFault {
    /// Not a valid stream of its coding, or cut short.
    Corrupt,
    /// It decodes to more than the decoder's cap ([`decoded_cap`]).
    TooLarge,
}

impl DecodeFault {
    /// In words, for the failure sample.
    pub fn reason(self) -> &'static str {
        match self {
            DecodeFault::Corrupt => {
                "the body is not valid for its Content-Encoding (corrupt or cut short)"
            }
            DecodeFault::TooLarge => {
                "decoded body larger than 16 MiB or 4 × defaults.max_body, whichever is more (a decompression bomb?)"
            }
        }
    }
}

/// A VU's decoder of encoded responses (see the module's documentation).
pub struct BodyDecoder {
    active: Option<Active>,
    /// Most bytes one body may decode to ([`decoded_cap`]).
    max_decoded: u64,
    failed: Option<DecodeFault>,
    encoded: u64,
    /// The buffer decoded bytes are kept in while no response is decoded.
    spare: Vec<u8>,
}

impl std::fmt::Debug for BodyDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyDecoder")
    }
}

impl Default for BodyDecoder {
    /// A decoder capped at [`MIN_DECODED_CAP`].
    fn default() -> BodyDecoder {
        BodyDecoder::for_max_body(0)
    }
}

/// What decoding one body gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The body's bytes as received (after chunked framing).
    pub encoded: u64,
    /// Its bytes decoded.
    pub decoded: u64,
}

impl BodyDecoder {
    /// A decoder for a run whose checks see up to `max_body` bytes of a body: it
    /// stops decoding past [`decoded_cap`]`(max_body)` bytes.
    pub fn for_max_body(max_body: usize) -> BodyDecoder {
        BodyDecoder {
            active: None,
            max_decoded: decoded_cap(max_body),
            failed: None,
            encoded: 0,
            spare: Vec::new(),
        }
    }

    /// Most bytes one body may decode to before it fails as `decode`.
    pub fn max_decoded(&self) -> u64 {
        self.max_decoded
    }

    /// Start decoding a body of `coding`, keeping its first `keep_cap` decoded bytes.
    pub fn begin(&mut self, coding: Coding, keep_cap: usize) {
        let mut keep = std::mem::take(&mut self.spare);
        keep.clear();
        let sink = Sink {
            keep,
            keep_cap,
            max_decoded: self.max_decoded,
            ..Default::default()
        };
        self.failed = None;
        self.encoded = 0;
        self.active = match coding {
            Coding::Gzip => Some(Active::Gzip(flate2::write::GzDecoder::new(sink))),
            Coding::Deflate => Some(Active::Deflate(flate2::write::ZlibDecoder::new(sink))),
            Coding::Br => Some(Active::Br(Box::new(
                brotli_decompressor::DecompressorWriter::new(sink, 16 * 1024),
            ))),
            Coding::Zstd => match zstd::stream::write::Decoder::new(sink) {
                Ok(d) => Some(Active::Zstd(d)),
                Err(_) => {
                    self.failed = Some(DecodeFault::Corrupt);
                    None
                }
            },
        };
    }

    /// Feed the next piece of the body. A failure is remembered and the rest of the
    /// body only counted, so the connection's framing is read to its end.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.encoded += bytes.len() as u64;
        let Some(a) = self.active.as_mut() else {
            return;
        };
        let r = match a {
            Active::Gzip(d) => d.write_all(bytes),
            Active::Deflate(d) => d.write_all(bytes),
            Active::Br(d) => d.write_all(bytes),
            Active::Zstd(d) => d.write_all(bytes),
        };
        if r.is_err() {
            self.fail(false);
        }
    }

    fn fail(&mut self, _at_end: bool) {
        let over = match self.active.take() {
            Some(Active::Gzip(d)) => d.get_ref().over,
            Some(Active::Deflate(d)) => d.get_ref().over,
            Some(Active::Br(d)) => d.get_ref().over,
            Some(Active::Zstd(d)) => d.get_ref().over,
            None => false,
        };
        self.failed = Some(if over {
            DecodeFault::TooLarge
        } else {
            DecodeFault::Corrupt
        });
    }

    /// The body ended: the sizes, with the decoded bytes kept swapped into `kept`
    /// (the VU's body buffer, whose old allocation the decoder keeps for the next
    /// response), or why it could not be decoded.
    pub fn end(&mut self, kept: Option<&mut Vec<u8>>) -> Result<Decoded, DecodeFault> {
        if let Some(f) = self.failed.take() {
            return Err(f);
        }
        if self.encoded == 0 {
            // An empty body labelled encoded (some servers do): nothing to decode.
            self.active = None;
            return Ok(Decoded {
                encoded: 0,
                decoded: 0,
            });
        }
        let finished: io::Result<Sink> = match self.active.take() {
            Some(Active::Gzip(d)) => d.finish(),
            Some(Active::Deflate(d)) => d.finish(),
            Some(Active::Br(mut d)) => match d.close() {
                Ok(()) => (*d)
                    .into_inner()
                    .map_err(|_| io::Error::other("incomplete")),
                Err(e) => Err(e),
            },
            Some(Active::Zstd(d)) => d.finish(),
            None => return Err(DecodeFault::Corrupt),
        };
        let mut sink = finished.map_err(|_| DecodeFault::Corrupt)?;
        if sink.over {
            return Err(DecodeFault::TooLarge);
        }
        if let Some(out) = kept {
            std::mem::swap(out, &mut sink.keep);
        }
        self.spare = sink.keep;
        Ok(Decoded {
            encoded: self.encoded,
            decoded: sink.decoded,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(c: Coding, data: &[u8]) -> Vec<u8> {
        match c {
            Coding::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Coding::Deflate => {
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Coding::Zstd => zstd::encode_all(data, 3).unwrap(),
            Coding::Br => {
                let mut out = Vec::new();
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(data).unwrap();
                drop(e);
                out
            }
        }
    }

    #[test]
    fn every_coding_decodes_in_pieces_counted_and_kept_up_to_the_cap() {
        let text: Vec<u8> = b"pado decodes what the server compressed. ".repeat(200);
        let mut d = BodyDecoder::default();
        for c in [Coding::Gzip, Coding::Deflate, Coding::Zstd, Coding::Br] {
            let enc = encode(c, &text);
            d.begin(c, 100);
            for piece in enc.chunks(7) {
                d.feed(piece);
            }
            let mut kept = Vec::new();
            let got = d.end(Some(&mut kept)).unwrap();
            assert_eq!(
                got,
                Decoded {
                    encoded: enc.len() as u64,
                    decoded: text.len() as u64
                },
                "{c:?}"
            );
            assert_eq!(kept, &text[..100], "{c:?}");
        }
    }

    #[test]
    fn corrupt_cut_and_bomb_bodies_are_faults() {
        let mut d = BodyDecoder::default();
        d.begin(Coding::Gzip, 10);
        d.feed(b"this is not gzip at all");
        assert_eq!(d.end(None), Err(DecodeFault::Corrupt));
        let enc = encode(Coding::Zstd, &[7u8; 10_000]);
        d.begin(Coding::Zstd, 10);
        d.feed(&enc[..enc.len() - 3]);
        assert_eq!(d.end(None), Err(DecodeFault::Corrupt));
        // 300 MiB of zeros compress to a few hundred KiB.
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..300 {
            e.write_all(&zeros).unwrap();
        }
        let bomb = e.finish().unwrap();
        assert!(bomb.len() < 1 << 20);
        d.begin(Coding::Zstd, 10);
        for piece in bomb.chunks(16 * 1024) {
            d.feed(piece);
        }
        assert_eq!(d.end(None), Err(DecodeFault::TooLarge));
        // Still usable afterwards.
        d.begin(Coding::Gzip, 10);
        d.feed(&encode(Coding::Gzip, b"ok"));
        assert_eq!(d.end(None).unwrap().decoded, 2);
    }

    /// `mib` MiB of zeros as brotli, compressed a MiB at a time (the zeros are never
    /// held whole).
    fn brotli_zeros(mib: usize) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut e = brotli::CompressorWriter::new(&mut out, 64 * 1024, 1, 22);
            let zeros = vec![0u8; 1 << 20];
            for _ in 0..mib {
                e.write_all(&zeros).unwrap();
            }
        }
        out
    }

    #[test]
    fn a_brotli_bomb_stops_at_the_decoded_cap_not_at_its_end() {
        // 64 MiB of zeros: a few KiB on the wire, four times the default cap.
        let bomb = brotli_zeros(64);
        assert!(bomb.len() < 256 * 1024, "{}", bomb.len());
        let mut d = BodyDecoder::for_max_body(1024);
        assert_eq!(d.max_decoded(), MIN_DECODED_CAP);
        d.begin(Coding::Br, 1024);
        let pieces: Vec<&[u8]> = bomb.chunks(bomb.len() / 64 + 1).collect();
        let mut fed = 0;
        for piece in &pieces {
            if d.failed.is_some() {
                break;
            }
            d.feed(piece);
            fed += 1;
        }
        // Decoding stopped near 16 MiB: about a quarter of the bomb, not all of it.
        assert!(fed <= pieces.len() / 2, "{fed} of {}", pieces.len());
        assert_eq!(d.end(None), Err(DecodeFault::TooLarge));
        assert!(DecodeFault::TooLarge.reason().contains("16 MiB"));
        // The decoder serves the next response.
        d.begin(Coding::Br, 10);
        d.feed(&encode(Coding::Br, b"ok"));
        assert_eq!(d.end(None).unwrap().decoded, 2);
    }

    #[test]
    fn the_decoded_cap_follows_max_body_and_spares_bodies_under_it() {
        assert_eq!(decoded_cap(0), MIN_DECODED_CAP);
        assert_eq!(decoded_cap(8 << 20), 32 << 20);
        // 20 MiB fails under the default cap, decodes whole when max_body is 8 MiB.
        let body = brotli_zeros(20);
        let mut small = BodyDecoder::default();
        small.begin(Coding::Br, 0);
        small.feed(&body);
        assert_eq!(small.end(None), Err(DecodeFault::TooLarge));
        let mut big = BodyDecoder::for_max_body(8 << 20);
        big.begin(Coding::Br, 0);
        big.feed(&body);
        assert_eq!(big.end(None).unwrap().decoded, 20 << 20);
    }

    #[test]
    fn header_values_name_codings() {
        assert_eq!(Coding::of_header(b" GZIP "), Some(Coding::Gzip));
        assert_eq!(Coding::of_header(b"br"), Some(Coding::Br));
        assert_eq!(Coding::of_header(b"identity"), None);
        assert_eq!(Coding::of_header(b"gzip, br"), None);
    }
}
