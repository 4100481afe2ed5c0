//! A loaded script: every module compiled once to QuickJS bytecode (the script,
//! its local and cached remote modules, pado's k6 modules), the options read once
//! in a context of their own, and what every VU shares (files `open()` read,
//! `SharedArray`s, `__ENV`). VUs load the bytecode; none parses JavaScript.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pado_engine::script::{ScriptFault, ScriptHost, ScriptRole, ScriptVu, SummaryFiles};
use rquickjs::loader::{Loader, Resolver};
use std::ffi::CString;

use rquickjs::{qjs, CatchResultExt, CaughtError, Context, Ctx, Module, Runtime};

use crate::error::ScriptError;
use crate::imports::{self, Resolved};

/// pado's k6 modules, as JavaScript; a module is declared after those it
/// imports (QuickJS links imports as it compiles).
const BUILTIN_SOURCES: &[(&str, &str)] = &[
    ("k6", include_str!("js/k6.js")),
    ("k6/crypto", include_str!("js/crypto.js")),
    ("k6/html", include_str!("js/html.js")),
    // Not importable by scripts (not in `imports::BUILTIN`): http.js's helpers.
    (INTERNAL_BODY, include_str!("js/body.js")),
    (INTERNAL_FORMS, include_str!("js/forms.js")),
    ("k6/http", include_str!("js/http.js")),
    ("k6/metrics", include_str!("js/metrics.js")),
    ("k6/execution", include_str!("js/execution.js")),
    ("k6/data", include_str!("js/data.js")),
    ("k6/encoding", include_str!("js/encoding.js")),
    ("k6/timers", include_str!("js/timers.js")),
    ("k6/ws", include_str!("js/ws.js")),
    ("k6/websockets", include_str!("js/websockets.js")),
    (
        "k6/experimental/websockets",
        include_str!("js/websockets.js"),
    ),
    ("k6/net/grpc", include_str!("js/grpc.js")),
    ("k6/experimental/fs", include_str!("js/fs.js")),
    ("k6/experimental/csv", include_str!("js/csv.js")),
];

/// What runs before any module in every context: `console`, timers.
const PRELUDE: &str = include_str!("js/prelude.js");

/// The module of `k6/http`'s body and cookie rules (`js/body.js`): imported by
/// pado's own modules only (a script's import of it is refused at load).
pub(crate) const INTERNAL_BODY: &str = "pado:http-body";

/// The module of `k6/http`'s files, forms and cookies by name
/// (`js/forms.js`): loaded in a VU by `k6/http` when a request first needs it
/// (`__pado.require`), never imported by a script.
pub(crate) const INTERNAL_FORMS: &str = "pado:http-forms";

/// What every VU of a script shares (read-only after load, but for the caches
/// that `open()` and `SharedArray` fill once).
pub(crate) struct Shared {
    /// The script as messages name it.
    pub(crate) file: String,
    /// The main module's name.
    pub(crate) main: String,
    /// The prelude's bytecode (`js/prelude.js`, a script).
    pub(crate) prelude: Vec<u8>,
    /// Bytecode of every module, by module name.
    pub(crate) modules: HashMap<String, Vec<u8>>,
    /// The script's directory (`open()` paths are relative to it).
    pub(crate) base_dir: PathBuf,
    /// `__ENV`'s names and values (see [`Shared::env_object`]).
    pub(crate) env: Vec<(String, String)>,
    /// Files read by `open()`, once for all VUs.
    files: Mutex<HashMap<PathBuf, Arc<[u8]>>>,
    /// `SharedArray`s by name, built by the first VU that asks: each row as
    /// JSON, held once for every VU.
    shared: Mutex<HashMap<String, SharedRows>>,
    /// The script's `options` as JSON (k6/execution's `test.options`), set once
    /// they are read.
    pub(crate) options_json: std::sync::OnceLock<String>,
    /// The script's own metrics (`k6/metrics`), numbered for the run.
    pub(crate) metrics: crate::custom::MetricRegistry,
    /// The tags every sample carries (options, scenario, `--tag`), set once the
    /// options are read.
    pub(crate) tags: std::sync::OnceLock<crate::custom::TestTags>,
}

impl Shared {
    /// The bytes of `path` (relative to the script), read once for the run.
    pub(crate) fn open(&self, path: &str) -> Result<Arc<[u8]>, String> {
        let p = self.base_dir.join(path);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = files.get(&p) {
            return Ok(b.clone());
        }
        let b: Arc<[u8]> = std::fs::read(&p)
            .map_err(|e| format!("open({path}): cannot read {}: {e}", p.display()))?
            .into();
        files.insert(p, b.clone());
        Ok(b)
    }

    /// `__ENV` for a context: an object of its own (a script may change it)
    /// whose values are the strings of the runtime's atoms, made once for a
    /// worker's runtime and shared by its VUs' objects (QuickJS's strings are
    /// runtime-wide and counted), not made again for each VU: ~4 KB a VU with
    /// an environment of 35 variables (`tests_mem::print_vu_stages`).
    pub(crate) fn env_object<'js>(
        &self,
        ctx: &Ctx<'js>,
    ) -> rquickjs::Result<rquickjs::Object<'js>> {
        let o = rquickjs::Object::new(ctx.clone())?;
        for (k, v) in &self.env {
            let value = rquickjs::Atom::from_str(ctx.clone(), v)?.to_js_string()?;
            o.set(k.as_str(), value)?;
        }
        Ok(o)
    }

    /// The rows of a `SharedArray` already built (one `Arc` for every VU).
    pub(crate) fn shared_get(&self, name: &str) -> Option<SharedRows> {
        let m = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        m.get(name).cloned()
    }

    /// Keep a `SharedArray` built now from `json` (an array; the first one built
    /// wins): the rows to use.
    pub(crate) fn shared_set(&self, name: &str, json: &str) -> Result<SharedRows, String> {
        let rows: Vec<serde_json::Value> =
            serde_json::from_str(json).map_err(|e| format!("SharedArray `{name}`: {e}"))?;
        let rows: SharedRows = rows
            .iter()
            .map(|r| Box::<str>::from(r.to_string()))
            .collect();
        let mut m = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        Ok(m.entry(name.to_string()).or_insert(rows).clone())
    }
}

/// A `SharedArray`'s rows, each as JSON: one copy for the run.
pub(crate) type SharedRows = Arc<[Box<str>]>;

/// A script ready to run: its VUs are made from it ([`ScriptHost`]).
pub struct Script {
    pub(crate) shared: Arc<Shared>,
    /// The functions the main module exports.
    pub(crate) exports: Vec<String>,
    /// `export const options`, as JSON.
    pub(crate) options: serde_json::Value,
}

impl ScriptHost for Script {
    fn vu(&self, role: ScriptRole) -> Result<Box<dyn ScriptVu>, String> {
        crate::vu::CoVu::start(self.shared.clone(), role).map(|v| Box::new(v) as Box<dyn ScriptVu>)
    }

    fn has_setup(&self) -> (bool, bool) {
        let has = |n: &str| self.exports.iter().any(|e| e == n);
        (has("setup"), has("teardown"))
    }

    fn metric(&self, id: u32) -> Option<pado_engine::script::ScriptMetric> {
        self.shared.metrics.get(id)
    }

    fn describe_fault(&self, fault: &ScriptFault) -> String {
        crate::fault::describe(&self.shared, fault)
    }

    fn handle_summary(&self, data: &str) -> Option<Result<SummaryFiles, ScriptFault>> {
        self.exports
            .iter()
            .any(|e| e == "handleSummary")
            .then(|| crate::summary::handle_summary(&self.shared, data))
    }

    fn summary_options(&self) -> Result<pado_engine::script::SummaryOptions, String> {
        crate::summary::options(&self.options)
    }
}

/// Resolves imports as [`imports::resolve`] does (they were all checked at load).
pub(crate) struct ScriptResolver;

impl Resolver for ScriptResolver {
    fn resolve(&mut self, _ctx: &Ctx<'_>, base: &str, name: &str) -> rquickjs::Result<String> {
        if name == INTERNAL_BODY && imports::BUILTIN.contains(&base) {
            return Ok(name.to_string());
        }
        // Asked for by `k6/http`'s own code through `__pado.require`, whose
        // frames name no module (pado's modules keep no debug information).
        if name == INTERNAL_FORMS && (base.is_empty() || imports::BUILTIN.contains(&base)) {
            return Ok(name.to_string());
        }
        match imports::resolve(base, name) {
            Ok(Resolved::Builtin(b)) => Ok(b.to_string()),
            Ok(Resolved::File { name, .. }) => Ok(name),
            Err(_) => Err(rquickjs::Error::new_resolving(base, name)),
        }
    }
}

/// Loads a module from the script's bytecode (and, for one of pado's modules,
/// the natives it calls).
pub(crate) struct BytecodeLoader(pub(crate) Arc<Shared>);

impl Loader for BytecodeLoader {
    fn load<'js>(&mut self, ctx: &Ctx<'js>, name: &str) -> rquickjs::Result<Module<'js>> {
        let Some(bytes) = self.0.modules.get(name) else {
            return Err(rquickjs::Error::new_loading(name));
        };
        crate::natives::install_for_module(ctx, &self.0, name)?;
        // SAFETY: written by `Module::write` of this same QuickJS at load, and
        // kept (in `Shared`, which every VU holds) as long as any module read
        // from it lives.
        unsafe { Module::load(ctx.clone(), bytes) }
    }
}

/// Load the script at `path`: every import checked, every module compiled,
/// the options read. `env` is `__ENV` (the environment and `--env`), `tags` the
/// command line's `--tag` pairs.
pub(crate) fn load(
    path: &Path,
    env: &[(String, String)],
    tags: &[(String, String)],
) -> Result<Script, ScriptError> {
    let shown = path.display().to_string();
    // Modules are named by absolute path: imports resolve against them.
    let path = &std::fs::canonicalize(path).map_err(|source| ScriptError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    let main = path.to_string_lossy().into_owned();
    let sources = imports::gather(path, &shown)?;
    let mut modules = HashMap::new();
    let mut prelude = Vec::new();
    let rt = Runtime::new().map_err(|e| init_error(&shown, e.to_string(), String::new()))?;
    let context =
        Context::full(&rt).map_err(|e| init_error(&shown, e.to_string(), String::new()))?;
    context.with(|ctx| -> Result<(), ScriptError> {
        prelude = compile(&ctx, "pado:prelude", PRELUDE, Keep::Nothing, false)
            .map_err(|e| init_error("pado:prelude", e.to_string(), String::new()))?;
        for (name, src) in BUILTIN_SOURCES {
            let m = compile(&ctx, name, src, Keep::Nothing, true)
                .map_err(|e| init_error(name, e.to_string(), String::new()))?;
            modules.insert((*name).to_string(), m);
        }
        // QuickJS links a module's imports as it compiles it, to the modules
        // already compiled: each round compiles those whose imports are, until
        // all are (a round that compiles none names the first error).
        let mut pending: Vec<_> = sources.iter().collect();
        while !pending.is_empty() {
            let mut first_error = None;
            let before = pending.len();
            pending.retain(|(name, (p, src))| {
                let display = if **name == main {
                    shown.clone()
                } else if name.starts_with("http") {
                    (*name).clone()
                } else {
                    p.display().to_string()
                };
                match compile(&ctx, name, src, Keep::Lines, true) {
                    Ok(bytes) => {
                        modules.insert((*name).clone(), bytes);
                        false
                    }
                    Err(e) => {
                        // A TypeScript file's line as the user wrote it.
                        let written = crate::typescript::is_typescript(name)
                            .then(|| std::fs::read_to_string(p).ok())
                            .flatten();
                        let e = syntax_error(&display, name, written.as_ref().unwrap_or(src), e);
                        // An import not compiled yet is no error of this module's.
                        let unlinked = e.to_string().contains("could not load module");
                        if first_error.as_ref().is_none_or(|(u, _)| *u && !unlinked) {
                            first_error = Some((unlinked, e));
                        }
                        true
                    }
                }
            });
            if pending.len() == before {
                if let Some((_, e)) = first_error {
                    return Err(e);
                }
            }
        }
        Ok(())
    })?;
    drop(context);
    drop(rt);
    // A name given twice is its last value, and the names in order, as a
    // JSON object of them parsed would have them.
    let env: Vec<(String, String)> = env
        .iter()
        .cloned()
        .collect::<std::collections::BTreeMap<String, String>>()
        .into_iter()
        .collect();
    let shared = Arc::new(Shared {
        file: shown.clone(),
        main,
        prelude,
        modules,
        base_dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        env,
        files: Mutex::new(HashMap::new()),
        shared: Mutex::new(HashMap::new()),
        options_json: std::sync::OnceLock::new(),
        metrics: crate::custom::MetricRegistry::default(),
        tags: std::sync::OnceLock::new(),
    });
    let (exports, options) = crate::vu::read_options(&shared)?;
    let _ = shared.options_json.set(options.to_string());
    let test_tags =
        crate::custom::TestTags::read(&options, tags).map_err(|why| ScriptError::Options {
            file: shown.clone(),
            field: "tags".into(),
            why,
        })?;
    let _ = shared.tags.set(test_tags);
    Ok(Script {
        shared,
        exports,
        options,
    })
}

/// What of a module's debug information its bytecode keeps. Every VU loads
/// its own copy of each module's bytecode, so what is kept is paid once per VU.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Names and line and column tables: the user's own code, whose errors
    /// name its file, line and column.
    Lines,
    /// Nothing: pado's own modules (an error's stack names the user's frames).
    Nothing,
}

/// Compile `src` as the module `name` (linked to the modules compiled before
/// it), or as a script when not `module`, and write its bytecode. The
/// functions' source text is never written:
/// each VU would hold a copy of it for `fn.toString()` alone (which then says
/// `[native code]`); with [`Keep::Nothing`] neither are line tables and
/// variable names.
fn compile<'js>(
    ctx: &Ctx<'js>,
    name: &str,
    src: &str,
    keep: Keep,
    module: bool,
) -> Result<Vec<u8>, CaughtError<'js>> {
    let thrown = |e: rquickjs::Error| Err::<(), _>(e).catch(ctx).unwrap_err();
    let c_name = CString::new(name).map_err(|e| thrown(e.into()))?;
    let c_src = CString::new(src).map_err(|e| thrown(e.into()))?;
    let raw = ctx.as_raw().as_ptr();
    let flags = if module {
        qjs::JS_EVAL_TYPE_MODULE | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY
    } else {
        qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY
    };
    // SAFETY: a live context; the source is zero-terminated as JS_Eval needs.
    // A module stays declared in this context (its importers link to it), as
    // `Module::declare` leaves it; a script's function is freed once written.
    let compiled = unsafe {
        qjs::JS_Eval(
            raw,
            c_src.as_ptr(),
            src.len() as _,
            c_name.as_ptr(),
            flags as i32,
        )
    };
    // SAFETY: a value just returned.
    if unsafe { qjs::JS_IsException(compiled) } {
        return Err(thrown(rquickjs::Error::Exception));
    }
    let mut flags = qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE;
    if keep == Keep::Nothing {
        flags |= qjs::JS_WRITE_OBJ_STRIP_DEBUG;
    }
    let mut len = 0;
    // SAFETY: `compiled` is what was just compiled; the buffer QuickJS returns
    // is copied, then freed with its allocator.
    unsafe {
        let buf = qjs::JS_WriteObject(raw, &mut len, compiled, flags as i32);
        if !module {
            qjs::JS_FreeValue(raw, compiled);
        }
        if buf.is_null() {
            return Err(thrown(rquickjs::Error::Exception));
        }
        let bytes = std::slice::from_raw_parts(buf, len as usize).to_vec();
        qjs::js_free(raw, buf.cast());
        Ok(bytes)
    }
}

/// Run the prelude (`console`, timers) in `ctx` from its bytecode.
pub(crate) fn run_prelude<'js>(ctx: &Ctx<'js>, shared: &Shared) -> Result<(), CaughtError<'js>> {
    let thrown = || {
        Err::<(), _>(rquickjs::Error::Exception)
            .catch(ctx)
            .unwrap_err()
    };
    let raw = ctx.as_raw().as_ptr();
    // SAFETY: bytecode written by this QuickJS at load, kept in `Shared`;
    // `JS_EvalFunction` takes the function read, its result is freed here.
    unsafe {
        let f = qjs::JS_ReadObject(
            raw,
            shared.prelude.as_ptr(),
            shared.prelude.len() as _,
            qjs::JS_READ_OBJ_BYTECODE as i32,
        );
        if qjs::JS_IsException(f) {
            return Err(thrown());
        }
        let r = qjs::JS_EvalFunction(raw, f);
        if qjs::JS_IsException(r) {
            return Err(thrown());
        }
        qjs::JS_FreeValue(raw, r);
    }
    Ok(())
}

/// An error of the init stage, named by file.
pub(crate) fn init_error(file: &str, message: String, stack: String) -> ScriptError {
    ScriptError::Init {
        file: file.to_string(),
        message,
        stack,
    }
}

/// A compile error as `file:line:column: message` and the line with a caret.
fn syntax_error(display: &str, name: &str, src: &str, e: CaughtError<'_>) -> ScriptError {
    let (message, stack) = match &e {
        CaughtError::Exception(ex) => (
            ex.message().unwrap_or_default(),
            ex.stack().unwrap_or_default(),
        ),
        other => (other.to_string(), String::new()),
    };
    let kind = match &e {
        CaughtError::Exception(ex) => ex
            .get::<_, String>("name")
            .unwrap_or_else(|_| "SyntaxError".into()),
        _ => "SyntaxError".into(),
    };
    let (line, col) = position_in(&stack, name).unwrap_or((0, 0));
    let excerpt = match src.lines().nth(line.saturating_sub(1)) {
        Some(text) if line > 0 => {
            let caret = " ".repeat(col.saturating_sub(1));
            format!("{line:>5} | {text}\n      | {caret}^")
        }
        _ => String::new(),
    };
    ScriptError::Syntax {
        at: if line > 0 {
            format!("{display}:{line}:{col}")
        } else {
            display.to_string()
        },
        message: format!("{kind}: {message}"),
        excerpt,
    }
}

/// The first `name:line:col` in a QuickJS stack.
pub(crate) fn position_in(stack: &str, name: &str) -> Option<(usize, usize)> {
    let i = stack.find(name)? + name.len();
    let rest = stack[i..].strip_prefix(':')?;
    let mut parts = rest.split(|c: char| !c.is_ascii_digit());
    let line = parts.next()?.parse().ok()?;
    let col = parts.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    Some((line, col))
}
