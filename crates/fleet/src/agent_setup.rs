//! What `pado agent` and a coordinator need before anything listens or is asked:
//! the shared token (an agent never starts without one: whoever reaches its port
//! could send it jobs), the names this host answers to, the agent's TLS identity and
//! what it says of it, and the warning for an agent others reach in clear text.
//! Every refusal names the flag or variable to fix, never the token's text.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::access::Token;
use crate::agent::TOKEN_ENV;
use crate::tls::AgentIdentity;

/// Most bytes a token file may have (a token is a line).
pub const MAX_TOKEN_FILE: u64 = 4096;

/// Why an agent or a coordinator cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A setting the user gave (or left out) is wrong; the message names it.
    #[error("{0}")]
    Invalid(String),
    /// A file could not be written.
    #[error("{0}")]
    Io(String),
}

/// The coordinator's token from the environment: every agent requires one, so its
/// absence or a malformed one is said before any agent is asked.
pub fn coordinator_token() -> Result<Token, SetupError> {
    let text = std::env::var(TOKEN_ENV).unwrap_or_default();
    if text.trim().is_empty() {
        return Err(SetupError::Invalid(format!(
            "--generators: set {TOKEN_ENV} to the agents' token (each `pado agent` was started with one)"
        )));
    }
    Token::new(&text).map_err(|e| SetupError::Invalid(format!("{TOKEN_ENV}: {e}")))
}

/// The agent's token: `token_file`'s first line (`--token-file`), or
/// `PADO_AGENT_TOKEN`. Without one the agent does not start.
pub fn agent_token(token_file: Option<&Path>) -> Result<Token, SetupError> {
    let (text, from) = match token_file {
        Some(path) => {
            let from = format!("--token-file {}", path.display());
            let text = pado_scenario::limits::read_capped_string(path, MAX_TOKEN_FILE)
                .map_err(|e| SetupError::Invalid(format!("{from}: {e}")))?;
            let first = text.lines().next().unwrap_or("").to_string();
            (first, from)
        }
        None => (
            std::env::var(TOKEN_ENV).unwrap_or_default(),
            TOKEN_ENV.to_string(),
        ),
    };
    if text.trim().is_empty() {
        return Err(SetupError::Invalid(format!(
            "pado agent needs a token that coordinators must send: set {TOKEN_ENV} (e.g. `export {TOKEN_ENV}=$(openssl rand -hex 32)`) or give --token-file FILE, and set the same {TOKEN_ENV} where you run `pado run --generators`"
        )));
    }
    Token::new(&text).map_err(|e| SetupError::Invalid(format!("{from}: {e}")))
}

/// This host's name as the system has it (allowed in `Host` besides addresses).
pub fn system_host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `buf.len()` bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = std::str::from_utf8(&buf[..end]).ok()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// How the agent was asked to speak TLS (`--tls`, `--tls-cert`, `--tls-key`,
/// `--tls-cert-out`).
#[derive(Clone, Debug, Default)]
pub struct TlsSettings {
    /// Serve HTTPS.
    pub tls: bool,
    /// The certificate to serve (with `key`); else one is generated.
    pub cert: Option<PathBuf>,
    /// Its private key.
    pub key: Option<PathBuf>,
    /// Where to write a generated certificate, for coordinators to trust.
    pub cert_out: Option<PathBuf>,
}

/// The agent's TLS identity with `tls`: the given certificate and key, or a new
/// self-signed certificate for `host_names` and the listening address (written to
/// `cert_out` when asked). `None` without `tls`.
pub fn tls_identity(
    t: &TlsSettings,
    listen: SocketAddr,
    host_names: &[String],
) -> Result<Option<AgentIdentity>, SetupError> {
    if !t.tls {
        return Ok(None);
    }
    let id = match (&t.cert, &t.key) {
        (Some(cert), Some(key)) => AgentIdentity::from_files(cert, key),
        _ => {
            let mut names = host_names.to_vec();
            if !listen.ip().is_unspecified() {
                names.push(listen.ip().to_string());
            }
            AgentIdentity::generate(&names)
        }
    }
    .map_err(|e| SetupError::Invalid(format!("--tls: {e}")))?;
    if let (Some(out), Some(pem)) = (&t.cert_out, &id.generated_pem) {
        std::fs::write(out, pem)
            .map_err(|e| SetupError::Io(format!("--tls-cert-out {}: {e}", out.display())))?;
    }
    Ok(Some(id))
}

/// What the agent says of its certificate at start: the fingerprint coordinators
/// pin, and for a generated one the names it is valid for.
pub fn certificate_line(id: &AgentIdentity) -> String {
    let fp = id.fingerprint;
    if id.generated_for.is_empty() {
        format!("TLS certificate {fp}; coordinators pin it with --agent-fingerprint {fp}, or verify it with --agent-ca")
    } else {
        format!(
            "TLS certificate {fp} (generated for {}; new at every start); coordinators pin it with --agent-fingerprint {fp}",
            id.generated_for.join(", ")
        )
    }
}

/// A warning for an agent that others can reach in clear text: its token and
/// jobs would cross the network unencrypted. `None` with TLS or on loopback.
pub fn cleartext_warning(listen: SocketAddr, tls: bool) -> Option<String> {
    (!tls && !listen.ip().is_loopback()).then(|| {
        format!(
            "warning: pado agent listens on {listen} without TLS: the token and every job cross the network in clear text; use --tls (and --agent-fingerprint on the coordinator), or keep plain HTTP to loopback and networks you trust (`pado docs scaling-out`)"
        )
    })
}

#[cfg(test)]
mod tests;
