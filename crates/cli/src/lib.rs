//! The `pado` command line: argument parsing, wiring of scenario → engine → result
//! directory → reports, terminal output and exit codes. No logic of its own beyond
//! that wiring; every decision lives in a library crate.

mod args;
mod demo;
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
        Command::Init { file, force } => init(file, *force),
        Command::Import { what } => import(what),
        Command::Schema => {
            let s = pado_scenario::model::json_schema();
            println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            Ok(exit::OK)
        }
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
        quiet: true,
        ..Default::default()
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

fn init(file: &std::path::Path, force: bool) -> Result<i32, exit::Failure> {
    if file.exists() && !force {
        return Err(exit::Failure::invalid(format!(
            "{} exists; use --force to overwrite",
            file.display()
        )));
    }
    std::fs::write(file, pado_scenario::init::example_scenario())
        .map_err(|e| exit::Failure::other(format!("{}: {e}", file.display())))?;
    println!(
        "wrote {}: edit `target`, then `pado validate {0}` and `pado run {0}`",
        file.display()
    );
    Ok(exit::OK)
}

fn write_or_print(out: &Option<std::path::PathBuf>, text: &str) -> Result<i32, exit::Failure> {
    match out {
        Some(p) => {
            std::fs::write(p, text)
                .map_err(|e| exit::Failure::other(format!("{}: {e}", p.display())))?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(exit::OK)
}

fn import(what: &args::ImportKind) -> Result<i32, exit::Failure> {
    use pado_scenario::import::{from_curl, from_har, to_yaml_with_source, ImportOptions};
    match what {
        args::ImportKind::Har {
            file,
            out,
            include_static,
            no_checks,
            host,
        } => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| exit::Failure::invalid(format!("{}: {e}", file.display())))?;
            let opts = ImportOptions {
                include_static: *include_static,
                checks: !*no_checks,
                host_filter: host.clone(),
            };
            let cfg = from_har(&text, &opts)
                .map_err(|e| exit::Failure::invalid(format!("{}: {e}", file.display())))?;
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            write_or_print(out, &to_yaml_with_source(&cfg, &name))
        }
        args::ImportKind::Curl { command, out } => {
            let cfg = from_curl(command).map_err(|e| exit::Failure::invalid(e.to_string()))?;
            write_or_print(out, &to_yaml_with_source(&cfg, "curl"))
        }
    }
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
