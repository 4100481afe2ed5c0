//! k6's modules beyond `k6/http` (`k6/crypto`, `k6/html`, `http.file` and form
//! bodies) in a script run by pado and, where it is installed, by k6 itself
//! against the same kind of test server: each check's truth is fixed in the
//! script (published vectors, what the server read of the upload), both tools
//! must pass every one, and the server must receive the same requests from both.

use std::path::{Path, PathBuf};
use std::process::Command;

use pado_testkit::TestServer;

use crate::harness::{num, run, tmp};
use crate::k6_corpus::k6_or_skip;

/// Checks in one iteration of `modules.js`.
const CHECKS: f64 = 15.0;
/// Requests in one iteration: the upload, the form, the page.
const REQUESTS: u64 = 3;

/// The script beside a planted upload (bytes that test a multipart writer: NUL,
/// 0xFF, CR LF, and a line that looks like a boundary).
fn planted(dir: &Path) -> PathBuf {
    let script = dir.join("modules.js");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/testdata/k6/modules.js"),
        &script,
    )
    .unwrap();
    let mut bytes = vec![0u8, 0xff, b'\r', b'\n'];
    bytes.extend_from_slice(b"--not-the-boundary\r\n");
    bytes.extend((0..=255u8).cycle().take(3000));
    std::fs::write(dir.join("upload.bin"), bytes).unwrap();
    script
}

/// What the server received, as (path, content type without its boundary, body length).
fn received(srv: &TestServer) -> Vec<(String, String, usize)> {
    srv.records()
        .iter()
        .map(|r| {
            let ctype = r
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.split(';').next().unwrap_or("").to_string())
                .unwrap_or_default();
            (r.path.clone(), ctype, r.body.len())
        })
        .collect()
}

#[test]
fn crypto_html_and_uploads_pass_every_check_in_pado_and_in_k6() {
    let t = tmp("k6-modules");
    let script = planted(&t);
    let srv = TestServer::start();
    let r = run(
        "k6-modules",
        &[
            script.to_str().unwrap(),
            "-e",
            &format!("BASE={}", srv.base_url()),
        ],
    );
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    let s = r.summary();
    assert_eq!(num(&s, "iterations"), 2.0);
    assert_eq!(num(&s, "requests"), (2 * REQUESTS) as f64);
    assert_eq!(srv.stats().requests, 2 * REQUESTS);
    let checks = s["checks"].as_object().expect("checks in the summary");
    assert_eq!(checks.len() as f64, CHECKS, "{checks:?}");
    for (name, c) in checks {
        assert_eq!(
            (num(c, "passes"), num(c, "fails")),
            (2.0, 0.0),
            "check {name}"
        );
    }
    let pado_sent = received(&srv);

    let Some(k6) = k6_or_skip() else { return };
    let srv = TestServer::start();
    let export = t.join("k6-export.json");
    let out = Command::new(k6)
        .current_dir(&*t)
        .env("K6_NO_USAGE_REPORT", "true")
        .args(["run", "--quiet", "--no-color", "--summary-export"])
        .arg(&export)
        .args(["-e", &format!("BASE={}", srv.base_url())])
        .arg(&script)
        .output()
        .expect("running k6");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let k: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    assert_eq!(
        k["metrics"]["checks"]["passes"],
        2.0 * CHECKS,
        "{}",
        k["metrics"]["checks"]
    );
    assert_eq!(k["metrics"]["checks"]["fails"], 0.0);
    // The same requests, the same kinds of body, the same sizes (a multipart
    // body's size fixes its parts' headers and bytes, the boundary being 60
    // hex digits in both).
    assert_eq!(received(&srv), pado_sent);
}
