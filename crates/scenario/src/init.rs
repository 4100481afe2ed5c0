//! The starting file `pado init` writes: a small but complete scenario whose comments
//! teach the format by example, so a new user edits something that already runs
//! instead of starting from a blank page.

/// The example scenario (YAML with comments). It uses only what docs/scenario.md
/// documents and always passes [`crate::parse_str`] (a test makes sure); as written it
/// passes against pado's demo target (an end-to-end test runs it), so the first
/// `pado run` after `pado init` works.
pub fn example_scenario() -> &'static str {
    EXAMPLE
}

/// Why `pado init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The file is there already and overwriting was not asked for: a user's
    /// scenario is never replaced by the example by accident.
    #[error("{} exists; use --force to overwrite", .0.display())]
    Exists(std::path::PathBuf),
    /// It could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Writes the example scenario to `path`; an existing file only with `force`.
pub fn write_example(path: &std::path::Path, force: bool) -> Result<(), InitError> {
    if path.exists() && !force {
        return Err(InitError::Exists(path.to_path_buf()));
    }
    std::fs::write(path, EXAMPLE).map_err(|source| InitError::Write {
        path: path.to_path_buf(),
        source,
    })
}

const EXAMPLE: &str = r#"# A pado scenario. Check it with `pado validate FILE`, run it with `pado run FILE`.
# Every field is described in `pado docs scenario`. As written it runs against pado's
# demo target: start one with `pado target serve --port 8080` in another terminal.
name: example                      # names the result directory and the reports
target: http://127.0.0.1:8080      # requests written as paths go to this server

defaults:                          # settings every request inherits
  headers: { Accept: application/json }
  timeout: 10s                     # a request taking longer fails (default 60s)

thresholds:                        # pass/fail criteria, k6 syntax; any failure -> exit 99
  http_req_duration: ["p(95) < 300"]            # milliseconds
  http_req_failed: ["rate < 0.01"]              # under 1% failed requests
  "http_req_duration{step:search}": ["p(99) < 500"]
  checks: ["rate > 0.99"]                       # over 99% of checks pass

scenarios:                         # scenarios run in parallel
  browse:
    executor: ramping-vus          # virtual users (VUs) follow the stages
    stages:
      - { duration: 30s, target: 20 }   # ramp up to 20 VUs
      - { duration: 1m, target: 20 }    # hold
      - { duration: 30s, target: 0 }    # ramp down
    mix:                           # each iteration picks one entry; weights are relative
      - weight: 60
        name: search
        request: "GET /api/search?q=부산 맛집"   # Hangul and spaces are encoded for you
        check: { status: 200, max_duration: 500ms }
      - weight: 30
        name: detail
        request: "GET /api/posts/1"
        check: { status: 200, body_contains: "title" }
      - weight: 10
        name: write                # a flow: steps run in order, each timed on its own
        flow:
          - name: login
            request: { method: POST, url: /api/login, json: { user: "user{{ vu }}", password: demo } }
            check: { status: 200 }
            extract: { token: $.token }        # keep the login's token for later steps
          - think: 500ms           # a pause inside the flow
          - name: create
            request:
              method: POST
              url: /api/posts
              headers: { Authorization: "Bearer {{ token }}" }   # send the token back
              json: { title: "안녕하세요", body: "pado에서 보낸 글" }
            check: { status: 201 }
    think: { uniform: [1s, 3s] }   # pause after each iteration, like a real user
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    #[test]
    fn example_parses_and_shows_the_parts() {
        let cfg = crate::parse_str(example_scenario(), "pado.yaml").unwrap();
        assert_eq!(cfg.target.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(cfg.thresholds.len(), 4);
        let (name, s) = &cfg.scenarios[0];
        assert_eq!(name, "browse");
        assert_eq!(s.executor, ExecutorKind::RampingVus);
        assert_eq!(s.mix.len(), 3);
        assert!(matches!(
            &s.mix[0].request,
            Some(RequestSpec::Line(l)) if l.contains("부산")
        ));
        assert_eq!(s.mix[2].flow.as_ref().unwrap().len(), 3);
        assert!(s.think.is_some());
        let lines = example_scenario().lines().count();
        assert!(!example_scenario().contains("abort_on_fail"));
        assert!((35..=60).contains(&lines), "{lines} lines");
    }

    #[test]
    fn an_existing_file_is_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("시나리오.yaml");
        write_example(&path, false).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), example_scenario());
        std::fs::write(&path, "mine").unwrap();
        let e = write_example(&path, false).unwrap_err();
        assert!(matches!(e, InitError::Exists(_)));
        assert_eq!(
            e.to_string(),
            format!("{} exists; use --force to overwrite", path.display())
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        write_example(&path, true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), example_scenario());
        let e = write_example(&dir.path().join("없는").join("x.yaml"), true).unwrap_err();
        assert!(matches!(e, InitError::Write { .. }), "{e}");
    }
}
