//! A scenario loaded for a run: the file read once (or the quick-mode request
//! built), the command line's settings applied, validated, its thresholds parsed;
//! then compiled, with every threshold's tag selector checked against what the
//! scenario has.

use std::path::PathBuf;

use pado_analysis::thresholds::Threshold;
use pado_engine::compile;
use pado_scenario::line_index::LineIndex;
use pado_scenario::{
    apply_overrides, load_file_with_target, quick_config, validate, Config, QuickRequest,
};

use crate::config::{LoadSpec, Source};
use crate::exit::{self, Failure};

/// A configuration ready to run, with where it came from.
pub(crate) struct Prepared {
    /// The configuration.
    pub config: Config,
    /// File name for messages (`<command line>` in quick mode).
    pub file: String,
    /// Directory relative paths resolve against.
    pub base_dir: PathBuf,
    /// Parsed thresholds.
    pub thresholds: Vec<Threshold>,
    /// Where each field of the file sits (empty in quick mode).
    pub lines: LineIndex,
    /// What the command line's load flags did to the file's `events:` (moved with
    /// the test's length, or left out because their stage no longer exists): told
    /// to the user as warnings before the run and kept in the result.
    pub notes: Vec<String>,
}

impl Prepared {
    /// `file:line:column` of a field, as messages start.
    pub(crate) fn at(&self, field: &str) -> String {
        match self.lines.locate(field) {
            Some((l, c)) => format!("{}:{l}:{c}", self.file),
            None => self.file.clone(),
        }
    }

    /// Compile the configuration: an error names the line of its field (a feed that
    /// cannot be read, a column it lacks, an unset environment variable). Then every
    /// threshold's tag selector is checked against the steps, scenarios, checks and
    /// tags that exist, so `{step:serch}` is an error now and not a threshold that
    /// silently has no data.
    pub(crate) fn compile(&self) -> Result<pado_engine::RunPlan, Failure> {
        let plan = compile(&self.config, &self.base_dir).map_err(|e| self.plan_failure(e))?;
        self.checked(plan)
    }

    /// Compile for pods that read their environment from a Kubernetes Secret
    /// (`pado k8s --env-from-secret`): a `{{ env.X }}` unset here is left to the
    /// pods, its name returned for the note that says so. The plan is for checking
    /// and planning only, never for running here.
    #[cfg(feature = "k8s")]
    pub(crate) fn compile_for_pods(&self) -> Result<(pado_engine::RunPlan, Vec<String>), Failure> {
        let (plan, deferred) = pado_engine::compile_for_elsewhere(&self.config, &self.base_dir)
            .map_err(|e| self.plan_failure(e))?;
        Ok((self.checked(plan)?, deferred))
    }

    fn plan_failure(&self, e: pado_engine::PlanError) -> Failure {
        let mut m = format!("{}: {e}", self.at(&e.field()));
        if let Some(h) = e.hint() {
            m.push_str(&format!("\n  hint: {h}"));
        }
        Failure::invalid(m)
    }

    /// The plan once every threshold's tag selector names something it has.
    fn checked(&self, plan: pado_engine::RunPlan) -> Result<pado_engine::RunPlan, Failure> {
        let problems = self.selector_problems(&plan);
        if problems.is_empty() {
            Ok(plan)
        } else {
            Err(Failure::invalid(problems.join("\n")))
        }
    }

    /// Each threshold selector that names nothing the plan has, placed at its line.
    fn selector_problems(&self, plan: &pado_engine::RunPlan) -> Vec<String> {
        let names: Vec<&str> = plan.series.iter().map(|k| k.name.as_str()).collect();
        let problems = pado_analysis::selectors::selector_problems(
            &self.config,
            &self.thresholds,
            &pado_analysis::selectors::PlanNames {
                series: &names,
                checks: &plan.checks,
                steps: &plan.steps,
            },
        );
        problems
            .into_iter()
            .map(|p| format!("{}: {}", self.at(&p.field), p.message))
            .collect()
    }
}

/// A scenario as read, before any flag changes it. A file is read (and its target
/// override applied) once; quick mode has nothing to read, its scenario is built
/// from the flags each time it is prepared.
#[derive(Clone, Debug)]
pub(crate) enum ScenarioText {
    /// A scenario file, loaded.
    File {
        /// The configuration as the file says (with `--target` applied).
        config: Box<Config>,
        /// The file's name, for messages.
        file: String,
        /// Where relative paths in it start.
        base_dir: PathBuf,
        /// YAML paths to lines, for threshold errors.
        lines: LineIndex,
    },
    /// Quick mode: the request the flags describe is the scenario.
    Url(Box<QuickRequest>),
}

impl ScenarioText {
    /// Read what `spec` names (a file once; nothing for a URL).
    pub(crate) fn read(spec: &LoadSpec) -> Result<ScenarioText, Failure> {
        match &spec.source {
            Source::File(path) => {
                let loaded = load_file_with_target(path, spec.overrides.target.as_deref())
                    .map_err(|e| match e {
                        pado_scenario::ScenarioError::Read { .. } => Failure {
                            code: exit::INVALID,
                            message: e.to_string(),
                        },
                        _ => Failure::invalid(e.to_string()),
                    })?;
                Ok(ScenarioText::File {
                    config: Box::new(loaded.config),
                    file: loaded.file,
                    base_dir: loaded.base_dir,
                    lines: loaded.lines,
                })
            }
            Source::Url(q) => Ok(ScenarioText::Url(Box::new(q.clone()))),
        }
    }
}

impl Prepared {
    /// Stage two's last part: read the scenario named by `spec`, apply its
    /// settings, validate the result and parse its thresholds (the file's and the
    /// command line's), every error naming file, line and field.
    pub(crate) fn load(spec: &LoadSpec) -> Result<Prepared, Failure> {
        Prepared::from_read(&ScenarioText::read(spec)?, spec)
    }

    /// Prepare a scenario already read: the flags of `spec` applied to its own copy
    /// (each find-capacity step prepares the one reading with its own rate).
    pub(crate) fn from_read(read: &ScenarioText, spec: &LoadSpec) -> Result<Prepared, Failure> {
        let ov = &spec.overrides;
        let (mut config, file, base_dir, lines) = match read {
            ScenarioText::File {
                config,
                file,
                base_dir,
                lines,
            } => (
                (**config).clone(),
                file.clone(),
                base_dir.clone(),
                lines.clone(),
            ),
            ScenarioText::Url(q) => (
                quick_config(q, ov),
                "<command line>".to_string(),
                PathBuf::from("."),
                LineIndex::default(),
            ),
        };
        let mut notes = Vec::new();
        if matches!(spec.source, Source::File(_)) {
            let as_written = (!config.events.is_empty()).then(|| config.clone());
            apply_overrides(&mut config, ov).map_err(Failure::invalid)?;
            if let Some(before) = as_written {
                notes = pado_scenario::refit_events(&before, &mut config);
            }
        }
        // `--fit-to` fits the test as the other flags made it (`--duration 8h
        // --fit-to 2s` is 2 s): it scales last, events already moved with it.
        if let (Some(len), Some(want)) = (pado_scenario::planned_length(&config), spec.fit_to) {
            if !len.is_zero() {
                pado_scenario::scale_timeline(&mut config, want.as_secs_f64() / len.as_secs_f64());
            }
        }
        validate(&config, &file).map_err(|e| Failure::invalid(e.to_string()))?;
        let thresholds =
            pado_scenario::thresholds::from_config(&config, &file, &lines).map_err(|e| {
                Failure::invalid(
                    e.diagnostics()
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            })?;
        Ok(Prepared {
            config,
            file,
            base_dir,
            thresholds,
            lines,
            notes,
        })
    }
}
