//! Where each field of a YAML document sits, so that errors found after parsing
//! (a stage with no duration, a negative rate) still point at `file:line`.
//!
//! Paths are written `scenarios.browse.stages[1].duration`: mapping keys joined by dots,
//! sequence items as `[i]`.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// 1-based line and column of every path in a document.
#[derive(Debug, Default, Clone)]
pub struct LineIndex {
    map: HashMap<String, (usize, usize)>,
}

enum Frame {
    Map { path: String, key: Option<String> },
    Seq { path: String, next: usize },
}

struct Builder {
    stack: Vec<Frame>,
    map: HashMap<String, (usize, usize)>,
}

impl Builder {
    /// Path of the node that starts now, and whether it is a mapping key.
    fn child_path(&mut self) -> (Option<String>, bool) {
        match self.stack.last_mut() {
            None => (Some(String::new()), false),
            Some(Frame::Map { key: None, .. }) => (None, true),
            Some(Frame::Map { path, key: Some(k) }) => {
                let p = join(path, k);
                (Some(p), false)
            }
            Some(Frame::Seq { path, next }) => {
                let p = format!("{path}[{next}]");
                *next += 1;
                (Some(p), false)
            }
        }
    }

    fn after_value(&mut self) {
        if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
            *key = None;
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let pos = (mark.line(), mark.col() + 1);
        match ev {
            Event::Scalar(value, ..) => {
                let (path, is_key) = self.child_path();
                if is_key {
                    if let Some(Frame::Map { path, key }) = self.stack.last_mut() {
                        let p = join(path, &value);
                        self.map.entry(p).or_insert(pos);
                        *key = Some(value);
                    }
                } else {
                    if let Some(p) = path {
                        self.map.entry(p).or_insert(pos);
                    }
                    self.after_value();
                }
            }
            Event::Alias(_) => {
                let (path, is_key) = self.child_path();
                if !is_key {
                    if let Some(p) = path {
                        self.map.entry(p).or_insert(pos);
                    }
                    self.after_value();
                } else if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
                    *key = Some("*alias".into());
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let (path, is_key) = self.child_path();
                // A complex key: index it under a placeholder that never matches.
                let path = if is_key {
                    "\u{0}complex-key".to_string()
                } else {
                    path.unwrap_or_default()
                };
                self.map.entry(path.clone()).or_insert(pos);
                if matches!(ev, Event::MappingStart(..)) {
                    self.stack.push(Frame::Map { path, key: None });
                } else {
                    self.stack.push(Frame::Seq { path, next: 0 });
                }
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.after_value();
            }
            _ => {}
        }
    }
}

impl LineIndex {
    /// Index a YAML text. A text that does not parse yields what was indexed before the
    /// syntax error (the serde parser reports the error itself).
    pub fn build(src: &str) -> LineIndex {
        let mut b = Builder {
            stack: Vec::new(),
            map: HashMap::new(),
        };
        let mut parser = Parser::new_from_str(src);
        let _ = parser.load(&mut b, false);
        LineIndex { map: b.map }
    }

    /// Line and column of `path`, or of its nearest indexed ancestor.
    pub fn locate(&self, path: &str) -> Option<(usize, usize)> {
        let mut p = path;
        loop {
            if let Some(&pos) = self.map.get(p) {
                return Some(pos);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "name: t\nscenarios:\n  browse:\n    executor: ramping-vus\n    stages:\n      - { duration: 10s, target: 5 }\n      - duration: 20s\n        target: 0\n    mix:\n      - weight: 3\n        request: \"GET /\"\n";

    #[test]
    fn finds_lines_of_nested_fields() {
        let ix = LineIndex::build(DOC);
        assert_eq!(ix.locate("name").unwrap().0, 1);
        assert_eq!(ix.locate("scenarios.browse.executor").unwrap().0, 4);
        assert_eq!(ix.locate("scenarios.browse.stages[0].target").unwrap().0, 6);
        assert_eq!(ix.locate("scenarios.browse.stages[1].target").unwrap().0, 8);
        assert_eq!(ix.locate("scenarios.browse.mix[0].request").unwrap().0, 11);
        // Unknown leaf falls back to its parent.
        assert_eq!(ix.locate("scenarios.browse.stages[1].nope").unwrap().0, 7);
    }

    #[test]
    fn garbage_does_not_panic() {
        for s in [
            "",
            ":",
            "- [",
            "{a: [1, {b: }",
            "\u{feff}a: 1",
            "a:\n  - b: c\n - d",
        ] {
            let _ = LineIndex::build(s).locate("a.b");
        }
    }
}
