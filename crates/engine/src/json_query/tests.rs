use super::*;

/// What the tree gives: the body parsed whole, then queried with `serde_json_path`
/// (the truth the walk must agree with).
fn by_tree(body: &str, path: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(body).ok()?;
    JsonPath::parse(path).unwrap().query(&v).first().cloned()
}

fn view(body: &str) -> ResponseView<'_> {
    ResponseView::new(200, b"", body.as_bytes())
}

pub(super) const BODIES: &[&str] = &[
    r#"{"total": 3, "items": [{"id": 7, "name": "파도"}, {"id": 8, "tags": ["a", "b"]}], "next": null}"#,
    r#"{"data": {"items": [[1, 2], [3, {"deep": {"x": "y"}}]]}, "ok": true, "f": 1.5e3}"#,
    r#"{"a": 1, "a": {"b": 2}}"#,
    r#"{"a": {"b": 2}, "a": 1}"#,
    r#"{"we\"ird": 1, "esc\u0061ped": 2, "사용자": {"이름": "김"}}"#,
    r#"[10, 20, {"id": 30}]"#,
    r#""just a string""#,
    r#"42"#,
    r#"{"items": []}"#,
    r#"{"total": 3} trailing"#,
    r#"{"total": 3"#,
    r#"not json"#,
    "",
    r#"{"total": 3, "bad": [1, 2,]}"#,
];

pub(super) const PATHS: &[&str] = &[
    "$",
    "$.total",
    "$.items[0].id",
    "$.items[1].tags[1]",
    "$.items[2]",
    "$.items[0]['name']",
    "$[\"items\"][1][\"id\"]",
    "$.data.items[1][1].deep.x",
    "$.a",
    "$.a.b",
    "$.escaped",
    "$['we\"ird']",
    "$.사용자.이름",
    "$[2].id",
    "$[0]",
    "$.next",
    "$.ok",
    "$.f",
    "$.missing",
    "$.items[*].id",
    "$..id",
    "$.items[-1].id",
    "$.items[0:1]",
];

#[test]
fn the_walk_agrees_with_the_tree_on_every_body_and_path() {
    for body in BODIES {
        for path in PATHS {
            let q = JsonQuery::parse(path).unwrap();
            let truth = by_tree(body, path);
            let got = q.first(&view(body)).map(Cow::into_owned);
            assert_eq!(got, truth, "first of {path} in {body}");
            assert_eq!(
                q.exists(&view(body)),
                truth.is_some(),
                "exists {path} in {body}"
            );
            // A response whose tree is built already is queried on it: same answers.
            let v = view(body);
            let _ = v.json();
            assert_eq!(q.first(&v).map(Cow::into_owned), truth, "{path} in {body}");
        }
    }
}

#[test]
fn names_and_indexes_are_walked_and_everything_else_is_queried_on_the_tree() {
    let walked = |p: &str| JsonQuery::parse(p).unwrap().0.simple.is_some();
    for p in [
        "$",
        "$.total",
        "$.items[0].id",
        "$['a b']",
        "$[\"x\"]",
        "$.사용자",
        "$.a_1",
        "$[10]",
    ] {
        assert!(walked(p), "{p} is names and indexes");
    }
    for p in [
        "$..id",
        "$.*",
        "$[*]",
        "$[-1]",
        "$[0:2]",
        "$['a','b']",
        "$[?@.id > 1]",
        "$['a\\'b']",
        "$[01]",
    ] {
        if JsonQuery::parse(p).is_ok() {
            assert!(!walked(p), "{p} is not only names and indexes");
        }
    }
    assert_eq!(
        simple("$.data['items'][3].id"),
        Some(vec![
            Seg::Key("data".into()),
            Seg::Key("items".into()),
            Seg::Index(3),
            Seg::Key("id".into()),
        ])
    );
}

/// Counts this thread's allocations, to see what a query builds.
struct Counting;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

// SAFETY: every call is passed to the system allocator unchanged; the count is a
// thread-local `Cell` of a `const` initialiser, which never allocates.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's layout, handed on as given.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `alloc` above, i.e. from the system allocator.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = ALLOCATIONS.with(|c| c.get());
    let out = f();
    (out, ALLOCATIONS.with(|c| c.get()) - before)
}

#[test]
fn a_walk_builds_only_the_value_found() {
    // A large body: 2,000 objects off the path, each with strings and arrays.
    let mut body = String::from(r#"{"noise": ["#);
    for i in 0..2000 {
        body.push_str(&format!(
            r#"{{"k{i}": "v{i}", "n": [{i}, {{"x": "{i}"}}]}},"#
        ));
    }
    body.push_str(r#"{}], "total": 2000}"#);
    let total = JsonQuery::parse("$.total").unwrap();
    let deep = JsonQuery::parse("$.noise[1999].n[1].x").unwrap();
    let all = JsonQuery::parse("$.noise[*].n[1].x").unwrap();
    // Whether it exists, and a number: nothing but the parser's stack for the
    // containers it skips (one allocation, however many it skips).
    let (found, n) = allocations_of(|| total.exists(&view(&body)));
    assert!(found);
    assert!(n <= 1, "{n}");
    let (v, n) = allocations_of(|| total.first(&view(&body)).map(Cow::into_owned));
    assert_eq!(v, Some(Value::from(2000)));
    assert!(n <= 1, "{n}");
    // A string: that string too.
    let (v, n) = allocations_of(|| deep.first(&view(&body)).map(Cow::into_owned));
    assert_eq!(v, Some(Value::from("1999")));
    assert!(n <= 2, "{n}");
    // A wildcard builds the tree: thousands.
    let (v, n) = allocations_of(|| all.first(&view(&body)).map(Cow::into_owned));
    assert_eq!(v, Some(Value::from("0")));
    assert!(n > 2000, "{n}");
    assert_eq!(deep.to_string(), "$.noise[1999].n[1].x");
}

#[test]
fn strings_the_walk_skips_are_not_checked_for_utf8() {
    // The one difference from the tree, on purpose (see the module's text).
    let body: &[u8] = b"{\"junk\": \"\xff\xfe\", \"total\": 3}";
    let q = JsonQuery::parse("$.total").unwrap();
    assert!(serde_json::from_slice::<Value>(body).is_err());
    assert_eq!(
        q.first(&ResponseView::new(200, b"", body)).as_deref(),
        Some(&Value::from(3))
    );
    // A value at the path that is read (to compare or extract it) is checked, and
    // then there is none; whether one exists is judged without reading it.
    let q = JsonQuery::parse("$.junk").unwrap();
    assert_eq!(q.first(&ResponseView::new(200, b"", body)), None);
    assert!(q.exists(&ResponseView::new(200, b"", body)));
}
