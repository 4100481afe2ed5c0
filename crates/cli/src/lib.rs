//! The `pado` command line: argument parsing, wiring of scenario → engine → result
//! directory → reports, terminal output and exit codes. No logic of its own beyond
//! that wiring; every decision lives in a library crate.

mod args;
mod exit;
mod progress;
mod run_cmd;

use clap::Parser;

use args::{Cli, Command};

/// Run the CLI and return the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::INVALID
            } else {
                exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    let result = match &cli.command {
        Command::Run(a) => run_cmd::run(a),
        Command::Validate { file } => validate(file),
        Command::Report { dir, quiet } => report(dir, *quiet),
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}

fn validate(file: &std::path::Path) -> Result<i32, exit::Failure> {
    let loaded =
        pado_scenario::load_file(file).map_err(|e| exit::Failure::invalid(e.to_string()))?;
    let args = args::RunArgs {
        scenario: Some(file.to_path_buf()),
        url: None,
        target: None,
        method: None,
        headers: vec![],
        body: None,
        body_file: None,
        vus: None,
        duration: None,
        rate: None,
        stages: None,
        step_ramp: None,
        iterations: None,
        max_vus: None,
        think: None,
        timeout: None,
        insecure: false,
        out: None,
        quiet: true,
        thresholds: vec![],
        name: None,
        workers: None,
    };
    let prep = run_cmd::prepare(&args)?;
    pado_engine::compile(&prep.config, &loaded.base_dir)
        .map_err(|e| exit::Failure::invalid(format!("{}: {e}", prep.file)))?;
    println!(
        "{}: ok ({} scenario{}, {} threshold{})",
        loaded.file,
        prep.config.scenarios.len(),
        if prep.config.scenarios.len() == 1 {
            ""
        } else {
            "s"
        },
        prep.thresholds.len(),
        if prep.thresholds.len() == 1 { "" } else { "s" }
    );
    Ok(exit::OK)
}

fn report(dir: &std::path::Path, quiet: bool) -> Result<i32, exit::Failure> {
    let d =
        pado_metrics::ResultDir::open(dir).map_err(|e| exit::Failure::invalid(e.to_string()))?;
    let summary = pado_report::write_summary(&d).map_err(exit::Failure::other)?;
    if !quiet {
        let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
        print!(
            "{}",
            pado_report::render(&summary, pado_report::TextOptions { color })
        );
    }
    Ok(if summary.thresholds_ok {
        exit::OK
    } else {
        exit::THRESHOLD_FAILED
    })
}
