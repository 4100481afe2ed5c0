use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use pado_engine::events::{Action, EventSpec};

use super::*;

/// A state directory (0700) and a killed run's result directory, in one temp dir.
struct Planted {
    _tmp: tempfile::TempDir,
    state: PathBuf,
    run: PathBuf,
    /// The fault: present while injected.
    marker: PathBuf,
    /// One line per time the undo ran.
    count: PathBuf,
}

fn planted() -> Planted {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    fs::DirBuilder::new().mode(0o700).create(&state).unwrap();
    let run = tmp.path().join("run");
    fs::create_dir(&run).unwrap();
    fs::write(run.join(pado_results::result_dir::RUN_FILE), "{}").unwrap();
    let marker = tmp.path().join("fault-marker");
    fs::write(&marker, "injected").unwrap();
    Planted {
        state,
        run,
        marker: marker.clone(),
        count: tmp.path().join("count"),
        _tmp: tmp,
    }
}

/// A pid that no process has now: a child that already ended.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn record(p: &Planted, pid: u32, pid_start: u64, undo: serde_json::Value) -> OpenFaults {
    OpenFaults {
        format: OPEN_FAULTS_FORMAT.into(),
        run_name: "결제 장애".into(),
        result_dir: p.run.display().to_string(),
        run_started_at: "2026-01-01T00:00:00.000Z".into(),
        pid,
        pid_start,
        boot_id: boot_id(),
        windows: vec![OpenWindow {
            index: 1,
            name: "지연 주입".into(),
            kind: "run".into(),
            planned_ms: 2000,
            started_ms: 2004,
            opened_at: utc_ms(SystemTime::now() - Duration::from_secs(5)),
            undo_kind: "shell".into(),
            undo: Some(undo),
            env: Vec::new(),
            target: None,
            timeout_ms: 10_000,
        }],
    }
}

fn heal(p: &Planted) -> serde_json::Value {
    serde_json::json!({
        "shell": format!("echo x >> '{}'; rm '{}'", p.count.display(), p.marker.display())
    })
}

fn plant(p: &Planted, f: &OpenFaults) -> PathBuf {
    let path = p.state.join(format!("{}-{OPEN_FAULTS_FILE}", f.pid));
    write_record(&path, f).unwrap();
    write_record(&p.run.join(OPEN_FAULTS_FILE), &f.without_undos()).unwrap();
    path
}

fn undo_runs(p: &Planted) -> usize {
    fs::read_to_string(&p.count).map_or(0, |s| s.lines().count())
}

#[test]
fn a_window_whose_pado_is_gone_is_undone_once_and_recorded_in_its_run() {
    let p = planted();
    let path = plant(&p, &record(&p, dead_pid(), 1, heal(&p)));
    let r = recover(&p.state, "pado run", true);
    assert_eq!((r.undone, r.failed, r.refused), (1, 0, 0), "{:?}", r.lines);
    assert!(!p.marker.exists(), "the fault is still in place");
    assert!(
        r.lines[0].contains("run `결제 장애`") && r.lines[0].contains("event `지연 주입`"),
        "{:?}",
        r.lines
    );
    assert!(!path.exists() && !p.run.join(OPEN_FAULTS_FILE).exists());
    let events = pado_results::events::read_events(&p.run).unwrap();
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.left_open.as_ref().unwrap().undone_by, "pado run");
    let u = e.undo.as_ref().unwrap();
    assert_eq!(u.outcome, Outcome::Ok);
    // On the killed run's clock: opened at 2004 ms, five seconds before the undo.
    assert!(
        (2004 + 4_000..2004 + 60_000).contains(&u.started_ms),
        "{}",
        u.started_ms
    );
    assert_eq!(e.window_end_ms, Some(u.ended_ms));
    // Nothing left: a second pass runs nothing.
    let again = recover(&p.state, "pado run", true);
    assert!(again.lines.is_empty(), "{:?}", again.lines);
    assert_eq!(undo_runs(&p), 1);
}

#[test]
fn a_running_pados_windows_are_left_to_it_and_listing_runs_nothing() {
    let p = planted();
    let me = std::process::id();
    let path = plant(&p, &record(&p, me, process_start(me).unwrap(), heal(&p)));
    let r = recover(&p.state, "pado run", true);
    assert!(r.lines.is_empty(), "{:?}", r.lines);
    assert!(path.exists() && p.marker.exists());
    // The same pid started at another time is another process: gone.
    let p2 = planted();
    plant(
        &p2,
        &record(&p2, me, process_start(me).unwrap() + 1, heal(&p2)),
    );
    let listed = recover(&p2.state, "pado run", false);
    assert_eq!(listed.lines.len(), 1, "{:?}", listed.lines);
    assert!(
        listed.lines[0].contains("was not run"),
        "{:?}",
        listed.lines
    );
    assert_eq!(undo_runs(&p2), 0);
    assert!(p2.marker.exists());
    let r = recover(&p2.state, "pado events undo-open", true);
    assert_eq!(r.undone, 1, "{:?}", r.lines);
    assert!(!p2.marker.exists());
}

#[test]
fn records_others_could_have_written_are_not_run() {
    // Readable by others.
    let p = planted();
    let path = plant(&p, &record(&p, dead_pid(), 1, heal(&p)));
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let r = recover(&p.state, "pado run", true);
    assert_eq!((r.undone, r.refused), (0, 1));
    assert!(r.lines[0].contains("has mode 644"), "{:?}", r.lines);
    assert!(path.exists() && p.marker.exists());
    // A link to a record is not followed.
    let p = planted();
    let real = p.run.join("elsewhere.json");
    write_record(&real, &record(&p, dead_pid(), 1, heal(&p))).unwrap();
    std::os::unix::fs::symlink(&real, p.state.join(format!("9-{OPEN_FAULTS_FILE}"))).unwrap();
    let r = recover(&p.state, "pado run", true);
    assert_eq!(r.refused, 1);
    assert!(r.lines[0].contains("not a plain file"), "{:?}", r.lines);
    // A state directory others may write in.
    let p = planted();
    plant(&p, &record(&p, dead_pid(), 1, heal(&p)));
    fs::set_permissions(&p.state, fs::Permissions::from_mode(0o777)).unwrap();
    let r = recover(&p.state, "pado run", true);
    assert_eq!(r.refused, 1);
    assert!(
        r.lines[0].contains("others may write in it"),
        "{:?}",
        r.lines
    );
    // Another user's record (only root can plant one).
    if euid() == 0 {
        let p = planted();
        let path = plant(&p, &record(&p, dead_pid(), 1, heal(&p)));
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let r = recover(&p.state, "pado run", true);
        assert_eq!(r.refused, 1);
        assert!(r.lines[0].contains("owned by uid 65534"), "{:?}", r.lines);
        assert!(p.marker.exists());
    }
    assert_eq!(undo_runs(&p), 0);
}

#[test]
fn an_undo_whose_variable_is_gone_is_kept_and_named() {
    let p = planted();
    let undo = serde_json::json!({ "run": ["rm", "{{ env.PADO_T_OPEN_FAULT_UNSET }}"] });
    let path = plant(&p, &record(&p, dead_pid(), 1, undo));
    let r = recover(&p.state, "pado run", true);
    assert_eq!((r.undone, r.failed), (0, 1));
    assert!(
        r.lines[0].contains("PADO_T_OPEN_FAULT_UNSET"),
        "{:?}",
        r.lines
    );
    assert!(path.exists() && p.run.join(OPEN_FAULTS_FILE).exists());
}

#[test]
fn a_failing_undo_is_said_recorded_and_not_retried() {
    let p = planted();
    let undo = serde_json::json!({
        "shell": format!("echo x >> '{}'; exit 4", p.count.display())
    });
    let path = plant(&p, &record(&p, dead_pid(), 1, undo));
    let r = recover(&p.state, "pado run", true);
    assert_eq!((r.undone, r.failed), (0, 1));
    assert!(
        r.lines.iter().any(|l| l.contains("exit code 4")),
        "{:?}",
        r.lines
    );
    assert!(!path.exists());
    let e = &pado_results::events::read_events(&p.run).unwrap()[0];
    assert_eq!(e.undo.as_ref().unwrap().outcome, Outcome::Failed);
    recover(&p.state, "pado run", true);
    assert_eq!(undo_runs(&p), 1);
}

fn spec(index: usize, undo_source: serde_json::Value) -> EventSpec {
    EventSpec {
        index,
        name: format!("e{index}"),
        kind: "run".into(),
        at: Duration::from_secs(1),
        action: Some(("run".into(), Action::Command(vec!["true".into()]))),
        mark: None,
        duration: Some(Duration::from_secs(5)),
        undo: Some(("run".into(), Action::Command(vec!["true".into()]))),
        undo_source: Some(undo_source),
        undo_env: vec!["PADO_T_NAME_ONLY".into()],
        timeout: Duration::from_secs(3),
        required: true,
        expect: ExpectRecord::default(),
    }
}

#[test]
fn the_ledger_keeps_both_copies_while_a_window_is_open_and_no_values() {
    let p = planted();
    let ledger = RunLedger::new(
        "run",
        "2026-01-01T00:00:00.000Z",
        &p.run,
        Some("http://127.0.0.1:1".into()),
        Some(p.state.join("sub")),
    );
    let src = serde_json::json!({ "run": ["heal", "{{ env.PADO_T_NAME_ONLY }}"] });
    ledger.opened(&spec(0, src.clone()), 1000);
    ledger.opened(&spec(3, src.clone()), 1500);
    let state_file = p
        .state
        .join("sub")
        .join(format!("{}-{OPEN_FAULTS_FILE}", std::process::id()));
    let kept = read_record(&state_file).unwrap().unwrap();
    assert_eq!(kept.windows.len(), 2);
    assert_eq!(kept.windows[0].undo.as_ref(), Some(&src));
    assert_eq!(kept.windows[0].env, ["PADO_T_NAME_ONLY"]);
    assert_eq!(kept.windows[1].timeout_ms, 3000);
    assert!(owner_alive(&kept), "the record names this process");
    let mode = fs::metadata(p.state.join("sub"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    // The result directory's copy has no undo.
    let in_run = pado_results::open_faults::read_open_faults(&p.run).unwrap();
    assert_eq!(in_run.len(), 2);
    assert!(in_run.iter().all(|w| w.undo.is_none()));
    ledger.closed(&spec(0, src.clone()));
    assert_eq!(
        read_record(&state_file).unwrap().unwrap().windows[0].index,
        3
    );
    ledger.closed(&spec(3, src));
    assert!(!state_file.exists() && !p.run.join(OPEN_FAULTS_FILE).exists());
}
