//! Naming a recorded run on the command line: an id (`12`), `last`, `last~N`,
//! `best` (lowest p95 among runs of one name), `label:KEY=VALUE` (the latest run
//! with that label).

/// A reference to a recorded run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunRef {
    /// A run's id.
    Id(i64),
    /// The N-th most recent run (0: the latest).
    Last(usize),
    /// The run with the lowest p95 among runs of a name (the given one, else the
    /// caller's context).
    Best(Option<String>),
    /// The most recent run carrying this label.
    Label(String, String),
}

impl RunRef {
    /// Parse a reference; `None` when `s` is not one (then it is a path).
    pub fn parse(s: &str) -> Option<RunRef> {
        if let Ok(id) = s.parse::<i64>() {
            return (id > 0).then_some(RunRef::Id(id));
        }
        if s == "last" {
            return Some(RunRef::Last(0));
        }
        if let Some(n) = s.strip_prefix("last~") {
            return n.parse().ok().map(RunRef::Last);
        }
        if s == "best" {
            return Some(RunRef::Best(None));
        }
        if let Some(name) = s.strip_prefix("best:") {
            return Some(RunRef::Best(Some(name.to_string())));
        }
        if let Some(l) = s.strip_prefix("label:") {
            return crate::query::label(l)
                .ok()
                .map(|(k, v)| RunRef::Label(k, v));
        }
        None
    }
}

impl std::fmt::Display for RunRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunRef::Id(i) => write!(f, "{i}"),
            RunRef::Last(0) => f.write_str("last"),
            RunRef::Last(n) => write!(f, "last~{n}"),
            RunRef::Best(None) => f.write_str("best"),
            RunRef::Best(Some(n)) => write!(f, "best:{n}"),
            RunRef::Label(k, v) => write!(f, "label:{k}={v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_paths() {
        assert_eq!(RunRef::parse("12"), Some(RunRef::Id(12)));
        assert_eq!(RunRef::parse("last"), Some(RunRef::Last(0)));
        assert_eq!(RunRef::parse("last~3"), Some(RunRef::Last(3)));
        assert_eq!(RunRef::parse("best"), Some(RunRef::Best(None)));
        assert_eq!(
            RunRef::parse("best:검색"),
            Some(RunRef::Best(Some("검색".into())))
        );
        assert_eq!(
            RunRef::parse("label:commit=abc"),
            Some(RunRef::Label("commit".into(), "abc".into()))
        );
        for path in [
            "results/x",
            "last~",
            "last~x",
            "0",
            "-1",
            "label:nokv",
            "./last",
        ] {
            assert_eq!(RunRef::parse(path), None, "{path}");
        }
        assert_eq!(RunRef::parse("last~2").unwrap().to_string(), "last~2");
    }
}
