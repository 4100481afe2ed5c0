//! What a script imports: every `import ... from "x"` of the script and of the
//! local modules it reaches, found before anything runs, so that a module pado
//! cannot give (`k6/browser`, an extension, a missing file, a remote module not in
//! the local cache) is refused at start naming the file and line of its import,
//! never in the middle of a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::ScriptError;

/// The k6 modules pado gives (their JavaScript is in `js/`).
pub(crate) const BUILTIN: &[&str] = &[
    "k6",
    "k6/http",
    "k6/metrics",
    "k6/execution",
    "k6/data",
    "k6/encoding",
    "k6/timers",
    "k6/crypto",
    "k6/html",
    "k6/ws",
    "k6/websockets",
    "k6/experimental/websockets",
    "k6/net/grpc",
    "k6/experimental/fs",
    "k6/experimental/csv",
];

/// Where an import leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// One of [`BUILTIN`].
    Builtin(&'static str),
    /// A JavaScript file: its module name (a path or a remote URL) and where it is.
    File {
        /// The module's name (what the loader is asked for).
        name: String,
        /// The file read.
        path: PathBuf,
    },
}

/// Where remote modules (`https://jslib.k6.io/...`) are looked for: a run never
/// downloads, so it is reproducible and works offline. `PADO_MODULE_CACHE`, else
/// `$XDG_CACHE_HOME/pado/modules`, else `~/.cache/pado/modules`; a URL's file is
/// `<cache>/<host>/<path>`.
pub fn module_cache() -> PathBuf {
    if let Some(d) = std::env::var_os("PADO_MODULE_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("pado").join("modules")
}

/// Resolve `spec` imported by the module named `base` (a path or a URL), or why it
/// cannot be imported.
pub(crate) fn resolve(base: &str, spec: &str) -> Result<Resolved, String> {
    if let Some(b) = BUILTIN.iter().find(|b| **b == spec) {
        return Ok(Resolved::Builtin(b));
    }
    if spec == "k6/browser" || spec == "k6/experimental/browser" {
        return Err(
            "browser tests need a browser, which pado does not drive; run them with k6, \
                    and the HTTP part of the test with pado"
                .into(),
        );
    }
    if spec.starts_with("k6/x/") {
        return Err(
            "k6 extensions (xk6) are Go code compiled into a custom k6 binary; pado \
                    cannot load them"
                .into(),
        );
    }
    if spec.starts_with("k6/") {
        return Err(format!(
            "pado does not give the k6 module `{spec}` yet (it gives {})",
            BUILTIN.join(", ")
        ));
    }
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return remote(spec);
    }
    let is_remote_base = base.starts_with("http://") || base.starts_with("https://");
    if spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/') {
        if is_remote_base {
            // A remote module's relative import is another remote module.
            let url = url::Url::parse(base)
                .and_then(|b| b.join(spec))
                .map_err(|e| format!("not a URL relative to {base}: {e}"))?;
            return remote(url.as_str());
        }
        let dir = Path::new(base).parent().unwrap_or(Path::new("."));
        let path = if spec.starts_with('/') {
            PathBuf::from(spec)
        } else {
            dir.join(spec)
        };
        let path = normalize(&path);
        if !path.is_file() {
            return Err(missing_file(&path));
        }
        return Ok(Resolved::File {
            name: path.to_string_lossy().into_owned(),
            path,
        });
    }
    Err(
        "a bare module name: pado resolves k6's own modules, files (`./lib.js`) and \
         remote URLs from the local module cache, not npm packages (bundle them first)"
            .into(),
    )
}

/// Why a local import is refused: no such file, and when the import has no
/// extension but a `.ts` or `.js` file of that name is there, the name to write
/// (k6 adds no extension either).
fn missing_file(path: &Path) -> String {
    let mut why = format!("no such file: {}", path.display());
    if path.extension().is_none() {
        let found = ["ts", "js"]
            .iter()
            .map(|e| path.with_extension(e))
            .find(|p| p.is_file());
        if let Some(p) = found {
            why.push_str(&format!(
                " (k6 adds no extension to an import either: import {})",
                p.display()
            ));
        }
    }
    why
}

/// A remote module from the local cache, or why not.
fn remote(spec: &str) -> Result<Resolved, String> {
    let url = url::Url::parse(spec).map_err(|e| format!("not a valid URL: {e}"))?;
    let cache = module_cache();
    let path = cache
        .join(url.host_str().unwrap_or_default())
        .join(url.path().trim_start_matches('/'));
    if path.is_file() {
        Ok(Resolved::File {
            name: url.to_string(),
            path,
        })
    } else {
        Err(format!(
            "the remote module {url} is not in pado's module cache (pado never downloads \
             during a run); save it as {} (or set PADO_MODULE_CACHE)",
            path.display()
        ))
    }
}

/// `a/./b/../c` as `a/c`, without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Each module specifier a source imports (statically, or with a literal
/// `import("x")`), with its 1-based line.
pub(crate) fn specifiers(source: &str) -> Vec<(String, usize)> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#"(?m)(?:^|[;}\s])(?:import|export)\s*(?:[\w*{}\s,$]*?\s*from\s*)?\(?\s*['"]([^'"\n]+)['"]"#,
        )
        .expect("a valid pattern")
    });
    let code = strip_comments(source);
    re.captures_iter(&code)
        .filter_map(|c| {
            let m = c.get(1)?;
            let line = code[..m.start()].matches('\n').count() + 1;
            Some((m.as_str().to_string(), line))
        })
        .collect()
}

/// The source with its comments blanked (line breaks kept, so lines still count),
/// so a commented-out import is not one.
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == q || (c == '\n' && q != '`') {
                quote = None;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                    }
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            ('"' | '\'' | '`', _) => {
                quote = Some(c);
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every local and remote module the script reaches, by module name, with its
/// source: each import checked now.
pub(crate) fn gather(
    main: &Path,
    shown: &str,
) -> Result<BTreeMap<String, (PathBuf, String)>, ScriptError> {
    let mut found = BTreeMap::new();
    let main_name = main.to_string_lossy().into_owned();
    let mut todo = vec![(main_name, main.to_path_buf(), shown.to_string())];
    while let Some((name, path, display)) = todo.pop() {
        if found.contains_key(&name) {
            continue;
        }
        let mut source = std::fs::read_to_string(&path).map_err(|source| ScriptError::Read {
            file: path.clone(),
            source,
        })?;
        if crate::typescript::is_typescript(&name) {
            // Its types blanked in place: lines and columns stay the user's.
            source = crate::typescript::strip(&display, &source)?;
        }
        for (spec, line) in specifiers(&source) {
            match resolve(&name, &spec) {
                Ok(Resolved::Builtin(_)) => {}
                Ok(Resolved::File { name: n, path: p }) => {
                    let d = if n.starts_with("http") {
                        n.clone()
                    } else {
                        p.display().to_string()
                    };
                    todo.push((n, p, d));
                }
                Err(why) => {
                    return Err(ScriptError::Import {
                        at: format!("{display}:{line}"),
                        specifier: spec,
                        why,
                    })
                }
            }
        }
        found.insert(name, (path, source));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_imports_with_their_lines_and_not_commented_ones() {
        let src = "import http from 'k6/http';\n// import x from 'k6/browser';\n/* import y from 'k6/x/sql'; */\nimport { check, sleep } from \"k6\";\nexport { a } from './lib.js';\nconst s = \"import z from 'no'\";\n";
        let got = specifiers(src);
        assert_eq!(
            got,
            vec![
                ("k6/http".to_string(), 1),
                ("k6".to_string(), 4),
                ("./lib.js".to_string(), 5),
            ]
        );
    }

    #[test]
    fn refuses_browser_extensions_and_bare_names_with_reasons() {
        assert!(resolve("/s.js", "k6/browser")
            .unwrap_err()
            .contains("browser"));
        assert!(resolve("/s.js", "k6/x/sql")
            .unwrap_err()
            .contains("extensions"));
        assert!(resolve("/s.js", "lodash")
            .unwrap_err()
            .contains("bare module"));
        assert_eq!(
            resolve("/s.js", "k6/http"),
            Ok(Resolved::Builtin("k6/http"))
        );
    }

    #[test]
    fn a_remote_module_comes_only_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("PADO_MODULE_CACHE", dir.path());
        let url = "https://jslib.k6.io/k6-utils/1.4.0/index.js";
        let err = resolve("/s.js", url).unwrap_err();
        assert!(
            err.contains(url) && err.contains("not in pado's module cache"),
            "{err}"
        );
        let p = dir.path().join("jslib.k6.io/k6-utils/1.4.0/index.js");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "export const x = 1;").unwrap();
        assert_eq!(
            resolve("/s.js", url),
            Ok(Resolved::File {
                name: url.to_string(),
                path: p
            })
        );
        std::env::remove_var("PADO_MODULE_CACHE");
    }
}
