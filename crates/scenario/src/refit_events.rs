//! A file's `events:` after the command line changed its load (`--vus`, `--duration`,
//! `--rate`, `--stages`, `--step-ramp`, `--iterations`): a quick smoke run of the real
//! file keeps its faults where they still have a place, and says which lost theirs.
//!
//! Events placed by time (`at:`) sit on the load's timeline: when the flags change
//! the test's planned length, they move with it (and so does a fault's `duration`),
//! as `--fit-to` moves them. Events placed by a stage (`at_stage: N`) keep it when the
//! scenario they count from still has a stage N; when its stages are gone (replaced
//! by a constant load) or fewer, the event is left out of the run, named in a note,
//! rather than the run refused or the fault fired at a moment that means nothing.

use crate::{planned_length, Config, Dur};

/// The scenario an `at_stage` event counts from: the one it names, else the first
/// with stages (as validation reads it).
fn counted<'c>(cfg: &'c Config, named: Option<&str>) -> Option<(&'c str, usize)> {
    let found = match named {
        Some(n) => cfg.scenarios.iter().find(|(name, _)| name == n),
        None => cfg.scenarios.iter().find(|(_, s)| s.stages.is_some()),
    };
    found.map(|(name, s)| (name.as_str(), s.stages.as_ref().map_or(0, Vec::len)))
}

/// The name an event is shown by (`event N`, counting from 1, when it has none).
fn event_name(e: &crate::events::Event, i: usize) -> String {
    e.name.clone().unwrap_or_else(|| format!("event {}", i + 1))
}

/// Place `cfg`'s events (a copy of `original` whose load the command line changed)
/// on the new load: `at` times and fault lengths scaled by the change of planned
/// length, `at_stage` events whose stage no longer exists removed. Returns one
/// sentence per change, for the user; nothing when the load kept its length and
/// every stage.
pub fn refit_events(original: &Config, cfg: &mut Config) -> Vec<String> {
    let mut notes = Vec::new();
    if cfg.events.is_empty() {
        return notes;
    }
    let factor = match (planned_length(original), planned_length(cfg)) {
        (Some(old), Some(new)) if !old.is_zero() && old != new => {
            Some((new.as_secs_f64() / old.as_secs_f64(), old, new))
        }
        _ => None,
    };
    let mut kept = Vec::with_capacity(cfg.events.len());
    for (i, mut e) in std::mem::take(&mut cfg.events).into_iter().enumerate() {
        let name = event_name(&e, i);
        if let Some(n) = e.at_stage {
            let before = counted(original, e.scenario.as_deref());
            let now = counted(cfg, e.scenario.as_deref());
            match now {
                Some((_, len)) if n as usize <= len => {
                    let same = before.is_some_and(|(_, l)| l == len)
                        && original
                            .scenarios
                            .iter()
                            .zip(cfg.scenarios.iter())
                            .all(|((_, a), (_, b))| a.stages == b.stages);
                    if !same {
                        notes.push(format!(
                            "event `{name}` (at_stage: {n}) starts with stage {n} of the stages given on the command line"
                        ));
                    }
                }
                _ => {
                    let scenario = before.map_or("", |(s, _)| s);
                    notes.push(format!(
                        "event `{name}` (at_stage: {n}) is left out of this run: the load flags replaced the stages of scenario `{scenario}` it is placed by, and stage {n} no longer exists (run the file as written, or give --stages with at least {n} stages, to include it)"
                    ));
                    continue;
                }
            }
        } else if let (Some((f, old, new)), Some(at)) = (factor, e.at) {
            let moved = Dur(at.get().mul_f64(f));
            notes.push(format!(
                "event `{name}` moved with the test's length ({} → {}): at {} → {}",
                pado_base::units::duration_compact(old),
                pado_base::units::duration_compact(new),
                pado_base::units::duration_compact(at.get()),
                pado_base::units::duration_compact(moved.get())
            ));
            e.at = Some(moved);
        }
        if let (Some((f, _, _)), Some(d)) = (factor, e.duration.as_mut()) {
            *d = Dur(d.get().mul_f64(f));
        }
        kept.push(e);
    }
    cfg.events = kept;
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{apply_overrides, validate, LoadShape, Overrides};

    /// A ramp of three stages (10 s up, 20 s hold, 10 s down: 40 s), a fault at the
    /// start of stage 2 for 8 s, a mark at 20 s, and a fault at stage 3.
    const FILE: &str = "target: http://127.0.0.1:9\nscenarios:\n  main:\n    executor: ramping-vus\n    stages:\n      - { duration: 10s, target: 10 }\n      - { duration: 20s, target: 10 }\n      - { duration: 10s, target: 0 }\n    flow: [ { request: / } ]\nevents:\n  - { name: 스파이크, at_stage: 2, mark: spike, duration: 8s }\n  - { name: note, at: 20s, mark: halfway }\n  - { at_stage: 3, mark: down }\n";

    fn file() -> Config {
        crate::parse_str(FILE, "t.yaml").unwrap()
    }

    fn with(shape: LoadShape) -> (Config, Vec<String>) {
        let original = file();
        let mut cfg = original.clone();
        let ov = Overrides {
            shape: Some(shape),
            ..Default::default()
        };
        apply_overrides(&mut cfg, &ov).unwrap();
        let notes = refit_events(&original, &mut cfg);
        validate(&cfg, "t.yaml").unwrap_or_else(|e| panic!("{e}\n{notes:?}"));
        (cfg, notes)
    }

    #[test]
    fn a_constant_load_drops_stage_events_by_name_and_scales_the_rest() {
        // The file as written is refused after `--vus 5 --duration 8s` without this:
        // its at_stage events have no stages left to count from.
        let mut plain = file();
        apply_overrides(
            &mut plain,
            &Overrides {
                shape: Some(LoadShape::Vus {
                    vus: 5,
                    duration: Dur::from_secs(8),
                }),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(validate(&plain, "t.yaml").is_err());

        let (cfg, notes) = with(LoadShape::Vus {
            vus: 5,
            duration: Dur::from_secs(8),
        });
        let names: Vec<_> = cfg.events.iter().map(|e| e.name.clone()).collect();
        assert_eq!(names, [Some("note".to_string())]);
        // 40 s → 8 s: the mark at 20 s is now at 4 s.
        assert_eq!(cfg.events[0].at, Some(Dur::from_secs(4)));
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes[0].starts_with("event `스파이크` (at_stage: 2) is left out")
                && notes[0].contains("scenario `main`"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("`note` moved") && notes[1].contains("at 20s → 4s"),
            "{notes:?}"
        );
        assert!(
            notes[2].starts_with("event `event 3` (at_stage: 3) is left out"),
            "{notes:?}"
        );
    }

    #[test]
    fn stages_from_the_command_line_keep_the_events_whose_stage_exists() {
        // Two stages of 2 s: stage 2 exists (kept, its fault scaled 40 s → 4 s:
        // 8 s → 0.8 s), stage 3 does not (left out).
        let stages = crate::parse_stages("2s:5,2s:5").unwrap();
        let (cfg, notes) = with(LoadShape::Stages(stages));
        let kept: Vec<_> = cfg.events.iter().map(|e| e.name.clone()).collect();
        assert_eq!(
            kept,
            [Some("스파이크".to_string()), Some("note".to_string())]
        );
        assert_eq!(cfg.events[0].at_stage, Some(2));
        assert_eq!(
            cfg.events[0].duration,
            Some(Dur(std::time::Duration::from_millis(800)))
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("stage 2 of the stages given")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("event `event 3`") && n.contains("left out")),
            "{notes:?}"
        );
    }

    #[test]
    fn an_unchanged_load_leaves_every_event_alone() {
        let original = file();
        let mut cfg = original.clone();
        apply_overrides(&mut cfg, &Overrides::default()).unwrap();
        assert!(refit_events(&original, &mut cfg).is_empty());
        assert_eq!(cfg.events, original.events);
    }
}
