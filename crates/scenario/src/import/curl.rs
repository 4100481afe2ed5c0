//! A curl command line (as browsers' "Copy as cURL" and API docs give them) to a
//! one-step scenario: the shortest way from "this request is slow" to a load test of
//! exactly that request.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;

use super::{
    classify_body, header_value, imported_config, is_automatic_header, percent_encode, push_header,
    request_step, split_url, stable_dur, step_name, valid_header, Body, ImportError, Imported,
    METHODS,
};
use crate::model::*;
use crate::Dur;

/// How an option is handled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Used, takes a value.
    Value,
    /// Used, no value.
    Flag,
    /// Irrelevant to a load test, takes a value (skipped).
    IgnoreValue,
    /// Irrelevant to a load test (progress, output, redirects, protocol version...).
    Ignore,
    /// Known, but a scenario cannot say it.
    Unsupported(&'static str),
}

/// Canonical long name and handling of a short option.
fn short_option(c: char) -> Option<&'static str> {
    Some(match c {
        'X' => "request",
        'H' => "header",
        'd' => "data",
        'b' => "cookie",
        'u' => "user",
        'A' => "user-agent",
        'e' => "referer",
        'k' => "insecure",
        'G' => "get",
        'I' => "head",
        'm' => "max-time",
        'o' => "output",
        'w' => "write-out",
        'D' => "dump-header",
        'c' => "cookie-jar",
        'Y' => "speed-limit",
        'y' => "speed-time",
        's' => "silent",
        'S' => "show-error",
        'L' => "location",
        'i' => "include",
        'v' => "verbose",
        'f' => "fail",
        'N' => "no-buffer",
        'g' => "globoff",
        '#' => "progress-bar",
        'q' => "disable",
        'O' => "remote-name",
        'J' => "remote-header-name",
        'j' => "junk-session-cookies",
        'Z' => "parallel",
        '0' => "http1.0",
        '4' => "ipv4",
        '6' => "ipv6",
        'x' => "proxy",
        'U' => "proxy-user",
        'F' => "form",
        'T' => "upload-file",
        'E' => "cert",
        'K' => "config",
        'r' => "range",
        'z' => "time-cond",
        'C' => "continue-at",
        _ => return None,
    })
}

/// How a long option (without `--`) is handled.
///
/// Options that only change what curl itself does (where it writes, how often it
/// retries, progress, TLS version bounds, proxy bypass lists, DNS, where it reads
/// credentials from) are ignored and listed in one note; options that change the
/// request in a way a scenario cannot say are refused with the reason, so nothing
/// that matters is lost silently.
fn long_option(name: &str) -> Option<Kind> {
    used_option(name)
        .or_else(|| curl_only_option(name).then_some(Kind::IgnoreValue))
        .or_else(|| curl_only_flag(name).then_some(Kind::Ignore))
        .or_else(|| unsupported_option(name).map(Kind::Unsupported))
}

/// The options that shape the request, and whether they take a value.
fn used_option(name: &str) -> Option<Kind> {
    Some(match name {
        "request" | "header" | "data" | "data-ascii" | "data-raw" | "data-binary"
        | "data-urlencode" | "json" | "cookie" | "user" | "user-agent" | "referer" | "url"
        | "max-time" | "oauth2-bearer" | "url-query" => Kind::Value,
        "insecure"
        | "get"
        | "head"
        | "compressed"
        | "http1.1"
        | "http2"
        | "http2-prior-knowledge" => Kind::Flag,
        _ => return None,
    })
}

/// The options that only change what curl itself does and take a value (skipped
/// with it).
fn curl_only_option(name: &str) -> bool {
    matches!(
        name,
        "output"
            | "output-dir"
            | "write-out"
            | "connect-timeout"
            | "retry"
            | "retry-delay"
            | "retry-max-time"
            | "dump-header"
            | "stderr"
            | "trace"
            | "trace-ascii"
            | "trace-config"
            | "libcurl"
            | "max-redirs"
            | "limit-rate"
            | "cookie-jar"
            | "speed-limit"
            | "speed-time"
            | "keepalive-time"
            | "expect100-timeout"
            | "happy-eyeballs-timeout-ms"
            | "max-filesize"
            | "interface"
            | "local-port"
            | "cacert"
            | "capath"
            | "crlfile"
            | "pinnedpubkey"
            | "ciphers"
            | "tls13-ciphers"
            | "curves"
            | "tls-max"
            | "noproxy"
            | "netrc-file"
            | "proto"
            | "proto-redir"
            | "proto-default"
            | "dns-servers"
            | "dns-interface"
            | "dns-ipv4-addr"
            | "dns-ipv6-addr"
            | "doh-url"
            | "etag-save"
            | "hsts"
            | "alt-svc"
            | "parallel-max"
            | "rate"
            | "create-file-mode"
            | "egd-file"
            | "random-file"
    )
}

/// The options that only change what curl itself does and take no value.
fn curl_only_flag(name: &str) -> bool {
    matches!(
        name,
        "silent"
            | "show-error"
            | "location"
            | "location-trusted"
            | "include"
            | "show-headers"
            | "verbose"
            | "fail"
            | "fail-with-body"
            | "fail-early"
            | "no-buffer"
            | "globoff"
            | "progress-bar"
            | "progress-meter"
            | "no-progress-meter"
            | "disable"
            | "remote-name"
            | "remote-name-all"
            | "remote-header-name"
            | "remote-time"
            | "create-dirs"
            | "no-clobber"
            | "skip-existing"
            | "xattr"
            | "junk-session-cookies"
            | "parallel"
            | "parallel-immediate"
            | "retry-connrefused"
            | "retry-all-errors"
            | "trace-time"
            | "trace-ids"
            | "http0.9"
            | "tr-encoding"
            | "path-as-is"
            | "ipv4"
            | "ipv6"
            | "raw"
            | "keepalive"
            | "no-keepalive"
            | "tcp-nodelay"
            | "tcp-fastopen"
            | "mptcp"
            | "ssl-no-revoke"
            | "ssl-revoke-best-effort"
            | "ssl-allow-beast"
            | "ssl-auto-client-cert"
            | "ca-native"
            | "cert-status"
            | "false-start"
            | "no-sessionid"
            | "no-alpn"
            | "no-npn"
            | "styled-output"
            | "no-styled-output"
            | "basic"
            | "anyauth"
            | "netrc"
            | "netrc-optional"
            | "post301"
            | "post302"
            | "post303"
            | "suppress-connect-headers"
            | "disallow-username-in-url"
            | "ignore-content-length"
            | "doh-insecure"
            | "doh-cert-status"
            | "tlsv1"
            | "tlsv1.0"
            | "tlsv1.1"
            | "tlsv1.2"
            | "tlsv1.3"
            | "sslv2"
            | "sslv3"
            | "ssl"
            | "ssl-reqd"
    )
}

/// The options that change the request in a way a scenario cannot say, with what to
/// do instead.
fn unsupported_option(name: &str) -> Option<&'static str> {
    Some(match name {
        "http1.0" => "pado sends HTTP/1.1 (or HTTP/2), not HTTP/1.0; drop the option to test the same request over HTTP/1.1",
        "http3" | "http3-only" => "pado does not speak HTTP/3; drop the option (or use --http2) to test over HTTP/2 or HTTP/1.1",
        "proxy" | "proxy-user" | "socks5" | "socks5-hostname" | "preproxy" => "give the proxy as `defaults.proxy` in the scenario (or HTTPS_PROXY) instead",
        "form" | "form-string" => "multipart forms: write the body with `body_file` and a Content-Type header",
        "upload-file" => "use `body_file` with method PUT instead",
        "cert" | "key" | "cert-type" | "key-type" | "pass" => "give the client certificate as `defaults.tls` in the scenario (or --client-cert) instead",
        "config" => "paste the options themselves",
        "range" => "write `-H 'Range: bytes=...'` instead",
        "time-cond" | "continue-at" | "etag-compare" => "write the header with -H instead",
        "digest" | "ntlm" | "negotiate" | "aws-sigv4" | "delegation" => "only Basic authentication (-u) and bearer tokens are supported",
        "resolve" | "connect-to" | "unix-socket" | "abstract-unix-socket" => "point the URL at the address to test instead",
        "request-target" | "haproxy-protocol" | "haproxy-clientip" => "pado cannot send this request line or connection preface",
        "variable" | "expand-url" | "expand-data" | "expand-header" | "expand-json" => "expand the variables first and import the resulting command",
        _ => return None,
    })
}

/// One piece of request data.
enum Data {
    /// Text to send (already encoded as curl would).
    Text(String),
    /// `@file`: the data is read from this file.
    File {
        /// The option as written (`-d`, `--data-binary`), for messages.
        option: String,
        /// The file name as written after `@`.
        name: String,
        /// How curl turns the file into data.
        mode: FileMode,
    },
}

/// How curl reads a data file.
#[derive(Clone, PartialEq, Eq)]
enum FileMode {
    /// `-d`/`--data`/`--data-ascii`: the content without its carriage returns and
    /// line feeds.
    Stripped,
    /// `--data-binary`/`--json`: the content byte for byte.
    Exact,
    /// `--data-urlencode [name]@file`: the content percent-encoded, after `name=`.
    UrlEncoded(Option<String>),
}

/// Where a curl command is imported, which its file names (`-d @rows.csv`) are read
/// against: the command was written for the directory it runs in, while the
/// scenario's `body_file` is read against the scenario file's folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurlContext {
    /// The directory the command would run in (where `@file` names are found).
    pub cwd: std::path::PathBuf,
    /// The folder of the scenario file being written, when it is written to a file:
    /// `body_file` paths are made relative to it. `None` (standard output): they are
    /// written absolute, right wherever the scenario is saved.
    pub scenario_dir: Option<std::path::PathBuf>,
}

impl CurlContext {
    /// The process's working directory, the scenario printed (no folder).
    pub fn current() -> CurlContext {
        CurlContext {
            cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
            scenario_dir: None,
        }
    }

    /// The process's working directory (`@file` names mean what they mean where the
    /// command is typed), the scenario written to `out` when given: its `body_file`
    /// is read against the scenario's folder (`.` for a bare file name).
    pub fn for_output(out: Option<&std::path::Path>) -> CurlContext {
        CurlContext {
            scenario_dir: out.map(|o| match o.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => std::path::PathBuf::from("."),
            }),
            ..CurlContext::current()
        }
    }
}

/// Everything the options said.
#[derive(Default)]
struct Parsed {
    method: Option<String>,
    url: Option<String>,
    headers: Vec<(String, String)>,
    /// Headers curl adds on its own that the command removed (`-H 'Name:'`),
    /// lowercased: pado adds none of them either.
    removed: Vec<String>,
    data: Vec<Data>,
    /// `--url-query` parts, already encoded.
    url_query: Vec<String>,
    json: bool,
    cookies: Vec<String>,
    user: Option<String>,
    user_agent: Option<String>,
    referer: Option<String>,
    bearer: Option<String>,
    insecure: bool,
    get: bool,
    head: bool,
    timeout: Option<Dur>,
    /// `--compressed`.
    compressed: bool,
    /// `--http2` / `--http2-prior-knowledge` / `--http1.1` (the last wins).
    http: Option<crate::HttpVersion>,
    /// Options ignored as written (names only: their values may be paths or
    /// secrets), in order, without repeats.
    ignored: Vec<String>,
}

/// Turn one curl command (a "Copy as cURL" from a browser, possibly over several lines
/// with `\` continuations and `$'...'` quoting) into a one-step scenario that sends
/// what curl would send: the same method, URL, headers and body bytes. Data options
/// (`-d`, `--data-raw`, `--data-binary`, `--data-urlencode`, joined with `&`) imply
/// POST and a form content type unless a header says otherwise; `--json` sends JSON;
/// `-G` moves the data into the query; `-b`, `-u`, `-A`, `-e` become headers; `-k`
/// sets `defaults.insecure`; `--compressed` sets `defaults.compression`; `--http2`
/// and `--http2-prior-knowledge` set `defaults.http`. Files (`-d @FILE`) are read
/// against the working directory. Options that only change curl's own behaviour
/// are ignored; an option pado does not know, or one that changes the request in a
/// way pado cannot reproduce, is an error naming it, so nothing is silently lost.
pub fn from_curl(cmd: &str) -> Result<Config, ImportError> {
    import_curl(cmd, &CurlContext::current()).map(|i| i.config)
}

/// [`from_curl`] with files read against `ctx.cwd`, `body_file` paths written for
/// `ctx.scenario_dir`, and the notes (the options ignored, in one sentence).
pub fn import_curl(cmd: &str, ctx: &CurlContext) -> Result<Imported, ImportError> {
    let tokens = tokenize(cmd)?;
    let mut it = tokens.into_iter().peekable();
    if it
        .peek()
        .is_some_and(|t| t == "curl" || t.ends_with("/curl") || t.eq_ignore_ascii_case("curl.exe"))
    {
        it.next();
    }
    let mut p = Parsed::default();
    let mut only_urls = false;
    while let Some(arg) = it.next() {
        if only_urls || !arg.starts_with('-') || arg == "-" {
            set_url(&mut p, arg)?;
        } else if arg == "--" {
            only_urls = true;
        } else if let Some(name) = arg.strip_prefix("--") {
            let kind = long_option(name).ok_or_else(|| ImportError::UnknownOption(arg.clone()))?;
            let value = match kind {
                Kind::Value | Kind::IgnoreValue => Some(
                    it.next()
                        .ok_or_else(|| ImportError::MissingValue(arg.clone()))?,
                ),
                _ => None,
            };
            apply(&mut p, name, &arg, kind, value)?;
        } else {
            // A cluster of short options: `-sSL`, `-XPOST`, `-H'a: b'`.
            let chars: Vec<char> = arg[1..].chars().collect();
            let mut i = 0;
            while i < chars.len() {
                let c = chars[i];
                let opt = format!("-{c}");
                let name =
                    short_option(c).ok_or_else(|| ImportError::UnknownOption(opt.clone()))?;
                let kind = long_option(name).unwrap_or(Kind::Ignore);
                let value = match kind {
                    Kind::Value | Kind::IgnoreValue => {
                        let rest: String = chars[i + 1..].iter().collect();
                        i = chars.len();
                        if rest.is_empty() {
                            Some(
                                it.next()
                                    .ok_or_else(|| ImportError::MissingValue(opt.clone()))?,
                            )
                        } else {
                            Some(rest)
                        }
                    }
                    _ => {
                        i += 1;
                        None
                    }
                };
                apply(&mut p, name, &opt, kind, value)?;
            }
        }
    }
    build(p, ctx)
}

fn set_url(p: &mut Parsed, url: String) -> Result<(), ImportError> {
    match &p.url {
        Some(u) => Err(ImportError::ManyUrls(u.clone(), url)),
        None => {
            p.url = Some(url);
            Ok(())
        }
    }
}

/// Record what one option says.
fn apply(
    p: &mut Parsed,
    name: &str,
    written: &str,
    kind: Kind,
    value: Option<String>,
) -> Result<(), ImportError> {
    let unsupported = |why: &str| ImportError::Unsupported {
        option: written.to_string(),
        why: why.to_string(),
    };
    match kind {
        Kind::Ignore | Kind::IgnoreValue => {
            if !p.ignored.iter().any(|o| o == written) {
                p.ignored.push(written.to_string());
            }
            return Ok(());
        }
        Kind::Unsupported(why) => return Err(unsupported(why)),
        Kind::Value | Kind::Flag => {}
    }
    let v = value.unwrap_or_default();
    match name {
        "request" => p.method = Some(v.trim().to_ascii_uppercase()),
        "header" => {
            if v.starts_with('@') {
                return Err(unsupported("reading headers from a file; paste them as -H"));
            }
            let (hname, hvalue) = match v.find([':', ';']) {
                Some(i) if v.as_bytes()[i] == b';' && v[i + 1..].trim().is_empty() => {
                    (v[..i].trim(), "")
                }
                Some(i) if v.as_bytes()[i] == b':' => {
                    let value = v[i + 1..].trim();
                    if value.is_empty() {
                        // `-H 'Name:'` removes a header curl would add: nothing to send.
                        p.removed.push(v[..i].trim().to_ascii_lowercase());
                        return Ok(());
                    }
                    (v[..i].trim(), value)
                }
                _ => {
                    return Err(unsupported(&format!(
                        "`{v}` is not a header; write `Name: value`"
                    )))
                }
            };
            if !valid_header(hname, hvalue) {
                return Err(unsupported(&format!("`{hname}` is not a valid header")));
            }
            // An explicit Accept-Encoding is sent by curl as written (pado decodes
            // what it supports, and a request's own header wins).
            if !is_automatic_header(hname, false) || hname.eq_ignore_ascii_case("accept-encoding") {
                push_header(&mut p.headers, hname, hvalue);
            }
        }
        "data" | "data-ascii" | "data-binary" | "json" => {
            if name == "json" {
                p.json = true;
            }
            let mode = if matches!(name, "data-binary" | "json") {
                FileMode::Exact
            } else {
                FileMode::Stripped
            };
            match v.strip_prefix('@') {
                Some("-") => return Err(unsupported("data from standard input")),
                Some(file) => p.data.push(Data::File {
                    option: written.to_string(),
                    name: file.to_string(),
                    mode,
                }),
                None => p.data.push(Data::Text(v)),
            }
        }
        "data-raw" => p.data.push(Data::Text(v)),
        "data-urlencode" | "url-query" => {
            let data = match v.find(['=', '@']) {
                // `--url-query +text`: added as written.
                _ if name == "url-query" && v.starts_with('+') => Data::Text(v[1..].to_string()),
                Some(i) if v.as_bytes()[i] == b'@' => {
                    if name == "url-query" {
                        return Err(unsupported("--url-query from a file"));
                    }
                    Data::File {
                        option: written.to_string(),
                        name: v[i + 1..].to_string(),
                        mode: FileMode::UrlEncoded((i > 0).then(|| v[..i].to_string())),
                    }
                }
                Some(0) => Data::Text(urlencode(&v[1..])),
                Some(i) => Data::Text(format!("{}={}", &v[..i], urlencode(&v[i + 1..]))),
                None => Data::Text(urlencode(&v)),
            };
            match (name, data) {
                ("url-query", Data::Text(t)) => p.url_query.push(t),
                (_, d) => p.data.push(d),
            }
        }
        "cookie" => {
            if !v.contains('=') {
                return Err(unsupported(
                    "reading cookies from a file; give them as `-b 'name=value'`",
                ));
            }
            p.cookies.push(v.trim().trim_end_matches(';').to_string());
        }
        "user" => p.user = Some(v),
        "user-agent" => p.user_agent = Some(v),
        "referer" => p.referer = Some(v.trim_end_matches(";auto").to_string()),
        "oauth2-bearer" => p.bearer = Some(v),
        "url" => set_url(p, v)?,
        "max-time" => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => {
                p.timeout = Some(stable_dur(Duration::from_secs_f64(s)))
            }
            Ok(0.0) => {}
            _ => return Err(unsupported(&format!("`{v}` is not a number of seconds"))),
        },
        "insecure" => p.insecure = true,
        "compressed" => p.compressed = true,
        "http1.1" => p.http = None,
        "http2" => p.http = Some(crate::HttpVersion::Auto),
        "http2-prior-knowledge" => p.http = Some(crate::HttpVersion::Http2),
        "get" => p.get = true,
        "head" => p.head = true,
        _ => return Err(ImportError::UnknownOption(written.to_string())),
    }
    Ok(())
}

/// Build the configuration from the parsed options.
fn build(mut p: Parsed, ctx: &CurlContext) -> Result<Imported, ImportError> {
    let raw_url = p.url.take().ok_or(ImportError::NoUrl)?;
    let with_scheme = if raw_url.contains("://") {
        raw_url.clone()
    } else {
        format!("http://{raw_url}")
    };
    let url = split_url(&with_scheme).map_err(|reason| ImportError::BadUrl {
        url: raw_url.clone(),
        reason,
    })?;
    let mut path_query = url.path_query.clone();
    let mut headers = std::mem::take(&mut p.headers);
    let missing = |h: &Vec<(String, String)>, n: &str| header_value(h, n).is_none();
    if !p.cookies.is_empty() && missing(&headers, "cookie") {
        headers.push(("Cookie".into(), p.cookies.join("; ")));
    }
    if missing(&headers, "authorization") {
        if let Some(u) = &p.user {
            let u = if u.contains(':') {
                u.clone()
            } else {
                format!("{u}:")
            };
            let enc = base64::engine::general_purpose::STANDARD.encode(u.as_bytes());
            headers.push(("Authorization".into(), format!("Basic {enc}")));
        } else if let Some(t) = &p.bearer {
            headers.push(("Authorization".into(), format!("Bearer {t}")));
        }
    }
    if let (Some(ua), true) = (&p.user_agent, missing(&headers, "user-agent")) {
        headers.push(("User-Agent".into(), ua.clone()));
    }
    if let (Some(r), true) = (&p.referer, missing(&headers, "referer")) {
        headers.push(("Referer".into(), r.clone()));
    }
    for (n, v) in &headers {
        if !valid_header(n, v) {
            return Err(ImportError::Unsupported {
                option: n.clone(),
                why: "the value has a line break or a NUL byte".into(),
            });
        }
    }

    if !p.url_query.is_empty() {
        path_query.push(if path_query.contains('?') { '&' } else { '?' });
        path_query.push_str(&p.url_query.join("&"));
    }

    let mut body = Body::None;
    let mut default_method = if p.head { "HEAD" } else { "GET" };
    if !p.data.is_empty() {
        // A lone exact file stays a file (`body_file`, read at each run, however
        // large); other data is read now, as curl would, and joined.
        let lone_file = match p.data.as_slice() {
            [Data::File {
                option,
                name,
                mode: FileMode::Exact,
            }] if !p.get => Some(body_file_path(option, name, ctx)?),
            _ => None,
        };
        let mut texts = Vec::with_capacity(p.data.len());
        if lone_file.is_none() {
            for d in &p.data {
                texts.push(match d {
                    Data::Text(t) => t.clone(),
                    Data::File { option, name, mode } => file_data(option, name, mode, ctx)?,
                });
            }
        }
        if p.get {
            path_query.push(if path_query.contains('?') { '&' } else { '?' });
            path_query.push_str(&texts.join("&"));
        } else {
            default_method = "POST";
            if p.json {
                if missing(&headers, "content-type") {
                    headers.push(("Content-Type".into(), "application/json".into()));
                }
                if missing(&headers, "accept") {
                    headers.push(("Accept".into(), "application/json".into()));
                }
            } else if missing(&headers, "content-type") {
                headers.push((
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ));
            }
            body = match lone_file {
                Some(path) => Body::File(path),
                None => {
                    let sep = if p.json { "" } else { "&" };
                    classify_body(&texts.join(sep), None, &mut headers)
                }
            };
        }
    }
    // curl asks for anything (`Accept: */*`) unless the command says otherwise: a
    // server that picks a representation by Accept answers pado as it answered curl.
    if missing(&headers, "accept") && !p.removed.iter().any(|r| r == "accept") {
        headers.push(("Accept".into(), "*/*".into()));
    }
    let method = p
        .method
        .clone()
        .unwrap_or_else(|| default_method.to_string());
    if !METHODS.contains(&method.as_str()) {
        return Err(ImportError::BadMethod(method));
    }
    let name = step_name(&method, &path_query, None);
    let flow = vec![
        request_step(name, &method, path_query, headers, body, p.timeout)
            .map_err(ImportError::Unrepresentable)?,
    ];
    let defaults = Defaults {
        insecure: p.insecure,
        http: p.http,
        // What curl 7.71 and later ask for with `--compressed`, in its order.
        compression: p.compressed.then(|| {
            vec![
                Compression::Deflate,
                Compression::Gzip,
                Compression::Br,
                Compression::Zstd,
            ]
        }),
        ..Default::default()
    };
    let mut notes = Vec::new();
    if !p.ignored.is_empty() {
        notes.push(format!(
            "ignored {}: {} (they change what curl does with the response, retries, TLS or proxy settings, or where it reads credentials, not the request pado sends; .netrc credentials are not read: add -u if the server needs them)",
            if p.ignored.len() == 1 { "an option" } else { "options" },
            p.ignored.join(", ")
        ));
    }
    Ok(Imported {
        config: imported_config(Some(url.origin), defaults, flow),
        notes,
    })
}

/// Where pado looks for a file the command names: against the directory the
/// command runs in, as curl does.
fn data_file_path(name: &str, ctx: &CurlContext) -> std::path::PathBuf {
    ctx.cwd.join(name)
}

/// The error for a data file that cannot be used.
fn data_file_error(option: &str, name: &str, path: &Path, reason: impl ToString) -> ImportError {
    ImportError::DataFile {
        option: option.to_string(),
        written: name.to_string(),
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// The data curl makes of a file: its bytes (as text: the scenario joins it with
/// other data), without line breaks for `-d`, percent-encoded for
/// `--data-urlencode`.
fn file_data(
    option: &str,
    name: &str,
    mode: &FileMode,
    ctx: &CurlContext,
) -> Result<String, ImportError> {
    let path = data_file_path(name, ctx);
    let bytes = crate::limits::read_capped(&path, crate::limits::MAX_DATA_BYTES)
        .map_err(|e| data_file_error(option, name, &path, e))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        data_file_error(
            option,
            name,
            &path,
            "it is not UTF-8 text, which a scenario can join with other data; send it alone with --data-binary @FILE",
        )
    })?;
    Ok(match mode {
        FileMode::Stripped => text.replace(['\r', '\n'], ""),
        FileMode::Exact => text,
        FileMode::UrlEncoded(None) => urlencode(&text),
        FileMode::UrlEncoded(Some(n)) => format!("{n}={}", urlencode(&text)),
    })
}

/// Text encoded as curl's `--data-urlencode` and `--url-query` encode it: every
/// byte but the unreserved characters percent-encoded, and a space as `+` (what
/// curl 7.88 sends; checked against the real curl in the end-to-end tests).
fn urlencode(s: &str) -> String {
    percent_encode(s).replace("%20", "+")
}

/// The `body_file` path of a file the command sends whole: checked to be readable
/// now (a typo is found at import, not in the middle of a load test), then written
/// relative to the scenario's folder when the file is inside it, absolute otherwise.
fn body_file_path(option: &str, name: &str, ctx: &CurlContext) -> Result<String, ImportError> {
    let path = data_file_path(name, ctx);
    std::fs::File::open(&path)
        .and_then(|f| f.metadata())
        .and_then(|m| {
            if m.is_file() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a regular file"))
            }
        })
        .map_err(|e| data_file_error(option, name, &path, e))?;
    let full = path.canonicalize().unwrap_or(path);
    let inside = ctx
        .scenario_dir
        .as_ref()
        .and_then(|d| d.canonicalize().ok())
        .and_then(|d| full.strip_prefix(d).ok().map(Path::to_path_buf));
    let chosen = inside.unwrap_or(full);
    chosen
        .to_str()
        .map(str::to_string)
        .ok_or_else(|| data_file_error(option, name, &chosen, "its path is not UTF-8"))
}

/// Split a command line as a POSIX shell would (no expansion): whitespace separates
/// words, `'...'` is literal, `"..."` knows `\"`, `\\`, `\$`, `` \` ``, `$'...'`
/// understands C escapes (`\n`, `\'`, `\xHH`, `\uHHHH`, octal), and a backslash before a
/// line break joins the lines.
fn tokenize(cmd: &str) -> Result<Vec<String>, ImportError> {
    let b = cmd.as_bytes();
    let mut out = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |cur: &mut Vec<u8>, in_word: &mut bool, out: &mut Vec<String>| {
        if *in_word {
            out.push(String::from_utf8_lossy(cur).into_owned());
            cur.clear();
            *in_word = false;
        }
    };
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => {
                flush(&mut cur, &mut in_word, &mut out);
                i += 1;
            }
            b'\\' => {
                if b.get(i + 1) == Some(&b'\n') {
                    i += 2;
                } else if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') {
                    i += 3;
                } else if let Some(&c) = b.get(i + 1) {
                    cur.push(c);
                    in_word = true;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            b'\'' => {
                let end = b[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .ok_or(ImportError::UnbalancedQuotes("single"))?;
                cur.extend_from_slice(&b[i + 1..i + 1 + end]);
                in_word = true;
                i += end + 2;
            }
            b'$' if b.get(i + 1) == Some(&b'\'') => {
                i = ansi_c(b, i + 2, &mut cur)?;
                in_word = true;
            }
            b'"' => {
                i = double_quoted(b, i + 1, &mut cur)?;
                in_word = true;
            }
            b'$' if b.get(i + 1) == Some(&b'"') => {
                i = double_quoted(b, i + 2, &mut cur)?;
                in_word = true;
            }
            c => {
                cur.push(c);
                in_word = true;
                i += 1;
            }
        }
    }
    flush(&mut cur, &mut in_word, &mut out);
    Ok(out)
}

/// The inside of `"..."` from `i`; returns the index after the closing quote.
fn double_quoted(b: &[u8], mut i: usize, cur: &mut Vec<u8>) -> Result<usize, ImportError> {
    while i < b.len() {
        match b[i] {
            b'"' => return Ok(i + 1),
            b'\\' => match b.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(&c @ (b'"' | b'\\' | b'$' | b'`')) => {
                    cur.push(c);
                    i += 2;
                }
                _ => {
                    cur.push(b'\\');
                    i += 1;
                }
            },
            c => {
                cur.push(c);
                i += 1;
            }
        }
    }
    Err(ImportError::UnbalancedQuotes("double"))
}

/// The inside of `$'...'` from `i`; returns the index after the closing quote.
fn ansi_c(b: &[u8], mut i: usize, cur: &mut Vec<u8>) -> Result<usize, ImportError> {
    // Up to `max` digits of `radix` from `j`: (value, next index).
    let digits = |j: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut v = 0u32;
        let mut k = j;
        while k < b.len() && k - j < max {
            match (b[k] as char).to_digit(radix) {
                Some(d) => v = v * radix + d,
                None => break,
            }
            k += 1;
        }
        (v, k)
    };
    while i < b.len() {
        match b[i] {
            b'\'' => return Ok(i + 1),
            b'\\' if i + 1 < b.len() => {
                let e = b[i + 1];
                i += 2;
                let simple = match e {
                    b'n' => Some(b'\n'),
                    b't' => Some(b'\t'),
                    b'r' => Some(b'\r'),
                    b'a' => Some(7),
                    b'b' => Some(8),
                    b'e' | b'E' => Some(27),
                    b'f' => Some(12),
                    b'v' => Some(11),
                    b'\\' | b'\'' | b'"' | b'?' => Some(e),
                    _ => None,
                };
                if let Some(c) = simple {
                    cur.push(c);
                    continue;
                }
                match e {
                    b'x' => {
                        let (v, k) = digits(i, 2, 16);
                        if k == i {
                            cur.extend_from_slice(b"\\x");
                        } else {
                            cur.push(v as u8);
                        }
                        i = k;
                    }
                    b'u' | b'U' => {
                        let (v, k) = digits(i, if e == b'u' { 4 } else { 8 }, 16);
                        if k == i {
                            cur.push(b'\\');
                            cur.push(e);
                        } else {
                            let ch = char::from_u32(v).unwrap_or('\u{fffd}');
                            cur.extend_from_slice(ch.to_string().as_bytes());
                        }
                        i = k;
                    }
                    b'0'..=b'7' => {
                        let (v, k) = digits(i - 1, 3, 8);
                        cur.push((v & 0xff) as u8);
                        i = k;
                    }
                    b'c' if i < b.len() => {
                        cur.push(b[i] & 0x1f);
                        i += 1;
                    }
                    _ => {
                        cur.push(b'\\');
                        cur.push(e);
                    }
                }
            }
            c => {
                cur.push(c);
                i += 1;
            }
        }
    }
    Err(ImportError::UnbalancedQuotes("$'...'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::to_yaml;

    fn one(cfg: &Config) -> &Step {
        assert_eq!(cfg.scenarios.len(), 1);
        let f = &cfg.scenarios[0].1.flow;
        assert_eq!(f.len(), 1);
        &f[0]
    }

    fn full(s: &Step) -> &RequestFull {
        match s.request.as_ref().unwrap() {
            RequestSpec::Full(f) => f,
            r => panic!("expected the full form: {r:?}"),
        }
    }

    fn round_trips(cfg: &Config) {
        let y = to_yaml(cfg);
        assert_eq!(&crate::parse_str(&y, "x").unwrap(), cfg, "{y}");
    }

    #[test]
    fn chrome_copy_as_curl() {
        let cmd = r#"curl 'https://shop.example.com/api/posts?lang=ko' \
  -H 'accept: application/json, text/plain, */*' \
  -H 'accept-language: ko-KR,ko;q=0.9' \
  -H 'content-type: application/json' \
  -b 'sid=abc123; theme=dark' \
  -H 'origin: https://shop.example.com' \
  -H 'sec-ch-ua: "Chromium";v="124"' \
  -H 'sec-fetch-mode: cors' \
  -H 'user-agent: Mozilla/5.0 (X11; Linux x86_64)' \
  --data-raw $'{"title":"안녕 \'세상\'","body":"줄1\\n줄2","e":"\xec\x97\x94"}' \
  --compressed"#;
        let cfg = from_curl(cmd).unwrap();
        assert_eq!(cfg.target.as_deref(), Some("https://shop.example.com"));
        let s = one(&cfg);
        assert_eq!(s.name.as_deref(), Some("POST /api/posts"));
        let r = full(s);
        assert_eq!(r.method.as_deref(), Some("POST"));
        assert_eq!(r.url, "/api/posts?lang=ko");
        // Keys out of sorted order: the text goes out as curl sends it.
        assert_eq!(r.json, None);
        assert_eq!(
            r.body.as_deref(),
            Some(r#"{"title":"안녕 '세상'","body":"줄1\n줄2","e":"엔"}"#)
        );
        let h = &r.headers;
        assert_eq!(h["Cookie"], "sid=abc123; theme=dark");
        assert_eq!(h["accept-language"], "ko-KR,ko;q=0.9");
        assert_eq!(h["user-agent"], "Mozilla/5.0 (X11; Linux x86_64)");
        assert_eq!(h["content-type"], "application/json");
        assert!(!h.keys().any(|k| k.starts_with("sec-")), "{h:?}");
        assert_eq!(h.len(), 6, "{h:?}");
        assert!(!cfg.defaults.insecure);
        // `--compressed`: what curl asks for, in curl's order.
        assert_eq!(
            cfg.defaults.compression,
            Some(vec![
                Compression::Deflate,
                Compression::Gzip,
                Compression::Br,
                Compression::Zstd
            ])
        );
        round_trips(&cfg);
        let y = to_yaml(&cfg);
        // Hangul stays readable in the file (YAML doubles the quotes).
        assert!(y.contains("안녕 ''세상''"), "{y}");
        if std::env::var_os("PADO_SHOW_YAML").is_some() {
            println!("{}", crate::import::to_yaml_with_source(&cfg, "curl"));
        }
    }

    #[test]
    fn form_data_and_basic_auth() {
        let cfg = from_curl(
            "curl -u admin:s3cret -d 'q=%EA%B2%80%EC%83%89' -d page=2 --data-urlencode 'note=a b&c' -k http://localhost:8080/search",
        )
        .unwrap();
        let r = full(one(&cfg));
        assert_eq!(r.method.as_deref(), Some("POST"));
        assert_eq!(r.url, "/search");
        // Fields out of name order: a `form:` would reorder them.
        assert_eq!(r.form, None);
        assert_eq!(
            r.body.as_deref(),
            Some("q=%EA%B2%80%EC%83%89&page=2&note=a+b%26c")
        );
        assert_eq!(r.headers["Authorization"], "Basic YWRtaW46czNjcmV0");
        assert_eq!(
            r.headers["Content-Type"],
            "application/x-www-form-urlencoded"
        );
        // curl's own `Accept: */*`, which it sends unless told otherwise.
        assert_eq!(r.headers["Accept"], "*/*");
        assert_eq!(r.headers.len(), 3);
        assert!(cfg.defaults.insecure);
        assert_eq!(cfg.target.as_deref(), Some("http://localhost:8080"));
        round_trips(&cfg);

        // In name order and encoded as the engine encodes: editable fields that
        // send the same bytes.
        let cfg = from_curl("curl -d 'a=1' -d 'b=%EA%B0%80' h/x").unwrap();
        let r = full(one(&cfg));
        assert_eq!(r.body, None);
        let f = r.form.as_ref().unwrap();
        assert_eq!((f["a"].as_str(), f["b"].as_str()), ("1", "가"));
        assert_eq!(r.headers.keys().collect::<Vec<_>>(), ["Accept"]);

        // Non-form text stays raw, with curl's default content type.
        let cfg = from_curl("curl -d 'hello world' h/x").unwrap();
        let r = full(one(&cfg));
        assert_eq!(r.body.as_deref(), Some("hello world"));
        assert_eq!(
            r.headers["Content-Type"],
            "application/x-www-form-urlencoded"
        );
        round_trips(&cfg);
    }

    #[test]
    fn json_option() {
        let cfg = from_curl(r#"curl --json '{"name":"홍길동","age":30}' -XPUT https://h/users/42"#)
            .unwrap();
        let s = one(&cfg);
        assert_eq!(s.name.as_deref(), Some("PUT /users/{id}"));
        let r = full(s);
        assert_eq!(r.method.as_deref(), Some("PUT"));
        assert_eq!(r.json, None);
        assert_eq!(r.body.as_deref(), Some(r#"{"name":"홍길동","age":30}"#));
        assert_eq!(r.headers["Accept"], "application/json");
        assert_eq!(r.headers["Content-Type"], "application/json");
        assert_eq!(r.headers.len(), 2);
        round_trips(&cfg);
        // Already compact with sorted keys: `json:` sends the same bytes.
        let cfg = from_curl(r#"curl --json '{"age":30,"name":"홍길동"}' https://h/u"#).unwrap();
        let r = full(one(&cfg));
        assert_eq!(
            r.json,
            Some(serde_json::json!({"name": "홍길동", "age": 30}))
        );
        assert_eq!(r.headers.len(), 1, "{:?}", r.headers);
        round_trips(&cfg);
    }

    /// curl sends `Accept: */*` on every request unless the command sets Accept
    /// (kept as written) or removes it (`-H 'Accept:'`: nothing sent).
    #[test]
    fn accept_is_curls_unless_the_command_sets_or_removes_it() {
        let accept = |cmd: &str| {
            let cfg = from_curl(cmd).unwrap();
            round_trips(&cfg);
            match one(&cfg).request.clone() {
                Some(RequestSpec::Full(r)) => r
                    .headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("accept"))
                    .map(|(_, v)| v.clone()),
                _ => None,
            }
        };
        assert_eq!(accept("curl http://h/a").as_deref(), Some("*/*"));
        assert_eq!(
            accept("curl -H 'accept: text/html' http://h/a").as_deref(),
            Some("text/html")
        );
        assert_eq!(accept("curl -H 'Accept:' http://h/a"), None);
        assert_eq!(
            accept("curl --json '{}' http://h/a").as_deref(),
            Some("application/json")
        );
    }

    #[test]
    fn get_puts_data_in_the_query() {
        let cfg = from_curl(
            "curl -G -sSL 'http://h/search?a=1' -d q=x --data-urlencode 'k=검색' --max-time 2.5",
        )
        .unwrap();
        let r = full(one(&cfg));
        assert_eq!(r.method.as_deref(), Some("GET"));
        assert_eq!(r.url, "/search?a=1&q=x&k=%EA%B2%80%EC%83%89");
        assert_eq!(r.timeout, Some(crate::Dur(Duration::from_millis(2500))));
        round_trips(&cfg);

        let cfg = from_curl("curl --url http://h/").unwrap();
        let r = full(one(&cfg));
        assert_eq!((r.method.as_deref(), r.url.as_str()), (Some("GET"), "/"));
        assert_eq!(r.headers.len(), 1);
        round_trips(&cfg);
        let cfg = from_curl("curl -I http://h/x -A bot -e http://ref/").unwrap();
        let r = full(one(&cfg));
        assert_eq!(r.method.as_deref(), Some("HEAD"));
        assert_eq!(r.headers["User-Agent"], "bot");
        assert_eq!(r.headers["Referer"], "http://ref/");
    }

    #[test]
    fn errors_are_clear() {
        let e = |c: &str| from_curl(c).unwrap_err().to_string();
        assert_eq!(e("curl --foo http://h/"), "unknown option --foo");
        assert_eq!(e("curl -Q http://h/"), "unknown option -Q");
        assert_eq!(e("curl -H 'a: b'"), "no URL in the curl command");
        assert!(
            e("curl 'http://h/").contains("single quote"),
            "{}",
            e("curl 'http://h/")
        );
        assert!(e("curl \"http://h/").contains("double quote"));
        assert!(e("curl $'http://h/").contains("never closed"));
        assert!(e("curl -X").contains("-X needs a value"));
        assert!(e("curl -F a=b http://h/").contains("not supported"));
        assert!(e("curl -X FETCH http://h/").contains("FETCH"));
        assert!(e("curl http://a/ http://b/").contains("more than one URL"));
        assert!(e("curl ftp://h/").contains("scheme"));
    }

    #[test]
    fn template_braces() {
        let cfg = from_curl(r#"curl http://h/x --json '{"a":"{{b}}"}'"#).unwrap();
        let r = full(one(&cfg));
        assert_eq!(r.body, None);
        assert_eq!(
            crate::decode_body_base64(r.body_base64.as_deref().unwrap()).unwrap(),
            br#"{"a":"{{b}}"}"#
        );
        round_trips(&cfg);
        let e =
            from_curl("curl http://h/x -H 'text/plain' -d '{{x}}' -H 'Content-Type: text/plain'")
                .unwrap_err()
                .to_string();
        assert!(e.contains("not a header"), "{e}");
        let cfg = from_curl("curl http://h/x -d '{{x}}' -H 'Content-Type: text/plain'").unwrap();
        let r = full(one(&cfg));
        assert_eq!(r.body_base64.as_deref(), Some("e3t4fX0="));
        round_trips(&cfg);
    }

    /// The import context of a command typed in `cwd`, written to a scenario in
    /// `dir`.
    fn ctx(cwd: &Path, dir: Option<&Path>) -> CurlContext {
        CurlContext {
            cwd: cwd.to_path_buf(),
            scenario_dir: dir.map(Path::to_path_buf),
        }
    }

    #[test]
    fn body_file_and_line_continuations() {
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("rows.csv"), "a,b\n1,2\n").unwrap();
        let cmd = "curl -X POST \\\r\n  http://h/upload \\\n  -H \"Content-Type: text/csv\" \\\n  --data-binary @rows.csv";
        let cfg = import_curl(cmd, &ctx(work.path(), Some(work.path())))
            .unwrap()
            .config;
        let r = full(one(&cfg));
        assert_eq!(r.body_file.as_deref(), Some("rows.csv"));
        assert_eq!(r.headers["Content-Type"], "text/csv");
        round_trips(&cfg);
    }

    #[test]
    fn data_files_are_read_where_the_command_runs() {
        let root = tempfile::tempdir().unwrap();
        let (typed, out) = (root.path().join("typed"), root.path().join("out"));
        std::fs::create_dir_all(typed.join("data")).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(typed.join("data/rows.csv"), "a,b\r\n1,2\r\n").unwrap();
        std::fs::write(out.join("rows.csv"), "a decoy in the scenario's folder").unwrap();
        let binary = |c: &CurlContext| {
            let cfg = import_curl("curl http://h/u --data-binary @data/rows.csv", c)
                .unwrap()
                .config;
            full(one(&cfg)).body_file.clone().unwrap()
        };
        // Typed in one folder, saved in another: the file the command meant, by a
        // path that reaches it from the scenario's folder.
        let file = typed.join("data/rows.csv").canonicalize().unwrap();
        assert_eq!(binary(&ctx(&typed, Some(&out))), file.to_str().unwrap());
        // Saved beside it: relative, so the folder can move.
        assert_eq!(binary(&ctx(&typed, Some(&typed))), "data/rows.csv");
        // Printed: absolute.
        assert_eq!(binary(&ctx(&typed, None)), file.to_str().unwrap());

        // `-d @file` sends the content without its line breaks, as curl does.
        let cfg = import_curl(
            "curl http://h/u -d @data/rows.csv -H 'Content-Type: text/csv'",
            &ctx(&typed, Some(&out)),
        )
        .unwrap()
        .config;
        assert_eq!(full(one(&cfg)).body.as_deref(), Some("a,b1,2"));
        // `--data-urlencode name@file` encodes the whole content after `name=`.
        let cfg = import_curl(
            "curl http://h/u --data-urlencode k@data/rows.csv -d x=1",
            &ctx(&typed, None),
        )
        .unwrap()
        .config;
        // (in name order and encoded as the engine encodes: `form:` is exact)
        let f = full(one(&cfg)).form.clone().unwrap();
        assert_eq!((f["k"].as_str(), f["x"].as_str()), ("a,b\r\n1,2\r\n", "1"));

        // A missing file: which option, which name, where pado looked.
        for cmd in [
            "curl http://h/u -d @nope.txt",
            "curl http://h/u --data-binary @nope.txt",
        ] {
            let e = import_curl(cmd, &ctx(&typed, Some(&out)))
                .unwrap_err()
                .to_string();
            let opt = cmd.split(' ').nth(2).unwrap();
            assert!(
                e.starts_with(&format!("option {opt} names the file `nope.txt` (")),
                "{e}"
            );
            assert!(e.contains(typed.join("nope.txt").to_str().unwrap()), "{e}");
            assert!(e.contains("cannot be read"), "{e}");
        }
    }

    #[test]
    fn harmless_options_are_ignored_with_one_note() {
        let plain = import_curl("curl http://h/x -d a=1", &CurlContext::current()).unwrap();
        assert!(plain.notes.is_empty(), "{:?}", plain.notes);
        let noisy = "curl -sS --retry 3 --retry-connrefused -o out.json --output-dir /tmp \
            --tlsv1.2 --tls-max 1.3 --noproxy '*' --netrc-optional --connect-timeout 5 \
            --create-dirs --remote-time -w '%{http_code}' --ciphers ECDHE --doh-url https://d/ \
            --retry 4 http://h/x -d a=1";
        let got = import_curl(noisy, &CurlContext::current()).unwrap();
        assert_eq!(got.config, plain.config);
        assert_eq!(got.notes.len(), 1, "{:?}", got.notes);
        let note = &got.notes[0];
        for o in [
            "-s",
            "-S",
            "--retry",
            "--retry-connrefused",
            "-o",
            "--output-dir",
            "--tlsv1.2",
            "--tls-max",
            "--noproxy",
            "--netrc-optional",
            "--connect-timeout",
            "--create-dirs",
            "--remote-time",
            "-w",
            "--ciphers",
            "--doh-url",
        ] {
            assert!(
                note.contains(&format!("{o},")) || note.contains(&format!("{o} (")),
                "{o}: {note}"
            );
        }
        assert_eq!(note.matches("--retry,").count(), 1, "{note}");
        // Option values (paths, patterns, maybe secrets) are not repeated.
        assert!(
            !note.contains("out.json") && !note.contains("http_code"),
            "{note}"
        );
    }

    #[test]
    fn protocol_and_compression_options_are_kept() {
        let http = |c: &str| from_curl(c).unwrap().defaults.http;
        assert_eq!(http("curl --http2 https://h/"), Some(HttpVersion::Auto));
        assert_eq!(
            http("curl --http2-prior-knowledge http://h/"),
            Some(HttpVersion::Http2)
        );
        assert_eq!(http("curl --http2 --http1.1 https://h/"), None);
        assert_eq!(http("curl https://h/"), None);
        let cfg = from_curl("curl -H 'Accept-Encoding: gzip' http://h/").unwrap();
        assert_eq!(full(one(&cfg)).headers["Accept-Encoding"], "gzip");
        assert_eq!(cfg.defaults.compression, None);
        assert_eq!(
            from_curl("curl http://h/").unwrap().defaults.compression,
            None
        );
    }

    #[test]
    fn options_pado_cannot_reproduce_are_refused_with_the_reason() {
        let e = |c: &str| from_curl(c).unwrap_err().to_string();
        assert_eq!(
            e("curl --http1.0 http://h/"),
            "option --http1.0 is not supported: pado sends HTTP/1.1 (or HTTP/2), not HTTP/1.0; drop the option to test the same request over HTTP/1.1"
        );
        assert!(
            e("curl -0 http://h/").starts_with("option -0 is not supported: pado sends HTTP/1.1")
        );
        for o in ["--http3", "--http3-only"] {
            assert!(e(&format!("curl {o} https://h/")).contains("does not speak HTTP/3"));
        }
        for (c, why) in [
            ("curl --request-target '*' http://h/", "request line"),
            ("curl --aws-sigv4 aws:amz http://h/", "authentication"),
            ("curl -x http://p:3128 http://h/", "defaults.proxy"),
            ("curl --variable a=b http://h/", "expand"),
            ("curl --etag-compare e.txt http://h/", "-H"),
        ] {
            assert!(e(c).contains(why), "{c}: {}", e(c));
        }
    }

    #[test]
    fn tokenizer_quotes() {
        let t = tokenize(r#"a 'b c' "d \"e\" \$f" $'g\x41\u00e9\101\n' h\ i ''"#).unwrap();
        assert_eq!(t, vec!["a", "b c", "d \"e\" $f", "gAéA\n", "h i", ""]);
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = fastrand::Rng::with_seed(0x853c49e6748fea9b);
        let words = [
            "curl",
            "-X",
            "POST",
            "-H",
            "'a: b'",
            "'c;'",
            "-d",
            "x=1",
            "'q=%EA%B0%80'",
            "--json",
            "'{\"a\":[1,\"가\"]}'",
            "$'\\x41\\n\\''",
            "http://h/x?y=1",
            "h:8080",
            "\\\n",
            "-G",
            "-u",
            "u:p",
            "-k",
            "-b",
            "'s=1'",
            "--max-time",
            "0.5",
            "-sSL",
            "--data-urlencode",
            "'=가 나'",
            "-A",
            "\"x\\\"y\"",
            "--url",
            "-e",
            "@f",
            "'content-type: application/json'",
            "'{'",
            "--compressed",
            "-I",
            "$\"",
            "'",
            "\"",
            "-",
            "--",
            "'x: \\r'",
            "$'\\r\\0\\cA'",
            "-XGET",
            "-H'z: 1'",
            "'{{x}}'",
            "{{",
            "'k={{v}}'",
        ];
        let bytes = b" -'\"$\\\nabcXHdkG:=/{}@x01";
        let mut imported = 0;
        for _ in 0..4000 {
            let mut s = String::new();
            for _ in 0..rng.usize(..12) {
                if rng.usize(..4) == 0 {
                    s.push(bytes[rng.usize(..bytes.len())] as char);
                } else {
                    s.push_str(words[rng.usize(..words.len())]);
                    s.push(' ');
                }
            }
            if let Ok(cfg) = from_curl(&s) {
                imported += 1;
                let y = to_yaml(&cfg);
                match crate::parse_str(&y, "x") {
                    Ok(back) => assert_eq!(back, cfg, "{s:?}\n{y}"),
                    Err(e) => panic!("{s:?}\n{y}\n{e}"),
                }
            }
        }
        assert!(imported > 100, "only {imported} imports succeeded");
    }

    #[test]
    fn a_curl_import_s_body_files_are_read_against_the_folder_of_the_file_written() {
        let ctx = CurlContext::for_output(Some(Path::new("tests/파도.yaml")));
        assert_eq!(ctx.scenario_dir.as_deref(), Some(Path::new("tests")));
        assert_eq!(ctx.cwd, CurlContext::current().cwd);
        let ctx = CurlContext::for_output(Some(Path::new("파도.yaml")));
        assert_eq!(ctx.scenario_dir.as_deref(), Some(Path::new(".")));
        assert_eq!(CurlContext::for_output(None).scenario_dir, None);
    }
}
