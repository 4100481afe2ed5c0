//! The scenario loader fed any bytes as a scenario file.

use std::path::PathBuf;

use super::with_scratch;
use crate::{corpus_files, crate_dir};

pub(crate) const SCENARIO_DICT: &[&[u8]] = &[
    b"\n  ",
    b"- ",
    b": ",
    b"&a ",
    b"*a",
    b"<<: *a",
    b"!!binary ",
    b"!!str ",
    b"? ",
    b"|\n",
    b">-\n",
    b"---\n",
    b"{{",
    b"}}",
    b"{{ vu }}",
    b"{{ feed.users.name }}",
    b"{{ random(1, 18446744073709551615) }}",
    b"scenarios:",
    b"executor: ",
    b"ramping-vus",
    b"constant-arrival-rate",
    b"ramping-arrival-rate",
    b"stages:",
    b"duration: ",
    b"target: ",
    b"rate: ",
    b"vus: ",
    b"request: ",
    b"GET /",
    b"POST /x",
    b"http://",
    b"check:",
    b"status: ",
    b"2xx",
    b"extract:",
    b"json: ",
    b"$.a[0]",
    b"regex: ",
    b"think: ",
    b"weight: ",
    b"flow:",
    b"mix:",
    b"thresholds:",
    b"p(95) < ",
    b"feeds:",
    b"observe:",
    b"1h",
    b"0s",
    b"99999999999h",
    b"1.5ms",
];

// ---- scenario ----------------------------------------------------------------------

pub(crate) fn scenario_seeds() -> Vec<Vec<u8>> {
    let mut extra: Vec<PathBuf> = std::fs::read_dir(crate_dir().join("../../examples"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    extra.retain(|p| p.extension().is_some_and(|e| e == "yaml" || e == "json"));
    extra.sort();
    corpus_files("scenario", &extra)
}

/// The scenario loader: the text (lossy UTF-8) through `parse_str`, and the raw bytes
/// through `load_file` as `pado run` reads a file; a parsed scenario is validated
/// again (as quick-mode overrides are) and every error is rendered.
pub fn scenario(data: &[u8]) {
    use pado_scenario::load;
    let text = String::from_utf8_lossy(data);
    match load::parse_str(&text, "fuzz.yaml") {
        Ok(cfg) => {
            if let Err(e) = load::validate(&cfg, "fuzz.yaml") {
                let _ = e.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
    with_scratch(|dir| {
        let p = dir.join("scenario.yaml");
        std::fs::write(&p, data).expect("write scratch scenario");
        match load::load_file(&p) {
            Ok(l) => {
                let _ = load::validate(&l.config, &l.file);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    });
}
