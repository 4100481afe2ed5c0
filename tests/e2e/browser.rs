//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, which
//! the test command installs) loads the report of a short real run, runs its scripts
//! without console errors, and the rendered charts and tables hold the run's numbers.

use std::process::Command;

use pado_testkit::TestServer;

use crate::harness::{num, run, tmp, write_fixture};

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn the_report_renders_in_chromium_with_the_runs_numbers() {
    // Runs pado or a browser outside `harness::run`: hold the machine shared.
    let _machine = crate::harness::shared_machine();
    let Some(browser) = chromium() else {
        // The test command installs Chromium; without it this test cannot judge.
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is not installed (scripts/test.sh installs it)"
        );
        eprintln!("SKIPPED: chromium is not installed; run scripts/test.sh to install it");
        return;
    };
    let srv = TestServer::start();
    // The demo target's metrics are observed, for the target charts and the table.
    let target = pado_demo_target::start(pado_demo_target::TargetOptions {
        posts: 200,
        ..Default::default()
    })
    .unwrap();
    let dir = tmp("browser");
    let f = write_fixture(
        &dir,
        "browser_the_report_renders_in_chromium_with_the_runs_numbers.yaml",
        "b.yaml",
        &[("target", srv.base_url()), ("observed", target.base_url())],
    );
    let r = run("browser", &[f.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let report = r.dir.join("report.html");
    assert!(report.is_file());
    let profile = tmp("chromium-profile");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", report.display()))
        .output()
        .expect("running chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console_errors.is_empty(), "console: {console_errors:?}");
    // Charts were drawn by the page's script.
    for id in [
        "chart-vus",
        "chart-rps",
        "chart-latency",
        "chart-errors",
        "chart-obs-0",
        "chart-obs-1",
    ] {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id} missing"));
        let rest = &dom[at..(at + 4000).min(dom.len())];
        assert!(rest.contains("<svg"), "{id} has no chart");
    }
    for id in [
        "table-steps",
        "table-stages",
        "table-thresholds",
        "table-checks",
        "table-phases",
        "table-bottlenecks",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{id} missing");
    }
    // The numbers are the run's.
    let s = r.summary();
    let steps = dom.split("id=\"table-steps\"").nth(1).unwrap();
    let steps = &steps[..steps.find("</table>").unwrap()];
    for (name, step) in s["steps"].as_object().unwrap() {
        let escaped = name
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(steps.contains(&escaped), "{escaped} not in steps table");
        let want = format!("data-value=\"{}\"", num(step, "requests") as u64);
        assert!(steps.contains(&want), "{name}: {want}");
    }
    // User input is text, never markup.
    assert!(!dom.contains("<script>alert(1)</script>"));
    assert!(dom.contains("앱 &lt;i&gt;") && !dom.contains("앱 <i>"));
    let table = dom.split("id=\"table-bottlenecks\"").nth(1).unwrap();
    let table = &table[..table.find("</table>").unwrap()];
    for row in s["bottlenecks"]["components"].as_array().unwrap() {
        assert!(table.contains(row["component"].as_str().unwrap()), "{row}");
    }
    assert!(dom.contains("검색"));
    assert!(dom.contains("p(95) &lt; 2000"));
}
