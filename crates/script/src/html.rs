//! `k6/html` and `Response.html()`: documents parsed as browsers parse them
//! (`scraper`, on html5ever) and kept in Rust, one store per VU (its QuickJS
//! runtime's user data, freed with it); JavaScript holds only handles (a
//! document's number and its nodes' numbers), so a page is parsed once however
//! many selections a script makes of it. `js/html.js` builds k6's `Selection`
//! and `Element` on the operations here.

use std::collections::HashMap;

use rquickjs::class::{JsClass, Readable, Trace, Tracer};
use rquickjs::function::Constructor;
use rquickjs::{Class, Ctx, Exception, Function, JsLifetime, Object, Value};
use scraper::node::Node;
use scraper::{ElementRef, Html, Selector};

/// What a selection operation can get wrong, in the script author's words.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum HtmlError {
    /// A CSS selector that does not parse.
    #[error("invalid CSS selector `{selector}`: {why}")]
    Selector {
        /// The selector as written.
        selector: String,
        /// The parser's complaint.
        why: String,
    },
    /// An operation `js/html.js` does not send.
    #[error("unknown k6/html operation `{0}`")]
    Op(String),
}

/// One parsed document and its nodes numbered in document order (preorder), so
/// sorting numbers sorts by position in the page, as jQuery's selections are.
struct Doc {
    html: Html,
    order: Vec<ego_tree::NodeId>,
    index: HashMap<ego_tree::NodeId, u32>,
}

impl Doc {
    fn parse(src: &str) -> Doc {
        let html = Html::parse_document(src);
        let order: Vec<_> = html.tree.root().descendants().map(|n| n.id()).collect();
        let index = order
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i as u32))
            .collect();
        Doc { html, order, index }
    }

    fn node(&self, n: u32) -> Option<ego_tree::NodeRef<'_, Node>> {
        self.order
            .get(n as usize)
            .and_then(|id| self.html.tree.get(*id))
    }

    fn num(&self, n: ego_tree::NodeRef<'_, Node>) -> u32 {
        self.index.get(&n.id()).copied().unwrap_or(0)
    }

    fn element(&self, n: u32) -> Option<ElementRef<'_>> {
        self.node(n).and_then(ElementRef::wrap)
    }
}

/// A parsed document as JavaScript holds it: a QuickJS object owning the
/// document, so the page is freed with the last selection of it, by the
/// garbage collector, not by anything the script must remember to do.
pub(crate) struct HtmlDoc(Doc);

// SAFETY: `HtmlDoc` holds no JavaScript values (no lifetime to change).
unsafe impl<'js> JsLifetime<'js> for HtmlDoc {
    type Changed<'to> = HtmlDoc;
}

impl<'js> Trace<'js> for HtmlDoc {
    fn trace<'a>(&self, _tracer: Tracer<'a, 'js>) {}
}

impl<'js> JsClass<'js> for HtmlDoc {
    const NAME: &'static str = "HtmlDocument";
    type Mutable = Readable;

    fn constructor(_ctx: &Ctx<'js>) -> rquickjs::Result<Option<Constructor<'js>>> {
        Ok(None)
    }
}

/// A selector, parsed (k6 matches with Go's cascadia; both take CSS level 3).
fn selector(s: &str) -> Result<Selector, HtmlError> {
    Selector::parse(s).map_err(|e| HtmlError::Selector {
        selector: s.to_string(),
        why: e.to_string(),
    })
}

/// Whether node `n` is an element matching `sel` (`None` matches every element).
fn matches(doc: &Doc, n: u32, sel: Option<&Selector>) -> bool {
    match (doc.element(n), sel) {
        (Some(e), Some(s)) => s.matches(&e),
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Sorted, without repeats: a selection in document order.
fn ordered(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// The text of a node and all it holds (jQuery's `text()`).
fn text_of(n: ego_tree::NodeRef<'_, Node>, out: &mut String) {
    for d in n.descendants() {
        if let Node::Text(t) = d.value() {
            out.push_str(t);
        }
    }
}

/// What an operation answers.
pub(crate) enum Answer {
    /// A new selection (node numbers in document order).
    Nodes(Vec<u32>),
    /// A string.
    Text(String),
    /// Nothing (k6's `undefined`).
    Nothing,
    /// A flag.
    Flag(bool),
    /// A number.
    Number(f64),
    /// Name–value pairs (attributes), in the element's order.
    Pairs(Vec<(String, String)>),
}

/// Run operation `op` on the nodes `ids` of document `doc` with the string
/// argument `arg` (a selector or a name, when the operation takes one).
fn run(doc: &Doc, op: &str, ids: &[u32], arg: Option<&str>) -> Result<Answer, HtmlError> {
    let sel = match (op, arg) {
        (
            "find" | "filter" | "not" | "has" | "children" | "parent" | "parents" | "closest"
            | "next" | "prev" | "nextAll" | "prevAll" | "matches",
            Some(s),
        ) => Some(selector(s)?),
        _ => None,
    };
    let sel = sel.as_ref();
    if let Some(nodes) = walk(doc, op, ids, sel) {
        return Ok(Answer::Nodes(nodes));
    }
    let nodes = ids.iter().filter_map(|n| doc.node(*n).map(|r| (*n, r)));
    let first = ids.first().and_then(|n| doc.node(*n));
    let first_el = ids.first().and_then(|n| doc.element(*n));
    Ok(match op {
        "text" => {
            let mut s = String::new();
            for (_, r) in nodes {
                text_of(r, &mut s);
            }
            Answer::Text(s)
        }
        "html" => match first {
            Some(r) => match ElementRef::wrap(r) {
                Some(e) => Answer::Text(e.inner_html()),
                None => Answer::Text(
                    r.children()
                        .map(|c| match ElementRef::wrap(c) {
                            Some(e) => e.html(),
                            None => node_html(c),
                        })
                        .collect(),
                ),
            },
            None => Answer::Text(String::new()),
        },
        "outerHTML" => match first {
            Some(r) => Answer::Text(
                ElementRef::wrap(r)
                    .map(|e| e.html())
                    .unwrap_or_else(|| node_html(r)),
            ),
            None => Answer::Nothing,
        },
        "attr" => match first_el.and_then(|e| e.attr(arg.unwrap_or_default())) {
            Some(v) => Answer::Text(v.to_string()),
            None => Answer::Nothing,
        },
        "attrs" => Answer::Pairs(
            first_el
                .map(|e| {
                    e.value()
                        .attrs()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        "val" => match first_el {
            Some(e) => value_of(doc, e),
            None => Answer::Nothing,
        },
        "nodeName" => match first.map(|r| r.value().clone()) {
            Some(Node::Element(e)) => Answer::Text(e.name().to_ascii_lowercase()),
            Some(Node::Text(_)) => Answer::Text("#text".into()),
            Some(Node::Comment(_)) => Answer::Text("#comment".into()),
            Some(Node::Document) => Answer::Text("#document".into()),
            Some(_) => Answer::Text(String::new()),
            None => Answer::Nothing,
        },
        "nodeType" => Answer::Number(match first.map(|r| r.value().clone()) {
            Some(Node::Element(_)) => 1.0,
            Some(Node::Text(_)) => 3.0,
            Some(Node::Comment(_)) => 8.0,
            Some(Node::Document) => 9.0,
            Some(Node::Doctype(_)) => 10.0,
            _ => 0.0,
        }),
        "nodeValue" => match first.map(|r| r.value().clone()) {
            Some(Node::Text(t)) => Answer::Text(t.to_string()),
            Some(Node::Comment(c)) => Answer::Text(c.to_string()),
            _ => Answer::Nothing,
        },
        "same" => Answer::Flag(ids.len() == 2 && ids[0] == ids[1]),
        "contains" => Answer::Flag(
            ids.len() == 2
                && doc
                    .node(ids[1])
                    .is_some_and(|r| r.ancestors().any(|a| doc.num(a) == ids[0])),
        ),
        other => return Err(HtmlError::Op(other.to_string())),
    })
}

/// The operations that move a selection (`find`, `parent`, `next`, ...): the
/// new selection, or `None` for an operation that reads instead.
fn walk(doc: &Doc, op: &str, ids: &[u32], sel: Option<&Selector>) -> Option<Vec<u32>> {
    let nodes = ids.iter().filter_map(|n| doc.node(*n).map(|r| (*n, r)));
    match op {
        "find" => Some(ordered(
            nodes
                .flat_map(|(_, r)| r.descendants().skip(1))
                .map(|d| doc.num(d))
                .filter(|d| matches(doc, *d, sel))
                .collect(),
        )),
        "filter" | "matches" => Some(
            ids.iter()
                .copied()
                .filter(|n| matches(doc, *n, sel))
                .collect(),
        ),
        "not" => Some(
            ids.iter()
                .copied()
                .filter(|n| !matches(doc, *n, sel))
                .collect(),
        ),
        "has" => Some(
            nodes
                .filter(|(_, r)| {
                    r.descendants()
                        .skip(1)
                        .any(|d| matches(doc, doc.num(d), sel))
                })
                .map(|(n, _)| n)
                .collect(),
        ),
        "children" => Some(ordered(
            nodes
                .flat_map(|(_, r)| r.children())
                .map(|c| doc.num(c))
                .filter(|c| matches(doc, *c, sel))
                .collect(),
        )),
        "childNodes" => Some(
            nodes
                .flat_map(|(_, r)| r.children())
                .map(|c| doc.num(c))
                .collect(),
        ),
        "parent" => Some(ordered(
            nodes
                .filter_map(|(_, r)| r.parent())
                .map(|p| doc.num(p))
                .filter(|p| matches(doc, *p, sel))
                .collect(),
        )),
        "parents" => {
            // Nearest first, as jQuery gives them for one node.
            let mut out: Vec<u32> = Vec::new();
            for (_, r) in nodes {
                for a in r.ancestors() {
                    let a = doc.num(a);
                    if matches(doc, a, sel) && !out.contains(&a) {
                        out.push(a);
                    }
                }
            }
            Some(out)
        }
        "closest" => Some(ordered(
            nodes
                .filter_map(|(n, r)| {
                    std::iter::once(n)
                        .chain(r.ancestors().map(|a| doc.num(a)))
                        .find(|a| matches(doc, *a, sel))
                })
                .collect(),
        )),
        "next" | "prev" | "nextAll" | "prevAll" => {
            let forward = op.starts_with("next");
            let all = op.ends_with("All");
            let mut out = Vec::new();
            for (_, r) in nodes {
                let mut cur = sibling(r, forward);
                while let Some(s) = cur {
                    cur = sibling(s, forward);
                    let n = doc.num(s);
                    if doc.element(n).is_none() {
                        continue;
                    }
                    if matches(doc, n, sel) {
                        out.push(n);
                    }
                    if !all {
                        break;
                    }
                }
            }
            Some(ordered(out))
        }
        _ => None,
    }
}

/// The node after (or before) `n` among its parent's children.
fn sibling(n: ego_tree::NodeRef<'_, Node>, forward: bool) -> Option<ego_tree::NodeRef<'_, Node>> {
    if forward {
        n.next_sibling()
    } else {
        n.prev_sibling()
    }
}

/// A text or comment node as HTML (escaped as html5ever serialises text).
fn node_html(r: ego_tree::NodeRef<'_, Node>) -> String {
    match r.value() {
        Node::Text(t) => t
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;"),
        Node::Comment(c) => format!("<!--{}-->", &**c),
        _ => String::new(),
    }
}

/// A form element's value as k6's `val()` gives it: an input's `value`, a
/// textarea's text, a select's chosen option (its value, else its text; every
/// chosen one for `multiple`).
fn value_of(doc: &Doc, e: ElementRef<'_>) -> Answer {
    let option_value = |o: ElementRef<'_>| {
        o.attr("value")
            .map(str::to_string)
            .unwrap_or_else(|| o.text().collect())
    };
    match e.value().name() {
        "input" => Answer::Text(e.attr("value").unwrap_or("on").to_string()),
        "textarea" => Answer::Text(e.text().collect()),
        "option" => Answer::Text(option_value(e)),
        "select" => {
            let options: Vec<ElementRef<'_>> = e
                .descendent_elements()
                .filter(|o| o.value().name() == "option")
                .collect();
            let chosen: Vec<ElementRef<'_>> = options
                .iter()
                .copied()
                .filter(|o| o.attr("selected").is_some())
                .collect();
            if e.attr("multiple").is_some() {
                return Answer::Pairs(
                    chosen
                        .into_iter()
                        .map(|o| (String::new(), option_value(o)))
                        .collect(),
                );
            }
            let _ = doc;
            match chosen.last().or(options.first()) {
                Some(o) => Answer::Text(option_value(*o)),
                None => Answer::Nothing,
            }
        }
        _ => Answer::Nothing,
    }
}

/// Install `__pado.htmlParse(src)` (a document) and `__pado.htmlOp(op, doc,
/// ids, arg)` on `p`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, p: &Object<'js>) -> rquickjs::Result<()> {
    p.set(
        "htmlParse",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, src: String| -> rquickjs::Result<Class<'js, HtmlDoc>> {
                Class::instance(ctx, HtmlDoc(Doc::parse(&src)))
            },
        )?,
    )?;
    p.set(
        "htmlOp",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             op: String,
             doc: Class<'js, HtmlDoc>,
             ids: Vec<u32>,
             arg: Option<String>|
             -> rquickjs::Result<Value<'js>> {
                let answer = run(&doc.borrow().0, &op, &ids, arg.as_deref())
                    .map_err(|e| Exception::throw_message(&ctx, &e.to_string()))?;
                to_js(&ctx, answer)
            },
        )?,
    )?;
    Ok(())
}

fn to_js<'js>(ctx: &Ctx<'js>, a: Answer) -> rquickjs::Result<Value<'js>> {
    use rquickjs::IntoJs;
    match a {
        Answer::Nodes(v) => v.into_js(ctx),
        Answer::Text(s) => s.into_js(ctx),
        Answer::Nothing => Ok(Value::new_undefined(ctx.clone())),
        Answer::Flag(b) => Ok(Value::new_bool(ctx.clone(), b)),
        Answer::Number(n) => Ok(Value::new_float(ctx.clone(), n)),
        Answer::Pairs(p) => p
            .into_iter()
            .map(|(k, v)| vec![k, v])
            .collect::<Vec<_>>()
            .into_js(ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<html><body><div id=\"a\" class=\"x y\">Hi <b>파도</b></div>\
        <ul><li>1</li><li class=\"s\">2</li><li>3</li></ul>\
        <form><input name=\"u\" value=\"v\"><select name=\"s\"><option value=\"o1\">A</option>\
        <option selected>B</option></select><textarea name=\"t\">TT</textarea></form></body></html>";

    fn nodes(a: Answer) -> Vec<u32> {
        match a {
            Answer::Nodes(v) => v,
            _ => panic!("not nodes"),
        }
    }

    fn text(a: Answer) -> Option<String> {
        match a {
            Answer::Text(s) => Some(s),
            Answer::Nothing => None,
            _ => panic!("not text"),
        }
    }

    #[test]
    fn selections_walk_the_page_as_k6_reports_for_the_same_page() {
        // Every expected value is what k6 v1.8.1 printed for this page.
        let d = Doc::parse(PAGE);
        let root = [0u32];
        let li = nodes(run(&d, "find", &root, Some("li")).unwrap());
        assert_eq!(li.len(), 3);
        assert_eq!(text(run(&d, "text", &li, None).unwrap()).unwrap(), "123");
        let s = nodes(run(&d, "filter", &li, Some(".s")).unwrap());
        assert_eq!(text(run(&d, "text", &s, None).unwrap()).unwrap(), "2");
        let next = nodes(run(&d, "next", &s, None).unwrap());
        assert_eq!(text(run(&d, "text", &next, None).unwrap()).unwrap(), "3");
        let prev = nodes(run(&d, "prev", &s, None).unwrap());
        assert_eq!(text(run(&d, "text", &prev, None).unwrap()).unwrap(), "1");
        let a = nodes(run(&d, "find", &root, Some("#a")).unwrap());
        assert_eq!(text(run(&d, "text", &a, None).unwrap()).unwrap(), "Hi 파도");
        assert_eq!(
            text(run(&d, "html", &a, None).unwrap()).unwrap(),
            "Hi <b>파도</b>"
        );
        let b = nodes(run(&d, "find", &root, Some("b")).unwrap());
        let div = nodes(run(&d, "closest", &b, Some("div")).unwrap());
        assert_eq!(
            text(run(&d, "attr", &div, Some("id")).unwrap()).as_deref(),
            Some("a")
        );
        assert_eq!(text(run(&d, "attr", &li, Some("nope")).unwrap()), None);
        // `find` looks below each node, never at the node itself.
        assert!(nodes(run(&d, "find", &li, Some("li")).unwrap()).is_empty());
        let field = |sel: &str| {
            let n = nodes(run(&d, "find", &root, Some(sel)).unwrap());
            text(run(&d, "val", &n, None).unwrap())
        };
        assert_eq!(field("input").as_deref(), Some("v"));
        assert_eq!(field("select").as_deref(), Some("B"));
        assert_eq!(field("textarea").as_deref(), Some("TT"));
        assert_eq!(field("li"), None);
        // `parents` of <b>: div, body, html (k6 counts 3 plus none for the document).
        assert_eq!(nodes(run(&d, "parents", &b, None).unwrap()).len(), 3);
    }

    #[test]
    fn a_bad_selector_is_an_error_naming_it() {
        let d = Doc::parse(PAGE);
        match run(&d, "find", &[0], Some("li[")) {
            Err(HtmlError::Selector { selector, .. }) => assert_eq!(selector, "li["),
            _ => panic!("accepted a bad selector"),
        }
    }
}
