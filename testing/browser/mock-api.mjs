// A stand-in for pado's dashboard server that speaks the JSON API of
// docs/dashboard.md with planted numbers: it serves the page's real assets
// (crates/dashboard/assets) and closes a made-up second every `tickMs`. The page
// tests (page.test.mjs) check that the page shows exactly what was planted here;
// developers can also run it by hand: `node mock-api.mjs` prints the page's address.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const ASSETS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'crates', 'dashboard', 'assets');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** The planted second `t`: every figure a simple function of `t`, so tests can recompute it. */
export function plantedSecond(t, opts = {}) {
  const rate = opts.rateAt ? opts.rateAt(t) : 10;
  const s = {
    t,
    vus: 5 + (t % 3),
    requests: rate,
    rps: rate,
    errors: t % 4 === 0 ? { http_500: 1 } : {},
    dropped: t === 3 ? 2 : 0,
    late: 0,
    p50_ms: 10 + t,
    p95_ms: 20 + t,
    p99_ms: 30 + t,
    max_ms: 40 + t,
    steps: {
      '검색 <i>': { count: rate - 2, failures: t % 4 === 0 ? 1 : 0, p50_ms: 11, p95_ms: 21 + t, p99_ms: 31, max_ms: 41 + t, checks_passed: rate - 2, checks_failed: 0 },
      login: { count: 2, failures: 0, p50_ms: 5, p95_ms: 6, p99_ms: 7, max_ms: 8, checks_passed: 2, checks_failed: 0 },
    },
    observed: { 'db_connections{pool="메인"}': 3 + t },
    self_check: { cpu_pct: t >= (opts.hotFrom ?? Infinity) ? 97 : 12, ok: t < (opts.hotFrom ?? Infinity), note: t >= (opts.hotFrom ?? Infinity) ? 'a worker was 97% busy: pado may be the bottleneck' : undefined },
  };
  // LLM streams (`sse:` steps): TTFT 200 + t ms, ITL 20 ms, 30 + t tokens.
  if (opts.llm) s.llm = { streams: 3, events: 36 + t, tokens: 30 + t, ttft_p50_ms: 200 + t, ttft_p95_ms: 250 + t, itl_p50_ms: 20, itl_p99_ms: 35, tpot_p50_ms: 21 };
  if (opts.distributed) s.generators = { 'gen-a': { requests: rate / 2, share: 0.5, cpu_pct: 20, reporting: true }, 'gen-b': { requests: rate / 2, share: 0.5, cpu_pct: 25, reporting: true } };
  return s;
}

/**
 * Starts the mock on 127.0.0.1 (a free port). `opts`: token, tickMs, startAt
 * (seconds already closed), endAfter (seconds until the run ends), baseline,
 * distributed, hotFrom (second the self-check turns red), llm (seconds carry LLM streams).
 */
export async function startMock(opts = {}) {
  let token = opts.token ?? 'planted-token';
  const run = {
    name: '부하 시험 <b>x</b>',
    run_id: 'mock-run-1',
    started_at: '2026-01-01T00:00:00Z',
    scenarios: [{ name: 'browse', executor: 'constant-arrival-rate', open_model: true, max_vus: 50 }, { name: 'users', executor: 'constant-vus', open_model: false, max_vus: 10 }],
    stages: [{ label: 'warm-up', start_s: 0, end_s: 10 }, { label: '유지', start_s: 10, end_s: 60 }],
    thresholds: [{ metric: 'http_req_duration', expression: 'p(95) < 2000' }, { metric: 'http_req_failed', expression: 'rate < 0.01' }],
    steps: ['검색 <i>', 'login'],
    planned_s: 60,
    distributed: !!opts.distributed,
    baseline: opts.baseline ? { label: 'last', run_id: 'mock-run-0' } : null,
  };
  const seconds = [];
  const events = [];
  const st = { paused: false, stopping: false, ended: false, rate: 10, held: 0 };
  const controls = [];
  const clients = new Set();
  for (let t = 0; t < (opts.startAt ?? 0); t++) seconds.push(plantedSecond(t, opts));

  function state() {
    const n = seconds.length;
    const lastS = seconds[n - 1];
    return {
      elapsed_s: n,
      planned_end_s: 60 + st.held,
      seconds_closed: n,
      stage: n < 10 ? 'warm-up' : '유지',
      active_vus: lastS ? lastS.vus : 0,
      vu_cap: 10,
      rate_factor: st.rate / 10,
      paused: st.paused,
      stopping: st.stopping,
      ended: st.ended,
      thresholds: [
        { metric: 'http_req_duration', expression: 'p(95) < 2000', pass: true, value: lastS ? lastS.p95_ms : null },
        { metric: 'http_req_failed', expression: 'rate < 0.01', pass: false, value: 0.0312 },
      ],
      failures: [{ category: 'http_500', first_s: 0, last_s: Math.max(0, n - 1), count: Math.ceil(n / 4), samples: [{ step: '검색 <i>', category: 'http_500', second: 0, method: 'GET', url: '/검색', status: 500, body: '<script>alert(1)</script>' }] }],
      bottleneck: n > 2 ? 'DB 연결 풀 (db_connections)' : null,
      bottleneck_hint: n > 2
        ? { status: 'limit', confidence: 'medium', window: { label: 'peak load (≥ 9)' }, component: { component: 'DB 연결 풀', endpoint: 'db_connections', state: '10/10 active, 3 pending', evidence: 'every connection in use with requests waiting for one <b>' } }
        : { status: 'waiting', text: 'waiting for data: needs 10 s of load (has 2 s)' },
      events,
      generators: opts.distributed ? [{ name: 'gen-a', segment: '0:1/2', requests: 5, cpu_pct: 20, reporting: true }, { name: 'gen-b', segment: '1/2:1', requests: 15, cpu_pct: 25, reporting: true }] : [],
      summary: st.ended ? { name: run.name, duration_s: n, requests: n * 10, failed: 3, rps: 10, latency_ms: { p50: 12.345, p95: 240.53, p99: 0.4123, max: 12034.4 }, thresholds_ok: false, verdict: ['http_req_failed rate < 0.01 failed (3.12%)'] } : null,
      files: st.ended ? [{ name: 'report.html', url: '/files/report.html' }, { name: 'summary.json', url: '/files/summary.json' }] : [],
    };
  }

  function send(res, code, body, type = 'application/json') {
    res.writeHead(code, { 'Content-Type': type, 'Cache-Control': 'no-store' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  }

  function tick() {
    if (st.ended) return;
    const s = plantedSecond(seconds.length, { ...opts, rateAt: () => (st.paused ? 0 : st.rate) });
    seconds.push(s);
    for (const c of clients) {
      c.write(`event: second\ndata: ${JSON.stringify(s)}\n\n`);
      c.write(`event: state\ndata: ${JSON.stringify(state())}\n\n`);
    }
    if (opts.endAfter && seconds.length >= opts.endAfter) end();
  }

  function end() {
    st.ended = true;
    for (const c of clients) {
      c.write(`event: state\ndata: ${JSON.stringify(state())}\n\n`);
      c.end();
    }
    clients.clear();
  }

  function apply(cmd) {
    const t = seconds.length;
    switch (cmd.action) {
      case 'pause': st.paused = true; events.push({ t_s: t, kind: 'control', what: 'paused' }); return null;
      case 'resume': st.paused = false; events.push({ t_s: t, kind: 'control', what: 'resumed' }); return null;
      case 'set_rate': events.push({ t_s: t, kind: 'control', what: `arrival rate ${st.rate}/s → ${cmd.per_s}/s` }); st.rate = cmd.per_s; return null;
      case 'set_vus': if (cmd.vus > 10) return 'asked for 11 VUs; the plan has at most 10'; events.push({ t_s: t, kind: 'control', what: `active VUs → ${cmd.vus}` }); return null;
      case 'stop': st.stopping = true; events.push({ t_s: t, kind: 'control', what: 'stopped' }); setTimeout(end, 300); return null;
      case 'hold': if (cmd.seconds > 600) return 'a hold of at most 600 s'; st.held += cmd.seconds; events.push({ t_s: t, kind: 'control', what: `held ${cmd.seconds} s` }); return null;
      case 'next_stage': return 'there is no next stage';
      default: return undefined;
    }
  }

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    try {
      if (req.method === 'GET' && url.pathname === '/') return send(res, 200, await readFile(path.join(ASSETS, 'index.html'), 'utf8'), TYPES['.html']);
      if (req.method === 'GET' && url.pathname.startsWith('/assets/')) {
        const name = path.basename(url.pathname);
        return send(res, 200, await readFile(path.join(ASSETS, name), 'utf8'), TYPES[path.extname(name)] || 'application/octet-stream');
      }
      // As pado's server: `control` says whether this request carries the token.
      if (url.pathname === '/api/run') return send(res, 200, { ...run, control: req.headers.authorization === `Bearer ${token}` });
      if (url.pathname === '/api/state') return send(res, 200, state());
      if (url.pathname === '/api/seconds') {
        const from = Number(url.searchParams.get('from') || 0);
        return send(res, 200, { seconds: seconds.filter((s) => s.t >= from), next: seconds.length });
      }
      if (url.pathname === '/api/baseline') {
        if (!opts.baseline) return send(res, 404, { error: 'no baseline' });
        const b = [];
        for (let t = 0; t < 60; t++) b.push({ ...plantedSecond(t), rps: 7, vus: 4, p95_ms: 15 });
        return send(res, 200, { label: 'last', run_id: 'mock-run-0', seconds: b });
      }
      if (url.pathname === '/api/stream') {
        if (opts.noStream) return send(res, 503, { error: 'no stream' });
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
        res.write(`event: state\ndata: ${JSON.stringify(state())}\n\n`);
        clients.add(res);
        req.on('close', () => clients.delete(res));
        return undefined;
      }
      if (url.pathname === '/api/control' && req.method === 'POST') {
        let body = '';
        for await (const chunk of req) body += chunk;
        if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, { error: 'a control call needs the token' });
        let cmd;
        try {
          cmd = JSON.parse(body);
        } catch (e) {
          return send(res, 400, { error: 'not JSON' });
        }
        controls.push(cmd);
        const refused = apply(cmd);
        if (refused === undefined) return send(res, 400, { error: `unknown action ${cmd.action}` });
        if (refused) return send(res, 409, { error: refused });
        return send(res, 200, { ok: true, state: state() });
      }
      return send(res, 404, { error: 'not found' });
    } catch (e) {
      return send(res, 500, { error: String(e) });
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const timer = setInterval(tick, opts.tickMs ?? 1000);
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    url: `${base}/#token=${encodeURIComponent(token)}`,
    token,
    seconds,
    controls,
    events,
    end,
    /** pado's token changes (as if another pado answered): the page's is now wrong. */
    rotateToken(t) {
      token = t;
    },
    close() {
      clearInterval(timer);
      for (const c of clients) c.destroy();
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const m = await startMock({ tickMs: 1000, startAt: 5, baseline: true });
  console.log(m.url);
}
