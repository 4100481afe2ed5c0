use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use super::*;

fn job(args: &[&str]) -> JobSpec {
    JobSpec {
        test_name: "t".into(),
        segment: "0/1".into(),
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

const LOAD: &str = "scenarios:\n  s:\n    executor: constant-vus\n    vus: 1\n    duration: 1s\n    flow:\n      - request: /\n";

/// The first argument is the scenario, `--target V` its target.
fn first_arg() -> ScenarioOf {
    Arc::new(|args: &[String]| {
        let file = args.first().filter(|a| !a.starts_with('-'))?;
        let target = args
            .iter()
            .position(|a| a == "--target")
            .and_then(|i| args.get(i + 1).cloned());
        Some((PathBuf::from(file), target))
    })
}

#[test]
fn a_job_whose_events_run_commands_is_refused_naming_the_event_and_no_other() {
    let files = tempfile::tempdir().unwrap();
    let with = |events: &str| {
        std::fs::write(
            files.path().join("파도.yaml"),
            format!("target: http://127.0.0.1:9\nevents:\n{events}{LOAD}"),
        )
        .unwrap();
        check_commands(&job(&["파도.yaml"]), files.path(), &first_arg())
    };
    let refused = with("  - name: 재시작\n    at: 1s\n    shell: touch x\n").unwrap_err();
    assert!(matches!(refused, LaunchError::Refused(_)));
    let text = refused.to_string();
    assert!(
        text.starts_with("파도.yaml: events[0] (`재시작`) runs a command (`shell:`)")
            && text.contains("--allow-commands"),
        "{text}"
    );
    let refused =
        with("  - at: 1s\n    mark: m\n    duration: 1s\n    undo: { run: [touch, x] }\n")
            .unwrap_err()
            .to_string();
    assert!(
        refused.contains("`event 1`") && refused.contains("`undo.run:`"),
        "{refused}"
    );
    // HTTP calls and marks are not commands.
    assert!(with("  - at: 1s\n    http: { url: /admin }\n  - at: 2s\n    mark: m\n").is_ok());
}

#[test]
fn a_scenario_is_loaded_with_the_job_s_target_and_one_that_does_not_load_is_left_to_the_run() {
    let files = tempfile::tempdir().unwrap();
    std::fs::write(
        files.path().join("t.yaml"),
        format!("events:\n  - at: 1s\n    run: [touch, x]\n{LOAD}"),
    )
    .unwrap();
    assert!(check_commands(&job(&["t.yaml"]), files.path(), &first_arg()).is_ok());
    let r = check_commands(
        &job(&["t.yaml", "--target", "http://127.0.0.1:9"]),
        files.path(),
        &first_arg(),
    );
    assert!(matches!(r, Err(LaunchError::Refused(_))), "{r:?}");
    let none: ScenarioOf = Arc::new(|_: &[String]| None);
    assert!(check_commands(&job(&["t.yaml"]), files.path(), &none).is_ok());
}

/// A stand-in for the pado binary: writes its arguments to `args` in its working
/// directory, then runs `then`.
fn fake_pado(dir: &Path, then: &str) -> PathBuf {
    let exe = dir.join("fake-pado");
    std::fs::write(&exe, format!("#!/bin/sh\necho \"$@\" > args\n{then}\n")).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

#[test]
fn a_job_runs_as_pado_run_with_its_arguments_and_its_exit_code_is_the_run_s() {
    let tmp = tempfile::tempdir().unwrap();
    let files = tmp.path().join("job-1").join("files");
    std::fs::create_dir_all(&files).unwrap();
    let results = tmp.path().join("job-1").join("결과");
    let exe = fake_pado(tmp.path(), "echo said; exit 3");
    let launch = child_launch(exe.clone(), false, first_arg());
    let started = launch(&job(&["--url", "http://127.0.0.1:9/"]), &files, &results).unwrap();
    assert_eq!((started.wait)(), 3);
    let args = std::fs::read_to_string(files.join("args")).unwrap();
    assert_eq!(
        args.trim_end(),
        format!(
            "run --url http://127.0.0.1:9/ --refuse-commands --out {} --quiet",
            results.display()
        )
    );
    let log = std::fs::read_to_string(tmp.path().join("job-1").join(LOG_FILE)).unwrap();
    assert_eq!(log, "said\n");
    // Allowed to run commands: no --refuse-commands.
    let launch = child_launch(exe, true, first_arg());
    let started = launch(&job(&["t.yaml"]), &files, &results).unwrap();
    assert_eq!((started.wait)(), 3);
    let args = std::fs::read_to_string(files.join("args")).unwrap();
    assert!(
        args.starts_with("run t.yaml --out ") && !args.contains("--refuse-commands"),
        "{args}"
    );
}

#[test]
fn stopping_a_job_interrupts_its_run_as_ctrl_c_does() {
    let tmp = tempfile::tempdir().unwrap();
    let files = tmp.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let exe = fake_pado(tmp.path(), "exec sleep 30");
    let launch = child_launch(exe, true, first_arg());
    let started = launch(&job(&[]), &files, &tmp.path().join("out")).unwrap();
    // The script has started once it wrote its arguments.
    let t = Instant::now();
    while !files.join("args").exists() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    (started.stop)();
    let t = Instant::now();
    assert_eq!((started.wait)(), 128 + libc::SIGINT);
    assert!(t.elapsed() < Duration::from_secs(10));
}
