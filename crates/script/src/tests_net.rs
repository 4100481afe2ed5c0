//! The tier-2 modules (`k6/ws`, `k6/websockets`, `k6/net/grpc`,
//! `k6/experimental/fs`, `k6/experimental/csv`) on a planted engine: every
//! WebSocket and gRPC call the script makes is captured and answered from a
//! planted script of events, so what the script sent, in which order its
//! handlers ran and what it concluded are checked exactly.

use std::collections::VecDeque;
use std::sync::Arc;

use pado_engine::script::{
    ScriptCall, ScriptFault, ScriptGrpcCall, ScriptGrpcReply, ScriptGrpcStreamCall,
    ScriptGrpcStreamReply, ScriptHost, ScriptReply, ScriptRole, ScriptVu, ScriptWsCall,
    ScriptWsEventKind, ScriptWsReply,
};

use crate::load_for_run;

/// A metric add the script made: id, value, tags.
type MetricAdd = (u32, f64, Vec<(String, String)>);

/// What the planted engine saw.
#[derive(Debug, Default)]
struct Seen {
    ws: Vec<String>,
    grpc: Vec<ScriptGrpcCall>,
    /// The stream calls, in words (`open /m`, `write 0 <bytes>`, `end 0`, `wait`).
    streams: Vec<String>,
    checks: Vec<(String, bool)>,
    /// The script's metric adds: id, value, tags.
    metrics: Vec<MetricAdd>,
    done: Option<Result<Option<String>, ScriptFault>>,
}

/// The planted engine: `events` answer the script's waits in order (then
/// `Timeout`), `open` answers every open.
struct Planted {
    events: VecDeque<ScriptWsReply>,
    open: fn(u32) -> ScriptWsReply,
    grpc: fn(&ScriptGrpcCall) -> ScriptGrpcReply,
    opened: u32,
    /// Answers to the script's stream waits, in order (then `Idle`).
    stream_events: VecDeque<ScriptGrpcStreamReply>,
}

impl Planted {
    fn new(events: Vec<ScriptWsReply>) -> Planted {
        Planted {
            events: events.into(),
            open: |id| ScriptWsReply::Opened {
                id,
                status: 101,
                headers: vec![("upgrade".into(), "websocket".into())],
            },
            grpc: |_| ScriptGrpcReply::default(),
            opened: 0,
            stream_events: VecDeque::new(),
        }
    }
}

fn text(id: u32, s: &str) -> ScriptWsReply {
    ScriptWsReply::Event {
        id,
        kind: ScriptWsEventKind::Text,
        data: s.as_bytes().to_vec(),
        code: 0,
        ping_us: 0,
    }
}

fn event(id: u32, kind: ScriptWsEventKind, code: u16) -> ScriptWsReply {
    ScriptWsReply::Event {
        id,
        kind,
        data: Vec::new(),
        code,
        ping_us: 0,
    }
}

fn drive(vu: &mut dyn ScriptVu, p: &mut Planted) -> Seen {
    let mut seen = Seen::default();
    let mut reply = ScriptReply::Start {
        iter: 0,
        data: None,
        ids: Default::default(),
    };
    for _ in 0..1000 {
        reply = match vu.resume(reply) {
            ScriptCall::Ws(c) => {
                let answer = match &c {
                    ScriptWsCall::Open(o) => {
                        seen.ws.push(format!("open {} {:?}", o.url, o.headers));
                        p.opened += 1;
                        (p.open)(p.opened - 1)
                    }
                    ScriptWsCall::Send { id, data, binary } => {
                        let shown = if *binary {
                            format!("{data:?}")
                        } else {
                            String::from_utf8(data.clone()).unwrap()
                        };
                        seen.ws.push(format!("send {id} {shown}"));
                        ScriptWsReply::Done
                    }
                    ScriptWsCall::Ping { id } => {
                        seen.ws.push(format!("ping {id}"));
                        ScriptWsReply::Done
                    }
                    ScriptWsCall::Close { id, code } => {
                        seen.ws.push(format!("close {id} {code}"));
                        ScriptWsReply::Done
                    }
                    ScriptWsCall::Wait { timeout } => match p.events.pop_front() {
                        Some(e) => e,
                        None if p.opened > 0 => {
                            // Nothing planted: the wait's whole timeout passes,
                            // as the engine's would.
                            std::thread::sleep(
                                timeout
                                    .unwrap_or_default()
                                    .min(std::time::Duration::from_millis(50)),
                            );
                            ScriptWsReply::Timeout
                        }
                        None => ScriptWsReply::Idle,
                    },
                };
                ScriptReply::Ws(answer)
            }
            ScriptCall::Grpc(c) => {
                let a = (p.grpc)(&c);
                seen.grpc.push(*c);
                ScriptReply::Grpc(Box::new(a))
            }
            ScriptCall::GrpcStream(c) => ScriptReply::GrpcStream(match c {
                ScriptGrpcStreamCall::Open(c) => {
                    seen.streams.push(format!("open {}", c.method));
                    ScriptGrpcStreamReply::Opened { id: 0 }
                }
                ScriptGrpcStreamCall::Write { id, message } => {
                    seen.streams.push(format!(
                        "write {id} {}",
                        String::from_utf8_lossy(&message[2..])
                    ));
                    ScriptGrpcStreamReply::Done
                }
                ScriptGrpcStreamCall::End { id } => {
                    seen.streams.push(format!("end {id}"));
                    ScriptGrpcStreamReply::Done
                }
                ScriptGrpcStreamCall::Wait { .. } => {
                    seen.streams.push("wait".into());
                    p.stream_events
                        .pop_front()
                        .unwrap_or(ScriptGrpcStreamReply::Idle)
                }
                ScriptGrpcStreamCall::Reflect(c) => {
                    seen.streams.push(format!("reflect {}", c.target));
                    ScriptGrpcStreamReply::Failed {
                        error: "planted: no reflection".into(),
                    }
                }
            }),
            ScriptCall::Check { name, ok } => {
                seen.checks.push((name, ok));
                ScriptReply::Resumed
            }
            ScriptCall::Sleep(_) => ScriptReply::Resumed,
            // A group's duration, a custom metric, `ws_ping`: recorded by the engine.
            ScriptCall::Metric {
                id, value, tags, ..
            } => {
                seen.metrics.push((id, value, tags));
                ScriptReply::Resumed
            }
            ScriptCall::Done(r) => {
                seen.done = Some(r);
                return seen;
            }
            other => panic!("a call this test does not plant: {other:?}"),
        };
    }
    panic!("the VU never finished");
}

fn files(src: &str, extra: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(&p, src).unwrap();
    for (name, body) in extra {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    (dir, p)
}

fn host(p: &std::path::Path) -> Arc<crate::Script> {
    load_for_run(p, &[]).unwrap().script
}

fn vu(h: &crate::Script) -> Box<dyn ScriptVu> {
    h.vu(ScriptRole::Load {
        scenario: "default".into(),
        exec: "default".into(),
        vu: 1,
    })
    .unwrap()
}

fn logged(seen: &Seen) -> Vec<String> {
    seen.checks
        .iter()
        .filter(|(_, ok)| *ok)
        .map(|(n, _)| n.clone())
        .collect()
}

#[test]
fn k6_ws_runs_handlers_in_k6s_order_and_returns_when_the_server_closes() {
    // k6's documented shape: handlers set in the callback, `open` after it, a
    // message, the server's ping, then the server's close ends connect().
    let (_d, p) = files(
        r#"
import ws from 'k6/ws';
import { check } from 'k6';
export default function () {
  const order = [];
  const res = ws.connect('ws://127.0.0.1:9/echo', { headers: { 'X-Room': '파도' } }, function (socket) {
    order.push('callback');
    socket.on('open', () => { order.push('open'); socket.send('안녕 파도'); socket.sendBinary(new Uint8Array([1, 2]).buffer); });
    socket.on('message', (m) => order.push('message:' + m));
    socket.on('ping', () => order.push('ping'));
    socket.on('close', (c) => order.push('close:' + c));
  });
  check(res, { 'status is 101': (r) => r && r.status === 101 });
  check(order, { [order.join(',')]: () => true });
}
"#,
        &[],
    );
    let h = host(&p);
    let mut v = vu(&h);
    let mut planted = Planted::new(vec![
        text(0, "안녕 파도"),
        event(0, ScriptWsEventKind::Ping, 0),
        event(0, ScriptWsEventKind::Close, 1000),
    ]);
    let seen = drive(v.as_mut(), &mut planted);
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    assert_eq!(
        seen.ws,
        vec![
            r#"open ws://127.0.0.1:9/echo [("X-Room", "파도")]"#.to_string(),
            "send 0 안녕 파도".into(),
            "send 0 [1, 2]".into(),
        ]
    );
    assert_eq!(
        logged(&seen),
        vec![
            "status is 101".to_string(),
            "callback,open,message:안녕 파도,ping,close:1000".into()
        ]
    );
}

#[test]
fn k6_ws_timers_close_the_socket_and_a_refused_handshake_is_a_response_not_an_exception() {
    // setTimeout closes the socket (k6's default close code 1001 when none is given);
    // setInterval fires before it (at 1 ms, the timeout at 30 ms: at least once
    // even on a stalled machine); the planted waits time out (no message).
    let (_d, p) = files(
        r#"
import ws from 'k6/ws';
import { check } from 'k6';
export default function () {
  let ticks = 0;
  const res = ws.connect('ws://127.0.0.1:9/', null, function (socket) {
    socket.setInterval(() => { ticks++; socket.ping(); }, 1);
    socket.setTimeout(() => socket.close(), 30);
  });
  check(ticks, { 'ticked': (t) => t >= 1 });
  const refused = ws.connect('ws://127.0.0.1:9/refuse', {}, function () { throw new Error('never'); });
  check(refused, { 'refused: 403, no error text as k6': (r) => r.status === 403 && r.error === '' });
}
"#,
        &[],
    );
    let h = host(&p);
    let mut v = vu(&h);
    let mut planted = Planted::new(vec![]);
    planted.open = |id| {
        if id == 0 {
            ScriptWsReply::Opened {
                id,
                status: 101,
                headers: vec![],
            }
        } else {
            ScriptWsReply::Failed {
                status: 403,
                error: "ws://127.0.0.1:9/refuse: the server answered the handshake with 403".into(),
            }
        }
    };
    let seen = drive(v.as_mut(), &mut planted);
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    assert!(
        seen.ws.contains(&"close 0 1001".to_string()),
        "{:?}",
        seen.ws
    );
    let pings = seen.ws.iter().filter(|w| w.starts_with("ping 0")).count();
    assert!(pings >= 1, "{:?}", seen.ws);
    // Every ping went out before the close.
    let close_at = seen.ws.iter().position(|w| w == "close 0 1001").unwrap();
    assert!(seen.ws[close_at + 1..]
        .iter()
        .all(|w| !w.starts_with("ping")));
    assert_eq!(
        logged(&seen),
        vec![
            "ticked".to_string(),
            "refused: 403, no error text as k6".into()
        ]
    );
}

#[test]
fn k6_websockets_connects_after_the_function_and_the_iteration_ends_when_the_loop_is_empty() {
    let (_d, p) = files(
        r#"
import { WebSocket } from 'k6/websockets';
import { check } from 'k6';
export default function () {
  const ws = new WebSocket('ws://127.0.0.1:9/chat');
  ws.binaryType = 'arraybuffer';
  const states = [ws.readyState];
  let got = 0;
  ws.onopen = () => { states.push(ws.readyState); ws.send(JSON.stringify({ type: 'join', name: '파도' })); };
  ws.addEventListener('message', (e) => {
    got++;
    if (typeof e.data !== 'string') check(new Uint8Array(e.data)[0], { 'binary as arraybuffer': (b) => b === 7 });
    if (got === 2) ws.close();
  });
  ws.onclose = (e) => { states.push(ws.readyState); check(states, { [states.join(',') + ' code ' + e.code]: () => true }); };
}
"#,
        &[],
    );
    let h = host(&p);
    let mut v = vu(&h);
    let mut planted = Planted::new(vec![
        text(0, "{\"type\":\"joined\"}"),
        ScriptWsReply::Event {
            id: 0,
            kind: ScriptWsEventKind::Binary,
            data: vec![7, 8],
            code: 0,
            ping_us: 0,
        },
    ]);
    let seen = drive(v.as_mut(), &mut planted);
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    assert_eq!(
        seen.ws,
        vec![
            "open ws://127.0.0.1:9/chat []".to_string(),
            r#"send 0 {"type":"join","name":"파도"}"#.into(),
            "close 0 1000".into(),
        ]
    );
    assert_eq!(
        logged(&seen),
        vec![
            "binary as arraybuffer".to_string(),
            "0,1,3 code 1000".into()
        ]
    );
}

#[test]
fn sockets_cannot_be_opened_in_the_init_context() {
    let (_d, p) = files(
        "import ws from 'k6/ws';\nws.connect('ws://127.0.0.1:9/', () => {});\nexport default function () {}\n",
        &[],
    );
    let e = match load_for_run(&p, &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    };
    assert!(e.contains("init context"), "{e}");
}

const ECHO: &str = "syntax = \"proto3\";\npackage demo.v1;\nservice Echo {\n  rpc Say(SayRequest) returns (SayReply);\n}\nmessage SayRequest { string text = 1; int64 n = 2; }\nmessage SayReply { string text = 1; int64 n = 2; bool loud = 3; }\n";

#[test]
fn grpc_invoke_sends_the_encoded_message_and_reads_the_reply_as_k6_shows_it() {
    let (_d, p) = files(
        r#"
import grpc from 'k6/net/grpc';
import { check } from 'k6';
const client = new grpc.Client();
client.load(['protos'], 'echo.proto');
export default function () {
  // As k6: connect's timeout bounds the dial, invoke's the call.
  client.connect('127.0.0.1:9', { plaintext: true, timeout: '5s' });
  const r = client.invoke('demo.v1.Echo/Say', { text: '파도', n: 3 }, { metadata: { 'x-tag': '바다' }, tags: { name: 'say' }, timeout: '2s' });
  check(r, {
    'status is OK': (x) => x.status === grpc.StatusOK,
    'text back': (x) => x.message.text === '파도!',
    'defaults shown': (x) => x.message.loud === false && x.message.n === '0',
    'no error': (x) => x.error === null,
    'headers as k6 shows them': (x) => JSON.stringify(x.headers) === '{"x-a":["1","2"]}',
    'trailers as k6 shows them': (x) => x.trailers['x-count'][0] === '7',
  });
  const bad = client.invoke('/demo.v1.Echo/Say', {});
  check(bad, { 'unavailable': (x) => x.status === grpc.StatusUnavailable && x.error.code === 14 && x.error.message === 'planted: connection refused' });
  client.close();
}
"#,
        &[],
    );
    std::fs::create_dir_all(p.parent().unwrap().join("protos")).unwrap();
    std::fs::write(p.parent().unwrap().join("protos/echo.proto"), ECHO).unwrap();
    let h = host(&p);
    let mut v = vu(&h);
    let mut planted = Planted::new(vec![]);
    planted.grpc = |c| {
        if c.name.is_some() {
            let mut reply = vec![0x0a, 7];
            reply.extend_from_slice("파도!".as_bytes());
            ScriptGrpcReply {
                code: Some(0),
                messages: vec![reply],
                headers: vec![("x-a".into(), "1".into()), ("x-a".into(), "2".into())],
                trailers: vec![("x-count".into(), "7".into())],
                ..ScriptGrpcReply::default()
            }
        } else {
            ScriptGrpcReply {
                code: Some(14),
                error: "planted: connection refused".into(),
                ..ScriptGrpcReply::default()
            }
        }
    };
    let seen = drive(v.as_mut(), &mut planted);
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    let c = &seen.grpc[0];
    assert_eq!(c.target, "127.0.0.1:9");
    assert!(c.plaintext);
    assert_eq!(c.method, "/demo.v1.Echo/Say");
    assert_eq!(c.metadata, vec![("x-tag".to_string(), "바다".to_string())]);
    assert_eq!(c.timeout, Some(std::time::Duration::from_secs(2)));
    assert_eq!(c.name.as_deref(), Some("say"));
    let mut want = vec![0x0a, 6];
    want.extend_from_slice("파도".as_bytes());
    want.extend_from_slice(&[0x10, 3]);
    assert_eq!(c.message, want);
    assert_eq!(seen.grpc[1].method, "/demo.v1.Echo/Say");
    assert_eq!(seen.grpc[1].timeout, None, "k6's default, not connect's");
    assert!(seen.checks.iter().all(|(_, ok)| *ok), "{:?}", seen.checks);
    assert_eq!(seen.checks.len(), 7);
}

#[test]
fn a_proto_that_does_not_compile_stops_the_script_at_start_naming_its_line() {
    let (_d, p) = files(
        "import grpc from 'k6/net/grpc';\nconst c = new grpc.Client();\nc.load([], 'bad.proto');\nexport default function () {}\n",
        &[(
            "bad.proto",
            "syntax = \"proto3\";\nmessage A {\n  strin x = 1;\n}\n",
        )],
    );
    let e = match load_for_run(&p, &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    };
    assert!(e.contains("bad.proto:3:"), "{e}");
    assert!(e.contains("s.js:3"), "the script's line too: {e}");
}

#[test]
fn fs_and_csv_read_a_file_opened_in_init_with_hangul_intact() {
    let (_d, p) = files(
        r#"
import { open, SeekMode } from 'k6/experimental/fs';
import csv from 'k6/experimental/csv';
import { check } from 'k6';
const file = await open('users.csv');
const rows = await csv.parse(file, { skipFirstLine: true });
const objects = await csv.parse(file, { asObjects: true });
const window = await csv.parse(file, { fromLine: 2, toLine: 3 });
export default async function () {
  check(rows, {
    'three rows': (r) => r.length === 3,
    'hangul row': (r) => r[0][0] === '김파도' && r[0][1] === '서울',
    'quoted comma': (r) => r[2][1] === 'Busan, KR',
  });
  check(objects, { 'objects by header': (o) => o.length === 3 && o[1].city === '대전' });
  check(window, { 'lines 2..3': (w) => w.length === 2 && w[0][0] === '이바다' });
  const parser = new csv.Parser(file, { delimiter: ',', skipFirstLine: true });
  let n = 0;
  for (;;) {
    const { done, value } = await parser.next();
    if (done) break;
    n += value.length;
  }
  check(n, { 'parser read 6 fields': (x) => x === 6 });
  const info = await file.stat();
  check(info, { 'stat': (i) => i.name === 'users.csv' && i.size === 60 });
  const buf = new Uint8Array(4);
  await file.seek(0, SeekMode.Start);
  const first = await file.read(buf);
  check(first, { 'read 4': (x) => x === 4 && buf[0] === 0x6e });
  await file.seek(-2, SeekMode.End);
  const tail = new Uint8Array(10);
  const last = await file.read(tail);
  check(last, { 'tail read as k6 seeks from the end': (x) => x === 3 });
  check(await file.read(tail), { 'EOF is null': (x) => x === null });
  let forbidden = '';
  try { await open('users.csv'); } catch (e) { forbidden = e.name; }
  check(forbidden, { 'open outside init refused': (x) => x === 'ForbiddenError' });
}
"#,
        &[(
            "users.csv",
            "name,city\n김파도,서울\n이바다,대전\nLee,\"Busan, KR\"\n",
        )],
    );
    let h = host(&p);
    let mut v = vu(&h);
    let seen = drive(v.as_mut(), &mut Planted::new(vec![]));
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    let failed: Vec<_> = seen.checks.iter().filter(|(_, ok)| !ok).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(seen.checks.len(), 11, "{:?}", seen.checks);
}

#[test]
fn csv_refuses_options_k6_refuses() {
    let (_d, p) = files(
        r#"
import { open } from 'k6/experimental/fs';
import csv from 'k6/experimental/csv';
const file = await open('a.csv');
await csv.parse(file, { asObjects: true, skipFirstLine: true });
export default function () {}
"#,
        &[("a.csv", "a,b\n1,2\n")],
    );
    let e = match load_for_run(&p, &[]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("loaded"),
    };
    assert!(e.contains("skipFirstLine"), "{e}");
}

/// A reply message `{ t: text }` of `s.v1.Req`, for stream `id`.
fn said(id: u32, t: &str) -> ScriptGrpcStreamReply {
    let mut message = vec![0x0a, t.len() as u8];
    message.extend_from_slice(t.as_bytes());
    ScriptGrpcStreamReply::Message { id, message }
}

#[test]
fn a_bidirectional_stream_writes_as_the_script_goes_and_runs_handlers_in_k6s_order() {
    let proto = "syntax = \"proto3\";\npackage s.v1;\nservice S {\n  rpc Chat(stream Req) returns (stream Req);\n  rpc Up(stream Req) returns (Req);\n  rpc One(Req) returns (Req);\n}\nmessage Req { string t = 1; }\n";
    let (_d, p) = files(
        r#"
import grpc from 'k6/net/grpc';
import { check } from 'k6';
const client = new grpc.Client();
client.load([], 's.proto');
function refused(f) { try { f(); return ''; } catch (e) { return String(e.message); } }
export default () => {
  client.connect('127.0.0.1:9', { plaintext: true });
  check(refused(() => client.invoke('s.v1.S/Chat', {})), { 'invoke of a stream': (m) => m.includes('open it with new grpc.Stream()') });
  check(refused(() => client.invoke('s.v1.S/Up', {})), { 'invoke of a client stream': (m) => m.includes('open it with new grpc.Stream()') });
  const chat = new grpc.Stream(client, 's.v1.S/Chat');
  const order = [];
  chat.on('data', (r) => {
    order.push('data ' + r.t);
    // Written from a handler: the stream is still open.
    if (r.t === '가') chat.write({ t: 'second' });
    if (r.t === '나') {
      chat.end();
      chat.write({ t: 'after the end' });
    }
  });
  chat.on('error', (e) => order.push('error ' + e.code + ' ' + e.message));
  chat.on('end', () => {
    order.push('end');
    check(order, { 'k6 order': (o) => o.join('|') === 'data 가|data 나|error 7 not yours|end' });
  });
  chat.write({ t: 'first' });
  chat.write(null);
};
"#,
        &[("s.proto", proto)],
    );
    let h = host(&p);
    let mut v = vu(&h);
    let mut planted = Planted::new(vec![]);
    planted.stream_events = vec![
        said(0, "가"),
        ScriptGrpcStreamReply::Timeout,
        said(0, "나"),
        ScriptGrpcStreamReply::Ended {
            id: 0,
            reply: Box::new(ScriptGrpcReply {
                code: Some(7),
                error: "not yours".into(),
                ..ScriptGrpcReply::default()
            }),
        },
    ]
    .into();
    let seen = drive(v.as_mut(), &mut planted);
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    // The unary calls of stream methods never reached the engine.
    assert!(seen.grpc.is_empty(), "{:?}", seen.grpc);
    assert_eq!(
        seen.streams,
        [
            "open /s.v1.S/Chat",
            // The null message was dropped, as k6 drops it.
            "write 0 first",
            "wait",
            // Written from the `data` handler, before the next wait.
            "write 0 second",
            "wait",
            "wait",
            // Ended from a handler; the write after it was dropped, as k6.
            "end 0",
            "wait",
        ]
    );
    let failed: Vec<_> = seen.checks.iter().filter(|(_, ok)| !ok).collect();
    assert!(failed.is_empty(), "{:?}", seen.checks);
    assert_eq!(seen.checks.len(), 3);
}

#[test]
fn a_failed_reflection_fails_connect_with_the_reason_and_tls_is_checked_as_k6() {
    let (_d, p) = files(
        r#"
import grpc from 'k6/net/grpc';
import { check } from 'k6';
const client = new grpc.Client();
function refused(f) { try { f(); return ''; } catch (e) { return String(e.message); } }
export default () => {
  check(refused(() => client.connect('127.0.0.1:9', { plaintext: true, reflect: true })), {
    'reflection failure named': (m) => m.includes('by reflection') && m.includes('planted: no reflection'),
  });
  check(refused(() => client.connect('127.0.0.1:9', { tls: { cacerts: [1] } })), {
    'cacerts must be PEM text': (m) => m.includes('invalid tls cacerts value'),
  });
  check(refused(() => client.connect('127.0.0.1:9', { tls: { cert: 'c', key: 'k', password: 'p' } })), {
    'a key that is not PEM is named': (m) => m.includes('tls.key is not a PEM formatted key') && !m.includes("'p'"),
  });
  check(refused(() => client.connect('127.0.0.1:9', { plaintxt: true })), {
    'an unknown param is named': (m) => m.includes('unknown connect param: "plaintxt"'),
  });
  check(refused(() => client.invoke('a.B/C', {})), { 'no connection': (m) => m.includes('connect first') });
};
"#,
        &[],
    );
    let h = host(&p);
    let mut v = vu(&h);
    let mut planted = Planted::new(vec![]);
    let seen = drive(v.as_mut(), &mut planted);
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    assert_eq!(seen.streams, ["reflect 127.0.0.1:9"]);
    let failed: Vec<_> = seen.checks.iter().filter(|(_, ok)| !ok).collect();
    assert!(failed.is_empty(), "{:?}", seen.checks);
    assert_eq!(seen.checks.len(), 5);
}

#[test]
fn binary_metadata_goes_out_base64_and_comes_back_as_k6_shows_it_and_a_password_decrypts_the_key() {
    let tls = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tls");
    let (_d, p) = files(
        &format!(
            r#"
import grpc from 'k6/net/grpc';
import {{ check }} from 'k6';
const client = new grpc.Client();
client.load([], 'echo.proto');
const key = open('{key}');
function refused(f) {{ try {{ f(); return ''; }} catch (e) {{ return String(e.message); }} }}
export default function () {{
  client.connect('127.0.0.1:9', {{ tls: {{ cert: 'C', key, password: '파도-비밀' }} }});
  const r = client.invoke('demo.v1.Echo/Say', {{ text: 'x' }}, {{
    metadata: {{ 'x-raw-bin': new Uint8Array([0, 255, 0xed, 0x8c, 0x8c]), 'x-buf-bin': new Uint8Array([1, 2, 3]).buffer, 'x-tag': 'k6' }},
  }});
  check(r, {{
    'a received -bin value is its bytes as text': (x) => x.headers['x-echo-bin'][0] === '\u0000\ufffd파',
    'padded base64 too': (x) => x.trailers['y-bin'][0] === 'ab',
    'a plain header as it came': (x) => x.headers['x-plain'][0] === 'AP8',
  }});
  check(refused(() => client.invoke('demo.v1.Echo/Say', {{}}, {{ metadata: {{ 'x-bin': 'text' }} }})), {{
    'a string -bin value is refused as k6': (m) => m.includes('"x-bin" value must be binary'),
  }});
  check(refused(() => client.connect('127.0.0.1:9', {{ tls: {{ cert: 'C', key, password: 'wrong-pw' }} }})), {{
    'a wrong password names tls.password, never the password': (m) => m.includes('tls.password does not decrypt tls.key') && !m.includes('wrong-pw'),
  }});
  check(refused(() => client.connect('127.0.0.1:9', {{ tls: {{ cert: 'C', key }} }})), {{
    'an encrypted key without its password asks for tls.password': (m) => m.includes('give its password as tls.password'),
  }});
}}
"#,
            key = tls.join("pkcs8-aes256.pem").display()
        ),
        &[("echo.proto", ECHO)],
    );
    let h = host(&p);
    let mut v = vu(&h);
    let mut planted = Planted::new(vec![]);
    planted.grpc = |_| ScriptGrpcReply {
        code: Some(0),
        // "\0\xff파" unpadded, as gRPC sends it; "ab" padded.
        headers: vec![
            ("x-echo-bin".into(), "AP/tjIw".into()),
            ("x-plain".into(), "AP8".into()),
        ],
        trailers: vec![("y-bin".into(), "YWI=".into())],
        ..ScriptGrpcReply::default()
    };
    let seen = drive(v.as_mut(), &mut planted);
    assert_eq!(seen.done, Some(Ok(None)), "{seen:?}");
    assert_eq!(
        seen.grpc.len(),
        1,
        "the refused calls never left the script"
    );
    let c = &seen.grpc[0];
    // The bytes base64-encoded without padding, as grpc-go sends them.
    assert_eq!(
        c.metadata,
        vec![
            ("x-raw-bin".to_string(), "AP/tjIw".to_string()),
            ("x-buf-bin".to_string(), "AQID".to_string()),
            ("x-tag".to_string(), "k6".to_string()),
        ]
    );
    // The engine got the key decrypted: the plain twin's bytes.
    let t = c.tls.as_ref().unwrap();
    let plain = std::fs::read_to_string(tls.join("plain-pkcs8.pem")).unwrap();
    assert_eq!(t.key.trim(), plain.trim());
    assert!(seen.checks.iter().all(|(_, ok)| *ok), "{:?}", seen.checks);
    assert_eq!(seen.checks.len(), 6);
}

fn pong(id: u32, ping_us: u64) -> ScriptWsReply {
    ScriptWsReply::Event {
        id,
        kind: ScriptWsEventKind::Pong,
        data: Vec::new(),
        code: 0,
        ping_us,
    }
}

#[test]
fn a_pong_that_answers_a_ping_is_k6s_ws_ping_in_both_modules_and_a_stranger_is_not() {
    for (module, src) in [
        (
            "k6/ws",
            r#"
import ws from 'k6/ws';
export default function () {
  ws.connect('ws://127.0.0.1:9/p', { tags: { room: '파도' } }, (s) => {
    s.on('open', () => s.ping());
    let n = 0;
    s.on('pong', () => { n += 1; if (n === 3) s.close(); });
  });
}
"#,
        ),
        (
            "k6/websockets",
            r#"
import { WebSocket } from 'k6/websockets';
export default function () {
  const s = new WebSocket('ws://127.0.0.1:9/p', null, { tags: { room: '파도' } });
  s.onopen = () => s.ping();
  let n = 0;
  s.onpong = () => { n += 1; if (n === 3) s.close(); };
}
"#,
        ),
    ] {
        let (_d, p) = files(src, &[]);
        let h = host(&p);
        let mut v = vu(&h);
        // Two pongs timed by the engine (its ping's), one the server sent unasked.
        let mut planted = Planted::new(vec![pong(0, 2_500), pong(0, 0), pong(0, 40_000)]);
        let seen = drive(v.as_mut(), &mut planted);
        assert_eq!(seen.done, Some(Ok(None)), "{module}: {seen:?}");
        assert!(
            seen.ws.contains(&"ping 0".to_string()),
            "{module}: {:?}",
            seen.ws
        );
        let pings: Vec<_> = seen
            .metrics
            .iter()
            .filter(|(id, _, _)| h.metric(*id).is_some_and(|m| &*m.name == "ws_ping"))
            .collect();
        assert_eq!(pings.len(), 2, "{module}: {:?}", seen.metrics);
        assert_eq!((pings[0].1, pings[1].1), (2.5, 40.0), "{module}: in ms");
        let m = h.metric(pings[0].0).unwrap();
        assert!(m.is_time, "{module}: a time trend");
        let tags = &pings[0].2;
        assert!(
            tags.contains(&("url".into(), "ws://127.0.0.1:9/p".into())),
            "{module}: {tags:?}"
        );
        assert!(
            tags.contains(&("room".into(), "파도".into())),
            "{module}: {tags:?}"
        );
    }
}
