//! Compressed answers: an API response is sent gzip, br or zstd encoded when the
//! request's `Accept-Encoding` asks for one, as a real service behind a compressing
//! proxy does, so `defaults.compression` (pado's `Accept-Encoding`) has something to
//! decode and count. The management endpoints (`/metrics`, `/health`, `/admin/*`)
//! are never compressed: scrapers read them as plain text.

use std::io::Write as _;
use std::sync::Arc;

use super::management::is_management;
use super::response::Response;

/// A coding the demo target sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coding {
    /// Brotli (`br`).
    Br,
    /// Zstandard (`zstd`).
    Zstd,
    /// gzip.
    Gzip,
}

/// The codings in the server's order of preference, for a tie in `q`: the
/// smallest answers first, as CDNs choose.
const PREFERENCE: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

impl Coding {
    /// Its name in `Accept-Encoding` and `Content-Encoding`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }
}

/// The coding to answer a request with `Accept-Encoding: accept` (RFC 9110
/// §12.5.3): the acceptable coding (`q` > 0) with the highest `q`, ties going to
/// [`PREFERENCE`]; `*` stands for every coding not named; `None` when nothing the
/// target sends is acceptable (no header, `identity`, `deflate` only, `q=0`).
pub(crate) fn negotiate(accept: Option<&str>) -> Option<Coding> {
    let accept = accept?;
    let mut named: Vec<(&str, f32)> = Vec::new();
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim();
        if name.is_empty() {
            continue;
        }
        let mut q = 1.0f32;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                if k.trim().eq_ignore_ascii_case("q") {
                    q = v.trim().parse().unwrap_or(0.0);
                }
            }
        }
        named.push((name, q));
    }
    let q_of = |c: Coding| -> Option<f32> {
        named
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(c.name()))
            .or_else(|| named.iter().find(|(n, _)| *n == "*"))
            .map(|(_, q)| *q)
    };
    let mut best: Option<(Coding, f32)> = None;
    for c in PREFERENCE {
        if let Some(q) = q_of(c).filter(|q| *q > 0.0) {
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((c, q));
            }
        }
    }
    best.map(|(c, _)| c)
}

/// `body` encoded in `coding`, at a fast level (the demo's CPU goes to its own
/// work, not to compression).
pub(crate) fn encode(coding: Coding, body: &[u8]) -> Vec<u8> {
    match coding {
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = e.write_all(body);
            e.finish().unwrap_or_default()
        }
        Coding::Br => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 4096, 4, 22);
                let _ = w.write_all(body);
            }
            out
        }
        Coding::Zstd => zstd::bulk::compress(body, 1).unwrap_or_default(),
    }
}

/// Encodes `resp` for a request to `path` with `Accept-Encoding: accept`: API
/// answers with a body, when a coding is acceptable, get it with
/// `Content-Encoding` and `Vary: Accept-Encoding`; anything else is unchanged.
pub(crate) fn apply(mut resp: Response, path: &str, accept: Option<&str>) -> Response {
    if resp.body.is_empty() || is_management(path) {
        return resp;
    }
    let Some(coding) = negotiate(accept) else {
        return resp;
    };
    resp.body = Arc::from(encode(coding, &resp.body));
    resp.with_header("content-encoding", coding.name().to_string())
        .with_header("vary", "accept-encoding".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn the_best_acceptable_coding_is_chosen() {
        assert_eq!(negotiate(Some("gzip")), Some(Coding::Gzip));
        assert_eq!(
            negotiate(Some("GZIP")),
            Some(Coding::Gzip),
            "names ignore case"
        );
        assert_eq!(negotiate(Some("zstd")), Some(Coding::Zstd));
        assert_eq!(
            negotiate(Some("gzip, br")),
            Some(Coding::Br),
            "a tie: br first"
        );
        assert_eq!(negotiate(Some("gzip, zstd")), Some(Coding::Zstd));
        assert_eq!(
            negotiate(Some("gzip;q=0.5, zstd;q=0.8")),
            Some(Coding::Zstd),
            "the higher q wins"
        );
        assert_eq!(negotiate(Some("br;q=0.1, gzip")), Some(Coding::Gzip));
        assert_eq!(
            negotiate(Some("br;q=0, gzip")),
            Some(Coding::Gzip),
            "q=0 refuses"
        );
        assert_eq!(negotiate(Some("*")), Some(Coding::Br));
        assert_eq!(negotiate(Some("br;q=0, *")), Some(Coding::Zstd));
        assert_eq!(
            negotiate(Some("deflate, gzip, br, zstd")),
            Some(Coding::Br),
            "curl --compressed"
        );
    }

    #[test]
    fn nothing_acceptable_means_no_coding() {
        assert_eq!(negotiate(None), None, "no header: identity");
        assert_eq!(negotiate(Some("")), None);
        assert_eq!(negotiate(Some("identity")), None);
        assert_eq!(negotiate(Some("deflate")), None, "not a coding it sends");
        assert_eq!(negotiate(Some("gzip;q=0")), None);
        assert_eq!(negotiate(Some("*;q=0")), None);
        assert_eq!(negotiate(Some("gzip;q=0, *")), Some(Coding::Br));
    }

    /// Each coding decodes, with its own reference decoder, to the Hangul JSON it
    /// encoded.
    #[test]
    fn encoded_bodies_decode_to_the_original() {
        let body = "{\"items\":[{\"title\":\"안녕하세요 검색 엔진\"}]}".repeat(50);
        let body = body.as_bytes();
        let gz = encode(Coding::Gzip, body);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body);
        let br = encode(Coding::Br, body);
        let mut out = Vec::new();
        brotli_decompressor::Decompressor::new(&br[..], 4096)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body);
        let zs = encode(Coding::Zstd, body);
        assert_eq!(zstd::bulk::decompress(&zs, 1 << 20).unwrap(), body);
        for e in [&gz, &br, &zs] {
            assert!(e.len() < body.len() / 4, "a repetitive body compresses");
        }
    }

    #[test]
    fn only_api_answers_are_encoded() {
        let json = || Response::bytes(200, super::super::response::JSON, b"{\"a\":1}".to_vec());
        let r = apply(json(), "/api/posts", Some("gzip"));
        assert!(r
            .headers
            .iter()
            .any(|(n, v)| *n == "content-encoding" && v == "gzip"));
        assert_ne!(&r.body[..], b"{\"a\":1}");
        let r = apply(json(), "/metrics", Some("gzip"));
        assert_eq!(&r.body[..], b"{\"a\":1}", "scrapers get plain text");
        assert!(r.headers.is_empty());
        let r = apply(json(), "/api/posts", None);
        assert_eq!(&r.body[..], b"{\"a\":1}");
        let r = apply(Response::empty(204), "/api/posts/1", Some("gzip"));
        assert!(r.body.is_empty() && r.headers.is_empty(), "204 has no body");
    }
}
