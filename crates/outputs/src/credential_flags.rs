//! `pado run` flags whose values can be credentials (headers, `--proxy`, `--output`), judged where they would be
//! copied into something other people read: the arguments of a Kubernetes Job
//! (`pado k8s run`/`render`, readable by anyone who may read Jobs or pods in the
//! namespace) and the job an agent is sent (`pado run --generators`, carried over
//! the network and into the agent's process list). Such a value is refused, never
//! masked (a masked value would not work), with the replacement that keeps it out:
//! a value read from the generator's own environment (`{{ env.X }}` in a header,
//! `HTTPS_PROXY` for a proxy, `--output KIND=env:VAR` for an output's URL), which
//! on Kubernetes comes from a Secret through `--env-from-secret`.
//!
//! Messages never repeat a credential: headers are named without their value, URLs
//! are shown masked ([`masked`]).

use crate::spec::{env_url_ref, masked};

/// Header names (compared without case) whose values are credentials.
const CREDENTIAL_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
];

/// Parts of a header's name that say its value is a credential (`X-Auth-Token`,
/// `X-Client-Secret`, `Api-Key`).
const CREDENTIAL_NAME_PARTS: [&str; 4] = ["token", "secret", "key", "auth"];

/// Authentication schemes a credential header's value may start with in clear
/// (RFC 9110 and common practice): the credential itself must be a template.
const AUTH_SCHEMES: [&str; 8] = [
    "bearer",
    "basic",
    "token",
    "digest",
    "apikey",
    "negotiate",
    "bot",
    "jwt",
];

/// Whether a header named `name` carries a credential by its name.
pub fn is_credential_header(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    CREDENTIAL_HEADERS.contains(&n.as_str()) || CREDENTIAL_NAME_PARTS.iter().any(|p| n.contains(p))
}

/// `value` without its template holes (`{{ ... }}`); `None` when it has none. An
/// unclosed `{{` keeps the rest as literal text.
fn literal_text(value: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = value;
    let mut holes = 0;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open..].find("}}") else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push(' ');
        rest = &rest[open + close + 2..];
        holes += 1;
    }
    out.push_str(rest);
    (holes > 0).then_some(out)
}

/// Whether a credential header's `value` holds its secret only in template holes
/// (`Bearer {{ env.API_TOKEN }}`, `sid={{ env.SID }}`, `{{ login.token }}`): its
/// literal text is at most an authentication scheme and cookie names (`name=`).
pub fn credential_only_in_templates(value: &str) -> bool {
    let Some(literal) = literal_text(value) else {
        return value.trim().is_empty();
    };
    literal
        .split(|c: char| c.is_whitespace() || c == ';' || c == ',')
        .filter(|w| !w.is_empty())
        .all(|w| {
            AUTH_SCHEMES.contains(&w.to_ascii_lowercase().as_str())
                || w.strip_suffix('=').is_some_and(|n| {
                    !n.is_empty()
                        && n.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
                })
        })
}

/// An environment variable's name for a header's value: `X-Api-Key` → `X_API_KEY`.
fn env_name_for(header: &str) -> String {
    header
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The first authentication scheme `value` starts with, as written.
fn scheme_of(value: &str) -> Option<&str> {
    let first = value.split_whitespace().next()?;
    (AUTH_SCHEMES.contains(&first.to_ascii_lowercase().as_str()) && value.trim() != first)
        .then_some(first)
}

/// Whether a proxy URL (`http://user:pass@host:3128`, or without a scheme) carries
/// a user or password.
pub fn proxy_has_credentials(proxy: &str) -> bool {
    let with_scheme = if proxy.contains("://") {
        proxy.to_string()
    } else {
        format!("http://{proxy}")
    };
    masked(&with_scheme) != with_scheme
}

/// Whether an `--output KIND=URL` carries credentials in its URL (a user, a
/// password, or a credential query parameter such as `p=`, `token=`, `api_key=`).
/// `KIND=env:VAR` never does: the URL is the generator's environment's.
pub fn output_has_credentials(flag: &str) -> bool {
    env_url_ref(flag).is_none() && masked(flag) != flag
}

/// Where the refused flags would have gone, for the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination<'a> {
    /// A Kubernetes Job's arguments: the replacement reads a Secret
    /// (`--env-from-secret`, the one given or a placeholder) in namespace `ns`.
    K8sJob {
        /// The Secret `--env-from-secret` names, if given.
        env_secret: Option<&'a str>,
        /// The namespace, for the `kubectl` line (`None`: the context's).
        namespace: Option<&'a str>,
    },
    /// The jobs `pado run --generators` sends to agents.
    AgentJobs,
}

/// The `pado run` flags whose values can be credentials.
#[derive(Clone, Copy, Debug, Default)]
pub struct CredentialFlags<'a> {
    /// `--header NAME: VALUE` values.
    pub headers: &'a [String],
    /// `--proxy`.
    pub proxy: Option<&'a str>,
    /// `--output KIND=URL` values.
    pub outputs: &'a [String],
}

/// A flag refused: the message names it (never its credential) and its
/// replacement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CredentialFlagError(pub String);

/// Refuses the flags in `run` that would copy a credential to `dest`, naming the
/// flag and showing its replacement.
pub fn refuse_credentials(
    run: &CredentialFlags<'_>,
    dest: Destination<'_>,
) -> Result<(), CredentialFlagError> {
    if let Destination::K8sJob {
        env_secret,
        namespace,
    } = dest
    {
        let secret = env_secret.unwrap_or("NAME");
        let create = |var: &str, value: &str| {
            let ns = namespace.map(|n| format!("-n {n} ")).unwrap_or_default();
            format!("`kubectl {ns}create secret generic {secret} --from-literal={var}='{value}'`")
        };
        let where_ = "after `--` would be written into the Job's arguments in plain text, where anyone who can read Jobs or pods in the namespace sees it";
        for h in run.headers {
            let Some((name, value)) = h.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            if !is_credential_header(name) || credential_only_in_templates(value) {
                continue;
            }
            let var = env_name_for(name);
            let template = match scheme_of(value) {
                Some(scheme) => format!("{scheme} {{{{ env.{var} }}}}"),
                None => format!("{{{{ env.{var} }}}}"),
            };
            return Err(CredentialFlagError(format!(
                "`--header {name}: ***` {where_}. Keep the value in a Secret and let each pod read it from its environment: {}, then `pado k8s run ... --env-from-secret {secret} -- --header '{name}: {template}'`",
                create(&var, "VALUE")
            )));
        }
        if let Some(p) = run.proxy.filter(|p| proxy_has_credentials(p)) {
            let shown = masked(
                if p.contains("://") {
                    p.to_string()
                } else {
                    format!("http://{p}")
                }
                .as_str(),
            );
            return Err(CredentialFlagError(format!(
                "`--proxy {shown}` {where_}. Keep the proxy's URL in a Secret as HTTPS_PROXY (and HTTP_PROXY for http targets), which every pod reads as its proxy: {}, then `pado k8s run ... --env-from-secret {secret}` without `--proxy`",
                create("HTTPS_PROXY", "http://USER:PASSWORD@HOST:PORT")
            )));
        }
        if let Some(o) = run.outputs.iter().find(|o| output_has_credentials(o)) {
            let kind = o.split_once('=').map_or("KIND", |(k, _)| k.trim());
            return Err(CredentialFlagError(format!(
                "`--output {}` {where_}. Keep the URL in a Secret and name its variable instead: {}, then `pado k8s run ... --env-from-secret {secret} -- --output {kind}=env:PADO_OUTPUT_URL`",
                masked(o),
                create("PADO_OUTPUT_URL", "URL")
            )));
        }
    } else if let Some(o) = run.outputs.iter().find(|o| output_has_credentials(o)) {
        let kind = o.split_once('=').map_or("KIND", |(k, _)| k.trim());
        return Err(CredentialFlagError(format!(
            "`--output {}`: its credentials would travel in plain text in every agent's job and its `pado run` arguments. Put the URL in each agent's environment instead (`PADO_OUTPUT_URL='URL' pado agent ...`) and give `--output {kind}=env:PADO_OUTPUT_URL`: each generator reads it from its own environment",
            masked(o)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Owned flag values, as a command line gives them.
    struct Flags {
        headers: Vec<String>,
        proxy: Option<String>,
        outputs: Vec<String>,
    }

    impl Flags {
        fn get(&self) -> CredentialFlags<'_> {
            CredentialFlags {
                headers: &self.headers,
                proxy: self.proxy.as_deref(),
                outputs: &self.outputs,
            }
        }
    }

    fn run_with(headers: &[&str], proxy: Option<&str>, outputs: &[&str]) -> Flags {
        Flags {
            headers: headers.iter().map(|s| s.to_string()).collect(),
            proxy: proxy.map(str::to_string),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
        }
    }

    const K8S: Destination<'static> = Destination::K8sJob {
        env_secret: Some("checkout-env"),
        namespace: Some("perf"),
    };

    fn refusal(r: &Flags, dest: Destination<'_>) -> String {
        refuse_credentials(&r.get(), dest).unwrap_err().0
    }

    #[test]
    fn credential_headers_with_literal_values_are_refused_without_their_value() {
        for (h, name) in [
            ("Authorization: Bearer s3cr3t-t0ken-v4lue", "Authorization"),
            (
                "proxy-authorization: Basic dXNlcjpwYXNz",
                "proxy-authorization",
            ),
            ("Cookie: sid=s3cr3t-t0ken-v4lue", "Cookie"),
            ("X-Api-Key: s3cr3t-t0ken-v4lue", "X-Api-Key"),
            ("X-Auth-Token: s3cr3t-t0ken-v4lue", "X-Auth-Token"),
            ("X-Client-Secret: s3cr3t-t0ken-v4lue", "X-Client-Secret"),
            ("Api-Key: abc{{ env.REST }}", "Api-Key"),
            (
                "Authorization: Bearer s3cr3t-t0ken-v4lue {{ env.X }}",
                "Authorization",
            ),
        ] {
            let m = refusal(&run_with(&[h], None, &[]), K8S);
            assert!(
                m.starts_with(&format!("`--header {name}: ***`")),
                "{h}: {m}"
            );
            assert!(m.contains("--env-from-secret checkout-env"), "{m}");
            assert!(
                m.contains("kubectl -n perf create secret generic checkout-env"),
                "{m}"
            );
            assert!(
                !m.contains("s3cr3t") && !m.contains("dXNlcjpwYXNz") && !m.contains("abc"),
                "{m}"
            );
        }
        // The exact replacement, the scheme kept.
        let m = refusal(&run_with(&["Authorization: Bearer s3cr3t"], None, &[]), K8S);
        assert!(
            m.contains("--from-literal=AUTHORIZATION='VALUE'`")
                && m.ends_with("-- --header 'Authorization: Bearer {{ env.AUTHORIZATION }}'`"),
            "{m}"
        );
        let m = refusal(
            &run_with(&["X-Api-Key: k"], None, &[]),
            Destination::K8sJob {
                env_secret: None,
                namespace: None,
            },
        );
        assert!(
            m.contains("`kubectl create secret generic NAME --from-literal=X_API_KEY='VALUE'`")
                && m.contains(
                    "--env-from-secret NAME -- --header 'X-Api-Key: {{ env.X_API_KEY }}'"
                ),
            "{m}"
        );
    }

    #[test]
    fn credentials_in_templates_and_ordinary_headers_pass() {
        for h in [
            "Authorization: Bearer {{ env.API_TOKEN }}",
            "Authorization: {{ env.AUTH }}",
            "X-Api-Key: {{ env.KEY }}",
            "Cookie: sid={{ env.SID }}; lang={{ env.LANG }}",
            "X-Auth-Token: {{ login.token }}",
            "Accept: application/json",
            "X-Request-Name: 검색",
            "Authorization:",
        ] {
            assert!(
                refuse_credentials(&run_with(&[h], None, &[]).get(), K8S).is_ok(),
                "{h}"
            );
        }
        // Agents get headers as before (they are the run's to send).
        assert!(refuse_credentials(
            &run_with(&["Authorization: Bearer s3cr3t"], None, &[]).get(),
            Destination::AgentJobs
        )
        .is_ok());
    }

    #[test]
    fn proxies_with_a_user_are_refused_pointing_to_https_proxy() {
        for p in [
            "http://user:s3cr3t@proxy.corp:3128",
            "user:s3cr3t@proxy.corp:3128",
            "http://user@proxy.corp:3128",
        ] {
            let m = refusal(&run_with(&[], Some(p), &[]), K8S);
            assert!(m.starts_with("`--proxy http://***@proxy.corp:3128`"), "{m}");
            assert!(m.contains("--from-literal=HTTPS_PROXY="), "{m}");
            assert!(
                m.contains("--env-from-secret checkout-env` without `--proxy`"),
                "{m}"
            );
            assert!(!m.contains("s3cr3t") && !m.contains("user"), "{m}");
        }
        for p in ["http://proxy.corp:3128", "proxy.corp:3128"] {
            assert!(
                refuse_credentials(&run_with(&[], Some(p), &[]).get(), K8S).is_ok(),
                "{p}"
            );
        }
    }

    #[test]
    fn outputs_with_credentials_are_refused_for_jobs_and_agents() {
        for o in [
            "prometheus=http://user:s3cr3t@127.0.0.1:9090/api/v1/write",
            "influxdb=http://127.0.0.1:8086/write?db=pado&u=me&p=s3cr3t",
            "otlp=http://127.0.0.1:4318/v1/metrics?api_key=s3cr3t",
            "prometheus=http://127.0.0.1:9090/api/v1/write?token=s3cr3t",
        ] {
            let kind = o.split_once('=').unwrap().0;
            let k = refusal(&run_with(&[], None, &[o]), K8S);
            assert!(k.contains("***"), "{k}");
            assert!(
                k.ends_with(&format!(
                    "--env-from-secret checkout-env -- --output {kind}=env:PADO_OUTPUT_URL`"
                )),
                "{k}"
            );
            let a = refusal(&run_with(&[], None, &[o]), Destination::AgentJobs);
            assert!(
                a.contains(&format!("--output {kind}=env:PADO_OUTPUT_URL")),
                "{a}"
            );
            for m in [k, a] {
                assert!(!m.contains("s3cr3t") && !m.contains("user:"), "{m}");
            }
        }
        for o in [
            "prometheus=http://127.0.0.1:9090/api/v1/write",
            "influxdb=http://127.0.0.1:8086/write?db=pado",
            "prometheus=env:PADO_OUTPUT_URL",
        ] {
            let r = run_with(&[], None, &[o]);
            assert!(refuse_credentials(&r.get(), K8S).is_ok(), "{o}");
            assert!(
                refuse_credentials(&r.get(), Destination::AgentJobs).is_ok(),
                "{o}"
            );
        }
    }
}
