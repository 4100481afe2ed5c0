use super::*;
use pado_results::events::read_events;

fn config(yaml: &str) -> Config {
    pado_scenario::parse_str(yaml, "t.yaml").unwrap()
}

const LOAD: &str = "target: http://127.0.0.1:9\nscenarios:\n  s:\n    executor: ramping-vus\n    stages: [{duration: 1s, target: 1}, {duration: 1s, target: 1}]\n    flow: [{request: \"GET /\"}]\n";

#[test]
fn runs_on_the_clock_hides_secrets_kills_at_timeout_and_skips_late_events() {
    std::env::set_var("PADO_EVENT_TEST_SECRET", "hunter2-secret");
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: leak, at: 100ms, shell: \"echo token={{{{ env.PADO_EVENT_TEST_SECRET }}}}\" }}\n\
  - {{ name: hang, at: 0s, run: [sleep, \"60\"], timeout: 300ms, required: false }}\n\
  - {{ name: window, at_stage: 2, mark: fault, duration: 200ms, undo: {{ run: [\"true\"] }} }}\n\
  - {{ name: late, at: 1h, run: [\"true\"] }}\n"
    );
    let c = config(&yaml);
    let stages = vec![
        StageMark {
            scenario: "s".into(),
            index: 0,
            start_s: 0.0,
            end_s: 1.0,
            ..Default::default()
        },
        StageMark {
            scenario: "s".into(),
            index: 1,
            start_s: 0.5,
            end_s: 2.0,
            ..Default::default()
        },
    ];
    let plan = compile_events(&c, &stages).unwrap();
    assert_eq!(plan.events[2].at, Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    let failed = Arc::new(Mutex::new(Vec::<String>::new()));
    let f2 = failed.clone();
    let t0 = Instant::now();
    let runner = EventRunner::start(
        plan,
        t0,
        EventsWriter::create(dir.path()).unwrap(),
        Box::new(move |m| f2.lock().unwrap().push(m.to_string())),
        None,
    );
    std::thread::sleep(Duration::from_millis(1200));
    let done = runner.finish();
    assert!(t0.elapsed() < Duration::from_secs(10));
    let recs = read_events(dir.path()).unwrap();
    assert_eq!(recs.len(), 4);
    let by = |n: &str| recs.iter().find(|r| r.name == n).unwrap().clone();

    let leak = by("leak");
    let a = leak.action.unwrap();
    assert_eq!(a.outcome, Outcome::Ok);
    assert_eq!(a.stdout, "token=***\n");
    let file = std::fs::read_to_string(dir.path().join("events.jsonl")).unwrap();
    assert!(!file.contains("hunter2"), "{file}");
    assert!(leak.started_ms.unwrap() >= 100 && leak.started_ms.unwrap() < 1000);

    let hang = by("hang").action.unwrap();
    assert_eq!(hang.outcome, Outcome::Timeout);
    assert!(hang.ended_ms - hang.started_ms >= 300);
    assert!(hang.ended_ms - hang.started_ms < 5000);
    // Not required: reported, the run is not stopped.
    assert!(failed.lock().unwrap().is_empty());
    assert!(done
        .failures
        .iter()
        .any(|f| f.contains("`hang`") && f.contains("not required")));

    let w = by("window");
    assert_eq!(w.mark.as_deref(), Some("fault"));
    let start = w.started_ms.unwrap();
    assert!((500..900).contains(&start), "{start}");
    let end = w.window_end_ms.unwrap();
    assert!(end >= start + 200 && end < start + 1000, "{start} {end}");
    assert_eq!(w.undo.unwrap().exit_code, Some(0));

    let late = by("late");
    assert_eq!(late.started_ms, None);
    assert_eq!(late.action.unwrap().outcome, Outcome::Skipped);
}

#[test]
fn a_required_failure_calls_back_and_an_open_window_is_undone_at_finish() {
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: boom, at: 0s, shell: \"exit 7\" }}\n\
  - {{ name: long, at: 0s, mark: m, duration: 1h, undo: {{ shell: \"echo undone\" }} }}\n"
    );
    let plan = compile_events(&config(&yaml), &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let failed = Arc::new(Mutex::new(Vec::<String>::new()));
    let f2 = failed.clone();
    let runner = EventRunner::start(
        plan,
        Instant::now(),
        EventsWriter::create(dir.path()).unwrap(),
        Box::new(move |m| f2.lock().unwrap().push(m.to_string())),
        None,
    );
    std::thread::sleep(Duration::from_millis(300));
    let done = runner.finish();
    assert_eq!(
        failed.lock().unwrap().as_slice(),
        ["event `boom`: its action failed: exit code 7"]
    );
    let long = done.records.iter().find(|r| r.name == "long").unwrap();
    let u = long.undo.as_ref().unwrap();
    assert_eq!(u.stdout, "undone\n");
    assert!(long.window_end_ms.unwrap() < 5000);
}

#[test]
fn missing_env_names_the_field() {
    let yaml = format!(
        "{LOAD}events:\n  - {{ at: 1s, http: {{ url: \"/x?k={{{{ env.PADO_SURELY_UNSET_VAR }}}}\" }} }}\n"
    );
    let e = compile_events(&config(&yaml), &[]).unwrap_err();
    assert_eq!(e.field, "events[0].http.url");
    assert!(e.message.contains("PADO_SURELY_UNSET_VAR"), "{e}");
}

#[test]
fn the_runs_end_cuts_a_long_action_short_and_still_undoes_its_window() {
    // A required fault window whose action takes a minute: the run's end (Ctrl-C)
    // must not wait for it, must not count it as a failure, and must run the undo.
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: slow, at: 0s, run: [sleep, \"60\"], duration: 1h, timeout: 2m, undo: {{ shell: \"echo undone\" }} }}\n"
    );
    let plan = compile_events(&config(&yaml), &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let failed = Arc::new(Mutex::new(Vec::<String>::new()));
    let f2 = failed.clone();
    let runner = EventRunner::start(
        plan,
        Instant::now(),
        EventsWriter::create(dir.path()).unwrap(),
        Box::new(move |m| f2.lock().unwrap().push(m.to_string())),
        None,
    );
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let done = runner.finish();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(failed.lock().unwrap().is_empty());
    assert!(done.failures.is_empty(), "{:?}", done.failures);
    let slow = &done.records[0];
    let a = slow.action.as_ref().unwrap();
    assert_eq!(a.outcome, Outcome::Stopped);
    assert!(a.error.as_deref().unwrap().contains("killed"), "{a:?}");
    let u = slow.undo.as_ref().unwrap();
    assert_eq!((u.outcome, u.stdout.as_str()), (Outcome::Ok, "undone\n"));
}

/// Runs `plan` until its events are over and returns `events.jsonl`'s text.
fn run_to_file(plan: EventPlan, ms: u64) -> String {
    let dir = tempfile::tempdir().unwrap();
    let runner = EventRunner::start(
        plan,
        Instant::now(),
        EventsWriter::create(dir.path()).unwrap(),
        Box::new(|_| {}),
        None,
    );
    std::thread::sleep(Duration::from_millis(ms));
    runner.finish();
    std::fs::read_to_string(dir.path().join("events.jsonl")).unwrap()
}

/// Every piece of `secret` longer than 3 characters found in `text`.
fn pieces_of(secret: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for len in 4..=secret.len() {
        for start in 0..=secret.len() - len {
            let piece = &secret[start..start + len];
            if text.contains(piece) {
                found.push(piece.to_string());
            }
        }
    }
    found
}

#[test]
fn a_secret_straddling_the_output_tails_cut_shows_nothing_of_itself() {
    let secret = "Zq9-straddling-KEY-Xw";
    std::env::set_var("PADO_EVENT_TEST_STRADDLE", secret);
    // 5000 `a`, the secret, then `b`s so that the secret starts 2 bytes before the
    // last TAIL_BYTES: cutting first and masking after would leave "9-straddling...".
    let after = command::TAIL_BYTES + 2 - secret.len();
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: leak, at: 0s, shell: \"head -c 5000 /dev/zero | tr '\\\\0' a; printf %s {{{{ env.PADO_EVENT_TEST_STRADDLE }}}}; head -c {after} /dev/zero | tr '\\\\0' b\" }}\n"
    );
    let plan = compile_events(&config(&yaml), &[]).unwrap();
    let file = run_to_file(plan, 500);
    let recs: Vec<EventRecord> = file
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let out = &recs[0].action.as_ref().unwrap().stdout;
    // The tail was kept (the command ran and printed), ending in the planted `b`s.
    assert!(out.ends_with(&"b".repeat(after)), "{out:.80}");
    assert!(out.len() <= command::TAIL_BYTES);
    let found = pieces_of(secret, &file);
    assert!(
        found.is_empty(),
        "parts of the secret in events.jsonl: {found:?}"
    );
}

#[test]
fn an_http_event_whose_endpoint_echoes_its_credentials_records_none_of_them() {
    let server = pado_testkit::TestServer::start();
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: echo, at: 0s, http: {{ url: \"{}\", headers: {{ Authorization: \"Bearer lit-token-9f8e7d\", X-Trace: visible-42 }} }} }}\n",
        server.url("/headers")
    );
    let plan = compile_events(&config(&yaml), &[]).unwrap();
    let file = run_to_file(plan, 500);
    // The endpoint did answer with the headers it got (the truth the mask hides).
    assert!(file.contains("visible-42"), "{file}");
    assert!(file.contains("\"status\":200"), "{file}");
    let found = pieces_of("lit-token-9f8e7d", &file);
    assert!(
        found.is_empty(),
        "the credential in events.jsonl: {found:?}\n{file}"
    );
}

/// A fault window lasts its `duration` from when its action answered. The planted
/// truth: a server that answers the action in exactly 600 ms, a window of 300 ms.
/// The undo must come 300 ms after that answer (with the window counted from the
/// action's start it came at once, and the fault was in force for no time at
/// all); a mark, which has no action, is still undone 300 ms after it was placed.
#[test]
fn a_slow_action_does_not_shorten_its_window() {
    let server = pado_testkit::TestServer::start();
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: slow, at: 0s, http: {{ url: \"{}\" }}, duration: 300ms, undo: {{ http: {{ url: \"{}\" }} }} }}\n\
  - {{ name: mark, at: 0s, mark: fault, duration: 300ms, undo: {{ run: [\"true\"] }} }}\n",
        server.url("/delay/600"),
        server.url("/delay/0"),
    );
    let plan = compile_events(&config(&yaml), &[]).unwrap();
    let file = run_to_file(plan, 3000);
    let recs: Vec<EventRecord> = file
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by = |n: &str| recs.iter().find(|r| r.name == n).unwrap().clone();

    let slow = by("slow");
    let (action, undo) = (slow.action.unwrap(), slow.undo.unwrap());
    assert_eq!(action.status, Some(200), "{file}");
    assert!(action.ended_ms - action.started_ms >= 600, "{file}");
    assert!(undo.started_ms >= action.ended_ms + 300, "{file}");
    assert!(undo.started_ms < action.ended_ms + 2000, "{file}");
    assert_eq!(slow.window_end_ms, Some(undo.ended_ms), "{file}");

    let mark = by("mark");
    let (start, undo) = (mark.started_ms.unwrap(), mark.undo.unwrap());
    assert!(undo.started_ms >= start + 300, "{file}");
    assert!(undo.started_ms < start + 1500, "undone late: {file}");
}

#[test]
fn a_shell_event_gets_an_env_value_as_data_not_as_commands() {
    // Planted: a value that, pasted into the line as it is, would run `touch`.
    let dir = tempfile::tempdir().unwrap();
    let pwned = dir.path().join("PWNED");
    let got = dir.path().join("got");
    let value = format!("x; touch {} 파도 '$HOME'", pwned.display());
    std::env::set_var("PADO_EVENT_TEST_INJECT", &value);
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: inject, at: 0s, shell: \"printf %s {{{{ env.PADO_EVENT_TEST_INJECT }}}} > {}\" }}\n",
        got.display()
    );
    let plan = compile_events(&config(&yaml), &[]).unwrap();
    let runner = EventRunner::start(
        plan,
        Instant::now(),
        EventsWriter::create(dir.path()).unwrap(),
        Box::new(|_| {}),
        None,
    );
    std::thread::sleep(Duration::from_millis(300));
    let done = runner.finish();
    let a = done.records[0].action.as_ref().unwrap();
    assert_eq!(a.outcome, Outcome::Ok, "{a:?}");
    assert!(!pwned.exists(), "the value ran as a command");
    assert_eq!(std::fs::read(&got).unwrap(), value.as_bytes());
}

/// A ledger that writes down what it was told, with whether the action's and the
/// undo's files existed at that moment.
#[derive(Default)]
struct Notes(Mutex<Vec<String>>, std::path::PathBuf);

impl WindowLedger for Notes {
    fn opened(&self, e: &EventSpec, _started_ms: u64) {
        let injected = self.1.join("injected").exists();
        self.0.lock().unwrap().push(format!(
            "opened {} {} injected={injected} env={:?}",
            e.index, e.name, e.undo_env
        ));
    }
    fn closed(&self, e: &EventSpec) {
        let healed = self.1.join("healed").exists();
        self.0
            .lock()
            .unwrap()
            .push(format!("closed {} {} healed={healed}", e.index, e.name));
    }
}

/// The ledger hears of a window with an undo before its action runs (so a pado
/// killed during the action leaves a record) and after its undo ran; a window
/// without an undo and a point event are not windows to put back.
#[test]
fn the_ledger_hears_of_windows_with_an_undo_before_the_action_and_after_the_undo() {
    std::env::set_var("PADO_EVENT_TEST_LEDGER", "also-touched");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let yaml = format!(
        "{LOAD}events:\n\
  - {{ name: mark, at: 0s, mark: m, duration: 100ms }}\n\
  - {{ name: point, at: 0s, run: [\"true\"] }}\n\
  - {{ name: fault, at: 50ms, run: [touch, \"{d}/injected\"], duration: 200ms, undo: {{ shell: \"touch {d}/healed {{{{ env.PADO_EVENT_TEST_LEDGER }}}}\" }} }}\n"
    );
    let plan = compile_events(&config(&yaml), &[]).unwrap();
    assert_eq!(
        plan.events[2].undo_source,
        Some(serde_json::json!({
            "run": null, "http": null,
            "shell": format!("touch {d}/healed {{{{ env.PADO_EVENT_TEST_LEDGER }}}}")
        }))
    );
    let notes = Arc::new(Notes(Mutex::default(), dir.path().into()));
    let out = tempfile::tempdir().unwrap();
    let runner = EventRunner::start(
        plan,
        Instant::now(),
        EventsWriter::create(out.path()).unwrap(),
        Box::new(|_| {}),
        Some(notes.clone() as Arc<dyn WindowLedger>),
    );
    std::thread::sleep(Duration::from_millis(600));
    runner.finish();
    assert_eq!(
        notes.0.lock().unwrap().as_slice(),
        [
            "opened 2 fault injected=false env=[\"PADO_EVENT_TEST_LEDGER\"]",
            "closed 2 fault healed=true"
        ]
    );
}
