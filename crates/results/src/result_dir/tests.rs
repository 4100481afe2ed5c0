use super::*;
use pado_metrics::{
    ErrorKind, Interval, LatencyHistogram, Phases, RequestSample, ScenarioStats, SeriesKey,
    SeriesStats,
};

/// A fresh directory, removed when the returned guard drops (pass or fail).
fn tmpdir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("pado-metrics-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn websocket_figures_round_trip_and_add_exactly() {
    let tmp = tmpdir("ws");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let mut s = SeriesStats::new(SeriesKey::named("채팅"));
    for i in 0..20u64 {
        s.record_ws(&pado_metrics::WsSession {
            connecting_us: 300 + i,
            duration_us: 5_000_000,
            msgs_sent: 4,
            msgs_received: 7,
            error: (i == 0).then_some(pado_metrics::WsError::HandshakeRefused(403)),
            connected: i != 0,
            ..Default::default()
        });
        s.record_ws_latency(50_000 + i);
    }
    let mut rec = SecondRecord::new(0);
    rec.series.push(s.clone());
    let mut w = dir.timeline_writer().unwrap();
    w.write(&rec).unwrap();
    rec.t = 1;
    w.write(&rec).unwrap();
    drop(w);
    let back = dir.read_timeline().unwrap();
    assert_eq!(back[0].series[0], s);
    let ws = back[1].series[0].ws.as_deref().unwrap();
    assert_eq!(
        (ws.sessions, ws.failed, ws.msgs_sent, ws.msgs_received),
        (20, 1, 80, 140)
    );
    assert_eq!(ws.errors, vec![("ws_handshake_403".to_string(), 1)]);
    assert_eq!(ws.connecting.count(), 19);
    assert_eq!(ws.msg_latency.count(), 20);
    // The merge's path: encoded seconds added straight into one.
    let mut rd = dir.timeline_reader().unwrap();
    let mut acc = SecondRecord::new(0);
    let mut dec = pado_metrics::latency::HistogramDecoder::default();
    let mut own = LatencyHistogram::default();
    while let Some(e) = rd.next_encoded().unwrap() {
        e.add_to(&mut acc, &mut dec, &mut own).unwrap();
    }
    let ws = acc.series[0].ws.as_deref().unwrap();
    assert_eq!(
        (ws.sessions, ws.msgs_sent, ws.msgs_received),
        (40, 160, 280)
    );
    assert_eq!(ws.msg_latency.count(), 40);
    assert_eq!(acc.series[0].requests, 0);
    // HTTP series write no `ws` field.
    let line = timeline_line(&SecondRecord::new(3)).unwrap();
    assert!(!line.contains("\"ws\""), "{line}");
}

#[test]
fn event_stream_and_llm_figures_round_trip_and_add_exactly() {
    let tmp = tmpdir("sse");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let mut s = SeriesStats::new(SeriesKey::named("대화"));
    // 7 LLM streams of 10 + i tokens, 2 plain streams of 3 events.
    for i in 0..7u64 {
        s.record(&RequestSample {
            status: 200,
            ..Default::default()
        });
        s.record_sse(&pado_metrics::SseStream {
            events: 12 + i,
            llm: true,
            tokens: 10 + i,
            ttft_us: Some(150_000 + i),
            decode_us: 20_000 * (9 + i),
            duration_us: 150_000 + 20_000 * (9 + i),
        });
        for _ in 0..9 + i {
            s.record_llm_itl(20_000);
        }
    }
    for _ in 0..2 {
        s.record(&RequestSample {
            status: 200,
            ..Default::default()
        });
        s.record_sse(&pado_metrics::SseStream {
            events: 3,
            ..Default::default()
        });
    }
    let mut rec = SecondRecord::new(0);
    rec.series.push(s.clone());
    let mut w = dir.timeline_writer().unwrap();
    w.write(&rec).unwrap();
    rec.t = 1;
    w.write(&rec).unwrap();
    drop(w);
    let back = dir.read_timeline().unwrap();
    assert_eq!(back[0].series[0], s);
    // The merge's path: encoded seconds added straight into one.
    let mut rd = dir.timeline_reader().unwrap();
    let mut acc = SecondRecord::new(0);
    let mut dec = pado_metrics::latency::HistogramDecoder::default();
    let mut own = LatencyHistogram::default();
    while let Some(e) = rd.next_encoded().unwrap() {
        e.add_to(&mut acc, &mut dec, &mut own).unwrap();
    }
    let e = acc.series[0].sse.as_deref().unwrap();
    // Tokens 10..=16 per second, twice: exactly 2 × 91.
    assert_eq!((e.streams, e.llm_streams, e.tokens), (18, 14, 182));
    assert_eq!(e.events, 2 * ((12..19).sum::<u64>() + 6));
    assert_eq!(e.itl.count(), 2 * (9..16).sum::<u64>());
    assert_eq!(e.ttft.count(), 14);
    assert_eq!(e.output_tokens.count(), 14);
    // HTTP series write no `sse` field.
    let line = timeline_line(&SecondRecord::new(3)).unwrap();
    assert!(!line.contains("\"sse\""), "{line}");
}

#[test]
fn timeline_round_trips_exactly() {
    let tmp = tmpdir("rt");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let mut rec = SecondRecord::new(0);
    let mut s = SeriesStats::new(SeriesKey {
        name: "검색".into(),
        tags: vec![("class".into(), "rare".into())],
    });
    for i in 0..500u64 {
        s.record(&RequestSample {
            status: if i % 50 == 0 { 503 } else { 200 },
            failed: i % 50 == 0,
            phases: Phases {
                duration_us: 100 + i,
                waiting_us: 50 + i,
                ..Default::default()
            },
            bytes_received: 7,
            reconnected: i % 100 == 0,
            ..Default::default()
        });
    }
    assert_eq!(s.reconnects, 5);
    s.record(&RequestSample {
        error: Some(ErrorKind::Timeout),
        failed: true,
        ..Default::default()
    });
    let mut sc = ScenarioStats::new("default");
    sc.iterations = 500;
    sc.dropped = 2;
    sc.iteration_duration.record(1234);
    let mut fl = ScenarioStats::new("default/write");
    fl.iterations = 7;
    let mut gen = pado_metrics::GeneratorStats {
        wall_ns: 1_001_000_000,
        cpu_ns: 930_000_000,
        wait_ns: Some(12_345),
        ..Default::default()
    };
    for us in [0, 900, 10_000, 10_001, 61_000, 9_000_000] {
        gen.lag.record(us);
    }
    rec.absorb(Interval {
        series: vec![s],
        scenarios: vec![sc],
        flows: vec![fl],
        vus: 3,
        vus_max: 4,
        generator: Some(gen),
        ..Default::default()
    });
    assert!(rec.generator.is_some());
    let mut w = dir.timeline_writer().unwrap();
    w.write(&rec).unwrap();
    let mut rec1 = rec.clone();
    rec1.t = 1;
    w.write(&rec1).unwrap();
    drop(w);
    let back = dir.read_timeline().unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0], rec);
    let totals = dir.read_totals().unwrap();
    let mut ts = Vec::new();
    dir.for_each_second(|r| {
        ts.push(r.t);
        Ok(())
    })
    .unwrap();
    assert_eq!(ts, [0, 1]);
    let e = dir
        .for_each_second(|r| {
            if r.t == 1 {
                Err("stop here".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err()
        .to_string();
    assert!(e.ends_with(":2: stop here"), "{e}");
    assert_eq!(totals.overall().requests, 1002);
    assert_eq!(totals.overall().error_breakdown()["http_503"], 20);
}

#[test]
fn meta_version_is_checked() {
    let tmp = tmpdir("ver");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let meta = RunMeta {
        format: "pado-result".into(),
        version: FORMAT_VERSION + 1,
        ..Default::default()
    };
    dir.write_meta(&meta).unwrap();
    let d = ResultDir::open(dir.path()).unwrap();
    assert!(matches!(d.read_meta(), Err(ResultError::Version { .. })));
    assert!(ResultDir::open(dir.path().join("nope")).is_err());
}

/// A timeline whose writer was killed mid-line: the complete seconds load, the
/// torn last line is reported, not fatal.
#[test]
fn a_torn_last_line_is_left_out_and_reported() {
    let tmp = tmpdir("torn");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    let mut rec = SecondRecord::default();
    for t in 0..3 {
        rec.t = t;
        rec.vus = t + 1;
        w.write(&rec).unwrap();
    }
    drop(w);
    let full = fs::read_to_string(dir.path().join(TIMELINE_FILE)).unwrap();
    let third = full.lines().nth(2).unwrap();
    // Cut inside the last line at every position (with and without a newline
    // after the cut): two seconds and the torn line number.
    let two = full.len() - third.len() - 1;
    for cut in 1..third.len() {
        for tail in ["", "\n", " \n\n"] {
            let text = format!("{}{}{tail}", &full[..two], &third[..cut]);
            fs::write(dir.path().join(TIMELINE_FILE), &text).unwrap();
            let mut ts = Vec::new();
            let read = dir
                .for_each_second(|r| {
                    ts.push(r.t);
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(ts, [0, 1], "{text:?}");
            assert_eq!(
                read,
                TimelineRead {
                    seconds: 2,
                    last_t: Some(1),
                    torn_line: Some(3)
                },
                "{text:?}"
            );
        }
    }
    // An intact file reports no torn line.
    fs::write(dir.path().join(TIMELINE_FILE), &full).unwrap();
    let read = dir.for_each_second(|_| Ok(())).unwrap();
    assert_eq!(
        (read.seconds, read.last_t, read.torn_line),
        (3, Some(2), None)
    );
    // The same cut in the middle of the file is corruption, named by its line.
    let second = full.lines().nth(1).unwrap();
    let one = full.lines().next().unwrap().len() + 1;
    let text = format!("{}{}\n{third}\n", &full[..one], &second[..second.len() / 2]);
    fs::write(dir.path().join(TIMELINE_FILE), &text).unwrap();
    let e = dir.read_timeline().unwrap_err().to_string();
    assert!(e.contains(":2:"), "{e}");
    // A complete last line that is wrong is not a torn line either.
    let text = format!("{}{{\"t\":\"x\"}}\n", &full[..two]);
    fs::write(dir.path().join(TIMELINE_FILE), &text).unwrap();
    let e = dir.read_timeline().unwrap_err().to_string();
    assert!(e.contains(":3:"), "{e}");
}

#[test]
fn corrupt_line_names_the_line() {
    let tmp = tmpdir("bad");
    let dir = ResultDir::create(tmp.path()).unwrap();
    fs::write(
        dir.path().join(TIMELINE_FILE),
        "{\"t\":0,\"vus\":0,\"vus_max\":0}\n{oops\n",
    )
    .unwrap();
    let e = dir.read_timeline().unwrap_err().to_string();
    assert!(e.contains(":2:"), "{e}");
}

#[test]
fn corrupt_counters_are_an_error_naming_the_line_not_a_wrapped_sum() {
    let tmp = tmpdir("wrap");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let ok = "{\"t\":0,\"vus\":1,\"vus_max\":1,\"series\":[{\"name\":\"a\",\"requests\":2,\"failed\":0,\"bytes_sent\":1,\"bytes_received\":1,\"status\":{\"200\":2}}]}";
    let huge = format!(
        "{{\"t\":1,\"vus\":1,\"vus_max\":1,\"series\":[{{\"name\":\"a\",\"requests\":{m},\"failed\":0,\"bytes_sent\":1,\"bytes_received\":1,\"status\":{{\"200\":{m},\"500\":2}}}}]}}",
        m = u64::MAX
    );
    fs::write(dir.path().join(TIMELINE_FILE), format!("{ok}\n{huge}\n")).unwrap();
    let e = dir.read_timeline().unwrap_err().to_string();
    assert!(e.contains(":2:") && e.contains("corrupt"), "{e}");
    let lying = "{\"t\":1,\"vus\":1,\"vus_max\":1,\"series\":[{\"name\":\"a\",\"requests\":5,\"failed\":9,\"bytes_sent\":1,\"bytes_received\":1,\"status\":{\"200\":5}}]}";
    fs::write(dir.path().join(TIMELINE_FILE), format!("{ok}\n{lying}\n")).unwrap();
    let e = dir.read_timeline().unwrap_err().to_string();
    assert!(e.contains(":2:") && e.contains("corrupt"), "{e}");
    // Consistent but huge counts saturate instead of wrapping.
    let mut a = SeriesStats::new(SeriesKey::named("a"));
    a.requests = u64::MAX - 1;
    let b = a.clone();
    a.merge(&b);
    assert_eq!(a.requests, u64::MAX);
}

/// Files written before pado measured itself still load: no `generator` in the
/// timeline, no `cores_allowed` in run.json.
#[test]
fn older_files_without_generator_figures_load() {
    let tmp = tmpdir("old");
    let dir = ResultDir::create(tmp.path()).unwrap();
    fs::write(
        dir.path().join(TIMELINE_FILE),
        "{\"t\":0,\"vus\":1,\"vus_max\":1}\n",
    )
    .unwrap();
    let back = dir.read_timeline().unwrap();
    assert_eq!(back[0].generator, None);
    fs::write(
        dir.path().join(RUN_FILE),
        r#"{"format":"pado-result","version":1,"name":"old","pado_version":"0.1.0",
           "started_at":"","duration_s":1.0,"interrupted":false,"workers":2,
           "scenarios":[],"stages":[],"thresholds":[],"notes":[],"warnings":[]}"#,
    )
    .unwrap();
    let meta = dir.read_meta().unwrap();
    assert_eq!((meta.workers, meta.cores_allowed), (2, 0));
    // A lag bucket this pado does not know is an error on its line, not a guess.
    fs::write(
        dir.path().join(TIMELINE_FILE),
        "{\"t\":0,\"vus\":1,\"vus_max\":1,\"generator\":{\"workers\":1,\"wall_ns\":1,\"span_ns\":1,\"cpu_ns\":1,\"busy_max\":1.0,\"lag_p99_us\":0,\"lag_max_us\":0,\"lag_hist\":{\"123\":1}}}\n",
    )
    .unwrap();
    let e = dir.read_timeline().unwrap_err().to_string();
    assert!(e.contains(":1:") && e.contains("lag bucket `123`"), "{e}");
}

/// A directory a run holds is "being written" to a reader in this or another
/// handle; once the run's handle is gone (its process ended, even by `kill -9`), it
/// is not. A directory without a lock file never is.
#[test]
fn a_reader_sees_whether_a_run_writes_the_directory() {
    let tmp = tmpdir("being-written");
    let path = tmp.path().join("run");
    let writer = ResultDir::claim(&path, false).unwrap();
    writer.write_meta(&RunMeta::default()).unwrap();
    assert!(writer.being_written());
    let reader = ResultDir::open(&path).unwrap();
    assert!(reader.being_written());
    drop(writer);
    assert!(!reader.being_written());
    std::fs::remove_file(path.join(LOCK_FILE)).unwrap();
    assert!(!ResultDir::open(&path).unwrap().being_written());
}

/// Requests by HTTP version and connections opened are written with each second
/// (zeros left out), read back exactly, and summed; a second written before pado
/// counted them reads as nothing counted; TLS connections beyond the connections
/// opened are refused with the file and line.
#[test]
fn http_versions_and_connections_round_trip() {
    let tmp = tmpdir("http");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    let counts = pado_metrics::ProtocolCounts {
        requests_http1: 40,
        requests_http2: 2_400,
        conns_http1: 4,
        conns_http2: 2,
        conns_tls: 2,
    };
    let mut rec = SecondRecord::new(0);
    rec.protocols = counts;
    w.write(&rec).unwrap();
    // A second with nothing counted (an old pado's, or a quiet one).
    w.write(&SecondRecord::new(1)).unwrap();
    drop(w);
    let text = std::fs::read_to_string(tmp.path().join(TIMELINE_FILE)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains(
            r#""http":{"requests":{"1.1":40,"2":2400},"connections":{"1.1":4,"2":2},"connections_tls":2}"#
        ),
        "{}",
        lines[0]
    );
    assert!(!lines[1].contains("http"), "{}", lines[1]);
    let tl = dir.read_timeline().unwrap();
    assert_eq!(tl[0].protocols, counts);
    assert!(tl[1].protocols.is_empty());
    assert_eq!(dir.read_totals().unwrap().protocols, counts);

    let bad = lines[0].replace(r#""connections_tls":2"#, r#""connections_tls":9"#);
    std::fs::write(tmp.path().join(TIMELINE_FILE), format!("{bad}\n")).unwrap();
    let e = dir.read_timeline().unwrap_err().to_string();
    assert!(
        e.contains("timeline.jsonl:1") && e.contains("corrupt"),
        "{e}"
    );
}

/// A script's own metric of `kind` named `name`, with `values` added.
fn custom(name: &str, kind: pado_metrics::CustomKind, values: &[f64]) -> pado_metrics::CustomStats {
    let mut c = pado_metrics::CustomStats::new(
        SeriesKey {
            name: name.into(),
            tags: vec![("group".into(), "::로그인".into())],
        },
        kind,
        true,
    );
    for (i, v) in values.iter().enumerate() {
        c.add(*v, i as u64);
    }
    c
}

#[test]
fn custom_metrics_round_trip_exactly_and_sum_into_the_totals() {
    use pado_metrics::CustomKind;
    let tmp = tmpdir("custom");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    let mut recs = Vec::new();
    for t in 0..2u32 {
        let base = f64::from(t) * 100.0;
        let mut rec = SecondRecord::new(t);
        rec.absorb(Interval {
            custom: vec![
                custom(
                    "응답시간",
                    CustomKind::Trend,
                    &[base + 1.5, base + 2.25, base + 90.0],
                ),
                custom("errors", CustomKind::Counter, &[1.0, 2.0]),
                custom("size", CustomKind::Gauge, &[base + 7.0, base + 3.0]),
            ],
            ..Default::default()
        });
        w.write(&rec).unwrap();
        recs.push(rec);
    }
    drop(w);
    assert_eq!(dir.read_timeline().unwrap(), recs);
    let totals = dir.read_totals().unwrap();
    let get = |n: &str| totals.custom.iter().find(|c| c.key.name == n).unwrap();
    let t = get("응답시간");
    assert_eq!(t.count, 6);
    assert_eq!((t.min, t.max), (1.5, 190.0));
    assert_eq!(t.sum, 1.5 + 2.25 + 90.0 + 101.5 + 102.25 + 190.0);
    assert_eq!(
        t.key.tags,
        vec![("group".to_string(), "::로그인".to_string())]
    );
    assert_eq!(get("errors").sum, 6.0);
    // The gauge's value is the second second's last add.
    assert_eq!(get("size").last, 103.0);
}

#[test]
fn a_custom_metric_that_cannot_be_is_an_error_naming_the_line() {
    let tmp = tmpdir("custom-bad");
    let dir = ResultDir::create(tmp.path()).unwrap();
    let ok = "{\"t\":0,\"vus\":0,\"vus_max\":0}";
    for bad in [
        // More non-zero adds than adds.
        "{\"t\":1,\"vus\":0,\"vus_max\":0,\"custom\":[{\"name\":\"r\",\"kind\":\"rate\",\"count\":1,\"nonzero\":2,\"min\":0,\"max\":1}]}",
        // A trend whose histogram does not hold its adds.
        "{\"t\":1,\"vus\":0,\"vus_max\":0,\"custom\":[{\"name\":\"t\",\"kind\":\"trend\",\"count\":3,\"min\":0,\"max\":1}]}",
        // No kind pado knows.
        "{\"t\":1,\"vus\":0,\"vus_max\":0,\"custom\":[{\"name\":\"x\",\"kind\":\"meter\",\"count\":1,\"min\":0,\"max\":1}]}",
        // min above max.
        "{\"t\":1,\"vus\":0,\"vus_max\":0,\"custom\":[{\"name\":\"g\",\"kind\":\"gauge\",\"count\":1,\"min\":5,\"max\":1}]}",
    ] {
        fs::write(dir.path().join(TIMELINE_FILE), format!("{ok}\n{bad}\n")).unwrap();
        let e = dir.read_timeline().unwrap_err().to_string();
        assert!(e.contains(":2:"), "{bad}: {e}");
        let e = dir.read_totals().unwrap_err().to_string();
        assert!(e.contains(":2"), "{bad}: {e}");
    }
}
