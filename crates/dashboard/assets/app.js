// The live dashboard: loads the whole run so far (`/api/seconds?from=0`), then
// follows it second by second on `/api/stream` (polling `/api/seconds?from=` and
// `/api/state` when the stream drops), draws the charts and tables, and steers the
// run through `POST /api/control` when the page holds the run's token. Everything
// shown comes from pado's JSON and is inserted as text, never as markup.
// `window.pado` exposes what the page holds, for scripts and the browser tests.
import * as fmt from './format.js';
import { Chart, PALETTE } from './chart.js';
import {
  Timeline, series, keysOf, stepRows, selfCheckLight, runStatus, generatorShares, bottleneckLine, loadKinds, tokenFromHash, sampleText,
} from './model.js';

const TOKEN_KEY = 'pado-dashboard-token';
const timeline = new Timeline();
/** What the page holds; tests and scripts read it (`window.pado.seconds.length`). */
const pado = {
  run: null,
  state: null,
  baseline: null,
  seconds: timeline.seconds,
  charts: {},
  stream: 'connecting',
  renders: 0,
  lastControl: null,
  selectedStep: null,
};
window.pado = pado;

const $ = (id) => document.getElementById(id);
let token = null;

// ------------------------------------------------------------------ fetching

async function getJSON(path, auth) {
  const headers = { Accept: 'application/json' };
  if (auth && token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(path, { headers, cache: 'no-store' });
  if (!res.ok) {
    const err = new Error(`${path}: ${res.status} ${res.statusText}`);
    err.status = res.status;
    throw err;
  }
  return res.json();
}

let catching = null;
/** Every closed second the page has not seen yet, from `timeline.next` on. */
function catchUp() {
  if (catching) return catching;
  catching = (async () => {
    for (let guard = 0; guard < 10000; guard++) {
      // A hole the stream left before the newest second is filled from its start.
      const from = timeline.hasGap() ? firstMissing() : timeline.next;
      const page = await getJSON(`/api/seconds?from=${from}`);
      const { added } = timeline.add(page.seconds || []);
      if (added === 0 || !(page.next > from)) break;
    }
  })().finally(() => {
    catching = null;
    schedule();
  });
  return catching;
}

function firstMissing() {
  const s = timeline.seconds;
  if (s.length === 0 || s[0].t !== 0) return 0;
  for (let i = 1; i < s.length; i++) if (s[i].t !== s[i - 1].t + 1) return s[i - 1].t + 1;
  return timeline.next;
}

async function refreshState() {
  pado.state = await getJSON('/api/state');
  schedule();
}

// ------------------------------------------------------------------ following

let source = null;
let pollTimer = null;
let pollsSinceStream = 0;

function openStream() {
  if (source || (pado.state && pado.state.ended)) return;
  source = new EventSource('/api/stream');
  source.addEventListener('open', () => setConnection('stream'));
  source.addEventListener('second', (ev) => {
    const s = parse(ev.data);
    if (!s) return;
    timeline.add([s]);
    if (timeline.hasGap()) catchUp().catch(() => {});
    schedule();
  });
  source.addEventListener('state', (ev) => {
    const st = parse(ev.data);
    if (!st) return;
    pado.state = st;
    if (st.ended) finish();
    schedule();
  });
  source.addEventListener('error', () => {
    source.close();
    source = null;
    if (!(pado.state && pado.state.ended)) startPolling();
  });
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    return null;
  }
}

/** The stream dropped: ask every second, and try the stream again every 10 s. */
function startPolling() {
  if (pollTimer) return;
  setConnection('polling');
  pollsSinceStream = 0;
  pollTimer = setInterval(async () => {
    try {
      await catchUp();
      await refreshState();
      setConnection('polling');
      if (pado.state && pado.state.ended) {
        stopPolling();
        finish();
        return;
      }
      if (++pollsSinceStream >= 10) {
        stopPolling();
        openStream();
      }
    } catch (e) {
      setConnection('down');
    }
  }, 1000);
}

function stopPolling() {
  if (pollTimer) clearInterval(pollTimer);
  pollTimer = null;
}

let finished = false;
/** The run ended: the last seconds, the final state (summary, files), no more stream. */
async function finish() {
  if (finished) return;
  finished = true;
  if (source) {
    source.close();
    source = null;
  }
  stopPolling();
  setConnection('ended');
  try {
    await catchUp();
    // The files are listed once the result directory is written: ask until then.
    for (let i = 0; i < 30; i++) {
      await refreshState();
      if ((pado.state.files || []).length > 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } catch (e) {
    // pado may have exited after the run: what the page holds stays on screen.
  }
  schedule();
}

function setConnection(mode) {
  pado.stream = mode;
  const p = $('connection');
  const words = {
    stream: '',
    polling: 'The live stream dropped: asking pado every second.',
    down: 'pado is not answering (it may have exited after the run). What the page holds stays on screen.',
    ended: '',
  };
  p.textContent = words[mode] || '';
  p.hidden = !p.textContent;
}

// ------------------------------------------------------------------ rendering

let pending = false;
/** Draws at most once per task, however many seconds arrived at once. */
function schedule() {
  if (pending) return;
  pending = true;
  setTimeout(() => {
    pending = false;
    render();
  }, 0);
}

function render() {
  if (!pado.run) return;
  renderHeader();
  renderCharts();
  renderLlm();
  renderObserved();
  renderSteps();
  renderThresholds();
  renderTabs();
  renderControl();
  renderEnded();
  pado.renders++;
}

function last() {
  const s = timeline.seconds;
  return s.length ? s[s.length - 1] : null;
}

function renderHeader() {
  const run = pado.run;
  const st = pado.state;
  $('run-name').textContent = run.name || 'pado';
  document.title = `${run.name || 'pado'} · pado live`;
  const status = runStatus(st);
  const badge = $('run-status');
  badge.textContent = status;
  badge.className = 'status ' + status;
  $('stage').textContent = (st && st.stage) || '–';
  const elapsed = st && Number.isFinite(st.elapsed_s) ? st.elapsed_s : timeline.next;
  $('elapsed').textContent = fmt.duration(elapsed);
  const planned = plannedEnd();
  $('planned').textContent = planned > 0 ? fmt.duration(planned) : 'open-ended';
  const l = last();
  $('now-vus').textContent = l && Number.isFinite(l.vus) ? fmt.thousands(l.vus) : '–';
  $('now-rps').textContent = l ? fmt.rate(l.rps) : '–';
  // A second without requests (a pause, the graceful tail) has no latency or
  // self-check: the newest second that has one speaks for now.
  const lat = lastWith((q) => Number.isFinite(q.p95_ms));
  $('now-p95').textContent = lat ? fmt.ms(lat.p95_ms) + ' ms' : '–';
  const checked = lastWith((q) => q.self_check);
  const light = selfCheckLight(checked && checked.self_check);
  const dot = $('self-check');
  dot.className = 'light ' + light.level;
  dot.title = light.note;
  const cpu = checked && Number.isFinite(checked.self_check.cpu_pct) ? ` (CPU ${Math.round(checked.self_check.cpu_pct)}%)` : '';
  $('self-check-note').textContent = light.note + cpu;
}

/** The newest second for which `has(second)` holds, or null. */
function lastWith(has) {
  const s = timeline.seconds;
  for (let i = s.length - 1; i >= 0; i--) if (has(s[i])) return s[i];
  return null;
}

/** The x range every chart shares: the plan's length, or the run so far if longer. */
function xmax() {
  return Math.max(plannedEnd(), timeline.next, 10);
}

/** When the load is planned to end: moved by holds and skips (the state says), else the plan's. */
function plannedEnd() {
  const st = pado.state;
  if (st && Number.isFinite(st.planned_end_s) && st.planned_end_s > 0) return st.planned_end_s;
  return Number.isFinite(pado.run.planned_s) ? pado.run.planned_s : 0;
}

/** Stage boundaries and control events, as vertical marks. */
function marks() {
  const out = [];
  for (const st of pado.run.stages || []) {
    if (Number.isFinite(st.start_s)) out.push({ x: st.start_s, label: st.label || '', kind: 'stage' });
  }
  for (const ev of (pado.state && pado.state.events) || []) {
    if (Number.isFinite(ev.t_s)) out.push({ x: ev.t_s, label: `${ev.kind}: ${ev.what}`, kind: 'event ' + safeClass(ev.kind) });
  }
  return out;
}

function safeClass(s) {
  return String(s || '').replace(/[^a-z0-9_-]/gi, '');
}

function chart(id, opts) {
  if (!pado.charts[id]) pado.charts[id] = new Chart($(id), opts);
  return pado.charts[id];
}

/** A run series and, with a baseline, the same series of the baseline run dashed. */
function withBaseline(name, pick, colour) {
  const lines = [{ name, pts: series(timeline.seconds, pick), color: colour }];
  if (pado.baseline) {
    const x = xmax();
    const pts = series(pado.baseline.seconds || [], pick).filter((p) => p[0] <= x);
    lines.push({ name: `${name} (baseline)`, pts, color: colour, dashed: true });
  }
  return lines;
}

function renderCharts() {
  const x = xmax();
  const m = marks();
  const s = timeline.seconds;
  chart('chart-vus', { int: true }).draw({ xmax: x, marks: m, lines: withBaseline('VUs', (q) => q.vus, PALETTE[0]) });
  chart('chart-rps', { unit: 'req/s' }).draw({ xmax: x, marks: m, lines: withBaseline('req/s', (q) => q.rps, PALETTE[0]) });
  const lat = [
    { name: 'p50', pts: series(s, (q) => q.p50_ms), color: PALETTE[4] },
    { name: 'p95', pts: series(s, (q) => q.p95_ms), color: PALETTE[1] },
    { name: 'p99', pts: series(s, (q) => q.p99_ms), color: PALETTE[2] },
    { name: 'max', pts: series(s, (q) => q.max_ms), color: PALETTE[9] },
  ];
  if (pado.baseline) lat.push(withBaseline('p95', (q) => q.p95_ms, PALETTE[1])[1]);
  chart('chart-latency', { unit: 'ms' }).draw({ xmax: x, marks: m, lines: lat });
  const cats = keysOf(s, 'errors');
  const errs = cats.map((c, i) => ({
    name: c,
    pts: series(s, (q) => (q.errors ? q.errors[c] || 0 : undefined)),
    color: PALETTE[(i + 2) % PALETTE.length],
  }));
  chart('chart-errors', { int: true, unit: 'errors/s' }).draw({ xmax: x, marks: m, lines: errs });
  chart('chart-iterations', { int: true }).draw({
    xmax: x,
    marks: m,
    lines: [
      { name: 'dropped', pts: series(s, (q) => q.dropped), color: PALETTE[2] },
      { name: 'late', pts: series(s, (q) => q.late), color: PALETTE[5] },
    ],
  });
}

/** The LLM streams' panel, shown once a second has streams: TTFT and ITL, tokens per second. */
function renderLlm() {
  const s = timeline.seconds;
  const any = s.some((q) => q.llm);
  $('llm').hidden = !any;
  if (!any) return;
  const x = xmax();
  const m = marks();
  const llm = (pick) => series(s, (q) => (q.llm ? pick(q.llm) : undefined));
  chart('chart-llm-latency', { unit: 'ms' }).draw({
    xmax: x,
    marks: m,
    lines: [
      { name: 'ttft p50', pts: llm((l) => l.ttft_p50_ms), color: PALETTE[4] },
      { name: 'ttft p95', pts: llm((l) => l.ttft_p95_ms), color: PALETTE[1] },
      { name: 'itl p50', pts: llm((l) => l.itl_p50_ms), color: PALETTE[2] },
      { name: 'itl p99', pts: llm((l) => l.itl_p99_ms), color: PALETTE[5] },
    ],
  });
  // A second in which no stream ended delivered no tokens.
  chart('chart-llm-tokens', { unit: 'tokens/s' }).draw({
    xmax: x,
    marks: m,
    lines: [{ name: 'output tokens/s', pts: series(s, (q) => (q.llm ? q.llm.tokens : 0)), color: PALETTE[0] }],
  });
}

/** One chart per metric of the target, on the same time axis, with the bottleneck hint. */
function renderObserved() {
  const names = keysOf(timeline.seconds, 'observed');
  const line = bottleneckLine(pado.state);
  $('target').hidden = names.length === 0 && !line.level;
  const b = $('bottleneck');
  b.hidden = !line.level;
  b.textContent = line.text;
  b.dataset.level = line.level || '';
  const host = $('observed-charts');
  names.forEach((name, i) => {
    const id = `chart-obs-${i}`;
    let div = document.getElementById(id);
    if (!div) {
      div = document.createElement('div');
      div.className = 'chart';
      div.id = id;
      const h = document.createElement('h3');
      const legend = document.createElement('div');
      legend.className = 'legend';
      const body = document.createElement('div');
      body.className = 'chart-body';
      div.append(h, legend, body);
      host.appendChild(div);
    }
    div.querySelector('h3').textContent = name;
    chart(id, {}).draw({
      xmax: xmax(),
      marks: marks(),
      lines: [{ name, pts: series(timeline.seconds, (q) => (q.observed ? q.observed[name] : undefined)), color: PALETTE[(i + 3) % PALETTE.length] }],
    });
  });
}

function td(tr, text, cls, raw) {
  const c = document.createElement('td');
  c.textContent = text;
  if (cls) c.className = cls;
  if (raw !== undefined && raw !== null) c.dataset.value = String(raw);
  tr.appendChild(c);
  return c;
}

function renderSteps() {
  const rows = stepRows(timeline.seconds, pado.run.steps, pado.baseline && pado.baseline.seconds);
  const withBase = !!pado.baseline;
  for (const th of document.querySelectorAll('.baseline-col')) th.hidden = !withBase;
  const body = $('table-steps').querySelector('tbody');
  body.textContent = '';
  for (const r of rows) {
    const tr = document.createElement('tr');
    tr.className = 'step' + (pado.selectedStep === r.name ? ' selected' : '');
    tr.dataset.step = r.name;
    tr.tabIndex = 0;
    td(tr, r.name, 'name');
    td(tr, fmt.thousands(r.count), 'n', r.count);
    td(tr, r.rps === null ? '–' : fmt.rate(r.rps), 'n', r.rps);
    td(tr, fmt.thousands(r.failures), 'n' + (r.failures > 0 ? ' bad' : ''), r.failures);
    td(tr, fmt.ms(r.p50_ms), 'n', r.p50_ms);
    td(tr, fmt.ms(r.p95_ms), 'n', r.p95_ms);
    td(tr, fmt.ms(r.p99_ms), 'n', r.p99_ms);
    td(tr, fmt.ms(r.max_ms), 'n', r.max_ms);
    td(tr, `${fmt.thousands(r.checks_passed)} / ${fmt.thousands(r.checks_failed)}`, 'n' + (r.checks_failed > 0 ? ' bad' : ''));
    if (withBase) {
      td(tr, r.baseline_rps === null ? '–' : fmt.rate(r.baseline_rps), 'n', r.baseline_rps);
      td(tr, fmt.ms(r.baseline_p95_ms), 'n', r.baseline_p95_ms);
    }
    const open = () => {
      pado.selectedStep = pado.selectedStep === r.name ? null : r.name;
      schedule();
    };
    tr.addEventListener('click', open);
    tr.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') {
        ev.preventDefault();
        open();
      }
    });
    body.appendChild(tr);
  }
  renderStepDetail();
}

function renderStepDetail() {
  const name = pado.selectedStep;
  $('step-detail').hidden = !name;
  if (!name) return;
  $('step-detail-name').textContent = name;
  const s = timeline.seconds;
  const pick = (f) => (q) => (q.steps && q.steps[name] ? q.steps[name][f] : undefined);
  const rps = [{ name: 'req/s', pts: series(s, pick('count')), color: PALETTE[0] }];
  if (pado.baseline) {
    rps.push({ name: 'req/s (baseline)', pts: series(pado.baseline.seconds || [], pick('count')), color: PALETTE[0], dashed: true });
  }
  chart('chart-step-rps', { unit: 'req/s' }).draw({ xmax: xmax(), marks: marks(), lines: rps });
  const lat = [
    { name: 'p50', pts: series(s, pick('p50_ms')), color: PALETTE[4] },
    { name: 'p95', pts: series(s, pick('p95_ms')), color: PALETTE[1] },
    { name: 'p99', pts: series(s, pick('p99_ms')), color: PALETTE[2] },
  ];
  if (pado.baseline) {
    lat.push({ name: 'p95 (baseline)', pts: series(pado.baseline.seconds || [], pick('p95_ms')), color: PALETTE[1], dashed: true });
  }
  chart('chart-step-latency', { unit: 'ms' }).draw({ xmax: xmax(), marks: marks(), lines: lat });
}

function renderThresholds() {
  const live = (pado.state && pado.state.thresholds) || null;
  const list = live || (pado.run.thresholds || []).map((t) => ({ ...t, pass: null, value: null }));
  $('no-thresholds').hidden = list.length > 0;
  $('table-thresholds').hidden = list.length === 0;
  const body = $('table-thresholds').querySelector('tbody');
  body.textContent = '';
  for (const t of list) {
    const tr = document.createElement('tr');
    td(tr, t.metric || '', 'name');
    td(tr, t.expression || '', 'expr');
    const verdict = t.pass === true ? 'pass' : t.pass === false ? 'fail' : 'not judged yet';
    td(tr, verdict, 'verdict ' + (t.pass === true ? 'ok' : t.pass === false ? 'bad' : ''));
    td(tr, Number.isFinite(t.value) ? fmt.value(t.value) : '–', 'n', t.value);
    body.appendChild(tr);
  }
}

function renderTabs() {
  const st = pado.state || {};
  const failures = st.failures || [];
  $('failures-count').textContent = failures.length ? `(${failures.length})` : '';
  $('no-failures').hidden = failures.length > 0;
  let body = $('table-failures').querySelector('tbody');
  body.textContent = '';
  for (const f of failures) {
    const tr = document.createElement('tr');
    td(tr, f.category || '', 'name');
    td(tr, fmt.clock(f.first_s || 0), 'n', f.first_s);
    td(tr, fmt.clock(f.last_s || 0), 'n', f.last_s);
    td(tr, fmt.thousands(f.count || 0), 'n', f.count);
    const cell = td(tr, '', 'samples');
    for (const sample of (f.samples || []).slice(0, 5)) {
      const div = document.createElement('div');
      div.textContent = sampleText(sample);
      cell.appendChild(div);
    }
    body.appendChild(tr);
  }
  const events = st.events || [];
  $('events-count').textContent = events.length ? `(${events.length})` : '';
  body = $('table-events').querySelector('tbody');
  body.textContent = '';
  for (const ev of events) {
    const tr = document.createElement('tr');
    td(tr, fmt.clock(ev.t_s || 0), 'n', ev.t_s);
    td(tr, ev.kind || '', 'kind');
    td(tr, ev.what || '', 'what');
    body.appendChild(tr);
  }
  const gens = generatorShares(st.generators || []);
  const names = keysOf(timeline.seconds, 'generators');
  const distributed = !!pado.run.distributed || gens.length > 0 || names.length > 0;
  $('tab-generators').hidden = !distributed;
  // Each generator's requests in every second of the run (the seconds carry
  // them, so a reload draws the whole history).
  if (distributed) {
    chart('chart-generators', { int: true, unit: 'req/s' }).draw({
      xmax: xmax(),
      marks: marks(),
      lines: names.map((name, i) => ({
        name,
        pts: series(timeline.seconds, (q) => (q.generators && q.generators[name] ? q.generators[name].requests : undefined)),
        color: PALETTE[(i + 1) % PALETTE.length],
      })),
    });
  }
  body = $('table-generators').querySelector('tbody');
  body.textContent = '';
  for (const g of gens) {
    const tr = document.createElement('tr');
    td(tr, g.name || '', 'name');
    td(tr, g.segment || '–');
    td(tr, fmt.thousands(g.requests || 0), 'n', g.requests);
    td(tr, g.share === null ? '–' : fmt.percent2(g.share), 'n', g.share);
    td(tr, Number.isFinite(g.cpu_pct) ? `${Math.round(g.cpu_pct)}%` : '–', 'n', g.cpu_pct);
    td(tr, g.reporting === false ? 'no' : 'yes', g.reporting === false ? 'bad' : 'ok');
    body.appendChild(tr);
  }
}

function showTab(name) {
  for (const b of document.querySelectorAll('.tabs button')) b.classList.toggle('active', b.dataset.tab === name);
  $('tab-failures').hidden = name !== 'failures';
  $('tab-events').hidden = name !== 'events';
  $('tab-generators-panel').hidden = name !== 'generators';
}

function renderEnded() {
  const st = pado.state;
  const ended = !!(st && st.ended);
  $('ended').hidden = !ended;
  if (!ended) return;
  const sum = st.summary || {};
  const dl = $('summary');
  dl.textContent = '';
  const lat = sum.latency_ms || {};
  const facts = [
    ['duration', Number.isFinite(sum.duration_s) ? fmt.duration(sum.duration_s) : null],
    ['requests', Number.isFinite(sum.requests) ? fmt.thousands(sum.requests) : null],
    ['failed', Number.isFinite(sum.failed) ? fmt.thousands(sum.failed) : null],
    ['req/s', Number.isFinite(sum.rps) ? fmt.rate(sum.rps) : null],
    ['p50', Number.isFinite(lat.p50) ? fmt.ms(lat.p50) + ' ms' : null],
    ['p95', Number.isFinite(lat.p95) ? fmt.ms(lat.p95) + ' ms' : null],
    ['p99', Number.isFinite(lat.p99) ? fmt.ms(lat.p99) + ' ms' : null],
    ['max', Number.isFinite(lat.max) ? fmt.ms(lat.max) + ' ms' : null],
    ['thresholds', sum.thresholds_ok === true ? 'passed' : sum.thresholds_ok === false ? 'FAILED' : null],
  ];
  for (const [k, v] of facts) {
    if (v === null) continue;
    const div = document.createElement('div');
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    dd.dataset.key = k;
    div.append(dt, dd);
    dl.appendChild(div);
  }
  const ul = $('verdict');
  ul.textContent = '';
  for (const line of Array.isArray(sum.verdict) ? sum.verdict : []) {
    const li = document.createElement('li');
    li.textContent = String(line);
    ul.appendChild(li);
  }
  const files = $('files');
  files.textContent = '';
  for (const f of st.files || []) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.textContent = f.name;
    a.href = f.url;
    a.target = '_blank';
    a.rel = 'noopener';
    li.appendChild(a);
    files.appendChild(li);
  }
}

// ------------------------------------------------------------------ control

function renderControl() {
  const run = pado.run;
  const st = pado.state || {};
  // After the end there is nothing to steer: the summary takes the panel's place.
  $('control').hidden = !!st.ended;
  const can = !!run.control && !!token && !st.ended;
  $('control-panel').hidden = !can;
  const note = $('control-readonly');
  note.hidden = can;
  const how = 'Open the address pado printed at start (it ends in #token=…), or add #token=<token> to this address.';
  if (st.ended) note.textContent = 'The run has ended.';
  else if (!token) note.textContent = `Read-only: this page has no control token. ${how}`;
  else note.textContent = `Read-only: pado did not accept this page's token. ${how}`;
  if (!can) return;
  $('btn-pause').disabled = !!st.paused || !!st.stopping;
  $('btn-resume').disabled = !st.paused || !!st.stopping;
  const kinds = loadKinds(run.scenarios);
  $('form-vus').hidden = !kinds.closed;
  $('form-rate').hidden = !kinds.open;
  // The plan's most bounds the input; the current cap (a change made earlier) is shown.
  const most = maxVus(run.scenarios);
  if (most) $('in-vus').max = String(most);
  const now = Number.isFinite(st.vu_cap) ? `now at most ${fmt.thousands(st.vu_cap)}; ` : '';
  $('vu-cap').textContent = most ? `${now}the plan's most: ${fmt.thousands(most)}` : now;
}

/** The most VUs a closed-model scenario of the plan has (what `set_vus` accepts). */
function maxVus(scenarios) {
  let m = 0;
  for (const s of scenarios || []) if (!s.open_model && Number.isFinite(s.max_vus)) m = Math.max(m, s.max_vus);
  return m || null;
}

/** The command in words, for the line under the panel. */
function describe(cmd) {
  const ramp = (r) => (r > 0 ? ` over ${r} s` : ' at once');
  switch (cmd.action) {
    case 'pause': return 'paused: no new iterations start';
    case 'resume': return 'resumed';
    case 'set_vus': return `VUs set to ${cmd.vus}${ramp(cmd.ramp_s)}`;
    case 'set_rate': return `rate set to ${cmd.per_s} req/s${ramp(cmd.ramp_s)}`;
    case 'next_stage': return 'moved on to the next stage';
    case 'hold': return `holding the current level ${cmd.seconds} s more`;
    case 'stop': return 'stopping: in-flight requests finish, then the result is written';
    default: return cmd.action;
  }
}

async function control(cmd) {
  const out = $('control-result');
  out.className = 'result';
  out.textContent = 'sending…';
  let res;
  try {
    res = await fetch('/api/control', {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(cmd),
    });
  } catch (e) {
    return said(0, `pado did not answer (${e.message}); the change was not made.`);
  }
  let body = null;
  try {
    body = await res.json();
  } catch (e) {
    body = null;
  }
  if (res.ok) {
    if (body && body.state) pado.state = body.state;
    schedule();
    return said(res.status, `Done: ${describe(cmd)}.`);
  }
  const why = body && body.error ? body.error : res.statusText;
  if (res.status === 401) {
    return said(401, 'pado refused the token (401): open the address pado printed at start, which ends in #token=….');
  }
  if (res.status === 403) {
    return said(403, `pado refused a request from this page (403): open the dashboard at the address pado printed. ${why}`);
  }
  if (res.status === 409) return said(409, `The run refused the change: ${why}`);
  if (res.status === 400) return said(400, `pado did not understand the change: ${why}`);
  return said(res.status, `pado answered ${res.status}: ${why}`);
}

function said(status, message) {
  pado.lastControl = { status, message };
  const out = $('control-result');
  out.className = 'result ' + (status >= 200 && status < 300 ? 'ok' : 'bad');
  out.textContent = message;
  return pado.lastControl;
}

function number(id) {
  const v = $(id).value.trim();
  return v === '' ? 0 : Number(v);
}

function wireControls() {
  $('btn-pause').addEventListener('click', () => control({ action: 'pause' }));
  $('btn-resume').addEventListener('click', () => control({ action: 'resume' }));
  $('btn-next-stage').addEventListener('click', () => control({ action: 'next_stage' }));
  $('btn-stop').addEventListener('click', () => {
    if (window.confirm('Stop the run now? In-flight requests finish and the result is written.')) control({ action: 'stop' });
  });
  $('form-vus').addEventListener('submit', (ev) => {
    ev.preventDefault();
    control({ action: 'set_vus', vus: Math.round(number('in-vus')), ramp_s: number('in-vus-ramp') });
  });
  $('form-rate').addEventListener('submit', (ev) => {
    ev.preventDefault();
    control({ action: 'set_rate', per_s: number('in-rate'), ramp_s: number('in-rate-ramp') });
  });
  $('form-hold').addEventListener('submit', (ev) => {
    ev.preventDefault();
    control({ action: 'hold', seconds: number('in-hold') });
  });
  for (const b of document.querySelectorAll('.tabs button')) b.addEventListener('click', () => showTab(b.dataset.tab));
}

/**
 * The control token: from the address's fragment (`#token=…`, never sent to the
 * server in a URL), kept in this tab's sessionStorage so a reload keeps control,
 * and taken out of the address bar so a copied address does not carry it.
 */
function readToken() {
  const fromHash = tokenFromHash(window.location.hash);
  if (fromHash) {
    try {
      sessionStorage.setItem(TOKEN_KEY, fromHash);
    } catch (e) {
      // Storage refused (a private window): the token lives for this page only.
    }
    history.replaceState(null, '', window.location.pathname + window.location.search);
    return fromHash;
  }
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch (e) {
    return null;
  }
}

// ------------------------------------------------------------------ start

async function start() {
  token = readToken();
  wireControls();
  try {
    // With the token, `control` says whether pado accepts it (the page then steers).
    pado.run = await getJSON('/api/run', true);
  } catch (e) {
    setConnection('down');
    return;
  }
  if (pado.run.baseline) {
    try {
      pado.baseline = await getJSON('/api/baseline');
      const b = pado.run.baseline;
      const note = $('baseline-note');
      note.textContent = `Dashed lines: ${b.label || 'baseline'} (run ${b.run_id || '?'}), at the same second of its run.`;
      note.hidden = false;
    } catch (e) {
      pado.baseline = null;
    }
  }
  try {
    await catchUp();
    await refreshState();
  } catch (e) {
    setConnection('down');
  }
  render();
  if (pado.state && pado.state.ended) finish();
  else openStream();
}

window.addEventListener('resize', schedule);
start();
