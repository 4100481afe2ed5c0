//! The one walk against the truth: each document parsed whole by `serde_json` and
//! queried with `serde_json_path`, the value found told apart as a [`Leaf`].

use serde_json::Value;
use serde_json_path::JsonPath;

use super::*;

/// What the whole tree holds at `path` (the truth).
fn by_tree(doc: &str, path: &str) -> Leaf {
    by_tree_of(doc.as_bytes(), path)
}

fn by_tree_of(doc: &[u8], path: &str) -> Leaf {
    let Ok(v) = serde_json::from_slice::<Value>(doc) else {
        return Leaf::Missing;
    };
    match JsonPath::parse(path).unwrap().query(&v).first() {
        None => Leaf::Missing,
        Some(Value::String(s)) => Leaf::Str {
            empty: s.is_empty(),
        },
        Some(n) if n.as_u64().is_some() => Leaf::U64(n.as_u64().unwrap()),
        Some(_) => Leaf::Other,
    }
}

/// What the set's walk says for each of `paths` in `doc`.
fn walked(doc: &str, paths: &[&str]) -> Vec<Leaf> {
    let qs: Vec<JsonQuery> = paths.iter().map(|p| JsonQuery::parse(p).unwrap()).collect();
    let refs: Vec<&JsonQuery> = qs.iter().collect();
    let set = PathSet::new(&refs).expect("simple paths");
    let mut out = [Leaf::Other; MAX_PATHS];
    set.read(doc.as_bytes(), &mut out);
    out[..paths.len()].to_vec()
}

/// The walk agrees with the tree on every path of `paths` in `doc`.
fn agrees(doc: &str, paths: &[&str]) -> Vec<Leaf> {
    let got = walked(doc, paths);
    let want: Vec<Leaf> = paths.iter().map(|p| by_tree(doc, p)).collect();
    assert_eq!(got, want, "{doc}");
    got
}

/// The paths pado reads an OpenAI stream's events at: chat and completions token
/// text, then the server's count of output tokens.
const LLM: [&str; 3] = [
    "$.choices[0].delta.content",
    "$.choices[0].text",
    "$.usage.completion_tokens",
];

fn chunk(content: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732000000,"model":"demo","choices":[{{"index":0,"delta":{{"content":{content}}},"finish_reason":null}}]}}"#
    )
}

#[test]
fn token_text_with_escapes_hangul_and_unicode_escapes_is_a_string() {
    let text = Leaf::Str { empty: false };
    for content in [
        r#"" 파도""#,
        r#""say \"hi\"""#,
        r#""\uD55C\uAE00""#,
        r#""\ud83c\udf0a wave""#,
        r#""back\\slash\n""#,
        r#""\"""#,
        r#""\u0000""#,
    ] {
        let doc = chunk(content);
        assert_eq!(agrees(&doc, &LLM)[0], text, "{doc}");
    }
}

#[test]
fn empty_null_and_missing_content_are_no_token() {
    assert_eq!(agrees(&chunk(r#""""#), &LLM)[0], Leaf::Str { empty: true });
    assert_eq!(agrees(&chunk("null"), &LLM)[0], Leaf::Other);
    // OpenAI's first event: the role only.
    let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}"#;
    assert_eq!(agrees(role, &LLM), vec![Leaf::Missing; 3]);
    // The last: no choices, the server's count.
    let usage = r#"{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":32,"total_tokens":44}}"#;
    assert_eq!(
        agrees(usage, &LLM),
        vec![Leaf::Missing, Leaf::Missing, Leaf::U64(32)]
    );
}

#[test]
fn content_inside_another_string_or_member_is_not_the_token() {
    for doc in [
        // The path's words inside a string value and a key elsewhere.
        r#"{"note":"\"choices\":[{\"delta\":{\"content\":\"x\"}}]","choices":[{"delta":{}}]}"#,
        r#"{"choices":[{"delta":{"tool":{"content":"x"}}}]}"#,
        r#"{"choices":[{"message":{"content":"x"}}]}"#,
        r#"{"choices":[{"delta":{"role":"x"}},{"delta":{"content":"second choice"}}]}"#,
        r#"{"other":{"choices":[{"delta":{"content":"x"}}]}}"#,
        r#"{"choices":{"0":{"delta":{"content":"x"}}}}"#,
    ] {
        assert_eq!(agrees(doc, &LLM)[0], Leaf::Missing, "{doc}");
    }
}

#[test]
fn a_later_duplicate_key_replaces_the_earlier_as_in_the_tree() {
    let docs = [
        r#"{"choices":[{"delta":{"content":"a"}}],"choices":5}"#,
        r#"{"choices":5,"choices":[{"delta":{"content":"a"}}]}"#,
        r#"{"choices":[{"delta":{"content":"a","content":""}}]}"#,
        r#"{"choices":[{"delta":{"content":"","content":"b"}}]}"#,
        r#"{"usage":{"completion_tokens":3},"usage":{"prompt_tokens":4}}"#,
        r#"{"usage":{"completion_tokens":3,"completion_tokens":-1}}"#,
    ];
    for doc in docs {
        agrees(doc, &LLM);
    }
}

#[test]
fn counts_are_read_as_the_tree_reads_them() {
    for n in [
        "0",
        "32",
        "18446744073709551615",
        "-3",
        "3.0",
        "1e2",
        "\"32\"",
        "null",
    ] {
        let doc = format!(r#"{{"usage":{{"completion_tokens":{n}}}}}"#);
        agrees(&doc, &LLM);
    }
}

#[test]
fn a_document_that_is_not_json_has_nothing_anywhere() {
    let good = chunk(r#""파도""#);
    for doc in [
        format!("{good} trailing"),
        good[..good.len() - 1].to_string(),
        good.replace("\"index\":0", "\"index\":0,"),
        "[DONE]".to_string(),
        String::new(),
        // An unpaired escape in the token text.
        chunk(r#""\uD55""#),
    ] {
        assert_eq!(agrees(&doc, &LLM), vec![Leaf::Missing; 3], "{doc}");
    }
}

#[test]
fn the_users_paths_and_paths_inside_paths_agree_with_the_tree() {
    let docs = [
        r#"{"token":{"text":"안녕","id":7},"meta":{"n":[1,2,{"k":"v"}]}}"#,
        r#"{"token":{"text":"","id":7},"meta":{"n":[]}}"#,
        r#"[{"token":"a"},{"token":{"text":"b"}}]"#,
        r#""just a string""#,
        r#"{"사용":{"토큰":9}}"#,
    ];
    let paths = [
        "$.token.text",
        "$.token",
        "$",
        "$.meta.n[2].k",
        "$.meta.n[1]",
        "$[1].token.text",
        "$['사용']['토큰']",
    ];
    for doc in docs {
        agrees(doc, &paths);
    }
}

#[test]
fn the_set_answers_what_each_query_alone_answers() {
    // The corpus the single-path walk is held to (json_query's tests).
    for doc in super::super::tests::BODIES {
        for path in super::super::tests::PATHS {
            let Some(set) = PathSet::new(&[&JsonQuery::parse(path).unwrap()]) else {
                continue;
            };
            let mut out = [Leaf::Missing];
            set.read(doc.as_bytes(), &mut out);
            assert_eq!(out[0], by_tree(doc, path), "{path} in {doc}");
        }
    }
}

#[test]
fn paths_that_are_not_simple_are_refused_and_so_are_too_many() {
    let wild = JsonQuery::parse("$.choices[*].text").unwrap();
    let plain = JsonQuery::parse("$.a").unwrap();
    assert!(PathSet::new(&[&plain, &wild]).is_none());
    assert!(PathSet::new(&[&plain; MAX_PATHS + 1]).is_none());
    assert_eq!(
        PathSet::new(&[&plain; MAX_PATHS]).map(|s| s.len()),
        Some(MAX_PATHS)
    );
}

/// The set of `paths`.
fn set_of(paths: &[&str]) -> PathSet {
    let qs: Vec<JsonQuery> = paths.iter().map(|p| JsonQuery::parse(p).unwrap()).collect();
    let refs: Vec<&JsonQuery> = qs.iter().collect();
    PathSet::new(&refs).unwrap()
}

/// The quick scan's answer, when it gives one.
fn scanned(set: &PathSet, doc: &[u8]) -> Option<Vec<Leaf>> {
    let mut out = vec![Leaf::Missing; set.len()];
    scan::scan(&set.trie, doc, &mut out).map(|_| out)
}

/// serde's walk (the way the scan falls back to).
fn by_serde(set: &PathSet, doc: &[u8]) -> Vec<Leaf> {
    let mut out = vec![Leaf::Missing; set.len()];
    set.read_by_serde(doc, &mut out);
    out
}

#[test]
fn the_quick_scan_answers_openai_chunks_itself() {
    let set = set_of(&LLM);
    for doc in [
        chunk(r#"" 파도""#),
        chunk(r#""say \"hi\" \\ \n""#),
        chunk(r#""""#),
        chunk("null"),
        r#"{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":32,"total_tokens":44}}"#.to_string(),
        r#" {"choices":[{"index":0,"delta":{"role":"assistant"},"logprobs":null,"finish_reason":null}],"x":[1.5e-3,-2,true,false,{"a":[]}]} "#.to_string(),
    ] {
        let got = scanned(&set, doc.as_bytes());
        assert_eq!(got, Some(by_serde(&set, doc.as_bytes())), "{doc}");
    }
}

#[test]
fn the_quick_scan_reads_escapes_whitespace_and_any_order_itself() {
    let set = set_of(&LLM);
    let text = Leaf::Str { empty: false };
    for doc in [
        // Escapes in the token: quotes, backslashes, `\u` of one unit and of a
        // surrogate pair, Hangul as UTF-8 and escaped.
        chunk(r#""\"quoted\" \\ path""#),
        chunk(r#""caf\u00e9""#),
        chunk(r#""\uD55C\uAE00 한글""#),
        chunk(r#""\ud83c\udf0a wave""#),
        chunk(r#""\u0000""#),
        // Whitespace everywhere JSON allows it.
        " {\n \"choices\" : [ {\t\"delta\"\r\n: { \"content\" : \"파도\" } } ] }\n".to_string(),
        // Keys in another order; objects and arrays (with the path's own words
        // in them) before the wanted key.
        r#"{"choices":[{"finish_reason":null,"logprobs":{"content":[{"token":"x","bytes":[1,2]}]},"delta":{"role":"assistant","tool_calls":[{"content":"no"}],"content":"b"},"index":0}],"id":"x"}"#.to_string(),
        r#"{"usage":null,"x":[[{"choices":"no"}],{}],"choices":[{"delta":{"content":"c"}}]}"#.to_string(),
    ] {
        let got = scanned(&set, doc.as_bytes());
        assert_eq!(got, Some(by_serde(&set, doc.as_bytes())), "{doc}");
        assert_eq!(agrees(&doc, &LLM)[0], text, "{doc}");
    }
}

#[test]
fn unpaired_surrogates_in_the_token_are_left_to_serde_which_refuses_them() {
    let set = set_of(&LLM);
    for content in [
        r#""\uD83C""#,
        r#""\uD83Cx""#,
        r#""\uD83C\n""#,
        r#""\uD83C\uD83C""#,
        r#""\uDF0A""#,
        r#""\uD83C\uDF0""#,
    ] {
        let doc = chunk(content);
        assert_eq!(scanned(&set, doc.as_bytes()), None, "{doc}");
        assert_eq!(agrees(&doc, &LLM), vec![Leaf::Missing; 3], "{doc}");
    }
    // A string no path reads only needs four hex digits per `\u`, as serde
    // skips it (the tree, which decodes every string, refuses it: the walks'
    // difference on purpose, json_query's module documentation).
    let skipped = r#"{"id":"\uD83C","choices":[{"delta":{"content":"a"}}]}"#;
    let text = vec![Leaf::Str { empty: false }, Leaf::Missing, Leaf::Missing];
    assert_eq!(scanned(&set, skipped.as_bytes()), Some(text.clone()));
    assert_eq!(by_serde(&set, skipped.as_bytes()), text);
}

#[test]
fn paths_that_share_steps_are_each_answered() {
    // One tree node per shared step: the answers are still per path, in order,
    // a path given twice included.
    let paths = [
        "$.a.b",
        "$.a",
        "$.a.c[1]",
        "$.a.c[0]",
        "$.a.b",
        "$",
        "$.a.c[1].d",
    ];
    let set = set_of(&paths);
    for doc in [
        r#"{"a":{"b":"x","c":[3,{"d":""}]}}"#,
        r#"{"a":{"c":[7],"b":""},"a":{"b":5}}"#,
        r#"{"a":[{"b":1}],"z":{"a":{"b":"no"}}}"#,
        r#"{"a":{"c":{"1":"no"},"b":null}}"#,
    ] {
        assert_eq!(
            scanned(&set, doc.as_bytes()),
            Some(by_serde(&set, doc.as_bytes())),
            "{doc}"
        );
        agrees(doc, &paths);
    }
}

#[test]
fn the_quick_scan_agrees_with_serde_on_every_one_byte_change() {
    // Planted documents, then every copy with one byte removed, replaced or
    // inserted (quotes, escapes, brackets, digits, signs, control and non-UTF-8
    // bytes): wherever the scan answers it says what serde's walk says, and the
    // set's answer is the tree's.
    let seeds = [
        chunk(r#"" 파도 \"x\"""#),
        r#"{"choices":[{"delta":{"content":"a"},"text":"b"}],"usage":{"completion_tokens":7}}"#.to_string(),
        r#"[{"choices":0},{"usage":null,"n":[1,-2.5e+3,0,true]}]"#.to_string(),
        r#"{"choices":[{"delta":{}}, {"delta":{"content":""}}],"usage":{"completion_tokens":18446744073709551615}}"#.to_string(),
    ];
    let set = set_of(&LLM);
    let bytes: &[u8] = b"\"\\{}[]:,0-19e.+ tnu/\x01\x7f\xc3\xed";
    let (mut answered, mut total) = (0, 0);
    for seed in &seeds {
        let b = seed.as_bytes();
        assert!(scanned(&set, b).is_some(), "the scan reads {seed}");
        let mut docs = vec![b.to_vec()];
        for i in 0..b.len() {
            let mut cut = b.to_vec();
            cut.remove(i);
            docs.push(cut);
            for &x in bytes {
                let mut swapped = b.to_vec();
                swapped[i] = x;
                docs.push(swapped);
                let mut added = b.to_vec();
                added.insert(i, x);
                docs.push(added);
            }
        }
        for doc in docs {
            total += 1;
            let serde = by_serde(&set, &doc);
            if let Some(quick) = scanned(&set, &doc) {
                answered += 1;
                assert_eq!(quick, serde, "{}", String::from_utf8_lossy(&doc));
            }
            let mut read = [Leaf::Other; MAX_PATHS];
            set.read(&doc, &mut read);
            assert_eq!(read[..3], serde[..], "{}", String::from_utf8_lossy(&doc));
            // Read after the seed (answered from it when only its one string
            // changed), and the seed read again after it: the same answers.
            let mut last = LastRead::default();
            let mut after = [Leaf::Other; MAX_PATHS];
            set.read_after(b, &mut after, &mut last);
            set.read_after(&doc, &mut after, &mut last);
            assert_eq!(after[..3], serde[..], "{}", String::from_utf8_lossy(&doc));
            set.read_after(b, &mut after, &mut last);
            assert_eq!(after[..3], by_serde(&set, b)[..], "{seed}");
            // The tree also refuses what the walks skip unchecked on purpose,
            // as serde's own skipping does (bytes that are not UTF-8 in strings
            // and exponents beyond a float's range in numbers no path reads;
            // json_query's module documentation); elsewhere it is the truth.
            let skipped_ok = serde_json::from_slice::<serde::de::IgnoredAny>(&doc).is_ok();
            if skipped_ok == serde_json::from_slice::<Value>(&doc).is_ok() {
                let truth: Vec<Leaf> = LLM.iter().map(|p| by_tree_of(&doc, p)).collect();
                assert_eq!(read[..3], truth[..], "{}", String::from_utf8_lossy(&doc));
            }
        }
    }
    // Most changed documents are still JSON the scan reads (not all left to serde).
    assert!(answered * 4 > total, "{answered} of {total}");
}

#[test]
fn deep_nesting_off_the_path_is_left_to_serde_and_still_read() {
    let set = set_of(&LLM);
    let deep = format!(
        r#"{{"x":{}1{},"choices":[{{"delta":{{"content":"a"}}}}]}}"#,
        "[".repeat(100),
        "]".repeat(100)
    );
    assert_eq!(scanned(&set, deep.as_bytes()), None);
    assert_eq!(agrees(&deep, &LLM)[0], Leaf::Str { empty: false });
}

/// `docs` read in turn with one [`LastRead`]: each answer is serde's; the
/// documents answered from the last one scanned (not scanned themselves).
fn read_in_turn(set: &PathSet, docs: &[String]) -> Vec<usize> {
    let mut last = LastRead::default();
    let mut reused = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let before = (last.doc.clone(), last.string);
        let mut out = [Leaf::Other; MAX_PATHS];
        set.read_after(doc.as_bytes(), &mut out, &mut last);
        assert_eq!(out[..set.len()], by_serde(set, doc.as_bytes())[..], "{doc}");
        // A document whose scan would have been kept, and was not.
        let mut scanned = vec![Leaf::Missing; set.len()];
        let would_keep = matches!(
            scan::scan(&set.trie, doc.as_bytes(), &mut scanned),
            Some(Some(_))
        );
        if would_keep && (last.doc.clone(), last.string) == before {
            reused.push(i);
        }
    }
    reused
}

#[test]
fn an_event_that_differs_from_the_last_only_in_its_token_is_answered_from_it() {
    let set = set_of(&LLM);
    let role = r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
    let docs: Vec<String> = [
        role.to_string(),
        chunk(r#"" 파도""#),
        chunk(r#""가""#),
        chunk(r#""\"quoted\" \\""#),
        chunk(r#""caf\u00e9 \ud83c\udf0a""#),
        chunk(r#""""#),
        chunk(r#"" The""#),
        // Not valid where the token was: a control character, an unpaired
        // surrogate, bytes that are not UTF-8, an unclosed string.
        chunk("\"a\u{1}b\""),
        chunk(r#"" wave""#),
        chunk(r#""\uD83C""#),
        chunk(r#"" keeps""#),
        // DEL is no control character to JSON: a token like any other.
        chunk("\"a\u{7f}\""),
        chunk(r#""x"#),
        // The same bytes around another value, and changed bytes around a
        // token: a later duplicate, a tail or a prefix that differs, trailing
        // bytes, a cut document.
        chunk("null"),
        chunk(r#"" coming""#),
        chunk(r#""a","content":"b""#),
        chunk(r#""a""#).replace("null}", "\"stop\"}"),
        chunk(r#""a""#).replace("chatcmpl-1", "chatcmpl-2"),
        chunk(r#""b""#) + " x",
        chunk(r#""c""#)[..40].to_string(),
        chunk(r#""d""#),
        r#"{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":32,"total_tokens":44}}"#.to_string(),
        chunk(r#""e""#),
    ]
    .into_iter()
    .collect();
    let reused = read_in_turn(&set, &docs);
    // Every valid token event after one like it (an invalid event, a `null`
    // token, a duplicate key, a cut or a trailing event between them
    // notwithstanding); none of the others.
    assert_eq!(reused, [2, 3, 4, 5, 6, 8, 10, 11, 14, 22]);
}

#[test]
fn a_document_with_bytes_not_utf8_in_the_token_is_not_answered_from_the_last() {
    let set = set_of(&LLM);
    let good = chunk(r#""ab""#);
    let bad = good.as_bytes().to_vec();
    let at = good.find("ab").unwrap();
    let mut bad = bad;
    bad[at] = 0xff;
    let mut last = LastRead::default();
    let mut out = [Leaf::Other; MAX_PATHS];
    set.read_after(good.as_bytes(), &mut out, &mut last);
    set.read_after(&bad, &mut out, &mut last);
    assert_eq!(out[..3], by_serde(&set, &bad)[..]);
    assert_eq!(out[..3], [Leaf::Missing; 3]);
}

#[test]
fn the_last_read_of_one_set_is_not_taken_for_another() {
    let chat = set_of(&LLM);
    let text = set_of(&["$.choices[0].text", "$.choices[0].delta.content"]);
    let mut last = LastRead::default();
    let mut out = [Leaf::Other; MAX_PATHS];
    chat.read_after(chunk(r#""a""#).as_bytes(), &mut out, &mut last);
    text.read_after(chunk(r#""b""#).as_bytes(), &mut out, &mut last);
    assert_eq!(out[..2], [Leaf::Missing, Leaf::Str { empty: false }]);
}
