//! What `--output KIND=URL` and the scenario's `outputs:` name: the kind of store,
//! its URL, and for InfluxDB's v2 API the environment variable holding the token.

use std::fmt;

/// Where the InfluxDB v2 API's token is read from unless `token_env` names another
/// variable (k6 reads `K6_INFLUXDB_TOKEN` the same way).
pub const DEFAULT_TOKEN_ENV: &str = "PADO_INFLUXDB_TOKEN";

/// What an `--output` value starts its URL with to name an environment variable
/// holding the URL instead (`--output prometheus=env:PADO_OUTPUT_URL`): so a URL
/// with credentials reaches generators elsewhere (agents, Kubernetes pods) through
/// their own environment, never through their arguments.
pub const ENV_URL_PREFIX: &str = "env:";

/// `KIND=env:VAR` as (kind, variable), if `flag` is of that form.
pub fn env_url_ref(flag: &str) -> Option<(&str, &str)> {
    let (kind, url) = flag.split_once('=')?;
    Some((kind.trim(), url.trim().strip_prefix(ENV_URL_PREFIX)?))
}

/// What replaces a credential in a shown URL.
pub const MASK: &str = "***";

/// Query parameter names (compared without case) whose values are credentials:
/// InfluxDB 1.x's `u` and `p`, and the names tokens and keys usually travel under.
/// The user name `u` is masked too: half of a credential is still one.
pub const CREDENTIAL_PARAMS: [&str; 14] = [
    "u",
    "p",
    "password",
    "passwd",
    "pwd",
    "token",
    "access_token",
    "api_key",
    "apikey",
    "key",
    "secret",
    "auth",
    "authorization",
    "signature",
];

/// Whether a query parameter named `name` (as written, percent-encoded or not)
/// carries a credential ([`CREDENTIAL_PARAMS`]).
pub fn is_credential_param(name: &str) -> bool {
    let decoded = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    let n = decoded.trim();
    CREDENTIAL_PARAMS.iter().any(|c| c.eq_ignore_ascii_case(n))
}

/// A query string (`a=1&token=x`, without its `?`) with the value of each
/// credential parameter replaced by [`MASK`], every other pair as written.
fn masked_query(query: &str) -> String {
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !value.is_empty() && is_credential_param(name) => {
                format!("{name}={MASK}")
            }
            _ => pair.to_string(),
        })
        .collect();
    pairs.join("&")
}

/// `raw` — an output URL or `KIND=URL` as the user wrote it, perhaps not even a
/// URL — with any user and password and the values of credential query parameters
/// replaced by [`MASK`]: what an error message about a refused output quotes, so
/// that refusing a URL does not print the secret in it.
pub fn masked(raw: &str) -> String {
    let mut out = raw.to_string();
    if let Some(scheme_end) = out.find("://") {
        let start = scheme_end + 3;
        let end = out[start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| start + i);
        if let Some(at) = out[start..end].rfind('@') {
            out.replace_range(start..start + at, MASK);
        }
    }
    if let Some(q) = out.find('?') {
        let end = out[q..].find('#').map_or(out.len(), |i| q + i);
        let query = masked_query(&out[q + 1..end]);
        out.replace_range(q + 1..end, &query);
    }
    out
}

/// The stores pado writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Prometheus remote write 1.0 (snappy-compressed protobuf `WriteRequest`).
    Prometheus,
    /// InfluxDB line protocol: `/write?db=` (v1) or `/api/v2/write?org=&bucket=` (v2).
    InfluxDb,
    /// OpenTelemetry OTLP/HTTP protobuf to `/v1/metrics`.
    Otlp,
}

impl Kind {
    /// Every kind, in the order docs list them.
    pub const ALL: [Kind; 3] = [Kind::Prometheus, Kind::InfluxDb, Kind::Otlp];

    /// The name users write (`prometheus`, `influxdb`, `otlp`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Prometheus => "prometheus",
            Kind::InfluxDb => "influxdb",
            Kind::Otlp => "otlp",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an output's description was refused (the caller adds the flag or file:line).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    /// Not `KIND=URL`.
    #[error("`{0}`: give KIND=URL, e.g. prometheus=http://127.0.0.1:9090/api/v1/write (kinds: prometheus, influxdb, otlp; raw-json=FILE, raw-csv=FILE for one line per request)")]
    Shape(String),
    /// An unknown kind.
    #[error("unknown output kind `{0}` (kinds: prometheus, influxdb, otlp; raw-json, raw-csv)")]
    Kind(String),
    /// A URL that does not parse or is not http(s).
    #[error("output URL `{0}`: {1}")]
    Url(String, String),
    /// An InfluxDB URL that is neither API.
    #[error("influxdb URL `{0}`: give the v1 form http://HOST:8086/write?db=NAME or the v2 form http://HOST:8086/api/v2/write?org=ORG&bucket=BUCKET")]
    InfluxApi(String),
    /// An environment variable name that cannot be one.
    #[error("token_env `{0}`: give the name of an environment variable (letters, digits, _)")]
    TokenEnv(String),
}

/// One output: a kind and where its store listens.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// The store.
    pub kind: Kind,
    /// The full write URL (path and query included).
    pub url: url::Url,
    /// InfluxDB v2: the environment variable whose value is sent as
    /// `Authorization: Token …` (the value itself is never stored here, so it cannot
    /// reach results, logs or errors by way of this struct).
    pub token_env: Option<String>,
}

impl OutputSpec {
    /// `KIND=URL` as `--output` takes it.
    pub fn parse_flag(s: &str) -> Result<OutputSpec, SpecError> {
        let (kind, url) = s
            .split_once('=')
            .ok_or_else(|| SpecError::Shape(masked(s)))?;
        OutputSpec::new(kind.trim(), url.trim(), None)
    }

    /// An output of kind `kind` to `url`; `token_env` overrides where InfluxDB v2's
    /// token is read from.
    pub fn new(kind: &str, url: &str, token_env: Option<&str>) -> Result<OutputSpec, SpecError> {
        let kind = Kind::parse(kind).ok_or_else(|| SpecError::Kind(kind.to_string()))?;
        let parsed =
            url::Url::parse(url).map_err(|e| SpecError::Url(masked(url), e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(SpecError::Url(
                masked(url),
                "give an http:// or https:// URL".into(),
            ));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(SpecError::Url(masked(url), "no host".into()));
        }
        if kind == Kind::InfluxDb && influx_api(&parsed).is_none() {
            return Err(SpecError::InfluxApi(masked(url)));
        }
        if let Some(t) = token_env {
            if t.is_empty() || !t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(SpecError::TokenEnv(t.to_string()));
            }
        }
        Ok(OutputSpec {
            kind,
            url: parsed,
            token_env: token_env.map(str::to_string),
        })
    }

    /// The URL as results and messages show it: user and password replaced by
    /// [`MASK`], and so is the value of every query parameter whose name says it is
    /// a credential ([`is_credential_param`]: InfluxDB v1's `u` and `p`, `token`,
    /// `api_key`...), so that `run.json`, `summary.json` and the terminal never
    /// carry a secret someone wrote into an `--output` URL.
    pub fn shown_url(&self) -> String {
        let mut u = self.url.clone();
        if !u.username().is_empty() || u.password().is_some() {
            let _ = u.set_username(MASK);
            let _ = u.set_password(None);
        }
        if let Some(q) = self.url.query() {
            u.set_query(Some(&masked_query(q)));
        }
        u.to_string()
    }

    /// The user and password written into the URL (`http://user:pass@host/...`),
    /// percent-decoded: sent as HTTP Basic authentication, which InfluxDB 1.x,
    /// Prometheus' `basic_auth` and collectors' basic-auth extensions all read.
    pub fn basic_auth(&self) -> Option<(String, String)> {
        let user = self.url.username();
        let pass = self.url.password();
        if user.is_empty() && pass.is_none() {
            return None;
        }
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        Some((decode(user), pass.map(decode).unwrap_or_default()))
    }

    /// Every credential written into the URL (the password, the values of
    /// credential query parameters, each as written and percent-decoded): what is
    /// masked should a store's answer quote it back into an error message.
    pub fn url_secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(p) = self.url.password() {
            out.push(p.to_string());
            if let Some((_, decoded)) = self.basic_auth() {
                out.push(decoded);
            }
        }
        if let Some(q) = self.url.query() {
            for pair in q.split('&') {
                if let Some((name, value)) = pair.split_once('=') {
                    if !value.is_empty() && is_credential_param(name) {
                        out.push(value.to_string());
                        out.extend(
                            url::form_urlencoded::parse(pair.as_bytes())
                                .map(|(_, v)| v.into_owned()),
                        );
                    }
                }
            }
        }
        out.retain(|s| !s.is_empty());
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out.dedup();
        out
    }

    /// The label people read: `prometheus http://127.0.0.1:9090/api/v1/write`.
    pub fn label(&self) -> String {
        format!("{} {}", self.kind, self.shown_url())
    }

    /// Which InfluxDB API the URL names (`None` for other kinds).
    pub fn influx_api(&self) -> Option<InfluxApi> {
        (self.kind == Kind::InfluxDb)
            .then(|| influx_api(&self.url))
            .flatten()
    }

    /// The variable InfluxDB v2's token is read from.
    pub fn token_var(&self) -> &str {
        self.token_env.as_deref().unwrap_or(DEFAULT_TOKEN_ENV)
    }
}

/// The two InfluxDB write APIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfluxApi {
    /// `/write?db=` (1.x; no token).
    V1,
    /// `/api/v2/write?org=&bucket=` (2.x and 1.8+ compatibility; `Authorization: Token`).
    V2,
}

fn influx_api(u: &url::Url) -> Option<InfluxApi> {
    let has = |k: &str| u.query_pairs().any(|(n, v)| n == k && !v.is_empty());
    let path = u.path().trim_end_matches('/');
    if path.ends_with("/api/v2/write") && has("bucket") && has("org") {
        Some(InfluxApi::V2)
    } else if path.ends_with("/write") && !path.ends_with("/api/v2/write") && has("db") {
        Some(InfluxApi::V1)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_refuse_clearly() {
        let p = OutputSpec::parse_flag("prometheus=http://127.0.0.1:9090/api/v1/write").unwrap();
        assert_eq!(p.kind, Kind::Prometheus);
        assert_eq!(p.url.path(), "/api/v1/write");
        assert!(matches!(
            OutputSpec::parse_flag("prometheus"),
            Err(SpecError::Shape(_))
        ));
        assert_eq!(
            OutputSpec::parse_flag("graphite=http://x/"),
            Err(SpecError::Kind("graphite".into()))
        );
        assert!(matches!(
            OutputSpec::parse_flag("otlp=ftp://x/v1/metrics"),
            Err(SpecError::Url(..))
        ));
    }

    #[test]
    fn influx_urls_name_their_api() {
        let v1 = OutputSpec::parse_flag("influxdb=http://127.0.0.1:8086/write?db=pado").unwrap();
        assert_eq!(v1.influx_api(), Some(InfluxApi::V1));
        let v2 =
            OutputSpec::parse_flag("influxdb=http://127.0.0.1:8086/api/v2/write?org=o&bucket=b")
                .unwrap();
        assert_eq!(v2.influx_api(), Some(InfluxApi::V2));
        assert!(matches!(
            OutputSpec::parse_flag("influxdb=http://127.0.0.1:8086/write"),
            Err(SpecError::InfluxApi(_))
        ));
        assert!(matches!(
            OutputSpec::new("influxdb", "http://h/write?db=x", Some("BAD-NAME")),
            Err(SpecError::TokenEnv(_))
        ));
    }

    #[test]
    fn shown_urls_drop_credentials() {
        let p = OutputSpec::parse_flag("prometheus=http://user:secret@127.0.0.1:9090/api/v1/write")
            .unwrap();
        assert!(!p.shown_url().contains("secret"));
        assert!(!p.label().contains("user"));
        assert_eq!(p.shown_url(), "http://***@127.0.0.1:9090/api/v1/write");
        assert_eq!(p.basic_auth(), Some(("user".into(), "secret".into())));
        assert_eq!(p.url_secrets(), vec!["secret".to_string()]);
    }

    #[test]
    fn shown_urls_mask_credential_query_parameters_and_nothing_else() {
        // InfluxDB 1.x takes its user and password as `u` and `p`.
        let v1 = OutputSpec::parse_flag(
            "influxdb=http://127.0.0.1:8086/write?db=파도&u=admin&p=s3cr3t%2Dvalue&API_KEY=k-1&rp=",
        )
        .unwrap();
        // A refused URL's error quotes it masked too.
        let e =
            OutputSpec::parse_flag("influxdb=http://uq7x:pw-9@127.0.0.1:8086/wrte?db=x&p=s3cr3t#f")
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("http://***@127.0.0.1:8086/wrte?db=x&p=***#f"),
            "{e}"
        );
        assert!(
            !e.contains("s3cr3t") && !e.contains("pw-9") && !e.contains("uq7x"),
            "{e}"
        );
        assert_eq!(masked("no url here"), "no url here");
        let shown = v1.shown_url();
        assert_eq!(
            shown,
            "http://127.0.0.1:8086/write?db=%ED%8C%8C%EB%8F%84&u=***&p=***&API_KEY=***&rp="
        );
        for s in ["admin", "s3cr3t", "k-1"] {
            assert!(!v1.label().contains(s), "{s} in {}", v1.label());
        }
        assert!(v1.url_secrets().contains(&"s3cr3t-value".to_string()));
        assert!(v1.url_secrets().contains(&"s3cr3t%2Dvalue".to_string()));
        assert_eq!(v1.basic_auth(), None);
        // Parameters that are not credentials, and a URL without any, are unchanged.
        let plain =
            OutputSpec::parse_flag("influxdb=http://127.0.0.1:8086/write?db=pado&keep=1&up=2")
                .unwrap();
        assert_eq!(
            plain.shown_url(),
            "http://127.0.0.1:8086/write?db=pado&keep=1&up=2"
        );
        assert!(plain.url_secrets().is_empty());
    }
}
