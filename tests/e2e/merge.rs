//! `pado merge`: real runs turned into segments of one split test (their run.json
//! given `segment` metadata, as `pado run --segment` writes it), merged, and checked
//! against the server's own count and a reference built from the segments'
//! histograms.

use std::path::{Path, PathBuf};

use pado_metrics::Phase;
use pado_results::ResultDir;
use pado_testkit::TestServer;
use serde_json::{json, Value};

use crate::harness::{
    merge, num, pado, pado_cmd, read_json, spawn_piped, text, tmp, wait_within_polling, Tmp,
};

/// `n` short runs against `srv`, each made segment `i` of `n` of plan `plan`, in
/// `root/seg<i>`.
fn segment_runs(root: &Path, srv: &TestServer, n: u32) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let dir = root.join(format!("seg{i}"));
            let out = pado(&[
                "run",
                "--url",
                &srv.url("/delay/3"),
                "--vus",
                "2",
                "--duration",
                "2s",
                "--threshold",
                "http_reqs: count > 0",
                "--out",
                dir.to_str().unwrap(),
                "--quiet",
            ]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            make_segment(&dir, i, n, "ab12cd34ef56");
            dir
        })
        .collect()
}

fn write_json(p: &Path, v: &Value) {
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// Give a run's run.json the segment metadata `pado run --segment i/n` writes.
fn make_segment(dir: &Path, i: u32, n: u32, plan: &str) {
    let p = dir.join("run.json");
    let mut v = read_json(&p);
    v["segment"] = json!({
        "index": i, "count": n, "weights": vec![1; n as usize], "plan_id": plan,
    });
    write_json(&p, &v);
}

/// Replace the thresholds of every segment (they are the test's, the same in each).
fn set_threshold(dirs: &[PathBuf], metric: &str, expr: &str) {
    for d in dirs {
        let p = d.join("run.json");
        let mut v = read_json(&p);
        v["thresholds"] = json!([{ "metric": metric, "expr": expr, "abort_on_fail": false }]);
        write_json(&p, &v);
    }
}

fn requests_of(dir: &Path) -> u64 {
    num(&read_json(&dir.join("summary.json")), "requests") as u64
}

#[test]
fn merged_segments_sum_exactly_and_thresholds_judge_the_union() {
    let srv = TestServer::start();
    let root: Tmp = tmp("merge");
    let dirs = segment_runs(&root, &srv, 3);
    let each: Vec<u64> = dirs.iter().map(|d| requests_of(d)).collect();
    let sum: u64 = each.iter().sum();
    assert_eq!(
        sum,
        srv.stats().requests,
        "the server counted every request once"
    );

    // A threshold no segment passes alone, the union does.
    let biggest = *each.iter().max().unwrap();
    set_threshold(&dirs, "http_reqs", &format!("count > {biggest}"));
    let out = root.join("merged");
    let o = merge(&dirs, &out, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let s = read_json(&out.join("summary.json"));
    assert_eq!(num(&s, "requests") as u64, sum);
    assert_eq!(s["thresholds_ok"], true);
    // Versions and connections opened summed over the generators: the server's count.
    assert_eq!(s["http_versions"], serde_json::json!({"1.1": sum}), "{s}");
    assert_eq!(
        num(&s, "connections_opened") as u64,
        srv.stats().connections,
        "{s}"
    );

    // p95 equals that of every segment's histograms added.
    let mut reference = pado_metrics::LatencyHistogram::new();
    for d in &dirs {
        let t = ResultDir::open(d).unwrap().read_totals().unwrap();
        reference.add(t.overall().phase(Phase::Duration));
    }
    let r = reference.summary();
    assert_eq!(num(&s, "latency_ms.p95"), r.p95);
    assert_eq!(num(&s, "latency_ms.p99"), r.p99);
    assert_eq!(num(&s, "latency_ms.max"), r.max);

    // The per-generator breakdown: in summary.json, the text and the HTML.
    let g = s["generators"].as_array().unwrap();
    assert_eq!(g.len(), 3);
    for (i, row) in g.iter().enumerate() {
        assert_eq!(row["segment"], format!("{i}/3"));
        assert_eq!(row["requests"].as_u64().unwrap(), each[i]);
        assert!(row["self_check"]["saturated"].is_boolean(), "{row}");
    }
    let stdout = text(&o.stdout);
    assert!(stdout.contains("generators (3 merged)"), "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"generators\""));
    assert_eq!(html.matches("class=\"generator\"").count(), 3);
    let meta = read_json(&out.join("run.json"));
    assert_eq!(meta["merged_from"].as_array().unwrap().len(), 3);
    assert!(meta.get("segment").is_none());

    // The merge folded its seconds as it wrote them; `pado report`, reading the
    // merged directory back, writes the same summary and report.
    let html_before = html;
    let o = pado(&["report", out.to_str().unwrap(), "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(read_json(&out.join("summary.json")), s);
    assert_eq!(
        std::fs::read_to_string(out.join("report.html")).unwrap(),
        html_before
    );

    // The same merge judged by a threshold the union fails: exit 99.
    set_threshold(&dirs, "http_reqs", &format!("count > {sum}"));
    let out2 = root.join("merged-fail");
    let o = merge(
        &dirs,
        &out2,
        &[
            "--no-html",
            "--quiet",
            "--export",
            "junit",
            "--window",
            "처음=0s..1s",
        ],
    );
    assert_eq!(o.status.code(), Some(99), "{}", text(&o.stderr));
    assert!(!out2.join("report.html").exists());
    // The exports and windows `pado run` takes: junit.xml with the failed threshold,
    // and the window's row, as `pado report --window` reading the merged directory
    // back gives it.
    let junit = std::fs::read_to_string(out2.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    let s2 = read_json(&out2.join("summary.json"));
    let window = s2["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|st| st["label"] == "처음")
        .unwrap_or_else(|| panic!("no window row: {}", s2["stages"]))
        .clone();
    assert!(num(&window, "requests") > 0.0, "{window}");
    let o = pado(&[
        "report",
        out2.to_str().unwrap(),
        "--quiet",
        "--window",
        "처음=0s..1s",
    ]);
    assert_eq!(o.status.code(), Some(99), "{}", text(&o.stderr));
    assert_eq!(read_json(&out2.join("summary.json")), s2);
    // `pado report` on the merged directory agrees.
    let o = pado(&["report", out2.to_str().unwrap(), "--quiet"]);
    assert_eq!(o.status.code(), Some(99), "{}", text(&o.stderr));
}

#[test]
fn missing_killed_and_foreign_segments_are_named() {
    let srv = TestServer::start();
    let root: Tmp = tmp("merge-bad");
    let dirs = segment_runs(&root, &srv, 3);

    // Segment 2 missing: named, exit 1, nothing written.
    let out = root.join("m1");
    let o = merge(&dirs[..2], &out, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("segment 2/3 missing: its share of the load was not sent"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.join("run.json").exists());

    // Allowed: merged, with the warning, marked partial.
    let o = merge(&dirs[..2], &out, &["--allow-partial"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = read_json(&out.join("summary.json"));
    assert!(s["partial"][0]
        .as_str()
        .unwrap()
        .contains("segment 2/3 missing"));
    assert!(s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("segment 2/3 missing")));
    assert!(
        text(&o.stdout).contains("PARTIAL RESULT"),
        "{}",
        text(&o.stdout)
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"badge-partial\""));
    assert_eq!(
        num(&s, "requests") as u64,
        requests_of(&dirs[0]) + requests_of(&dirs[1])
    );

    // A killed generator: run.json never finished, no summary, a torn timeline.
    let killed = &dirs[1];
    std::fs::remove_file(killed.join("summary.json")).unwrap();
    let p = killed.join("run.json");
    let mut v = read_json(&p);
    v["duration_s"] = json!(0.0);
    write_json(&p, &v);
    let tl = killed.join("timeline.jsonl");
    let t = std::fs::read_to_string(&tl).unwrap();
    let first = t.lines().next().unwrap();
    std::fs::write(&tl, format!("{first}\n{}", &first[..first.len() / 2])).unwrap();
    let o = merge(&dirs, &root.join("m2"), &[]);
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(
        e.contains("segment 1/3 ended early at 1 s of")
            && e.contains("killed or crashed")
            && e.contains("seg1"),
        "{e}"
    );

    // Another plan: refused, exit 2, both named.
    make_segment(&dirs[2], 2, 3, "cd34ffff0000");
    let o = merge(&dirs, &root.join("m3"), &["--allow-partial"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("are segments of different tests: plan ab12cd34… vs cd34ffff…")
            && e.contains("seg0")
            && e.contains("seg2"),
        "{e}"
    );

    // A whole run is not a segment.
    let p = dirs[0].join("run.json");
    let mut v = read_json(&p);
    v.as_object_mut().unwrap().remove("segment");
    write_json(&p, &v);
    let o = merge(&dirs, &root.join("m4"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("is not one segment of a split test (run with --segment)"));
}

/// Bytes of every file under `dir` (0 when it does not exist).
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        bytes_under(&p)
                    } else {
                        e.metadata().map_or(0, |m| m.len())
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Rewrite the lines of a segment's timeline.
fn edit_timeline(dir: &Path, edit: impl FnOnce(&mut Vec<String>)) {
    let p = dir.join("timeline.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    edit(&mut lines);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
}

/// A merge that must be refused quickly, writing next to nothing: its stderr.
fn refused(dirs: &[PathBuf], out: &Path) -> String {
    let t = std::time::Instant::now();
    let o = merge(dirs, out, &[]);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
    assert_ne!(o.status.code(), Some(0), "{}", text(&o.stdout));
    assert!(bytes_under(out) < 2 << 20, "{} bytes", bytes_under(out));
    text(&o.stderr)
}

#[test]
fn a_second_at_four_billion_or_a_start_in_2099_is_refused_at_once() {
    let srv = TestServer::start();
    let root: Tmp = tmp("merge-far");
    let dirs = segment_runs(&root, &srv, 2);
    // A last line at t = 4000000000: the merge used to write every second up to it.
    edit_timeline(&dirs[1], |lines| {
        let mut v: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        v["t"] = json!(4_000_000_000u64);
        lines.push(v.to_string());
    });
    let n = std::fs::read_to_string(dirs[1].join("timeline.jsonl"))
        .unwrap()
        .lines()
        .count();
    let e = refused(&dirs, &root.join("m1"));
    assert!(
        e.contains(&format!("seg1/timeline.jsonl:{n}:"))
            && e.contains("field `t`: second 4000000000"),
        "{e}"
    );

    // A segment claiming to have started in 2099 (no agreed start: placed by its
    // wall-clock start).
    let dirs = segment_runs(&root.join("b"), &srv, 2);
    let p = dirs[1].join("run.json");
    let mut v = read_json(&p);
    v["started_at"] = json!("2099-01-01T00:00:00.000Z");
    write_json(&p, &v);
    let e = refused(&dirs, &root.join("m2"));
    assert!(
        e.contains("seg1/run.json:") && e.contains("field `started_at`: 2099-01-01"),
        "{e}"
    );
}

#[test]
fn a_repeated_second_is_refused_not_counted_twice() {
    let srv = TestServer::start();
    let root: Tmp = tmp("merge-dup");
    let dirs = segment_runs(&root, &srv, 2);
    // The truth: the server's count, which a merge of the untouched segments gives.
    let ok = merge(&dirs, &root.join("good"), &[]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(requests_of(&root.join("good")), srv.stats().requests);
    edit_timeline(&dirs[0], |lines| {
        let again = lines[1].clone();
        lines.insert(2, again);
    });
    let e = refused(&dirs, &root.join("m"));
    assert!(
        e.contains("seg0/timeline.jsonl:3:") && e.contains("second 1 repeats second 1"),
        "{e}"
    );
}

/// A result directory whose `timeline.jsonl` is a FIFO nobody writes to (a hostile
/// or broken upload): `pado merge` says which file and why within seconds, exit 2,
/// instead of waiting on it for ever.
#[test]
fn a_fifo_in_a_segment_is_refused_within_seconds() {
    let srv = TestServer::start();
    let root: Tmp = tmp("merge-fifo");
    let dirs = segment_runs(&root, &srv, 2);
    let fifo = dirs[1].join("timeline.jsonl");
    std::fs::remove_file(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".into(), root.join("merged").display().to_string()]);
    let mut child = spawn_piped(&mut pado_cmd(&args));
    let limit = std::time::Duration::from_secs(20);
    let poll = std::time::Duration::from_millis(100);
    if wait_within_polling(&mut child, limit, poll).is_none() {
        panic!("pado merge still waiting on the FIFO after 20 s");
    }
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: is a FIFO, not a regular file",
            fifo.display()
        )),
        "{err}"
    );
    assert!(!root.join("merged").join("summary.json").exists());
}
