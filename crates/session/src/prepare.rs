//! A scenario made ready for a run: what to load ([`LoadSpec`]: a file or the
//! quick-mode request, with the settings that go on top of it), read once
//! ([`ScenarioText`]), then [`Prepared`]: the settings applied, the `events:`
//! refitted to the new length, `--fit-to` applied last, validated, its thresholds
//! parsed; compiled with every threshold's tag selector checked against what the
//! scenario has.
//!
//! Every command that runs or checks a scenario (`run`, `validate`, `find-capacity`,
//! `demo`, `k8s`) prepares it here, so a setting means the same in each and every
//! error names file, line and field.

use std::path::PathBuf;
use std::time::Duration;

use pado_analysis::thresholds::Threshold;
use pado_engine::compile;
use pado_engine::script::ScriptRef;
use pado_scenario::line_index::LineIndex;
use pado_scenario::{
    apply_overrides, load_file_with_target, quick_config, validate, Config, LoadShape, Overrides,
    QuickRequest,
};

use crate::config::Scenario;
use crate::SessionError;

/// Where the scenario comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A scenario file (YAML or JSON).
    File(PathBuf),
    /// Quick mode: one request built from the command line.
    Url(QuickRequest),
}

/// What to load, typed before any file is read: the source and the settings that
/// apply on top of it. A command that runs several tests of one scenario
/// (`find-capacity`) checks the settings once and changes only the shape.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadSpec {
    /// The scenario file or the quick-mode request.
    pub source: Source,
    /// Settings from flags (headers, timeout, TLS, load shape, thresholds, ...).
    pub overrides: Overrides,
    /// Stretch or compress the file's timeline to this length (`--fit-to`).
    pub fit_to: Option<Duration>,
}

impl LoadSpec {
    /// A scenario file as written, with `target` replacing its `target` when given
    /// (`validate`, `demo`).
    pub fn file(path: PathBuf, target: Option<String>) -> LoadSpec {
        LoadSpec {
            source: Source::File(path),
            overrides: Overrides {
                target,
                ..Default::default()
            },
            fit_to: None,
        }
    }

    /// Read the scenario (once), apply the settings, validate, and parse its
    /// thresholds.
    pub fn load(&self) -> Result<Prepared, SessionError> {
        Prepared::load(self)
    }
}

/// A configuration ready to run, with where it came from.
#[derive(Clone, Debug)]
pub struct Prepared {
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
    /// A k6 script's VUs, handed to the plan it compiles to.
    pub script: Option<ScriptRef>,
}

impl Prepared {
    /// `file:line:column` of a field, as messages start.
    pub fn at(&self, field: &str) -> String {
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
    pub fn compile(&self) -> Result<pado_engine::RunPlan, SessionError> {
        let mut plan = compile(&self.config, &self.base_dir).map_err(|e| self.plan_failure(e))?;
        plan.script = self.script.clone();
        self.checked(plan)
    }

    /// Compile for generators that read their environment elsewhere (pods with a
    /// Kubernetes Secret): a `{{ env.X }}` unset here is left to them, its name
    /// returned for the note that says so. The plan is for checking and planning
    /// only, never for running here.
    pub fn compile_for_elsewhere(
        &self,
    ) -> Result<(pado_engine::RunPlan, Vec<String>), SessionError> {
        let (plan, deferred) = pado_engine::compile_for_elsewhere(&self.config, &self.base_dir)
            .map_err(|e| self.plan_failure(e))?;
        Ok((self.checked(plan)?, deferred))
    }

    /// The scenario as a run keeps it beside its plan.
    pub fn scenario(&self) -> Scenario {
        Scenario {
            config: self.config.clone(),
            file: self.file.clone(),
            thresholds: self.thresholds.clone(),
            notes: self.notes.clone(),
        }
    }

    fn plan_failure(&self, e: pado_engine::PlanError) -> SessionError {
        let mut m = format!("{}: {e}", self.at(&e.field()));
        if let Some(h) = e.hint() {
            m.push_str(&format!("\n  hint: {h}"));
        }
        SessionError::Invalid(m)
    }

    /// The plan once every threshold's tag selector names something it has.
    fn checked(&self, plan: pado_engine::RunPlan) -> Result<pado_engine::RunPlan, SessionError> {
        // A script's series, groups and tags are made as it runs (k6 takes any
        // sub-metric a threshold names, and judges one that got no data as failed).
        if self.script.is_some() {
            return Ok(plan);
        }
        let problems = self.selector_problems(&plan);
        if problems.is_empty() {
            Ok(plan)
        } else {
            Err(SessionError::Invalid(problems.join("\n")))
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

/// A scenario as read, before any setting changes it. A file is read (and its
/// target override applied) once; quick mode has nothing to read, its scenario is
/// built from the settings each time it is prepared.
#[derive(Clone, Debug)]
pub enum ScenarioText {
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
        /// A k6 script's VUs (`pado run script.js`): the config is its options.
        script: Option<ScriptRef>,
    },
    /// Quick mode: the request the flags describe is the scenario.
    Url(Box<QuickRequest>),
}

/// A script's error with k6's exit code for it; a file that cannot be read is
/// bad input as for any scenario file.
fn script_error(e: pado_script::ScriptError) -> SessionError {
    use pado_script::ScriptError as E;
    let code = match &e {
        E::Read { .. } => return SessionError::Invalid(e.to_string()),
        E::Options { .. } => crate::error::INVALID_CONFIG,
        E::Syntax { .. } | E::Import { .. } | E::Init { .. } => crate::error::SCRIPT_EXCEPTION,
    };
    SessionError::Script {
        code,
        message: e.to_string(),
    }
}

impl ScenarioText {
    /// Read what `spec` names (a file once; nothing for a URL).
    pub fn read(spec: &LoadSpec) -> Result<ScenarioText, SessionError> {
        match &spec.source {
            Source::File(path) if pado_script::is_script(path) => {
                let loaded = pado_script::load_for_run_tagged(
                    path,
                    &spec.overrides.env,
                    &spec.overrides.tags,
                )
                .map_err(script_error)?;
                let mut config = loaded.config;
                config.target = spec.overrides.target.clone();
                Ok(ScenarioText::File {
                    config: Box::new(config),
                    file: path.display().to_string(),
                    base_dir: path
                        .parent()
                        .map(PathBuf::from)
                        .unwrap_or_else(|| PathBuf::from(".")),
                    lines: LineIndex::default(),
                    script: Some(ScriptRef(loaded.script)),
                })
            }
            _ if !spec.overrides.tags.is_empty() => Err(SessionError::Invalid(
                "--tag tags a k6 script's requests and metrics; a scenario file's steps carry their own `tags:`"
                    .into(),
            )),
            Source::File(path) => {
                let loaded = load_file_with_target(path, spec.overrides.target.as_deref())
                    .map_err(|e| SessionError::Invalid(e.to_string()))?;
                Ok(ScenarioText::File {
                    config: Box::new(loaded.config),
                    file: loaded.file,
                    base_dir: loaded.base_dir,
                    lines: loaded.lines,
                    script: None,
                })
            }
            Source::Url(q) => Ok(ScenarioText::Url(Box::new(q.clone()))),
        }
    }
}

/// A k6 script's `--iterations N`: N in all, shared by the VUs, as `k6 run` reads
/// the flag (for a scenario file it is N per VU). `None` when no `--iterations`.
fn k6_iterations(ov: &Overrides) -> Option<Overrides> {
    let Some(LoadShape::Iterations { vus, iterations }) = ov.shape else {
        return None;
    };
    Some(Overrides {
        shape: Some(LoadShape::SharedIterations { vus, iterations }),
        ..ov.clone()
    })
}

impl Prepared {
    /// Read the scenario named by `spec`, apply its settings, validate the result
    /// and parse its thresholds (the file's and the command line's), every error
    /// naming file, line and field.
    pub fn load(spec: &LoadSpec) -> Result<Prepared, SessionError> {
        Prepared::from_read(&ScenarioText::read(spec)?, spec)
    }

    /// Prepare a scenario already read: the settings of `spec` applied to its own
    /// copy (each find-capacity step prepares the one reading with its own rate).
    pub fn from_read(read: &ScenarioText, spec: &LoadSpec) -> Result<Prepared, SessionError> {
        let ov = &spec.overrides;
        let (mut config, file, base_dir, lines, script) = match read {
            ScenarioText::File {
                config,
                file,
                base_dir,
                lines,
                script,
            } => (
                (**config).clone(),
                file.clone(),
                base_dir.clone(),
                lines.clone(),
                script.clone(),
            ),
            ScenarioText::Url(q) => (
                quick_config(q, ov),
                "<command line>".to_string(),
                PathBuf::from("."),
                LineIndex::default(),
                None,
            ),
        };
        let mut notes = Vec::new();
        if matches!(spec.source, Source::File(_)) {
            let as_written = (!config.events.is_empty()).then(|| config.clone());
            let k6_meaning = script.is_some().then(|| k6_iterations(ov)).flatten();
            apply_overrides(&mut config, k6_meaning.as_ref().unwrap_or(ov))
                .map_err(SessionError::Invalid)?;
            if let Some(before) = as_written {
                notes = pado_scenario::refit_events(&before, &mut config);
            }
        }
        // `--fit-to` fits the test as the other settings made it (`--duration 8h
        // --fit-to 2s` is 2 s): it scales last, events already moved with it.
        if let (Some(len), Some(want)) = (pado_scenario::planned_length(&config), spec.fit_to) {
            if !len.is_zero() {
                pado_scenario::scale_timeline(&mut config, want.as_secs_f64() / len.as_secs_f64());
            }
        }
        validate(&config, &file).map_err(|e| SessionError::Invalid(e.to_string()))?;
        let thresholds =
            pado_scenario::thresholds::from_config(&config, &file, &lines).map_err(|e| {
                SessionError::Invalid(
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
            script,
        })
    }
}

/// What checking a scenario file found (`pado validate`).
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The file, as messages name it.
    pub file: String,
    /// How many scenarios it has.
    pub scenarios: usize,
    /// How many thresholds.
    pub thresholds: usize,
    /// What a run would warn about (the loading's notes, then the plan's).
    pub warnings: Vec<String>,
}

/// A scenario file through every check a run makes before it sends anything
/// (loaded with `target` in place of its own, validated, thresholds parsed,
/// compiled, selectors checked), without running it.
pub fn check_file(path: PathBuf, target: Option<String>) -> Result<Checked, SessionError> {
    let prep = LoadSpec::file(path, target).load()?;
    let plan = prep.compile()?;
    Ok(Checked {
        scenarios: prep.config.scenarios.len(),
        thresholds: prep.thresholds.len(),
        warnings: prep.notes.iter().chain(&plan.warnings).cloned().collect(),
        file: prep.file,
    })
}

#[cfg(test)]
mod tests;
