//! Scenario files the tests run, kept as files under `tests/e2e/testdata/` (read
//! them as a user would write them) with `${name}` where a test fills in what
//! only it knows: the target's URL, a port, a path. pado's own templates
//! (`{{ env.X }}`, `{{ vu }}`) pass through untouched.
//!
//! Filling is strict both ways: a `${name}` the test does not give, or a value
//! the file never asks for, panics with the file's name, so that a fixture and
//! its tests cannot drift apart silently.

use std::path::{Path, PathBuf};

/// The directory that holds the fixtures.
fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/testdata")
}

/// The text of fixture `file` (e.g. `"checks_basic.yaml"`) with every
/// `${name}` replaced by the value `vars` gives it.
pub(crate) fn fixture(file: &str, vars: &[(&str, String)]) -> String {
    let path = testdata().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    fill(file, &text, vars)
}

/// Fixture `file` filled with `vars` ([`fixture`]), written into `dir` as
/// `as_name` (the name the run's messages show); its path.
pub(crate) fn write_fixture(
    dir: &Path,
    file: &str,
    as_name: &str,
    vars: &[(&str, String)],
) -> PathBuf {
    super::write_file(dir, as_name, &fixture(file, vars))
}

/// `text` (fixture `file`) with its `${name}` placeholders filled from `vars`.
fn fill(file: &str, text: &str, vars: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut used = vec![false; vars.len()];
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if name_len == 0 || !after[name_len..].starts_with('}') {
            // Not a placeholder (e.g. a `${}` pado itself reads): kept as is.
            out.push_str("${");
            rest = after;
            continue;
        }
        let name = &after[..name_len];
        let i = vars
            .iter()
            .position(|(k, _)| *k == name)
            .unwrap_or_else(|| panic!("fixture {file}: `${{{name}}}` is not given"));
        used[i] = true;
        out.push_str(&vars[i].1);
        rest = &after[name_len + 1..];
    }
    out.push_str(rest);
    if let Some(i) = used.iter().position(|u| !u) {
        panic!("fixture {file}: `{}` is given but never used", vars[i].0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn placeholders_are_filled_and_pados_own_templates_kept() {
        let text = "target: ${target}\nname: \"{{ env.X }} ${}\"\nport: ${port}/${target}\n";
        assert_eq!(
            fill(
                "t.yaml",
                text,
                &[
                    ("target", "http://127.0.0.1:9".into()),
                    ("port", 9.to_string())
                ]
            ),
            "target: http://127.0.0.1:9\nname: \"{{ env.X }} ${}\"\nport: 9/http://127.0.0.1:9\n"
        );
    }

    #[test]
    #[should_panic(expected = "fixture t.yaml: `${target}` is not given")]
    fn a_placeholder_not_given_is_named() {
        fill("t.yaml", "target: ${target}\n", &[]);
    }

    #[test]
    #[should_panic(expected = "fixture t.yaml: `port` is given but never used")]
    fn a_value_the_file_never_asks_for_is_named() {
        fill(
            "t.yaml",
            "target: ${target}\n",
            &[("target", "x".into()), ("port", 9.to_string())],
        );
    }
}
