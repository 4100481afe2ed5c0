//! A tiny blocking HTTP/1.1 client and Prometheus text parser for the tests.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One response.
#[derive(Debug)]
pub(crate) struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {} body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A keep-alive connection.
pub(crate) struct Client {
    addr: SocketAddr,
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub(crate) fn new(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Client {
            addr,
            stream,
            buf: Vec::new(),
        }
    }

    pub(crate) fn get(&mut self, path: &str) -> Resp {
        self.request("GET", path, &[], None)
    }

    pub(crate) fn post_json(&mut self, path: &str, token: Option<&str>, body: &str) -> Resp {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        self.request("POST", path, &headers, Some(body.as_bytes()))
    }

    pub(crate) fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        if let Some(b) = body {
            bytes.extend_from_slice(b);
        }
        self.send_raw(&bytes);
        self.read_response(method == "HEAD")
    }

    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Reads one response (Content-Length framing, as the server sends).
    pub(crate) fn read_response(&mut self, head_only: bool) -> Resp {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            self.fill();
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).expect("utf-8 head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (n, v) = l.split_once(':').expect("header line");
                (n.trim().to_string(), v.trim().to_string())
            })
            .collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(0);
        let len = if head_only { 0 } else { len };
        self.buf.drain(..head_end);
        while self.buf.len() < len {
            self.fill();
        }
        let body: Vec<u8> = self.buf.drain(..len).collect();
        Resp {
            status,
            headers,
            body,
        }
    }

    fn fill(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).expect("read");
        assert!(n > 0, "connection closed by the server");
        self.buf.extend_from_slice(&chunk[..n]);
    }

    /// Reads until the server closes; returns what came.
    pub(crate) fn read_to_close(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        let _ = self.stream.read_to_end(&mut out);
        out
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Percent-encodes a query value.
pub(crate) fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One parsed sample.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed exposition: families' types and all samples.
#[derive(Debug, Default)]
pub(crate) struct Exposition {
    pub types: BTreeMap<String, String>,
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// Sum of all samples named `name` whose labels include `filter`.
    pub(crate) fn sum(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                filter
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| s.name == name)
    }
}

/// Parses Prometheus text format 0.0.4 strictly enough to catch mistakes:
/// every sample must belong to a family declared by a `# TYPE` line before
/// it, label values must be well-quoted, values must be numbers.
pub(crate) fn parse_prometheus(text: &str) -> Result<Exposition, String> {
    let mut e = Exposition::default();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            match parts.next() {
                Some("TYPE") => {
                    let name = parts.next().ok_or(format!("line {n}: TYPE without name"))?;
                    let kind = parts.next().ok_or(format!("line {n}: TYPE without kind"))?;
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(format!("line {n}: bad type {kind}"));
                    }
                    if e.types.insert(name.to_string(), kind.to_string()).is_some() {
                        return Err(format!("line {n}: family {name} declared twice"));
                    }
                }
                Some("HELP") => {}
                _ => return Err(format!("line {n}: bad comment {line:?}")),
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or(format!("line {n}: no value"))?;
        let name = &line[..name_end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            return Err(format!("line {n}: bad metric name {name:?}"));
        }
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(r) = rest.strip_prefix('{') {
            let mut chars = r.char_indices().peekable();
            let end;
            loop {
                // label name
                let mut lname = String::new();
                while let Some((_, c)) = chars.peek().copied() {
                    if c == '=' || c == '}' {
                        break;
                    }
                    lname.push(c);
                    chars.next();
                }
                match chars.next() {
                    Some((i, '}')) if lname.is_empty() => {
                        end = i;
                        break;
                    }
                    Some((_, '=')) => {}
                    _ => return Err(format!("line {n}: bad labels")),
                }
                if chars.next().map(|x| x.1) != Some('"') {
                    return Err(format!("line {n}: unquoted label value"));
                }
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, '\\')) => value.push('\\'),
                            Some((_, '"')) => value.push('"'),
                            _ => return Err(format!("line {n}: bad escape")),
                        },
                        Some((_, '"')) => break,
                        Some((_, c)) => value.push(c),
                        None => return Err(format!("line {n}: unterminated label value")),
                    }
                }
                if labels.insert(lname.clone(), value).is_some() {
                    return Err(format!("line {n}: duplicate label {lname}"));
                }
                match chars.next() {
                    Some((_, ',')) => {}
                    Some((i, '}')) => {
                        end = i;
                        break;
                    }
                    _ => return Err(format!("line {n}: bad label separator")),
                }
            }
            rest = &r[end + 1..];
        }
        let value_str = rest
            .strip_prefix(' ')
            .ok_or(format!("line {n}: no space before value"))?;
        let value_str = value_str.split(' ').next().unwrap_or("");
        let value = match value_str {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v
                .parse::<f64>()
                .map_err(|_| format!("line {n}: bad value {v:?}"))?,
        };
        let family = [name, "_bucket", "_count", "_sum"]
            .iter()
            .skip(1)
            .find_map(|suffix| {
                let base = name.strip_suffix(suffix)?;
                let kind = e.types.get(base)?;
                matches!(kind.as_str(), "histogram" | "summary").then_some(base)
            })
            .unwrap_or(name);
        if !e.types.contains_key(family) {
            return Err(format!("line {n}: sample {name} has no TYPE"));
        }
        e.samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Ok(e)
}
