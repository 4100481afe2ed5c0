// What the page derives from the seconds: each second once and in order whatever
// delivered it, the step table's sums, the self-check light, the token.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Timeline, series, keysOf, stepRows, selfCheckLight, runStatus, generatorShares, bottleneckLine, loadKinds, tokenFromHash, sampleText } from '../../../crates/dashboard/assets/model.js';
import { thin } from '../../../crates/dashboard/assets/chart.js';

test('a second delivered twice or out of order is held once, in order', () => {
  const tl = new Timeline();
  assert.deepEqual(tl.add([{ t: 0 }, { t: 1 }, { t: 2 }]), { added: 3, gap: false });
  assert.equal(tl.next, 3);
  // The stream skipped second 3: a gap the page must fill.
  assert.deepEqual(tl.add([{ t: 4 }]), { added: 1, gap: true });
  assert.deepEqual(tl.add([{ t: 3 }, { t: 4 }, { t: 2 }]), { added: 1, gap: false });
  assert.deepEqual(tl.seconds.map((s) => s.t), [0, 1, 2, 3, 4]);
  // A page opened late that got only the stream's newest second sees a gap from 0.
  const late = new Timeline();
  late.add([{ t: 20 }]);
  assert.equal(late.hasGap(), true);
});

test('series skip seconds without the figure; keys are every name seen', () => {
  const s = [{ t: 0, p95_ms: 3, errors: { b: 1 } }, { t: 1 }, { t: 2, p95_ms: 5, errors: { a: 2 } }];
  assert.deepEqual(series(s, (q) => q.p95_ms), [[0, 3], [2, 5]]);
  assert.deepEqual(keysOf(s, 'errors'), ['a', 'b']);
});

test('the step table sums over the run and shows the newest second', () => {
  const s = [
    { t: 0, steps: { 검색: { count: 10, failures: 1, p95_ms: 20, max_ms: 90, checks_passed: 9, checks_failed: 1 } } },
    { t: 1, steps: { 검색: { count: 12, failures: 0, p95_ms: 25, max_ms: 40, checks_passed: 12, checks_failed: 0 } } },
  ];
  const base = [{ t: 1, steps: { 검색: { count: 7, p95_ms: 15 } } }];
  const [row, idle] = stepRows(s, ['검색', 'never'], base);
  assert.equal(row.name, '검색');
  assert.equal(row.count, 22);
  assert.equal(row.failures, 1);
  assert.equal(row.rps, 12);
  assert.equal(row.p95_ms, 25);
  assert.equal(row.max_ms, 90);
  assert.equal(row.checks_passed, 21);
  assert.equal(row.checks_failed, 1);
  assert.equal(row.baseline_rps, 7);
  assert.equal(row.baseline_p95_ms, 15);
  // A step of the plan that has not run yet still has its row, with nothing in it.
  assert.equal(idle.name, 'never');
  assert.equal(idle.count, 0);
  assert.equal(idle.rps, null);
});

test('the self-check light: red when pado may be the bottleneck, amber when only delayed', () => {
  // The notes pado's dashboard writes (crates/dashboard/src/second.rs).
  assert.equal(selfCheckLight({ ok: false, cpu_pct: 99, note: 'a worker was 99% busy: pado may be the bottleneck' }).level, 'red');
  assert.equal(selfCheckLight({ ok: false, cpu_pct: 3, note: 'pado waited for a CPU (other work on this machine)' }).level, 'amber');
  assert.equal(selfCheckLight({ ok: false, cpu_pct: 3, note: "pado's event loop woke up 238 ms late" }).level, 'amber');
  assert.equal(selfCheckLight({ ok: false, cpu_pct: 40, busy: true }).level, 'red');
  assert.equal(selfCheckLight({ ok: true, cpu_pct: 85 }).level, 'green');
  assert.equal(selfCheckLight(undefined).level, 'unknown');
});

test('run status, generator shares, load kinds', () => {
  assert.equal(runStatus({ ended: true, paused: true }), 'ended');
  assert.equal(runStatus({ stopping: true, paused: true }), 'stopping');
  assert.equal(runStatus({ paused: true }), 'paused');
  assert.equal(runStatus({}), 'running');
  const g = generatorShares([{ name: 'a', requests: 30 }, { name: 'b', requests: 10 }]);
  assert.deepEqual(g.map((x) => x.share), [0.75, 0.25]);
  assert.deepEqual(generatorShares([{ name: 'a', requests: 0 }]).map((x) => x.share), [null]);
  assert.deepEqual(loadKinds([{ open_model: true }]), { open: true, closed: false });
  assert.deepEqual(loadKinds([{ open_model: false }, { open_model: true }]), { open: true, closed: true });
});

test('the token is read from the fragment only', () => {
  assert.equal(tokenFromHash('#token=abc%2Fd'), 'abc/d');
  assert.equal(tokenFromHash('#x=1&token=t2'), 't2');
  assert.equal(tokenFromHash('#token='), null);
  assert.equal(tokenFromHash(''), null);
  assert.equal(tokenFromHash('#tokens=zz'), null);
});

test('a long series is thinned to the chart width, keeping each run of points' + "'" + ' peak', () => {
  const pts = [];
  for (let t = 0; t < 1000; t++) pts.push([t, t === 537 ? 999 : 1]);
  const out = thin(pts, 100);
  assert.ok(out.length <= 100);
  assert.ok(out.some((p) => p[1] === 999), 'the one-second spike survives');
  assert.equal(thin(pts.slice(0, 50), 100).length, 50);
});

test('a failure sample reads as one line (the lines of docs/result-format.md)', () => {
  assert.equal(
    sampleText({ step: 'boom', category: 'http_500', second: 3, method: 'GET', url: '/status/500', status: 500, body: 'status 500\\n' }),
    's3 · boom: GET /status/500 → 500 · body status 500\\n',
  );
  assert.equal(
    sampleText({ step: 'login', category: 'check_failed', second: 0, method: 'GET', url: '/json/login', status: 200, check: 'login: $.token == "tok-1"', actual: 'got "tok-2"' }),
    's0 · login: GET /json/login → 200 · check login: $.token == "tok-1" got "tok-2"',
  );
  assert.equal(
    sampleText({ step: 'GET /', category: 'tls', second: 0, method: 'GET', url: '/', status: 0, reason: 'certificate expired' }),
    's0 · GET /: GET / · certificate expired',
  );
  assert.equal(sampleText('plain'), 'plain');
});

test('the bottleneck line: the live hint while the run goes, the report\'s table once it has ended', () => {
  const limit = {
    status: 'limit',
    confidence: 'high',
    window: { label: 'saturation (load ≥ 16)' },
    component: { component: 'DB 풀 HikariPool-1', endpoint: 'app', state: '4/4 active, 4 pending', evidence: 'every connection in use with requests waiting for one' },
  };
  assert.deepEqual(bottleneckLine({ bottleneck: 'DB 풀 HikariPool-1 (app)', bottleneck_hint: limit }), {
    text: 'Likely limit: DB 풀 HikariPool-1 (app): 4/4 active, 4 pending; every connection in use with requests waiting for one · confidence high, over saturation (load ≥ 16)',
    level: 'limit',
  });
  assert.equal(bottleneckLine({ bottleneck_hint: { status: 'no_limit', window: { label: 'peak load (≥ 4)' } } }).text, "No limit seen yet over peak load (≥ 4): nothing the target's metrics show is full");
  assert.deepEqual(bottleneckLine({ bottleneck_hint: { status: 'waiting', text: 'waiting for data: needs 10 s of load (has 4 s)' } }), {
    text: 'Bottleneck hint: waiting for data: needs 10 s of load (has 4 s)',
    level: 'waiting',
  });
  // Ended: the report's table, whatever the last hint said.
  assert.equal(bottleneckLine({ ended: true, bottleneck: 'Worker pool `http` (app)', bottleneck_hint: limit }).text, "Bottleneck (the report's table): Worker pool `http` (app)");
  // Nothing observed: no line.
  assert.deepEqual(bottleneckLine({ bottleneck: null, bottleneck_hint: null }), { text: '', level: null });
  assert.deepEqual(bottleneckLine(null), { text: '', level: null });
});
