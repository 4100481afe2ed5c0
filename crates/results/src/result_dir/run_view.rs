//! `run.json` as the run history reads it: who the run is (name, start, length,
//! whether it is a segment or a merge) and, as written, the parts that say which
//! test it was (scenarios, stages, thresholds). Lenient where [`RunMeta`] is strict:
//! every field defaulted, unknown ones ignored, no version check, so a history
//! rebuild reads every result directory pado ever wrote.
//!
//! [`RunMeta`]: super::RunMeta

use serde::Deserialize;
use serde_json::Value;

/// The parts of `run.json` a reader of many runs needs.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RunView {
    /// `pado-result` in every result directory.
    pub format: Option<String>,
    /// The test's name.
    pub name: Option<String>,
    /// Second 0, RFC 3339 UTC.
    pub started_at: Option<String>,
    /// Wall-clock length, seconds.
    pub duration_s: Option<f64>,
    /// Stopped early.
    pub interrupted: Option<bool>,
    /// Present on a segment of a split test.
    pub segment: Option<SegmentView>,
    /// The generators' runs a merged result was made of.
    pub merged_from: Vec<MergedView>,
    /// The scenarios as written (hashed as they are, never re-serialized).
    pub scenarios: Option<Value>,
    /// The stages as written.
    pub stages: Option<Value>,
    /// The thresholds as written.
    pub thresholds: Option<Value>,
}

/// A segment's identity.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SegmentView {
    /// Fingerprint of the whole test's plan.
    pub plan_id: Option<String>,
}

/// One generator of a merged run.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct MergedView {
    /// The segment it ran.
    pub segment: Option<SegmentView>,
}

impl RunView {
    /// The run's `plan_id`: its segment's, or a merged run's first generator's.
    pub fn plan_id(&self) -> Option<&str> {
        fn of(s: Option<&SegmentView>) -> Option<&str> {
            s.and_then(|s| s.plan_id.as_deref())
        }
        of(self.segment.as_ref())
            .or_else(|| of(self.merged_from.first().and_then(|m| m.segment.as_ref())))
            .filter(|s| !s.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(s: &str) -> RunView {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn the_plan_id_is_the_segments_else_the_first_generators() {
        assert_eq!(
            view(r#"{"segment":{"plan_id":"p1"}}"#).plan_id(),
            Some("p1")
        );
        let merged =
            r#"{"merged_from":[{"segment":{"plan_id":"m1"}},{"segment":{"plan_id":"m2"}}]}"#;
        assert_eq!(view(merged).plan_id(), Some("m1"));
        let seg_without = r#"{"segment":{},"merged_from":[{"segment":{"plan_id":"m1"}}]}"#;
        assert_eq!(view(seg_without).plan_id(), Some("m1"));
        assert_eq!(view(r#"{"segment":{"plan_id":""}}"#).plan_id(), None);
        assert_eq!(view("{}").plan_id(), None);
    }

    #[test]
    fn a_minimal_run_file_reads_and_keeps_its_parts_as_written() {
        let v = view(
            r#"{"format":"pado-result","name":"시험","segment":null,"scenarios":[{"b":1,"a":2}],"extra":true}"#,
        );
        assert_eq!(v.format.as_deref(), Some("pado-result"));
        assert_eq!(v.name.as_deref(), Some("시험"));
        assert!(v.segment.is_none(), "null is no segment");
        assert_eq!(v.scenarios, Some(serde_json::json!([{"a": 2, "b": 1}])));
        assert!(v.stages.is_none() && v.merged_from.is_empty());
    }
}
