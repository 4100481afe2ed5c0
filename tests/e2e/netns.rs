//! A split test run as separate hosts would run it: each `pado run --segment i/N` in
//! a network namespace of its own (made here, with a virtual link to the test
//! server's), so every generator has its own address, ports and connections. The
//! server's own count, and the segments' own histograms, are the truth the merged
//! result must equal.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pado_metrics::Phase;
use pado_results::ResultDir;
use pado_testkit::{ServerOptions, TestServer};
use serde_json::Value;

use crate::harness::{
    merge, pado_cmd, pado_under, read_json, require_or_skip, say, shared_machine, start_in, tmp,
    write_fixture,
};

/// A network namespace this test made, with a virtual link to the host side, removed
/// (with its link) when dropped.
struct Host {
    name: String,
}

impl Drop for Host {
    fn drop(&mut self) {
        // Deleting the namespace deletes the link's end inside it, and so the pair.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `n` hosts on subnets `10.<net>.<k>.0/24`: host k is `10.<net>.k.2` inside its
/// namespace, `10.<net>.k.1` on the test's side, with a default route through it. The
/// server listens on `10.<net>.0.1`, the host side of host 0's link, which every host
/// reaches through its own link. `None` (skipped with a message) where namespaces
/// cannot be made, unless `PADO_E2E_REQUIRE_ALL=1`.
fn hosts(n: u32) -> Option<(Vec<Host>, Ipv4Addr)> {
    require_or_skip("ip", "iproute2")?;
    // Tests run in parallel in one process: each call gets its own names and subnet.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag = (std::process::id() % 10_000) * 10 + call % 10;
    let net = 16 + (tag % 200) as u8;
    let mut made = Vec::new();
    let setup = |k: u32, made: &mut Vec<Host>| -> Result<(), String> {
        let name = format!("pado-e2e-{tag}-{k}");
        ip(&["netns", "add", &name])?;
        made.push(Host { name: name.clone() });
        let (outer, inner) = (format!("pd{tag}o{k}"), format!("pd{tag}i{k}"));
        ip(&[
            "link", "add", &outer, "type", "veth", "peer", "name", &inner, "netns", &name,
        ])?;
        ip(&["addr", "add", &format!("10.{net}.{k}.1/24"), "dev", &outer])?;
        ip(&["link", "set", &outer, "up"])?;
        let inside = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &name, "ip"];
            all.extend_from_slice(args);
            ip(&all)
        };
        inside(&["addr", "add", &format!("10.{net}.{k}.2/24"), "dev", &inner])?;
        inside(&["link", "set", &inner, "up"])?;
        inside(&["link", "set", "lo", "up"])?;
        if k > 0 {
            inside(&["route", "add", "default", "via", &format!("10.{net}.{k}.1")])?;
        }
        Ok(())
    };
    for k in 0..n {
        if let Err(e) = setup(k, &mut made) {
            let msg = format!("cannot make network namespaces here ({e})");
            if std::env::var("PADO_E2E_REQUIRE_ALL").as_deref() == Ok("1") {
                panic!("{msg}, and PADO_E2E_REQUIRE_ALL=1 requires them");
            }
            eprintln!("skipped: {msg}");
            return None;
        }
    }
    Some((made, Ipv4Addr::new(10, net, 0, 1)))
}

/// Start segment `i` of `n` of `file` inside `host`'s namespace.
fn spawn_segment(host: &Host, file: &Path, i: usize, n: usize, at: &str, out: &Path) -> Child {
    pado_under(&["ip", "netns", "exec", &host.name])
        .arg("run")
        .arg(file)
        .args([
            "--segment",
            &format!("{i}/{n}"),
            "--start-at",
            at,
            "--quiet",
        ])
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running pado in a namespace")
}

#[test]
fn segments_on_separate_hosts_add_up_to_the_single_run_and_merge_exactly() {
    let Some((hosts, server_ip)) = hosts(3) else {
        return;
    };
    let _machine = shared_machine();
    let srv = TestServer::try_start_at(SocketAddr::from((server_ip, 0)), ServerOptions::default())
        .expect("a server on the link's address");
    let dir = tmp("netns-split");
    // An open model (exact arrival counts) beside a closed one with per-VU
    // iterations (exact iteration counts), with a delay the server keeps.
    let file = write_fixture(
        &dir,
        "netns_segments_on_separate_hosts_add_up_to_the_single_run_and_merge_exactly.yaml",
        "split.yaml",
        &[("server_addr", srv.addr().to_string())],
    );
    // The whole test from one process (outside the namespaces): the truth.
    let whole = pado_cmd(["run"])
        .arg(&file)
        .args(["--quiet", "--out"])
        .arg(dir.join("whole"))
        .output()
        .unwrap();
    assert_eq!(whole.status.code(), Some(0), "{}", say(&whole));
    let single = srv.stats().requests;
    assert_eq!(single, 30 * 3 + 5 * 7, "the single run sends the plan");
    srv.reset_stats();

    let at = start_in(3);
    let outs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("seg{i}"))).collect();
    let children: Vec<Child> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| spawn_segment(h, &file, i, 3, &at, &outs[i]))
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    }
    // Three hosts, three source addresses; together exactly the single run's count.
    assert_eq!(srv.stats().requests, single);
    let seen = srv.stats().connections_by_peer;
    assert_eq!(seen.len(), 3, "one address per host: {seen:?}");

    let merged = dir.join("merged");
    let m = merge(&outs, &merged, &[]);
    // The count threshold holds only for the union of the three.
    assert_eq!(m.status.code(), Some(0), "{}", say(&m));
    let s = read_json(&merged.join("summary.json"));
    assert_eq!(s["requests"].as_u64(), Some(single), "{s}");

    // The reference: every segment's per-second histograms added, read by the
    // result directory reader, not by the merge.
    let mut reference = pado_metrics::LatencyHistogram::new();
    for o in &outs {
        let t = ResultDir::open(o).unwrap().read_totals().unwrap();
        reference.add(t.overall().phase(Phase::Duration));
    }
    let r = reference.summary();
    let lat = &s["latency_ms"];
    for (key, want) in [
        ("p50", r.p50),
        ("p95", r.p95),
        ("p99", r.p99),
        ("max", r.max),
    ] {
        let got = lat[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {lat}"));
        assert_eq!(got, want, "{key}: merged against the reference");
    }
    // The per-generator breakdown names each segment with its share.
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("run.json")).unwrap()).unwrap();
    let from = meta["merged_from"].as_array().unwrap();
    assert_eq!(from.len(), 3);
    for (i, g) in from.iter().enumerate() {
        assert_eq!(g["segment"]["index"], i as u64, "{g}");
    }
}

#[test]
fn a_generator_killed_mid_run_is_named_by_the_merge() {
    let Some((hosts, server_ip)) = hosts(3) else {
        return;
    };
    let _machine = shared_machine();
    let srv = TestServer::try_start_at(SocketAddr::from((server_ip, 0)), ServerOptions::default())
        .expect("a server on the link's address");
    let dir = tmp("netns-kill");
    let file = write_fixture(
        &dir,
        "netns_a_generator_killed_mid_run_is_named_by_the_merge.yaml",
        "kill.yaml",
        &[("server_addr", srv.addr().to_string())],
    );
    let at = start_in(2);
    let outs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("seg{i}"))).collect();
    let mut children: Vec<Child> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| spawn_segment(h, &file, i, 3, &at, &outs[i]))
        .collect();
    // Segment 2 dies (SIGKILL: no summary, a cut timeline) two seconds into the load.
    let deadline = Instant::now() + Duration::from_secs(4);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    // `ip netns exec` runs pado in place (exec), so the child is pado itself.
    unsafe {
        libc::kill(children[2].id() as i32, libc::SIGKILL);
    }
    let killed = children.pop().unwrap().wait_with_output().unwrap();
    assert_eq!(killed.status.code(), None, "killed by a signal");
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", say(&o));
    }
    assert!(
        outs[2].join("run.json").is_file(),
        "the killed run left its directory"
    );

    let m = merge(&outs, &dir.join("merged"), &[]);
    assert_eq!(m.status.code(), Some(1), "{}", say(&m));
    let err = String::from_utf8_lossy(&m.stderr);
    assert!(
        err.contains("segment 2/3 ended early"),
        "the killed segment is named: {err}"
    );
    assert!(err.contains("--allow-partial"), "{err}");
    assert!(!dir.join("merged").join("summary.json").exists());

    let m = merge(&outs, &dir.join("partial"), &["--allow-partial"]);
    assert_eq!(m.status.code(), Some(0), "{}", say(&m));
    let s = read_json(&dir.join("partial").join("summary.json"));
    let warned = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap_or("").contains("segment 2/3 ended early"));
    assert!(warned, "{s}");
    // The partial result holds the two whole segments and what the killed one
    // wrote before it died (its open second is lost, never invented).
    let whole: u64 = outs[..2]
        .iter()
        .map(|o| {
            read_json(&o.join("summary.json"))["requests"]
                .as_u64()
                .unwrap()
        })
        .sum();
    let merged = s["requests"].as_u64().unwrap();
    assert!(
        merged > whole && merged <= srv.stats().requests,
        "{whole} < {merged} <= {}",
        srv.stats().requests
    );
}
