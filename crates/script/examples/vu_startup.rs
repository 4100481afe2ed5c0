//! How fast scripted VUs start and how much memory each holds: `N` VUs of a
//! k6 script (a login, three requests with checks, a custom Trend) made and run
//! through one iteration each, their requests answered by a planted response
//! (no network: this measures the script runtime, not a target).
//!
//! `cargo run --release -p pado-script --example vu_startup -- 1000 10000`

use std::sync::Arc;
use std::time::Instant;

use pado_engine::script::{ScriptCall, ScriptHost, ScriptReply, ScriptResponse, ScriptRole};

const SCRIPT: &str = r#"
import http from 'k6/http';
import { check } from 'k6';
import { Trend } from 'k6/metrics';
const t = new Trend('item_ms');
export const options = { vus: 1, duration: '1s' };
export default function () {
  const login = http.post('http://127.0.0.1:9/json/login', JSON.stringify({ user: 'u' }));
  const token = login.json('token');
  for (const p of ['/a', '/b', '/c']) {
    const r = http.get('http://127.0.0.1:9' + p, { headers: { Authorization: 'Bearer ' + token } });
    check(r, { 'is 200': (x) => x.status === 200 });
    t.add(r.timings.duration);
  }
}
"#;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn main() {
    let dir = std::env::temp_dir().join(format!("pado-vu-startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("login.js");
    std::fs::write(&path, SCRIPT).expect("the script");
    let t = Instant::now();
    let loaded = pado_script::load_for_run(&path, &[]).expect("the script loads");
    println!(
        "load (compile once, read options): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let host: Arc<pado_script::Script> = loaded.script;
    let answer = ScriptResponse {
        status: 200,
        body: br#"{"token":"t-1"}"#.to_vec(),
        ..ScriptResponse::default()
    };
    for n in std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<u64>().ok())
    {
        let before = rss_kib();
        let t = Instant::now();
        let mut vus = Vec::with_capacity(n as usize);
        let mut requests = 0u64;
        for id in 1..=n {
            let role = ScriptRole::Load {
                scenario: "default".into(),
                exec: "default".into(),
                vu: id,
            };
            let mut vu = host.vu(role).expect("a VU");
            let mut reply = ScriptReply::Start {
                iter: 0,
                data: None,
                ids: Default::default(),
            };
            loop {
                reply = match vu.resume(reply) {
                    ScriptCall::Http(_) => {
                        requests += 1;
                        ScriptReply::Http(Box::new(answer.clone()))
                    }
                    ScriptCall::Done(r) => {
                        assert!(r.is_ok(), "{r:?}");
                        break;
                    }
                    _ => ScriptReply::Resumed,
                };
            }
            vus.push(vu);
        }
        let took = t.elapsed();
        let after = rss_kib();
        println!(
            "{n} VUs: started and ran one iteration each ({requests} requests) in {:.0} ms ({:.1} µs per VU); resident memory +{} MiB ({:.0} KiB per VU)",
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e6 / n as f64,
            (after.saturating_sub(before)) / 1024,
            after.saturating_sub(before) as f64 / n as f64
        );
        drop(vus);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
