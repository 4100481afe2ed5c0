//! An earlier run of the same test drawn beside the live one (`--baseline last`,
//! `best` or a run id from `pado history`): found in the run history as `pado
//! compare` finds its runs, its `timeline.jsonl` read through `pado_results` and
//! turned into the page's seconds once, before the run starts. A reference that
//! names no usable run is an error then, not a blank chart later.

use std::path::Path;

use pado_history::{Filter, History, RunRef};

use crate::second::Second;
use crate::store::MAX_SECONDS;
use crate::DashboardError;

/// An earlier run's seconds, ready to serve (`GET /api/baseline`).
#[derive(Clone, Debug)]
pub struct Baseline {
    /// What the page calls it (`last (run 12, 2026-11-27T10:00:00Z)`).
    pub label: String,
    /// Its id in the history, when it came from there.
    pub run_id: Option<i64>,
    json: String,
}

impl Baseline {
    /// The run `reference` names among the recorded runs of the test `name`
    /// (`last`: its latest; `best`: its lowest p95; a number: that run, which must
    /// be of the same test), in the history database at `db`.
    pub fn resolve(reference: &str, name: &str, db: &Path) -> Result<Baseline, DashboardError> {
        let err = |why: String| DashboardError::Baseline {
            reference: reference.to_string(),
            why,
        };
        if !db.is_file() {
            return Err(err(format!(
                "no run history at {} yet (a finished `pado run` records one)",
                db.display()
            )));
        }
        let h = History::open(db).map_err(|e| err(e.to_string()))?;
        let run = match reference {
            "last" => h
                .list(&Filter {
                    name: Some(name.to_string()),
                    limit: Some(1),
                    ..Filter::default()
                })
                .map_err(|e| err(e.to_string()))?
                .pop()
                .ok_or_else(|| err(format!("no earlier run of `{name}` in the history")))?,
            "best" => h
                .resolve(&RunRef::Best(Some(name.to_string())), Some(name))
                .map_err(|e| err(e.to_string()))?,
            id => {
                let id: i64 = id.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    err("give `last`, `best` or a run id from `pado history`".into())
                })?;
                let run = h
                    .get(id)
                    .map_err(|e| err(e.to_string()))?
                    .ok_or_else(|| err(format!("no run with id {id} in the history")))?;
                if run.record.name != name {
                    return Err(err(format!(
                        "run {id} is of `{}`, not of this test (`{name}`)",
                        run.record.name
                    )));
                }
                run
            }
        };
        let label = format!("{reference} (run {}, {})", run.id, run.record.started_at);
        Baseline::from_dir(&run.record.result_dir, label, Some(run.id)).map_err(err)
    }

    /// The seconds of the result directory `dir` (at most [`MAX_SECONDS`]).
    pub fn from_dir(dir: &Path, label: String, run_id: Option<i64>) -> Result<Baseline, String> {
        let rd = pado_results::ResultDir::open(dir).map_err(|e| e.to_string())?;
        let mut seconds: Vec<String> = Vec::new();
        rd.for_each_second(|r| {
            if seconds.len() < MAX_SECONDS {
                let s = serde_json::to_string(&Second::of(&r)).unwrap_or_default();
                seconds.push(s);
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        let head = serde_json::json!({ "label": label, "run_id": run_id }).to_string();
        let json = format!(
            "{},\"seconds\":[{}]}}",
            head.trim_end_matches('}'),
            seconds.join(",")
        );
        Ok(Baseline {
            label,
            run_id,
            json,
        })
    }

    /// `{"label","run_id","seconds":[…]}`.
    pub fn json(&self) -> String {
        self.json.clone()
    }
}
