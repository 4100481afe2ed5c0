//! `GET /files/<name>` once the run has ended: the result directory's files
//! (`report.html`, `summary.json`, `timeline.jsonl`...) for download. Only the
//! names listed from the directory when the run ended are served, each a plain
//! file directly in it: no path, no `..`, no hidden file, no link out.

use std::path::{Path, PathBuf};

/// The files of `dir` a page may download, by name, sorted.
pub(crate) fn list(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| plain_name(n))
        .collect();
    names.sort();
    names
}

/// A name that stays inside the directory: no separator, not `.`/`..`, not hidden.
pub(crate) fn plain_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// The path of `name` in `dir`, when it is one of `listed`.
pub(crate) fn resolve(dir: &Path, listed: &[String], name: &str) -> Option<PathBuf> {
    (plain_name(name) && listed.iter().any(|n| n == name)).then(|| dir.join(name))
}

/// The `Content-Type` a file is served with.
pub(crate) fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        Some("jsonl") => "application/x-ndjson",
        Some("csv") => "text/csv; charset=utf-8",
        Some("xml") => "application/xml",
        Some("txt" | "log" | "hlog") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_plain_names_resolve() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("summary.json"), "{}").unwrap();
        std::fs::write(d.path().join("보고서.html"), "<html>").unwrap();
        std::fs::write(d.path().join(".lock"), "").unwrap();
        std::fs::create_dir(d.path().join("scenario")).unwrap();
        let listed = list(d.path());
        assert_eq!(
            listed,
            vec!["summary.json".to_string(), "보고서.html".into()]
        );
        assert_eq!(
            resolve(d.path(), &listed, "summary.json"),
            Some(d.path().join("summary.json"))
        );
        assert!(resolve(d.path(), &listed, "보고서.html").is_some());
        for bad in [
            "../summary.json",
            "..",
            ".",
            ".lock",
            "scenario",
            "scenario/x",
            "/etc/passwd",
            "..\\summary.json",
            "",
            "missing.json",
        ] {
            assert_eq!(resolve(d.path(), &listed, bad), None, "{bad}");
        }
    }
}
