//! Thresholds scoped to part of the run: `{stage:2}`, `{stage:peak}` and
//! `{window:60s-120s}` (a pado extension: k6 has no stage tag).
//!
//! A stress test's success criteria are per load level ("p95 < 200 ms while at 100
//! VUs, errors < 1% at 200 VUs"); a threshold over the whole run mixes the levels.
//! A scope picks the seconds a threshold is judged on: the seconds of one stage of a
//! `stages:` list, or of a time window from the run's start. The scope is written as
//! a tag of the metric key so the file keeps k6's shape, but it selects seconds, not
//! series, so it is taken out of the tag filter here.

use std::time::Duration;

use super::key::Tags;

/// The tag that scopes a threshold to one stage.
pub const STAGE_TAG: &str = "stage";
/// The tag that scopes a threshold to a time window from the run's start.
pub const WINDOW_TAG: &str = "window";

/// Which stage a `{stage:…}` threshold means.
#[derive(Debug, Clone, PartialEq)]
pub enum StageRef {
    /// By position in the scenario's `stages:` list, counting from 1 (as `at_stage`
    /// of events counts).
    Number(u32),
    /// By the stage's `name:`.
    Name(String),
}

/// The part of the run a threshold is judged on.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// The tag value as written (`2`, `peak`, `60s-120s`), echoed in the metric key.
    pub text: String,
    /// What the scope names.
    pub kind: ScopeKind,
    /// The window in seconds from the run's start, `[start, end)`: known from the
    /// text for a window, from the scenario for a stage (see
    /// [`super::from_config`]); `None` until then.
    pub window_s: Option<(f64, f64)>,
}

/// A stage or a time window.
#[derive(Debug, Clone, PartialEq)]
pub enum ScopeKind {
    /// One stage of a scenario's `stages:` (of the scenario the `scenario` tag
    /// names, else the first scenario with `stages:`).
    Stage(StageRef),
    /// A window from the run's start.
    Window,
}

impl Scope {
    /// The tag it is written as: `stage` or `window`.
    pub fn tag(&self) -> &'static str {
        match self.kind {
            ScopeKind::Stage(_) => STAGE_TAG,
            ScopeKind::Window => WINDOW_TAG,
        }
    }

    /// The scope in words for people: `stage 2`, `stage "peak"`, `60 s–120 s of
    /// the run`.
    pub fn words(&self) -> String {
        match (&self.kind, self.window_s) {
            (ScopeKind::Stage(StageRef::Number(n)), Some((a, b))) => {
                format!("stage {n} ({a:.0}–{b:.0} s)")
            }
            (ScopeKind::Stage(StageRef::Number(n)), None) => format!("stage {n}"),
            (ScopeKind::Stage(StageRef::Name(s)), Some((a, b))) => {
                format!("stage `{s}` ({a:.0}–{b:.0} s)")
            }
            (ScopeKind::Stage(StageRef::Name(s)), None) => format!("stage `{s}`"),
            (ScopeKind::Window, Some((a, b))) => format!("seconds {a:.0}–{b:.0} of the run"),
            (ScopeKind::Window, None) => format!("window {}", self.text),
        }
    }
}

/// Takes the scope tags (`stage`, `window`) out of a parsed tag filter; a reason
/// for [`super::ThresholdError::InvalidTags`] when one is malformed or both are given.
pub(super) fn take_scope(tags: &mut Tags) -> Result<Option<Scope>, String> {
    let mut found: Option<Scope> = None;
    let mut i = 0;
    while i < tags.len() {
        let (k, v) = &tags[i];
        let scope = match k.as_str() {
            STAGE_TAG => stage(v)?,
            WINDOW_TAG => window(v)?,
            _ => {
                i += 1;
                continue;
            }
        };
        if found.is_some() {
            return Err(
                "give one of `stage:` and `window:`: a threshold is judged over one part of the run"
                    .to_string(),
            );
        }
        found = Some(scope);
        tags.remove(i);
    }
    Ok(found)
}

fn stage(v: &str) -> Result<Scope, String> {
    let kind = if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) {
        match v.parse::<u32>() {
            Ok(n) if n >= 1 => ScopeKind::Stage(StageRef::Number(n)),
            _ => {
                return Err(format!(
                    "`stage:{v}`: stages count from 1 (the first stage of `stages:` is `stage:1`)"
                ))
            }
        }
    } else {
        ScopeKind::Stage(StageRef::Name(v.to_string()))
    };
    Ok(Scope {
        text: v.to_string(),
        kind,
        window_s: None,
    })
}

fn window(v: &str) -> Result<Scope, String> {
    let bad = |why: String| {
        format!("`window:{v}`: {why}; write the seconds from the run's start as START-END, e.g. `window:60s-120s` or `window:1m-2m`")
    };
    let (a, b) = v
        .split_once("..")
        .or_else(|| v.split_once('-'))
        .ok_or_else(|| bad("no `-` between start and end".into()))?;
    let dur = |s: &str| -> Result<Duration, String> {
        pado_base::units::parse_duration(s.trim()).map_err(|e| bad(e.to_string()))
    };
    let (start, end) = (dur(a)?.as_secs_f64(), dur(b)?.as_secs_f64());
    if end <= start {
        return Err(bad("the end is not after the start".into()));
    }
    Ok(Scope {
        text: v.to_string(),
        kind: ScopeKind::Window,
        window_s: Some((start, end)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> Tags {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn stage_and_window_are_taken_out_of_the_filter() {
        let mut t = tags(&[("step", "검색"), ("stage", "2")]);
        let s = take_scope(&mut t).unwrap().unwrap();
        assert_eq!(t, tags(&[("step", "검색")]));
        assert_eq!(s.kind, ScopeKind::Stage(StageRef::Number(2)));
        assert_eq!(s.window_s, None);

        let mut t = tags(&[("stage", "피크")]);
        let s = take_scope(&mut t).unwrap().unwrap();
        assert_eq!(s.kind, ScopeKind::Stage(StageRef::Name("피크".into())));

        for text in ["60s-120s", "1m-2m", "60s..120s"] {
            let mut t = tags(&[("window", text)]);
            let s = take_scope(&mut t).unwrap().unwrap();
            assert_eq!(s.window_s, Some((60.0, 120.0)), "{text}");
            assert!(t.is_empty());
        }
        let mut t = tags(&[("step", "a")]);
        assert_eq!(take_scope(&mut t).unwrap(), None);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn malformed_scopes_say_how_to_write_them() {
        for (k, v, want) in [
            ("stage", "0", "count from 1"),
            ("window", "120s-60s", "not after the start"),
            ("window", "60s", "no `-`"),
            ("window", "xs-2m", "START-END"),
        ] {
            let e = take_scope(&mut tags(&[(k, v)])).unwrap_err();
            assert!(e.contains(want), "{k}:{v}: {e}");
        }
        let e = take_scope(&mut tags(&[("stage", "1"), ("window", "1s-2s")])).unwrap_err();
        assert!(e.contains("one of"), "{e}");
    }
}
