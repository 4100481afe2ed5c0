//! `pado-fuzz`: run fuzz targets for longer than CI does, or replay saved inputs.
//!
//! ```text
//! cargo run -p pado-fuzz -- <target|all> [--seconds N] [--seed S]
//! cargo run -p pado-fuzz -- <target> --input FILE...
//! cargo run -p pado-fuzz -- --list
//! ```

use std::process::ExitCode;
use std::time::Duration;

use pado_fuzz::driver::{self, Config};

const USAGE: &str = "usage: pado-fuzz <target|all> [--seconds N] [--seed S] [--input FILE...]
       pado-fuzz --list
Environment: PADO_FUZZ_SECONDS, PADO_FUZZ_SEED, PADO_FUZZ_CRASH_DIR (see testing/fuzz/README.md).";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("{msg}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Vec<String>) -> Result<ExitCode, String> {
    let mut target = None;
    let mut seconds = None;
    let mut seed = None;
    let mut inputs = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--list" => {
                for t in pado_fuzz::all() {
                    println!("{:<18} {}", t.name, t.about);
                }
                return Ok(ExitCode::SUCCESS);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                let s: f64 = v
                    .parse()
                    .map_err(|_| format!("--seconds {v}: not a number"))?;
                if !(s.is_finite() && s >= 0.0) {
                    return Err(format!("--seconds {v}: not a duration"));
                }
                seconds = Some(s);
            }
            "--seed" => {
                let v = it.next().ok_or("--seed needs a value")?;
                seed = Some(
                    v.parse::<u64>()
                        .map_err(|_| format!("--seed {v}: not a u64"))?,
                );
            }
            "--input" => {
                inputs.extend(it.by_ref());
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s if target.is_none() => target = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s}")),
        }
    }
    let name = target.ok_or("no target given")?;
    let targets: Vec<_> = if name == "all" {
        pado_fuzz::all().iter().collect()
    } else {
        vec![pado_fuzz::by_name(&name)
            .ok_or_else(|| format!("no target `{name}` (pado-fuzz --list shows them)"))?]
    };
    let mut cfg = Config::from_env(60.0);
    if let Some(s) = seconds {
        cfg.duration = Duration::from_secs_f64(s);
    }
    if let Some(s) = seed {
        cfg.seed = s;
    }
    let mut failed = false;
    if !inputs.is_empty() {
        for t in &targets {
            for file in &inputs {
                let data = std::fs::read(file).map_err(|e| format!("{file}: {e}"))?;
                match driver::run_input(t, &data, &cfg) {
                    Ok(()) => println!("{}: {file}: ok", t.name),
                    Err(kind) => {
                        println!("{}: {file}: {kind}", t.name);
                        failed = true;
                    }
                }
            }
        }
    } else {
        for t in &targets {
            let stats = driver::fuzz(t, &cfg);
            println!("{stats}");
            failed |= stats.failure.is_some();
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
