//! Authoring tools: init, import (HAR and curl), schema; global setup and teardown.

use pado_testkit::TestServer;

use crate::harness::{num, pado, pado_cmd, run, run_env, stderr, tmp, write_file, write_fixture};

#[test]
fn init_writes_a_valid_scenario_and_schema_is_json() {
    let dir = tmp("init");
    let f = dir.join("pado.yaml");
    let out = pado(&["init", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let out = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A second init refuses to overwrite.
    assert_eq!(pado(&["init", f.to_str().unwrap()]).status.code(), Some(2));
    let out = pado(&["schema"]);
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(schema["properties"]["scenarios"].is_object(), "{schema}");
    assert!(schema.to_string().contains("ramping-arrival-rate"));
}

#[test]
fn a_har_recording_becomes_a_scenario_that_replays() {
    let srv = TestServer::start();
    let base = srv.base_url();
    let har = format!(
        r#"{{"log":{{"version":"1.2","entries":[
 {{"startedDateTime":"2026-11-22T01:00:00.000Z","time":20,
   "request":{{"method":"GET","url":"{base}/api/posts?page=1","headers":[{{"name":"Accept","value":"application/json"}}]}},
   "response":{{"status":200}}}},
 {{"startedDateTime":"2026-11-22T01:00:01.020Z","time":15,
   "request":{{"method":"POST","url":"{base}/json/item","headers":[{{"name":"Accept","value":"application/json"}},{{"name":"Content-Type","value":"application/json"}}],
              "postData":{{"mimeType":"application/json","text":"{{\"title\":\"안녕\"}}"}}}},
   "response":{{"status":201}}}},
 {{"startedDateTime":"2026-11-22T01:00:01.100Z","time":5,
   "request":{{"method":"GET","url":"{base}/static/app.js","headers":[]}},
   "response":{{"status":200}}}}
]}}}}"#
    );
    let dir = tmp("har");
    let h = write_file(&dir, "rec.har", &har);
    let y = dir.join("rec.yaml");
    let out = pado(&[
        "import",
        "har",
        h.to_str().unwrap(),
        "-o",
        y.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&y).unwrap();
    assert!(text.contains("think: 1s"), "{text}");
    assert!(!text.contains("app.js"), "{text}");
    let r = run(
        "har-replay",
        &[y.to_str().unwrap(), "--iterations", "2", "--vus", "1"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = srv.records();
    assert_eq!(recs.len(), 4);
    let post = recs.iter().find(|x| x.path == "/json/item").unwrap();
    let body: serde_json::Value = serde_json::from_slice(&post.body).unwrap();
    assert_eq!(body["title"], "안녕");
    assert_eq!(num(&r.summary(), "failed"), 0.0);
}

#[test]
fn a_curl_command_imports() {
    let out = pado(&[
        "import",
        "curl",
        "curl 'http://127.0.0.1:9/api/search?q=x' -H 'X-Api-Key: k' --data-raw 'a=1&b=2'",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("X-Api-Key"), "{text}");
    assert!(text.contains("POST"), "{text}");
    let bad = pado(&["import", "curl", "curl --frobnicate http://x/"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--frobnicate"));
}

#[test]
fn global_setup_outputs_reach_every_vu_and_teardown_runs_last() {
    let srv = TestServer::start();
    let dir = tmp("setup");
    let f = write_fixture(
        &dir,
        "tooling_global_setup_outputs_reach_every_vu_and_teardown_runs_last.yaml",
        "s.yaml",
        &[("target", srv.base_url())],
    );
    let r = run("setup", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = srv.records();
    assert_eq!(recs.len(), 1 + 12 + 1);
    assert_eq!(recs[0].path, "/json/item");
    assert!(
        recs[1..13].iter().all(|x| x.path == "/read/1"),
        "{:?}",
        recs.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert_eq!(recs[13].path, "/cleanup/1");
    let s = r.summary();
    assert_eq!(num(&s, "requests"), 14.0);
    assert_eq!(num(&s["steps"]["seed"], "requests"), 1.0);
    assert_eq!(num(&s["steps"]["cleanup"], "requests"), 1.0);
}

#[test]
fn report_writes_html_csv_junit_and_user_windows() {
    let srv = TestServer::start();
    let r = run(
        "exports",
        &[
            "--url",
            &srv.url("/"),
            "--vus",
            "2",
            "--duration",
            "2s",
            "--threshold",
            "p(99) < 0.001",
            "--export",
            "junit",
        ],
    );
    assert_eq!(r.code(), 99);
    assert!(r.dir.join("report.html").is_file());
    let junit = std::fs::read_to_string(r.dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<testsuites") && junit.contains("failures=\"1\""),
        "{junit}"
    );
    let out = pado(&[
        "report",
        r.dir.to_str().unwrap(),
        "--window",
        "first=0s..1s",
        "--export",
        "csv",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(99));
    let csv = std::fs::read_to_string(r.dir.join("timeline.csv")).unwrap();
    let all_rows: u64 = csv
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(1) == Some("all"))
        .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(all_rows, srv.stats().requests);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir.join("summary.json")).unwrap())
            .unwrap();
    let first = s["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["label"] == "first")
        .expect("user window in the stage table");
    assert!(num(first, "requests") > 0.0);
    assert!(num(first, "requests") < num(&s, "requests"));
    assert_eq!(
        pado(&["report", r.dir.to_str().unwrap(), "--window", "bad"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn plan_prints_the_formulas_and_writes_a_valid_skeleton() {
    let dir = tmp("plan");
    let f = dir.join("plan.yaml");
    let out = pado(&[
        "plan",
        "--dau",
        "25000",
        "--requests-per-user",
        "7.5",
        "--scenario-time",
        "430s",
        "--write-scenario",
        f.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // 25,000 × 7.5 / 86,400 = 2.170 req/s; × 430 s / 7.5 requests = 124.4 → 125 VUs.
    assert!(text.contains("= 2.170"), "{text}");
    assert!(text.contains("125 VUs"), "{text}");
    assert!(text.contains("Little's law"), "{text}");
    let v = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stderr)
    );
    assert_eq!(
        pado(&[
            "plan",
            "--dau",
            "0",
            "--requests-per-user",
            "1",
            "--scenario-time",
            "1s"
        ])
        .status
        .code(),
        Some(2)
    );
}

#[test]
fn compare_marks_a_real_slowdown_and_names_its_method() {
    let srv = TestServer::start();
    let (fast_url, slow_url) = (srv.url("/delay/5"), srv.url("/delay/60"));
    // A history of its own: the spread between earlier runs of the same test widens
    // the noise floor, and other tests' quick runs must not count as earlier runs.
    let home = tmp("cmp-home");
    let home_s = home.to_str().unwrap().to_string();
    let home_f = home_s.clone();
    let fast = std::thread::spawn(move || {
        run_env(
            "cmp-fast",
            &["--url", &fast_url, "--vus", "2", "--duration", "10s"],
            &[("PADO_HOME", &home_f)],
        )
    });
    // Ten seconds each: per-second values are autocorrelated, and the test widens
    // its variance for that; five seconds a side can come out too few to judge.
    let slow = run_env(
        "cmp-slow",
        &["--url", &slow_url, "--vus", "2", "--duration", "10s"],
        &[("PADO_HOME", &home_s)],
    );
    let fast = fast.join().unwrap();
    let out = pado_cmd([
        "compare",
        fast.dir.to_str().unwrap(),
        slow.dir.to_str().unwrap(),
        "--json",
    ])
    .env("PADO_HOME", &home_s)
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(c["method"].as_str().unwrap().contains("Mann-Whitney"));
    let row = |metric: &str| {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scope"] == "overall" && r["metric"] == metric)
            .unwrap()
            .clone()
    };
    assert_eq!(row("latency p95 ms")["verdicts"][0], "worse", "{c}");
    assert_eq!(row("req/s (mean)")["verdicts"][0], "worse", "{c}");
    assert!(row("latency p50 ms")["changes"][0].as_f64().unwrap() > 200.0);
    // One request's maximum has no spread to test against; same load shape, no
    // warning.
    assert_eq!(row("latency max ms")["verdicts"][0], "not_tested", "{c}");
    assert_eq!(c["warnings"].as_array().unwrap().len(), 0, "{c}");
    let page_tmp = tmp("cmp-html");
    let page = page_tmp.join("compare.html");
    let text = pado(&[
        "compare",
        fast.dir.to_str().unwrap(),
        slow.dir.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("▼ worse"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("table-compare") && html.contains("class=\"worse\""));
    assert_eq!(
        pado(&["compare", fast.dir.to_str().unwrap()]).status.code(),
        Some(2)
    );
}

/// `--target` is applied before validation (a file without `target:` is fine once the
/// command line gives one), and `pado validate` takes it too.
#[test]
fn target_flag_completes_a_file_without_target() {
    let srv = TestServer::start();
    let dir = tmp("no-target");
    let f = write_fixture(
        &dir,
        "tooling_target_flag_completes_a_file_without_target.yaml",
        "t.yaml",
        &[],
    );
    let f = f.to_str().unwrap();
    let o = pado(&["validate", f]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no `target`"), "{}", stderr(&o));
    let o = pado(&["validate", f, "--target", &srv.base_url()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = run("no-target", &[f, "--target", &srv.base_url()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(srv.stats().by_path.get("/hello"), Some(&2));
}

/// `target: http://{{ env.X }}` is resolved at load; unset, the error names the line
/// and the export; set, the run reaches it and the value appears in no result file.
#[test]
fn target_from_the_environment_is_resolved_and_kept_out_of_results() {
    let srv = TestServer::start();
    let dir = tmp("env-target");
    let f = write_fixture(
        &dir,
        "tooling_target_from_the_environment_is_resolved_and_kept_out_of_results.yaml",
        "t.yaml",
        &[],
    );
    let f = f.to_str().unwrap();
    let o = pado(&["validate", f]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("t.yaml:2:1: target: environment variable `PADO_E2E_HOST` is not set"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("export PADO_E2E_HOST="),
        "{}",
        stderr(&o)
    );
    // The host with its port: a value the results must not hold.
    let host = srv.base_url().trim_start_matches("http://").to_string();
    let _m = crate::harness::shared_machine();
    let out_dir_tmp = tmp("env-target-out");
    let out_dir = out_dir_tmp.join("result");
    let o = pado_cmd(["run", f, "--quiet", "--out", out_dir.to_str().unwrap()])
        .env("PADO_E2E_HOST", &host)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(srv.stats().by_path.get("/hello"), Some(&3));
    assert!(srv.stats().by_path.get("/metrics").is_some_and(|n| *n > 0));
    let mut files = 0;
    for e in std::fs::read_dir(&out_dir).unwrap() {
        let p = e.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        assert!(!text.contains(&host), "{} holds {host}", p.display());
        files += 1;
    }
    assert!(files >= 3);
    assert!(!stderr(&o).contains(&host) && !String::from_utf8_lossy(&o.stdout).contains(&host));
    // Printing every exchange (one iteration, in full) hides it too.
    let o = pado_cmd(["run", f, "--once", "--http-debug=full"])
        .env("PADO_E2E_HOST", &host)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("/hello"), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains(&host) && !String::from_utf8_lossy(&o.stdout).contains(&host),
        "{}",
        stderr(&o)
    );
}

/// Compile errors (an unset variable in a header, a feed column) name their line;
/// threshold selectors are checked against the steps and tags that exist.
#[test]
fn validate_names_lines_of_env_and_selector_problems() {
    let dir = tmp("validate-lines");
    let f = write_fixture(
        &dir,
        "tooling_validate_names_lines_of_env_and_selector_problems.yaml",
        "t.yaml",
        &[],
    );
    let o = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("t.yaml:10:")
            && e.contains("PADO_E2E_UNSET_KEY")
            && e.contains("export PADO_E2E_UNSET_KEY=..."),
        "{e}"
    );
    let f = write_fixture(
        &dir,
        "tooling_validate_names_lines_of_env_and_selector_problems_s.yaml",
        "s.yaml",
        &[],
    );
    let o = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("s.yaml:3:")
            && e.contains("no step is named `serch`")
            && e.contains("did you mean `search`?"),
        "{e}"
    );
    assert!(
        e.contains("s.yaml:4:")
            && e.contains("`knid` is not a tag pado sets")
            && e.contains("kind"),
        "{e}"
    );
    let f = write_fixture(
        &dir,
        "tooling_validate_names_lines_of_env_and_selector_problems_ok.yaml",
        "ok.yaml",
        &[],
    );
    let o = pado(&["validate", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The parts of a `multipart/form-data` body, whatever its boundary: each part's
/// head lines (lower-cased names) and content, in order.
fn multipart_parts(content_type: &str, body: &[u8]) -> Vec<(Vec<String>, Vec<u8>)> {
    let boundary = content_type
        .split("boundary=")
        .nth(1)
        .expect("a boundary")
        .trim_matches('"');
    let text = String::from_utf8(body.to_vec()).unwrap();
    let delim = format!("--{boundary}");
    let mut pieces: Vec<&str> = text.split(&delim).collect();
    assert_eq!(pieces.remove(0), "", "{text}");
    assert_eq!(pieces.pop(), Some("--\r\n"), "{text}");
    pieces
        .iter()
        .map(|p| {
            let p = p
                .strip_prefix("\r\n")
                .unwrap()
                .strip_suffix("\r\n")
                .unwrap();
            let (head, content) = p.split_once("\r\n\r\n").unwrap();
            let head = head.lines().map(|l| l.to_string()).collect();
            (head, content.as_bytes().to_vec())
        })
        .collect()
}

/// A header of a recorded request, case-insensitively.
fn received_header<'a>(r: &'a pado_testkit::RequestRecord, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn a_har_import_sends_the_recorded_bytes() {
    let srv = TestServer::start();
    let base = srv.base_url();
    // Shaped as Chrome and Firefox save them: `_initiator`, `cache`, `timings`,
    // `queryString`, `postData.params` with `fileName` and `contentType`.
    let json_text = "{\"id\":12345678901234567890123, \"b\":\"안녕\",\n  \"a\":1.50}";
    let ct = "multipart/form-data; boundary=----WebKitFormBoundaryu7Xf3kQ9";
    let entry = |i: usize, url: String, headers: serde_json::Value, post: serde_json::Value| {
        serde_json::json!({
            "_initiator": {"type": "script"}, "_priority": "High", "_resourceType": "fetch",
            "cache": {}, "connection": "443", "pageref": "page_1",
            "startedDateTime": format!("2026-11-22T01:00:0{i}.000Z"), "time": 10.5,
            "request": {"method": "POST", "url": url, "httpVersion": "HTTP/1.1",
                "headers": headers, "queryString": [], "cookies": [], "headersSize": -1,
                "bodySize": 10, "postData": post},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                "headers": [], "cookies": [], "content": {"size": 3, "mimeType": "text/plain"},
                "redirectURL": "", "headersSize": -1, "bodySize": -1, "_transferSize": 120},
            "timings": {"blocked": 1.2, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1,
                "wait": 8.0, "receive": 1.2, "_blocked_queueing": 0.5}
        })
    };
    let har = serde_json::json!({"log": {"version": "1.2",
    "creator": {"name": "WebInspector", "version": "537.36"},
    "pages": [{"startedDateTime": "2026-11-22T01:00:00.000Z", "id": "page_1", "title": "t",
        "pageTimings": {"onContentLoad": 1, "onLoad": 2}}],
    "entries": [
        entry(0, format!("{base}/json"),
            serde_json::json!([{"name": "Content-Type", "value": "application/json"}]),
            serde_json::json!({"mimeType": "application/json", "text": json_text})),
        entry(1, format!("{base}/b64"), serde_json::json!([]),
            serde_json::json!({"mimeType": "application/octet-stream", "encoding": "base64",
                "text": "AP/+gHBhZG8="})),
        entry(2, format!("{base}/upload"),
            serde_json::json!([{"name": "Content-Type", "value": ct}]),
            serde_json::json!({"mimeType": ct, "params": [
                {"name": "title", "value": "제목"},
                {"name": "doc", "value": "a,b\n1,2\n", "fileName": "표.csv", "contentType": "text/csv"}]})),
        entry(3, format!("{base}/upload2"), serde_json::json!([]),
            serde_json::json!({"mimeType": "multipart/form-data", "params": [
                {"name": "note", "value": "x"},
                {"name": "f", "value": "{\"k\":1}", "fileName": "a.json", "contentType": "application/json"}]})),
    ]}});
    let dir = tmp("har-bytes");
    let h = write_file(&dir, "rec.har", &har.to_string());
    let y = dir.join("rec.yaml");
    let out = pado(&[
        "import",
        "har",
        h.to_str().unwrap(),
        "-o",
        y.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = run(
        "har-bytes",
        &[y.to_str().unwrap(), "--iterations", "1", "--vus", "1"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = srv.records();
    let at = |p: &str| {
        recs.iter()
            .find(|x| x.path == p)
            .unwrap_or_else(|| panic!("{p}"))
    };
    // The JSON text byte for byte: the big integer, key order, spaces, `1.50`.
    assert_eq!(at("/json").body, json_text.as_bytes());
    assert_eq!(
        received_header(at("/json"), "content-type"),
        Some("application/json")
    );
    // A base64 body decoded.
    assert_eq!(
        at("/b64").body,
        [0, 0xff, 0xfe, 0x80, b'p', b'a', b'd', b'o']
    );
    // Multipart from params, with the recorded boundary: exactly the browser's body.
    let up = at("/upload");
    assert_eq!(received_header(up, "content-type"), Some(ct));
    let expected = "------WebKitFormBoundaryu7Xf3kQ9\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n제목\r\n\
        ------WebKitFormBoundaryu7Xf3kQ9\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"표.csv\"\r\nContent-Type: text/csv\r\n\r\na,b\n1,2\n\r\n\
        ------WebKitFormBoundaryu7Xf3kQ9--\r\n";
    assert_eq!(String::from_utf8_lossy(&up.body), expected);
    // Without a recorded boundary: the same parts under pado's boundary.
    let up2 = at("/upload2");
    let parts = multipart_parts(received_header(up2, "content-type").unwrap(), &up2.body);
    assert_eq!(
        parts,
        vec![
            (
                vec!["Content-Disposition: form-data; name=\"note\"".to_string()],
                b"x".to_vec()
            ),
            (
                vec![
                    "Content-Disposition: form-data; name=\"f\"; filename=\"a.json\"".to_string(),
                    "Content-Type: application/json".to_string()
                ],
                b"{\"k\":1}".to_vec()
            ),
        ]
    );
}

/// What real curl sends for `args` (run in `cwd`) and what pado sends for the same
/// command imported there and run once: the two requests the server received.
fn curl_and_pado(
    srv: &TestServer,
    cwd: &std::path::Path,
    name: &str,
    args: &[&str],
) -> Option<(pado_testkit::RequestRecord, pado_testkit::RequestRecord)> {
    let url = format!("{}/cmp/{name}", srv.base_url());
    let mut curl = std::process::Command::new("curl");
    curl.current_dir(cwd)
        .args(["-sS", "-o", "/dev/null", "--max-time", "10"]);
    for v in crate::harness::PROXY_VARS {
        curl.env_remove(v);
    }
    let before = srv.records().len();
    match curl.args(args).arg(&url).status() {
        Ok(s) => assert!(s.success(), "curl {args:?}: {s}"),
        Err(_) => {
            eprintln!("no curl on this machine: {name} compares pado with nothing");
            return None;
        }
    }
    let quoted: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let cmd = format!("curl {} '{url}'", quoted.join(" "));
    let y = cwd.join("out").join(format!("{name}.yaml"));
    std::fs::create_dir_all(y.parent().unwrap()).unwrap();
    let out = {
        let _machine = crate::harness::shared_machine();
        pado_cmd(["import", "curl", &cmd, "-o", y.to_str().unwrap()])
            .current_dir(cwd)
            .output()
            .unwrap()
    };
    assert_eq!(
        out.status.code(),
        Some(0),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = run(
        name,
        &[y.to_str().unwrap(), "--iterations", "1", "--vus", "1"],
    );
    assert_eq!(r.code(), 0, "{cmd}: {}", r.stderr());
    let recs = srv.records();
    assert_eq!(recs.len(), before + 2, "{cmd}");
    Some((recs[before].clone(), recs[before + 1].clone()))
}

#[test]
fn a_curl_import_sends_what_curl_sends() {
    let srv = TestServer::start();
    let dir = tmp("curl-bytes");
    // Files named as the command was typed: in its working directory, not beside
    // the scenario (written to `out/`).
    std::fs::write(dir.join("rows.csv"), "a,b\r\n1,2\r\n").unwrap();
    std::fs::write(dir.join("blob.bin"), [0u8, 0xff, 0x0a, 0x0d, b'x']).unwrap();
    // The curl manual's examples (curl.se/docs/manpage.html), and what Chrome's
    // "Copy as cURL" writes.
    let cases: &[(&str, &[&str])] = &[
        ("manual-data", &["-d", "name=curl", "-d", "tool=cmdline"]),
        (
            "manual-json",
            &[
                "--json",
                r#"{"drink": "coffe", "id": 12345678901234567890123}"#,
            ],
        ),
        (
            "manual-urlencode",
            &[
                "--data-urlencode",
                "name=I am Daniel 한글",
                "--data-urlencode",
                "=a b",
            ],
        ),
        ("data-file", &["-d", "@rows.csv"]),
        (
            "binary-file",
            &[
                "--data-binary",
                "@blob.bin",
                "-H",
                "Content-Type: application/octet-stream",
            ],
        ),
        (
            "compressed",
            &["--compressed", "-X", "PUT", "--data-raw", "z=1+2"],
        ),
        (
            "accept-encoding",
            &["-H", "Accept-Encoding: gzip", "--retry", "2", "-L"],
        ),
        ("accept-own", &["-H", "accept: text/html;q=0.9"]),
        ("accept-removed", &["-H", "Accept:"]),
    ];
    for (name, args) in cases {
        let Some((curl, pado)) = curl_and_pado(&srv, &dir, name, args) else {
            return;
        };
        assert_eq!(pado.method, curl.method, "{name}");
        assert_eq!(pado.target, curl.target, "{name}");
        assert_eq!(
            pado.body,
            curl.body,
            "{name}: {}",
            String::from_utf8_lossy(&pado.body)
        );
        // curl sends `Accept: */*` on every request (`--json` asks for JSON, a
        // command's own Accept is sent as written, `-H 'Accept:'` sends none).
        for h in ["content-type", "accept-encoding", "accept"] {
            assert_eq!(
                received_header(&pado, h),
                received_header(&curl, h),
                "{name}: {h}"
            );
        }
    }
}

/// The Python interpreter that has HdrHistogram's reference decoder (PyPI package
/// `hdrhistogram`, module `hdrh`): `PADO_E2E_PYTHON`, else the virtual environment
/// `scripts/test.sh` makes under `target/pyhdr`, else `python3`. Missing, the test is
/// skipped with a message, unless `PADO_E2E_REQUIRE_ALL=1`.
fn python_with_hdrh() -> Option<std::path::PathBuf> {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyhdr/bin/python3");
    let candidates = std::env::var_os("PADO_E2E_PYTHON")
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain([venv, "python3".into()]);
    for py in candidates {
        let ok = std::process::Command::new(&py)
            .args(["-c", "import hdrh.log"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py);
        }
    }
    let msg = "Python's hdrhistogram package (HdrHistogram's reference decoder) is not installed (scripts/test.sh installs it into target/pyhdr)";
    if std::env::var("PADO_E2E_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("{msg}, and PADO_E2E_REQUIRE_ALL=1 requires it");
    }
    eprintln!("skipped: {msg}");
    None
}

/// `--export hdr`'s `latency.hlog`, read by HdrHistogram's reference Python decoder:
/// requests to two steps a local server answers after exactly 20 ms and 60 ms. Its
/// counts are the server's and pado's, its whole-run histogram has pado's maximum
/// and mean, and each step's 50th percentile is above the delay planted for it and
/// below the other's.
#[test]
fn the_hdr_export_reads_in_hdrhistograms_reference_decoder() {
    let Some(py) = python_with_hdrh() else {
        return;
    };
    let srv = TestServer::start();
    let addr = srv.addr();
    let d = tmp("hlog");
    let f = write_fixture(
        &d,
        "tooling_the_hdr_export_reads_in_hdrhistograms_reference_decoder.yaml",
        "s.yaml",
        &[("addr", addr.to_string())],
    );
    let r = run("hlog", &[f.to_str().unwrap(), "--export", "hdr"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(srv.records().len(), 24);
    let log = r.dir.join("latency.hlog");
    let script = r#"
import json, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
acc = HdrHistogram(1, 3600 * 1000 * 1000, 3)
reader = HistogramLogReader(sys.argv[1], acc)
out = {"all": 0, "lines": 0}
tags = {}
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    out["lines"] += 1
    tag = h.get_tag()
    if tag is None:
        out["all"] += h.get_total_count()
        acc.add(h)
    else:
        t = tags.setdefault(tag, HdrHistogram(1, 3600 * 1000 * 1000, 3))
        t.add(h)
out["max"] = acc.get_max_value()
out["mean"] = acc.get_mean_value()
out["start"] = reader.get_start_time_sec()
out["tags"] = {k: [v.get_total_count(), v.get_value_at_percentile(50)] for k, v in tags.items()}
print(json.dumps(out, ensure_ascii=False))
"#;
    let o = std::process::Command::new(&py)
        .args(["-c", script, log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = r.summary();
    assert_eq!(got["all"], 24, "{got}");
    assert_eq!(num(&s, "requests"), 24.0, "{s}");
    // Values are µs; summary.json's are ms.
    let max_ms = got["max"].as_f64().unwrap() / 1000.0;
    assert_eq!(max_ms, num(&s, "latency_ms.max"), "{got} / {s}");
    let mean_ms = got["mean"].as_f64().unwrap() / 1000.0;
    assert!(
        (mean_ms - num(&s, "latency_ms.mean")).abs() < 1e-6,
        "{got} / {s}"
    );
    let fast = &got["tags"]["빠른_요청"];
    let slow = &got["tags"]["slow;_one"];
    assert_eq!(fast[0], 12, "{got}");
    assert_eq!(slow[0], 12, "{got}");
    let (fast_p50, slow_p50) = (fast[1].as_f64().unwrap(), slow[1].as_f64().unwrap());
    assert!((20_000.0..60_000.0).contains(&fast_p50), "{got}");
    assert!(slow_p50 >= 60_000.0, "{got}");
    assert!(got["start"].as_f64().unwrap() > 1.6e9, "{got}");
}
