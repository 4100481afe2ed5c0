//! k6 scripts on pado (`pado run script.js`): an embedded JavaScript engine
//! (QuickJS, through `rquickjs`) runs a k6 script unchanged, and pado's own
//! engine does the load underneath.
//!
//! - [`load`] reads the script: every import checked ([`imports`]: `k6/browser`,
//!   extensions, missing files and uncached remote modules refused at start with
//!   file and line), every module compiled once to bytecode, and
//!   `export const options` read once and turned into pado's configuration
//!   ([`options`]).
//! - [`Script`] is the engine's [`pado_engine::script::ScriptHost`]: each VU is a
//!   QuickJS context on a small stackful coroutine ([`vu`]); its `http.get`
//!   suspends the coroutine and the VU's task on a pado worker sends the request
//!   with pado's own client, so thousands of VUs share a core.
//! - A TypeScript script (`script.ts`) and its `.ts` modules have their types
//!   blanked in place ([`typescript`]), so errors name the user's own lines.
//! - pado's k6 modules are JavaScript (`src/js/`) over a few natives
//!   ([`natives`]).

mod batch;
mod cookie_jar;
mod crypto;
mod csv;
mod custom;
mod error;
mod fault;
mod grpc;
mod grpc_stream;
mod host;
mod html;
pub mod imports;
mod js_alloc;
mod lazy_builtins;
mod multipart;
mod natives;
mod natives_exec;
mod natives_shared;
mod net;
mod options;
mod request_plain;
mod response_lazy;
mod response_obj;
mod rt_switch;
mod summary;
mod tls_key;
mod typescript;
mod vu;
mod worker_rt;

use std::path::Path;
use std::sync::Arc;

pub use error::ScriptError;
pub use host::Script;

use pado_scenario::model::Config;

/// A script loaded for a run: pado's configuration from its options, and the
/// host the engine makes its VUs with.
pub struct Loaded {
    /// The options as pado's configuration (scenarios name the exported
    /// function each runs).
    pub config: Config,
    /// The script.
    pub script: Arc<Script>,
}

/// Whether `path` names a script (`.js`, `.mjs`, or TypeScript `.ts`, whose
/// types are blanked as k6 strips them) rather than a scenario file.
pub fn is_script(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("js" | "mjs" | "ts")
    )
}

/// Load the script at `path` for a run: its modules compiled, its options read
/// (with `env` as `__ENV`: the process environment, then each `--env`).
pub fn load_for_run(path: &Path, env: &[(String, String)]) -> Result<Loaded, ScriptError> {
    load_for_run_tagged(path, env, &[])
}

/// [`load_for_run`] with the command line's `--tag NAME=VALUE` pairs: k6's
/// test-wide tags, on every request and metric sample the script makes (over
/// the options' `tags` and its scenarios' `tags`).
pub fn load_for_run_tagged(
    path: &Path,
    env: &[(String, String)],
    tags: &[(String, String)],
) -> Result<Loaded, ScriptError> {
    let mut all: Vec<(String, String)> = std::env::vars().collect();
    all.extend(env.iter().cloned());
    let script = host::load(path, &all, tags)?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "script".into());
    let config = options::to_config(
        &script.options,
        &path.display().to_string(),
        &name,
        &script.exports,
    )?;
    Ok(Loaded {
        config,
        script: Arc::new(script),
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_check;
#[cfg(test)]
mod tests_jar;
#[cfg(test)]
mod tests_mem;
#[cfg(test)]
mod tests_mods;
#[cfg(test)]
mod tests_net;
#[cfg(test)]
mod tests_request_plain;
#[cfg(test)]
mod tests_response;
#[cfg(test)]
mod tests_runtime;
#[cfg(test)]
mod tests_shared_rt;
#[cfg(test)]
mod tests_ts;
