//! The rules of a scenario: its executor's fields and their limits, its data feeds.

use crate::model::*;

use super::validator::Validator;

impl Validator<'_> {
    pub(super) fn scenario(&mut self, p: &str, s: &Scenario, has_target: bool) {
        self.executor_fields(p, s);
        self.executor_needs(p, s);
        self.load_shape(p, s);
        self.limits(p, s, s.executor);
        if let Some(t) = &s.think {
            self.think(&format!("{p}.think"), t);
        }
        match (s.mix.is_empty(), s.flow.is_empty()) {
            (true, true) => self.err(
                &format!("{p}.executor"),
                "the scenario has neither `flow` nor `mix`: an iteration would do nothing",
                Some("add `flow: [ { request: \"GET /\" } ]` or a weighted `mix`"),
            ),
            (false, false) => self.err(
                &format!("{p}.mix"),
                "give either `flow` or `mix`, not both",
                Some("put the flow inside the mix as `{ weight: 1, flow: [...] }`"),
            ),
            _ => {}
        }
        for (i, m) in s.mix.iter().enumerate() {
            self.mix_entry(&format!("{p}.mix[{i}]"), m, has_target);
        }
        self.steps(&format!("{p}.flow"), &s.flow, has_target);
        self.steps(&format!("{p}.setup_per_vu"), &s.setup_per_vu, has_target);
        self.steps(
            &format!("{p}.teardown_per_vu"),
            &s.teardown_per_vu,
            has_target,
        );
    }

    /// Fields the scenario's executor does not read: set, they would be silently
    /// ignored, so each is an error naming what the executor takes.
    fn executor_fields(&mut self, p: &str, s: &Scenario) {
        use ExecutorKind::*;
        let k = s.executor;
        let allowed: &[&str] = match k {
            ConstantVus => &["vus", "duration"],
            RampingVus => &[
                "stages",
                "steps",
                "start_vus",
                "duration",
                "graceful_ramp_down",
            ],
            ConstantArrivalRate => &[
                "rate",
                "time_unit",
                "duration",
                "pre_allocated_vus",
                "max_vus",
            ],
            RampingArrivalRate => &[
                "stages",
                "start_rate",
                "time_unit",
                "pre_allocated_vus",
                "max_vus",
            ],
            PerVuIterations | SharedIterations => &["vus", "iterations", "max_duration"],
            ExternallyControlled => &["vus", "max_vus", "duration"],
        };
        let present = [
            ("vus", s.vus.is_some()),
            ("duration", s.duration.is_some()),
            ("stages", s.stages.is_some()),
            ("steps", s.steps.is_some()),
            ("start_vus", s.start_vus.is_some()),
            ("rate", s.rate.is_some()),
            ("start_rate", s.start_rate.is_some()),
            ("time_unit", s.time_unit.is_some()),
            ("pre_allocated_vus", s.pre_allocated_vus.is_some()),
            ("max_vus", s.max_vus.is_some()),
            ("iterations", s.iterations.is_some()),
            ("max_duration", s.max_duration.is_some()),
            ("graceful_ramp_down", s.graceful_ramp_down.is_some()),
        ];
        for (f, is) in present {
            if is && !allowed.contains(&f) {
                self.err(
                    &format!("{p}.{f}"),
                    format!("`{f}` does not apply to executor {}", k.as_str()),
                    Some(&format!("{} takes: {}", k.as_str(), allowed.join(", "))),
                );
            }
        }
    }

    /// The fields each executor cannot run without, and their per-executor bounds.
    fn executor_needs(&mut self, p: &str, s: &Scenario) {
        use ExecutorKind::*;
        let k = s.executor;
        let need = |v: &mut Self, f: &str, ok: bool, hint: &str| {
            if !ok {
                v.err(
                    &format!("{p}.executor"),
                    format!("executor {} needs `{f}`", k.as_str()),
                    Some(hint),
                );
            }
        };
        match k {
            ConstantVus => {
                need(
                    self,
                    "duration",
                    s.duration.is_some(),
                    "e.g. `duration: 30s`",
                );
                if s.vus == Some(0) {
                    self.err(&format!("{p}.vus"), "must be at least 1", None);
                }
            }
            RampingVus => {
                if s.stages.is_some() && s.steps.is_some() {
                    self.err(
                        &format!("{p}.steps"),
                        "give either `stages` or `steps`, not both",
                        None,
                    );
                }
                if s.duration.is_some() && s.steps.is_none() {
                    self.err(
                        &format!("{p}.duration"),
                        "`duration` only goes with `steps` for ramping-vus (stages set the length)",
                        None,
                    );
                }
                need(
                    self,
                    "stages",
                    s.stages.is_some() || s.steps.is_some(),
                    "e.g. `stages: [{ duration: 30s, target: 100 }, { duration: 1m, target: 100 }, { duration: 30s, target: 0 }]` or `steps: { start: 10, add: 20, every: 10s, max: 130 }`",
                );
                if let Some(st) = &s.steps {
                    let sp = format!("{p}.steps");
                    if st.every.get().is_zero() {
                        self.err(&format!("{sp}.every"), "must be more than 0", None);
                    }
                    if st.max < st.start {
                        self.err(&format!("{sp}.max"), "must be at least `start`", None);
                    }
                    if st.add == 0 && st.max > st.start {
                        self.err(&format!("{sp}.add"), "must be at least 1", None);
                    }
                }
            }
            ConstantArrivalRate => {
                need(
                    self,
                    "rate",
                    s.rate.is_some(),
                    "e.g. `rate: 200` (per time_unit, default 1s)",
                );
                need(
                    self,
                    "duration",
                    s.duration.is_some(),
                    "e.g. `duration: 1m`",
                );
                if let Some(r) = s.rate {
                    if !(r.is_finite() && r > 0.0) {
                        self.err(&format!("{p}.rate"), "must be more than 0", None);
                    }
                }
            }
            RampingArrivalRate => {
                need(
                    self,
                    "stages",
                    s.stages.is_some(),
                    "e.g. `stages: [{ duration: 1m, target: 200 }]` (targets are rates)",
                );
                if let Some(r) = s.start_rate {
                    if !(r.is_finite() && r >= 0.0) {
                        self.err(&format!("{p}.start_rate"), "must be 0 or more", None);
                    }
                }
            }
            ExternallyControlled => self.externally_controlled(p, s),
            PerVuIterations => {
                if s.vus == Some(0) {
                    self.err(&format!("{p}.vus"), "must be at least 1", None);
                }
                if s.iterations == Some(0) {
                    self.err(&format!("{p}.iterations"), "must be at least 1", None);
                }
            }
            SharedIterations => self.shared_iterations(p, s),
        }
    }

    /// `shared-iterations`: at least one iteration, and at least one per VU (a VU
    /// that could never take one would be started for nothing; k6 refuses it too).
    fn shared_iterations(&mut self, p: &str, s: &Scenario) {
        let vus = s.vus.unwrap_or(1);
        let iterations = s.iterations.unwrap_or(1);
        if vus == 0 {
            self.err(&format!("{p}.vus"), "must be at least 1", None);
        }
        if iterations == 0 {
            self.err(&format!("{p}.iterations"), "must be at least 1", None);
        } else if iterations < u64::from(vus) {
            self.err(
                &format!("{p}.iterations"),
                format!(
                    "{iterations} iterations shared by {vus} VUs: some VUs would never run one"
                ),
                Some("give at least as many `iterations` as `vus`, or fewer `vus`"),
            );
        }
    }

    /// `externally-controlled`: a ceiling, a bounded length, a start within the
    /// ceiling.
    fn externally_controlled(&mut self, p: &str, s: &Scenario) {
        let need = |v: &mut Self, f: &str, ok: bool, hint: &str| {
            if !ok {
                v.err(
                    &format!("{p}.executor"),
                    format!("executor externally-controlled needs `{f}`"),
                    Some(hint),
                );
            }
        };
        need(
            self,
            "max_vus",
            s.max_vus.is_some(),
            "e.g. `max_vus: 50` (the most VUs the run may be steered to)",
        );
        need(
            self,
            "duration",
            s.duration.is_some(),
            "e.g. `duration: 10m` (a steered run is bounded too)",
        );
        if let (Some(v), Some(m)) = (s.vus, s.max_vus) {
            if v > m {
                self.err(
                    &format!("{p}.vus"),
                    format!("{v} VUs to start is more than max_vus ({m})"),
                    Some("raise `max_vus` or start with fewer `vus`"),
                );
            }
        }
    }

    /// The load's shape whatever the executor: stage targets, the time unit, the VU
    /// pool's bounds.
    fn load_shape(&mut self, p: &str, s: &Scenario) {
        let k = s.executor;
        if let Some(stages) = &s.stages {
            if stages.is_empty() {
                self.err(&format!("{p}.stages"), "no stages", None);
            }
            for (i, st) in stages.iter().enumerate() {
                if !(st.target.is_finite() && st.target >= 0.0) {
                    self.err(
                        &format!("{p}.stages[{i}].target"),
                        "must be 0 or more",
                        None,
                    );
                }
                if k == ExecutorKind::RampingVus && st.target.fract() != 0.0 {
                    self.err(
                        &format!("{p}.stages[{i}].target"),
                        "a VU count must be a whole number",
                        None,
                    );
                }
            }
        }
        if let Some(t) = s.time_unit {
            if t.get().is_zero() {
                self.err(&format!("{p}.time_unit"), "must be more than 0", None);
            }
        }
        if let (Some(pre), Some(max)) = (s.pre_allocated_vus, s.max_vus) {
            if max < pre {
                self.err(
                    &format!("{p}.max_vus"),
                    format!("max_vus ({max}) is below pre_allocated_vus ({pre})"),
                    None,
                );
            }
        }
        if s.max_vus == Some(0) {
            self.err(&format!("{p}.max_vus"), "must be at least 1", None);
        }
    }

    /// One entry of a weighted `mix`: a single request or a flow, never both.
    fn mix_entry(&mut self, mp: &str, m: &MixEntry, has_target: bool) {
        if let Some(w) = m.weight {
            if !(w.is_finite() && w > 0.0) {
                self.err(&format!("{mp}.weight"), "must be more than 0", None);
            }
        }
        match (&m.request, &m.flow) {
            (Some(r), None) => self.request(&format!("{mp}.request"), r, has_target),
            (None, Some(f)) => {
                if m.check.is_some() {
                    self.err(
                        &format!("{mp}.check"),
                        "a check belongs to a step inside the flow",
                        None,
                    );
                }
                if f.is_empty() {
                    self.err(&format!("{mp}.flow"), "empty flow", None);
                }
                self.steps(&format!("{mp}.flow"), f, has_target);
            }
            (Some(_), Some(_)) => self.err(
                &format!("{mp}.flow"),
                "give either `request` or `flow`, not both",
                None,
            ),
            (None, None) => self.err(
                mp,
                "a mix entry needs a `request` or a `flow`",
                Some("e.g. `{ weight: 30, name: search, request: \"GET /api/search?q=x\" }`"),
            ),
        }
        if let Some(c) = &m.check {
            self.check(&format!("{mp}.check"), c);
            if c.grpc_status.is_some() {
                self.err(
                    &format!("{mp}.check.grpc_status"),
                    "`grpc_status` checks a `grpc:` call (a step of a `flow`)",
                    None,
                );
            }
        }
        if let Some(t) = &m.think {
            self.think(&format!("{mp}.think"), t);
        }
        if m.flow.is_some() && (!m.extract.is_empty() || !m.tags.is_empty()) {
            self.err(mp, "`extract` and `tags` go on the steps of a flow", None);
        }
        for (k, e) in &m.extract {
            self.extract(&format!("{mp}.extract"), k, e);
        }
        for (k, v) in &m.tags {
            self.tag_template(&format!("{mp}.tags.{k}"), v);
        }
    }

    /// Bounds no machine could honour, checked before anything is allocated: a VU
    /// count that would need more memory than any host has, a rate no scheduler can
    /// start, a load that starts no iteration at all.
    pub(super) fn limits(&mut self, p: &str, s: &Scenario, k: ExecutorKind) {
        use crate::limits::{MAX_RATE_PER_S, MAX_VUS};
        let vus_fields = [
            ("vus", s.vus),
            ("start_vus", s.start_vus),
            ("pre_allocated_vus", s.pre_allocated_vus),
            ("max_vus", s.max_vus),
            ("steps.start", s.steps.map(|x| x.start)),
            ("steps.max", s.steps.map(|x| x.max)),
        ];
        for (f, v) in vus_fields {
            if let Some(v) = v.filter(|v| *v > MAX_VUS) {
                self.err(
                    &format!("{p}.{f}"),
                    format!("{v} VUs is more than pado allows ({MAX_VUS} per generator)"),
                    Some("split the load across generators, or use an arrival-rate executor"),
                );
            }
        }
        for (f, d) in [("duration", s.duration), ("max_duration", s.max_duration)] {
            if d.is_some_and(|d| d.get().is_zero()) {
                self.err(
                    &format!("{p}.{f}"),
                    "must be more than 0",
                    Some("e.g. `30s`"),
                );
            }
        }
        let unit = s.time_unit.map_or(1.0, |t| t.get().as_secs_f64());
        let open = matches!(
            k,
            ExecutorKind::ConstantArrivalRate | ExecutorKind::RampingArrivalRate
        );
        if let Some(stages) = &s.stages {
            if !stages.is_empty() && stages.iter().all(|st| st.duration.get().is_zero()) {
                self.err(
                    &format!("{p}.stages"),
                    "every stage lasts 0s: nothing would run",
                    None,
                );
            }
            for (i, st) in stages.iter().enumerate() {
                if k == ExecutorKind::RampingVus && st.target > MAX_VUS as f64 {
                    self.err(
                        &format!("{p}.stages[{i}].target"),
                        format!(
                            "{} VUs is more than pado allows ({MAX_VUS} per generator)",
                            st.target
                        ),
                        None,
                    );
                }
            }
        }
        if !open || unit <= 0.0 {
            return;
        }
        let too_fast = |v: &mut Self, f: &str, r: f64| {
            if r.is_finite() && r / unit > MAX_RATE_PER_S {
                v.err(
                    &format!("{p}.{f}"),
                    format!(
                        "{} iterations per second is more than one generator can schedule (at most {MAX_RATE_PER_S:.0}/s)",
                        pado_base::units::rate_exact(r / unit)
                    ),
                    Some("lower the rate, lengthen `time_unit`, or split the load across generators"),
                );
            }
        };
        if let Some(r) = s.rate {
            too_fast(self, "rate", r);
            if let Some(d) = s.duration.filter(|d| !d.get().is_zero()) {
                let n = r / unit * d.get().as_secs_f64();
                if r.is_finite() && r > 0.0 && n < 1.0 {
                    self.err(
                        &format!("{p}.rate"),
                        format!(
                            "at {} per {} for {}, not one iteration would start",
                            pado_base::units::rate_exact(r),
                            s.time_unit.map_or("1s".to_string(), |t| t.to_string()),
                            d
                        ),
                        Some("raise the rate or lengthen the duration"),
                    );
                }
            }
        }
        if let Some(r) = s.start_rate {
            too_fast(self, "start_rate", r);
        }
        if let Some(stages) = &s.stages {
            for (i, st) in stages.iter().enumerate() {
                too_fast(self, &format!("stages[{i}].target"), st.target);
            }
        }
    }

    pub(super) fn data(&mut self, p: &str, d: &DataSpec) {
        let sources = [d.file.is_some(), d.values.is_some(), d.range.is_some()]
            .iter()
            .filter(|x| **x)
            .count();
        if sources != 1 {
            self.err(
                p,
                "a feed needs exactly one of `file`, `values`, `range`",
                Some(
                    "e.g. `{ file: keywords.csv }`, `{ values: [a, b] }` or `{ range: [1, 100] }`",
                ),
            );
        }
        if let Some([a, b]) = d.range {
            if a > b {
                self.err(
                    &format!("{p}.range"),
                    format!("[{a}, {b}]: the first must not exceed the last"),
                    None,
                );
            }
        }
        if let Some(v) = &d.values {
            if v.is_empty() {
                self.err(&format!("{p}.values"), "no values", None);
            }
        }
        if let Some(s) = d.s {
            if d.pick != Some(PickMode::Zipf) {
                self.err(&format!("{p}.s"), "`s` only applies to `pick: zipf`", None);
            } else if !(s.is_finite() && s > 0.0) {
                self.err(&format!("{p}.s"), "must be more than 0", None);
            }
        }
    }
}
