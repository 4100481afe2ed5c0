//! Tests of loading, value access and picking through the public API.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use pado_scenario::{DataSpec, PickMode};
use serde_json::json;

use super::*;

/// A scratch directory, removed when dropped (pass or fail).
struct TempDir(tempfile::TempDir);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("pado-data-{tag}-"))
            .tempdir()
            .unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn write(&self, name: &str, content: impl AsRef<[u8]>) {
        std::fs::write(self.0.path().join(name), content).unwrap();
    }
}

fn file_spec(file: &str) -> DataSpec {
    DataSpec {
        file: Some(file.into()),
        ..Default::default()
    }
}

fn range_spec(first: i64, last: i64, pick: PickMode) -> DataSpec {
    DataSpec {
        range: Some([first, last]),
        pick: Some(pick),
        ..Default::default()
    }
}

/// Loads `content` written to a file named `name`.
fn load_content(name: &str, content: impl AsRef<[u8]>) -> Result<Feed, DataError> {
    let dir = TempDir::new("one");
    dir.write(name, content);
    Feed::load("feed", &file_spec(name), dir.path())
}

fn value(feed: &Feed, row: u64, col: &str) -> String {
    let col = feed.require_column(col).unwrap();
    let mut out = Vec::new();
    feed.write_value(row, col, &mut out);
    let s = String::from_utf8(out).unwrap();
    assert_eq!(feed.value_str(row, col), s.as_str());
    s
}

#[test]
fn feed_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Feed>();
    assert_send_sync::<Arc<Feed>>();
    assert_send_sync::<FeedCursor>();
    assert_send_sync::<WeightedFeeds>();
}

#[test]
fn csv_with_header_and_hangul_round_trips() {
    let csv = "term,class\n검색 엔진,nav\n\"쉼표, 포함\",\"say \"\"hi\"\"\"\n\"두 줄\n값\",\n";
    let f = load_content("keywords.csv", csv).unwrap();
    assert_eq!(f.name(), "feed");
    assert_eq!(f.columns(), ["term", "class"]);
    assert_eq!(f.len(), 3);
    assert!(!f.is_empty());
    assert_eq!(value(&f, 0, "term"), "검색 엔진");
    assert_eq!(value(&f, 0, "class"), "nav");
    assert_eq!(value(&f, 1, "term"), "쉼표, 포함");
    assert_eq!(value(&f, 1, "class"), "say \"hi\"");
    assert_eq!(value(&f, 2, "term"), "두 줄\n값");
    assert_eq!(value(&f, 2, "class"), "");
    assert_eq!(f.column("value"), None, "no alias on a multi-column feed");
    assert_eq!(f.default_column(), 0);

    // write_value appends.
    let mut out = b"q=".to_vec();
    f.write_value(0, 0, &mut out);
    assert_eq!(out, "q=검색 엔진".as_bytes());
}

#[test]
fn csv_bom_crlf_trimmed_header_and_blank_lines() {
    let csv = "\u{feff}term , class\r\n\r\nfoo,bar\r\n\r\nbaz,qux\r\n";
    let f = load_content("k.csv", csv).unwrap();
    assert_eq!(f.columns(), ["term", "class"]);
    assert_eq!(f.len(), 2);
    assert_eq!(value(&f, 1, "class"), "qux");
}

#[test]
fn single_column_csv_answers_to_value() {
    let f = load_content("k.csv", "term\na\nb\n").unwrap();
    assert_eq!(f.column("value"), Some(0));
    assert_eq!(f.column("term"), Some(0));
    assert_eq!(f.default_column(), 0);
    assert_eq!(value(&f, 1, "value"), "b");
}

#[test]
fn tsv_and_sniffed_formats() {
    let f = load_content("k.tsv", "a\tb\n1,5\t2\n").unwrap();
    assert_eq!(value(&f, 0, "a"), "1,5");
    let f = load_content("k.txt", "  [\"x\", \"y\"]").unwrap();
    assert_eq!(f.len(), 2);
    let f = load_content("k.dat", "a,b\n1,2\n").unwrap();
    assert_eq!(f.columns(), ["a", "b"]);
}

#[test]
fn ragged_csv_names_the_line() {
    let e = load_content("rows.csv", "a,b\n1,2\n3\n4,5\n").unwrap_err();
    assert!(
        matches!(
            e,
            DataError::RaggedRow {
                line: 3,
                expected: 2,
                found: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("data.feed") && msg.contains("rows.csv") && msg.contains("line 3"),
        "{msg}"
    );
}

#[test]
fn csv_that_is_not_utf8_names_file_and_line() {
    // "검색" in EUC-KR.
    let e = load_content("kr.csv", b"term\nok\n\xB0\xCB\xBB\xF6\n").unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, DataError::InvalidUtf8 { line: 3, .. }), "{e:?}");
    assert!(
        msg.contains("kr.csv") && msg.contains("line 3") && msg.contains("term"),
        "{msg}"
    );
}

#[test]
fn csv_problems_are_errors() {
    let e = load_content("e.csv", "").unwrap_err();
    assert!(matches!(e, DataError::NoHeader { .. }), "{e:?}");
    let e = load_content("e.csv", "a,b\n").unwrap_err();
    assert!(matches!(e, DataError::Empty { .. }), "{e:?}");
    assert!(e.to_string().contains("e.csv"));
    let e = load_content("e.csv", "a,b,a\n1,2,3\n").unwrap_err();
    assert!(matches!(e, DataError::DuplicateColumn { .. }), "{e:?}");

    let dir = TempDir::new("missing");
    let e = Feed::load("users", &file_spec("nope.csv"), dir.path()).unwrap_err();
    assert!(matches!(e, DataError::Io { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("data.users") && msg.contains("nope.csv"),
        "{msg}"
    );
}

#[test]
fn json_array_of_objects() {
    let doc = r#"[
        {"name": "김철수", "id": 1, "tags": ["a", "b"], "meta": {"x": null}, "n": null, "ok": true, "f": 1.5},
        {"f": 2, "ok": false, "n": "x", "meta": 3, "tags": [], "id": 18446744073709551615, "name": "lee"}
    ]"#;
    let f = load_content("users.json", doc).unwrap();
    assert_eq!(
        f.columns(),
        ["name", "id", "tags", "meta", "n", "ok", "f"],
        "columns in document order"
    );
    assert_eq!(f.len(), 2);
    assert_eq!(value(&f, 0, "name"), "김철수");
    assert_eq!(value(&f, 0, "id"), "1");
    assert_eq!(value(&f, 0, "tags"), r#"["a","b"]"#);
    assert_eq!(value(&f, 0, "meta"), r#"{"x":null}"#);
    assert_eq!(value(&f, 0, "n"), "");
    assert_eq!(value(&f, 0, "ok"), "true");
    assert_eq!(value(&f, 0, "f"), "1.5");
    assert_eq!(value(&f, 1, "name"), "lee");
    assert_eq!(value(&f, 1, "id"), "18446744073709551615");
    assert_eq!(value(&f, 1, "tags"), "[]");
    assert_eq!(value(&f, 1, "n"), "x");
    assert_eq!(f.default_column(), 0);
}

#[test]
fn json_array_of_scalars() {
    let f = load_content(
        "ids.json",
        "\u{feff}[\"검색 엔진\", 42, -1.25, true, null, [1, 2]]",
    )
    .unwrap();
    assert_eq!(f.columns(), ["value"]);
    assert_eq!(f.len(), 6);
    let got: Vec<String> = (0..6).map(|r| value(&f, r, "value")).collect();
    assert_eq!(got, ["검색 엔진", "42", "-1.25", "true", "", "[1,2]"]);
}

#[test]
fn json_problems_are_errors() {
    let e = load_content("u.json", r#"{"a": 1}"#).unwrap_err();
    assert!(
        matches!(
            e,
            DataError::JsonNotArray {
                found: "an object",
                ..
            }
        ),
        "{e:?}"
    );
    let e = load_content("u.json", "[\n 1,\n 2,,\n 3]").unwrap_err();
    assert!(matches!(e, DataError::Json { line: 3, .. }), "{e:?}");
    assert!(e.to_string().contains("u.json line 3"), "{e}");
    let e = load_content("u.json", "[\n {\"a\": 1},\n {\"a\": tru}\n]").unwrap_err();
    assert!(matches!(e, DataError::Json { line: 3, .. }), "{e:?}");
    let e = load_content("u.json", "[]").unwrap_err();
    assert!(matches!(e, DataError::Empty { .. }), "{e:?}");
    let e = load_content("u.json", "[1] x").unwrap_err();
    assert!(matches!(e, DataError::Json { .. }), "{e:?}");
    let e = load_content("u.json", "[1, 2").unwrap_err();
    assert!(matches!(e, DataError::Json { .. }), "{e:?}");
    let e = load_content("u.json", "").unwrap_err();
    assert!(matches!(e, DataError::JsonNotArray { .. }), "{e:?}");

    let e = load_content("u.json", r#"[{"a":1,"b":2},{"a":1}]"#).unwrap_err();
    assert!(matches!(e, DataError::Record { record: 2, .. }), "{e:?}");
    assert!(e.to_string().contains("`b`"), "{e}");
    let e = load_content("u.json", r#"[{"a":1},{"a":1,"c":2}]"#).unwrap_err();
    assert!(
        e.to_string().contains("`c`") && e.to_string().contains("record 2"),
        "{e}"
    );
    let e = load_content("u.json", r#"[{"a":1}, 5]"#).unwrap_err();
    assert!(matches!(e, DataError::Record { record: 2, .. }), "{e:?}");
    let e = load_content("u.json", r#"[5, {"a":1}]"#).unwrap_err();
    assert!(matches!(e, DataError::Record { record: 2, .. }), "{e:?}");
    let e = load_content("u.json", r#"[{}]"#).unwrap_err();
    assert!(matches!(e, DataError::Record { record: 1, .. }), "{e:?}");
    let e = load_content("u.json", r#"[{"a":1,"a":2}]"#).unwrap_err();
    assert!(matches!(e, DataError::DuplicateColumn { .. }), "{e:?}");
}

#[test]
fn inline_values() {
    let dir = Path::new(".");
    let spec = DataSpec {
        values: Some(vec![json!("red"), json!("green"), json!("blue")]),
        pick: Some(PickMode::Sequential),
        ..Default::default()
    };
    let f = Feed::load("colors", &spec, dir).unwrap();
    assert_eq!(f.columns(), ["value"]);
    assert_eq!(f.pick_mode(), PickMode::Sequential);
    let mut c = f.cursor(0, 1);
    let mut rng = fastrand::Rng::with_seed(1);
    let picked: Vec<String> = (0..4)
        .map(|_| value(&f, f.pick(&mut c, &mut rng), "value"))
        .collect();
    assert_eq!(picked, ["red", "green", "blue", "red"]);

    let spec = DataSpec {
        values: Some(vec![
            json!({"user": "a", "pw": 1}),
            json!({"user": "b", "pw": 2}),
        ]),
        ..Default::default()
    };
    let f = Feed::load("logins", &spec, dir).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(value(&f, 1, "user"), "b");
    assert_eq!(value(&f, 1, "pw"), "2");

    let spec = DataSpec {
        values: Some(vec![json!({"user": "a"}), json!("b")]),
        ..Default::default()
    };
    let e = Feed::load("mixed", &spec, dir).unwrap_err();
    assert!(e.to_string().contains("values record 2"), "{e}");
    let spec = DataSpec {
        values: Some(vec![]),
        ..Default::default()
    };
    assert!(matches!(
        Feed::load("none", &spec, dir),
        Err(DataError::Empty { .. })
    ));
}

#[test]
fn ranges_are_not_materialised() {
    let f = Feed::load("hot", &range_spec(1, 100, PickMode::Random), Path::new(".")).unwrap();
    assert_eq!(f.len(), 100);
    assert_eq!(f.columns(), ["value"]);
    assert_eq!(value(&f, 0, "value"), "1");
    assert_eq!(value(&f, 99, "value"), "100");
    assert!(f.heap_bytes() < 256);

    let f = Feed::load("neg", &range_spec(-5, 5, PickMode::Random), Path::new(".")).unwrap();
    assert_eq!(f.len(), 11);
    assert_eq!(value(&f, 0, "value"), "-5");
    assert_eq!(value(&f, 10, "value"), "5");

    let f = Feed::load(
        "edge",
        &range_spec(i64::MIN, i64::MAX - 1, PickMode::Random),
        Path::new("."),
    )
    .unwrap();
    assert_eq!(f.len(), u64::MAX);
    assert_eq!(value(&f, 0, "value"), i64::MIN.to_string());
    assert_eq!(value(&f, u64::MAX - 1, "value"), (i64::MAX - 1).to_string());

    let e = Feed::load("bad", &range_spec(5, 4, PickMode::Random), Path::new(".")).unwrap_err();
    assert!(matches!(e, DataError::BadRange { .. }), "{e:?}");
    assert!(e.to_string().contains("data.bad"), "{e}");
    let e = Feed::load(
        "huge",
        &range_spec(i64::MIN, i64::MAX, PickMode::Random),
        Path::new("."),
    )
    .unwrap_err();
    assert!(matches!(e, DataError::RangeTooLarge { .. }), "{e:?}");
}

#[test]
fn spec_problems_are_errors() {
    let here = Path::new(".");
    let e = Feed::load("x", &DataSpec::default(), here).unwrap_err();
    assert!(matches!(e, DataError::NoSource { .. }), "{e:?}");
    let spec = DataSpec {
        file: Some("a.csv".into()),
        range: Some([1, 2]),
        ..Default::default()
    };
    let e = Feed::load("x", &spec, here).unwrap_err();
    assert!(matches!(e, DataError::ManySources { .. }), "{e:?}");
    assert!(e.to_string().contains("`file`, `range`"), "{e}");

    for s in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let spec = DataSpec {
            s: Some(s),
            ..range_spec(1, 10, PickMode::Zipf)
        };
        let e = Feed::load("x", &spec, here).unwrap_err();
        assert!(matches!(e, DataError::BadExponent { .. }), "{e:?}");
    }
    let spec = DataSpec {
        s: Some(1.2),
        ..range_spec(1, 10, PickMode::Random)
    };
    let e = Feed::load("x", &spec, here).unwrap_err();
    assert!(matches!(e, DataError::ExponentWithoutZipf { .. }), "{e:?}");

    let f = Feed::load("x", &range_spec(1, 10, PickMode::Random), here).unwrap();
    let e = f.require_column("nope").unwrap_err();
    assert!(matches!(e, DataError::UnknownColumn { .. }), "{e:?}");
    assert!(e.to_string().contains("`nope`") && e.to_string().contains("value"));
}

#[test]
fn unique_gives_disjoint_rows_per_vu() {
    let f = Feed::load("u", &range_spec(0, 999, PickMode::Unique), Path::new(".")).unwrap();
    let total = 7;
    let mut rng = fastrand::Rng::with_seed(3);
    let mut owner = std::collections::HashMap::new();
    for vu in 0..total {
        let mut c = f.cursor(vu, total);
        for _ in 0..50 {
            let row = f.pick(&mut c, &mut rng);
            assert!(row < f.len());
            if let Some(other) = owner.insert(row, vu) {
                assert_eq!(other, vu, "row {row} picked by VUs {other} and {vu}");
            }
        }
    }
    assert_eq!(
        owner.len(),
        7 * 50,
        "no VU repeats a row before its share ends"
    );
}

#[test]
fn unique_with_fewer_rows_than_vus_shares_rows() {
    let f = Feed::load("u", &range_spec(1, 3, PickMode::Unique), Path::new(".")).unwrap();
    let mut rng = fastrand::Rng::with_seed(3);
    for vu in 0..10 {
        let mut c = f.cursor(vu, 10);
        assert_eq!(c.share_len(), 1);
        for _ in 0..5 {
            assert_eq!(f.pick(&mut c, &mut rng), vu % 3);
        }
    }
}

#[test]
fn sequential_is_shared_across_threads() {
    let f = Arc::new(
        Feed::load(
            "s",
            &range_spec(1, 1000, PickMode::Sequential),
            Path::new("."),
        )
        .unwrap(),
    );
    // One lap split over two threads, then three laps over four threads.
    let mut total_picks = 0;
    for (threads, per_thread, laps) in [(2u64, 500u64, 1u64), (4, 750, 3)] {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = Arc::clone(&f);
                std::thread::spawn(move || {
                    let mut c = f.cursor(t, threads);
                    let mut rng = fastrand::Rng::with_seed(t);
                    (0..per_thread)
                        .map(|_| f.pick(&mut c, &mut rng))
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        let mut counts = vec![0u64; 1000];
        for h in handles {
            for row in h.join().unwrap() {
                counts[row as usize] += 1;
            }
        }
        total_picks += threads * per_thread;
        assert!(
            counts.iter().all(|&c| c == laps),
            "every row exactly {laps} time(s)"
        );
    }
    assert_eq!(total_picks % 1000, 0);
}

#[test]
fn zipf_prefers_low_ranks() {
    let spec = DataSpec {
        s: Some(1.1),
        ..range_spec(1, 100_000, PickMode::Zipf)
    };
    let f = Feed::load("popular", &spec, Path::new(".")).unwrap();
    let mut c = f.cursor(0, 1);
    let mut rng = fastrand::Rng::with_seed(11);
    let draws = 200_000;
    let mut counts = [0u64; 11];
    for _ in 0..draws {
        let row = f.pick(&mut c, &mut rng);
        assert!(row < f.len());
        if row <= 10 {
            counts[row as usize] += 1;
        }
    }
    assert!(counts[0] > counts[1] && counts[1] > counts[2]);
    for k in 2..=5u64 {
        let want = (k as f64).powf(-1.1);
        let got = counts[(k - 1) as usize] as f64 / counts[0] as f64;
        assert!((got - want).abs() / want < 0.1, "rank {k}: {got} vs {want}");
    }
    // Rank 1 is row 0, i.e. value 1.
    assert_eq!(value(&f, 0, "value"), "1");
}

#[test]
fn random_covers_the_range() {
    let f = Feed::load("r", &range_spec(10, 59, PickMode::Random), Path::new(".")).unwrap();
    let mut c = f.cursor(0, 1);
    let mut rng = fastrand::Rng::with_seed(5);
    let seen: HashSet<u64> = (0..5000).map(|_| f.pick(&mut c, &mut rng)).collect();
    assert_eq!(seen.len(), 50);
    assert!(seen.iter().all(|&r| r < 50));
}

#[test]
fn large_csv_is_stored_compactly() {
    let dir = TempDir::new("big");
    let mut csv = String::from("id,term,class\n");
    for i in 0..200_000u64 {
        use std::fmt::Write;
        let class = ["nav", "info", "검색", "shop", "local"][(i % 5) as usize];
        writeln!(csv, "{i},keyword {} 엔진,{class}", i * 7919 % 100_003).unwrap();
    }
    dir.write("big.csv", &csv);
    let f = Feed::load("big", &file_spec("big.csv"), dir.path()).unwrap();
    assert_eq!(f.len(), 200_000);
    let size = csv.len() as f64;
    let heap = f.heap_bytes() as f64;
    assert!(
        heap < 1.6 * size,
        "heap {heap} bytes for a {size}-byte file"
    );
    assert_eq!(value(&f, 123_456, "id"), "123456");
    assert_eq!(
        value(&f, 123_456, "term"),
        format!("keyword {} 엔진", 123_456u64 * 7919 % 100_003)
    );
    assert_eq!(value(&f, 199_999, "class"), "local");
}

/// Random input biased towards CSV/JSON syntax, with arbitrary (also non-UTF-8) bytes.
fn fuzz_bytes(rng: &mut fastrand::Rng) -> Vec<u8> {
    const SYNTAX: &[u8] = b"[]{},:\"\\\n\r \t,abc0123456789-.eE+truefalsnl";
    let len = rng.usize(..160);
    (0..len)
        .map(|_| match rng.u8(..10) {
            0 => rng.u8(..),
            1 => 0xEA,
            _ => SYNTAX[rng.usize(..SYNTAX.len())],
        })
        .collect()
}

/// Random edits of a valid document: flips, insertions, deletions, truncation.
fn mutate(rng: &mut fastrand::Rng, seed: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..=rng.u8(..4) {
        if b.is_empty() {
            break;
        }
        let i = rng.usize(..b.len());
        match rng.u8(..4) {
            0 => b[i] = rng.u8(..),
            1 => b.insert(i, b"[]{},\"\\:\n"[rng.usize(..9)]),
            2 => {
                b.remove(i);
            }
            _ => b.truncate(i),
        }
    }
    b
}

/// Reads every value of a loaded feed, so that a bad arena would show up as a panic.
fn read_all(f: &Feed) {
    let mut out = Vec::new();
    for row in 0..f.len().min(1000) {
        for col in 0..f.columns().len() {
            out.clear();
            f.write_value(row, col, &mut out);
            assert!(std::str::from_utf8(&out).is_ok());
        }
    }
    let mut c = f.cursor(0, 1);
    let mut rng = fastrand::Rng::with_seed(0);
    for _ in 0..10 {
        assert!(f.pick(&mut c, &mut rng) < f.len());
    }
}

#[test]
fn random_input_never_panics() {
    let dir = TempDir::new("fuzz");
    let mut rng = fastrand::Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let json_seed = br#"[{"a": "x\"y", "b": [1, {"c": null}], "c": -1.5e3}, {"c": true, "b": "\u00e9", "a": ""}]"#;
    let csv_seed = "a,b,c\n\"x,\"\"y\",검색,3\r\n4,\"5\n6\",\n".as_bytes();
    let mut ok = 0;
    for i in 0..3000 {
        let content = match i % 3 {
            0 => fuzz_bytes(&mut rng),
            1 => mutate(&mut rng, json_seed),
            _ => mutate(&mut rng, csv_seed),
        };
        for name in ["f.csv", "f.json", "f.txt"] {
            dir.write(name, &content);
            let spec = DataSpec {
                file: Some(name.into()),
                pick: Some(PickMode::Unique),
                ..Default::default()
            };
            if let Ok(f) = Feed::load("fuzz", &spec, dir.path()) {
                ok += 1;
                read_all(&f);
            }
        }
    }
    // The mutations of valid seeds should sometimes still load.
    assert!(ok > 0);
}
