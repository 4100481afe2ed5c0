//! TypeScript scripts: what is blanked (each token left on its line and
//! column), what a typed script computes once stripped (planted values sent as
//! a request the test reads back), type-only imports gone, and errors named at
//! the `.ts` file's own line and column.

use pado_engine::script::ScriptHost;

use crate::tests::{drive, load_vu, ok_json, start};
use crate::typescript::strip;
use crate::{load_for_run, ScriptError};

/// Files written in a temporary directory; the first is the script.
fn files(list: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in list {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    let main = dir.path().join(list[0].0);
    (dir, main)
}

/// The URL the script's one iteration requests.
fn url_sent(main: &std::path::Path) -> String {
    let l = load_for_run(main, &[("BASE".into(), "http://127.0.0.1:9".into())]).unwrap();
    let mut vu = load_vu(&l.script, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    seen.requests[0].url.clone()
}

fn load_err(main: &std::path::Path) -> String {
    match load_for_run(main, &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    }
}

#[test]
fn annotations_generics_casts_and_non_null_become_spaces_in_place() {
    let cases = [
        ("let a: number = 1;", "let a         = 1;"),
        ("const r = x as Foo;", "const r = x       ;"),
        ("const s = x satisfies Foo;", "const s = x              ;"),
        ("f(y!);", "f(y );"),
        ("const v = <Foo>x;", "const v =      x;"),
        (
            "function g<T>(a?: T): T { return a!; }",
            "function g   (a    )    { return a ; }",
        ),
        (
            "const m = new Map<string, number>();",
            "const m = new Map                ();",
        ),
        (
            "const h = (n: number): string => `${n}`;",
            "const h = (n        )         => `${n}`;",
        ),
        ("let d!: string;", "let d         ;"),
    ];
    for (ts, js) in cases {
        assert_eq!(strip("s.ts", ts).unwrap(), js, "{ts}");
    }
}

#[test]
fn an_arrow_whose_return_type_spans_lines_keeps_its_arrow_on_the_first() {
    let ts = "const f = (n: number): {\n  twice: number;\n} => ({ twice: n * 2 });\nf(2);\n";
    let js = strip("s.ts", ts).unwrap();
    assert_eq!(js.lines().count(), ts.lines().count());
    assert_eq!(js.lines().next(), Some("const f = (n        )=>"));
    // What follows the arrow keeps its line and column.
    assert_eq!(js.lines().nth(2), Some("     ({ twice: n * 2 });"));
}

#[test]
fn interfaces_and_type_aliases_are_blanked_keeping_their_lines() {
    let ts = "interface User {\n  name: string;\n  id: number;\n}\ntype Id = string | number;\nconst u = 1;\n";
    let js = strip("s.ts", ts).unwrap();
    assert_eq!(js.lines().count(), ts.lines().count());
    assert_eq!(js.lines().nth(5), Some("const u = 1;"));
    assert!(js.lines().take(5).all(|l| l.trim().is_empty()), "{js:?}");
}

#[test]
fn plain_javascript_in_a_ts_file_is_left_exactly_as_it_is() {
    let src = "import http from 'k6/http';\nimport { check } from 'k6';\nexport const options = { vus: 1 };\nexport default function () {\n  const r = http.get('http://127.0.0.1:9/');\n  check(r, { ok: (x) => x.status === 200 });\n}\n";
    assert_eq!(strip("s.ts", src).unwrap(), src);
}

#[test]
fn imports_used_only_as_types_go_with_or_without_the_type_keyword() {
    let ts = "import { Options } from 'k6/options';\nimport http, { RefinedResponse, ResponseType } from 'k6/http';\nimport { type Checkers, check } from 'k6';\nimport type { Trend } from 'k6/metrics';\nlet t: Trend | undefined;\nexport const options: Options = {};\nexport default function () { const r: RefinedResponse<ResponseType> = http.get('x'); check(r, {}); }\n";
    let js = strip("s.ts", ts).unwrap();
    assert!(strip("s.ts", "export type * from './t.ts';\n")
        .unwrap()
        .trim()
        .is_empty());
    let lines: Vec<&str> = js.lines().collect();
    assert!(lines[0].trim().is_empty(), "{js}");
    let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(lines[1]), "import http from 'k6/http';");
    assert_eq!(words(lines[2]), "import { check } from 'k6';");
    assert!(lines[3].trim().is_empty(), "{js}");
    // Every line keeps its length, so what follows keeps its column.
    for (a, b) in ts.lines().zip(js.lines()) {
        assert_eq!(a.chars().count(), b.chars().count(), "{a:?} / {b:?}");
    }
}

#[test]
fn a_typed_script_runs_with_its_types_gone_and_computes_what_its_code_says() {
    let (_d, main) = files(&[(
        "s.ts",
        r#"import http, { RefinedResponse, ResponseType } from 'k6/http';
import { Options } from 'k6/options';

export const options: Options = { vus: 1, iterations: 1 };

interface Item { id: number; name?: string }
type Pair<A, B> = [A, B];

enum Color { Red, Green = 5, Blue }
export enum Kind { Read = 'read', Write = 'write' }

abstract class Base<T> implements Item {
  abstract describe(): string;
  public id: number;
  private readonly label?: string;
  protected count!: number;
  constructor(id: number) { this.id = id; this.count = 0; }
  twice(this: Base<T>, n: number): number { return n * 2; }
}
class Thing extends Base<string> {
  describe(): string { return `thing-${this.id}`; }
}

function first<T>(xs: T[]): T | undefined { return xs[0]; }
function pair<A, B>(a: A, b: B): Pair<A, B> { return [a, b]; }

export default function (): void {
  const t = new Thing(7);
  const xs = [3, 4] as number[];
  const n = first<number>(xs)!;
  const p = pair('파도', n);
  const items: Item[] = [{ id: 1 }];
  const maybe: Item | undefined = items[0];
  const got = <Item>maybe;
  const parts = [Color.Blue, Color[5], Kind.Write, t.describe(), t.twice(n), p.join('-'), got?.id ?? 0];
  const r: RefinedResponse<ResponseType> = http.get(`${__ENV.BASE}/r?${parts.join(',')}`);
}
"#,
    )]);
    assert_eq!(
        url_sent(&main),
        "http://127.0.0.1:9/r?6,Green,write,thing-7,6,파도-3,1"
    );
}

#[test]
fn local_ts_modules_load_and_an_interface_in_an_export_list_goes() {
    let (_d, main) = files(&[
        (
            "s.ts",
            "import http from 'k6/http';\nimport { User, newUser } from './lib/user.ts';\nexport default function () {\n  const u: User = newUser('파도');\n  http.get(`${__ENV.BASE}/u?${u.name}-${u.id}`);\n}\n",
        ),
        (
            "lib/user.ts",
            "interface User {\n  name: string;\n  id: number;\n}\nfunction newUser(name: string): User {\n  return { name, id: name.length };\n}\nexport { User, newUser };\n",
        ),
    ]);
    assert_eq!(url_sent(&main), "http://127.0.0.1:9/u?파도-2");
}

#[test]
fn a_javascript_script_may_import_a_ts_module() {
    let (_d, main) = files(&[
        (
            "s.js",
            "import http from 'k6/http';\nimport { label } from './lib.ts';\nexport default function () {\n  http.get(`${__ENV.BASE}/${label(3)}`);\n}\n",
        ),
        (
            "lib.ts",
            "type N = number;\nexport function label(n: N): string {\n  return `n-${n as N}`;\n}\n",
        ),
    ]);
    assert_eq!(url_sent(&main), "http://127.0.0.1:9/n-3");
}

#[test]
fn an_import_without_its_extension_is_refused_naming_the_file_to_write() {
    let (_d, main) = files(&[
        (
            "s.ts",
            "import { f } from './helpers';\nexport default function () { f(); }\n",
        ),
        ("helpers.ts", "export function f(): void {}\n"),
    ]);
    let e = load_err(&main);
    assert!(e.contains("s.ts:1") && e.contains("helpers.ts"), "{e}");
}

#[test]
fn an_exception_names_the_ts_line_and_column_and_shows_the_line_as_written() {
    // The truth: the same script with its types replaced by spaces by hand, as
    // a `.js` file: QuickJS's own line and column for it.
    let ts = "interface Token {\n  value: string;\n}\n\nexport default function (): void {\n  const t = null as Token | null;\n  if (t === null) throw new Error(<string>'no token 파도'); const v: string = t!.value;\n}\n";
    let js = "                \n               \n \n\nexport default function ()       {\n  const t = null                ;\n  if (t === null) throw new Error(        'no token 파도'); const v         = t .value;\n}\n";
    let where_thrown = |name: &str, src: &str| {
        let (_d, main) = files(&[(name, src)]);
        let l = load_for_run(&main, &[]).unwrap();
        let mut vu = load_vu(&l.script, 1);
        let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
        let said = l.script.describe_fault(&seen.done.unwrap().unwrap_err());
        let at = said
            .lines()
            .find_map(|l| l.trim().strip_prefix("at "))
            .and_then(|l| l.rsplit_once(name))
            .map(|(_, pos)| pos.to_string())
            .unwrap_or_default();
        (at, said)
    };
    let (ts_at, said) = where_thrown("s.ts", ts);
    let (js_at, _) = where_thrown("s.js", js);
    assert_eq!(ts_at, js_at, "{said}");
    assert!(ts_at.starts_with(":7:"), "{said}");
    // The line shown is the one the user wrote, types and all.
    assert!(
        said.contains("    7 |   if (t === null) throw new Error(<string>'no token 파도'); const v: string = t!.value;"),
        "{said}"
    );
}

#[test]
fn a_ts_syntax_error_names_file_line_and_column() {
    let (_d, main) = files(&[(
        "s.ts",
        "import http from 'k6/http';\nlet x: = 1;\nexport default function () {}\n",
    )]);
    let e = load_err(&main);
    assert!(e.contains("s.ts:2:8: SyntaxError"), "{e}");
    assert!(e.contains("    2 | let x: = 1;"), "{e}");
}

#[test]
fn a_type_error_is_not_checked_as_k6_checks_none() {
    let (_d, main) = files(&[(
        "s.ts",
        "import http from 'k6/http';\nexport default function () {\n  const n: number = 'not-a-number' as any as number;\n  const s: string = 5 as unknown as string;\n  http.get(`${__ENV.BASE}/t?${n}-${s}`);\n}\n",
    )]);
    assert_eq!(url_sent(&main), "http://127.0.0.1:9/t?not-a-number-5");
}

#[test]
fn namespaces_and_parameter_properties_are_refused_with_their_line() {
    for (src, line, word) in [
        (
            "const a = 1;\nnamespace N { export const x = 1; }\nexport default function () {}\n",
            2,
            "namespaces",
        ),
        (
            "class A {\n  constructor(private x: number) {}\n}\nexport default function () {}\n",
            2,
            "parameter properties",
        ),
        (
            "enum E { A = 1, B = A * 2 }\nexport default function () {}\n",
            1,
            "enum",
        ),
    ] {
        let (_d, main) = files(&[("s.ts", src)]);
        let e = load_err(&main);
        assert!(
            e.contains(&format!("s.ts:{line}:")) && e.contains(word),
            "{e}"
        );
    }
    // `declare` forms are types only: blanked, not refused.
    let ok = "declare namespace N { const x: number; }\ndeclare const y: number;\nexport default function () {}\n";
    let js = strip("s.ts", ok).unwrap();
    assert!(js.lines().take(2).all(|l| l.trim().is_empty()), "{js}");
}

#[test]
fn an_error_of_a_ts_file_is_a_syntax_error_value() {
    let e = strip("s.ts", "let = ;").unwrap_err();
    assert!(matches!(e, ScriptError::Syntax { .. }), "{e:?}");
}
