// What the page knows of the run, as plain data: the closed seconds in order (each
// once, whatever mix of stream, polling and reload delivered them), the series the
// charts draw, the per-step table's rows, the self-check light. Pure functions, no
// DOM, so Node's test runner checks them with planted seconds (testing/browser/unit/).

/**
 * Every closed second of the run, kept in order of `t` and each once: the stream
 * and the `/api/seconds?from=` catch-up may both deliver a second, and a reload
 * starts again from second 0.
 */
export class Timeline {
  constructor() {
    /** The seconds in order of `t`. */
    this.seconds = [];
  }

  /** The `t` of the next second the page has not seen (what `?from=` asks for). */
  get next() {
    const n = this.seconds.length;
    return n === 0 ? 0 : this.seconds[n - 1].t + 1;
  }

  /**
   * Adds seconds (any order, duplicates allowed). Returns how many were new, and
   * whether a second is missing before the newest (the stream skipped some: the
   * caller then asks `/api/seconds?from=` for the hole).
   */
  add(list) {
    let added = 0;
    for (const s of list || []) {
      if (!s || !Number.isFinite(s.t)) continue;
      const n = this.seconds.length;
      if (n === 0 || s.t > this.seconds[n - 1].t) {
        this.seconds.push(s);
        added++;
        continue;
      }
      // Older than the newest: insert in place unless already held.
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.seconds[mid].t < s.t) lo = mid + 1;
        else hi = mid;
      }
      if (this.seconds[lo].t !== s.t) {
        this.seconds.splice(lo, 0, s);
        added++;
      }
    }
    return { added, gap: this.hasGap() };
  }

  /** Whether some second between the first held and the newest is missing. */
  hasGap() {
    const n = this.seconds.length;
    if (n === 0) return false;
    return this.seconds[0].t !== 0 || this.seconds[n - 1].t - this.seconds[0].t + 1 !== n;
  }
}

/** `[[t, value]…]` of the seconds where `pick(second)` is a number. */
export function series(seconds, pick) {
  const out = [];
  for (const s of seconds) {
    const v = pick(s);
    if (typeof v === 'number' && Number.isFinite(v)) out.push([s.t, v]);
  }
  return out;
}

/** The names a map field (`errors`, `observed`, `steps`) takes over the run, sorted. */
export function keysOf(seconds, field) {
  const set = new Set();
  for (const s of seconds) {
    const m = s[field];
    if (m && typeof m === 'object') for (const k of Object.keys(m)) set.add(k);
  }
  return [...set].sort();
}

/**
 * One row per step for the table: requests and failures over the whole run, the
 * newest second's rate and percentiles (what the step does now), checks over the
 * run; with a baseline, the baseline run's req/s and p95 at the same second.
 */
export function stepRows(seconds, names, baseline) {
  const all = new Set(names || []);
  for (const k of keysOf(seconds, 'steps')) all.add(k);
  const byT = new Map();
  for (const s of baseline || []) byT.set(s.t, s);
  const rows = [];
  for (const name of all) {
    const row = {
      name,
      count: 0,
      failures: 0,
      rps: null,
      p50_ms: null,
      p95_ms: null,
      p99_ms: null,
      max_ms: null,
      checks_passed: 0,
      checks_failed: 0,
      last_t: null,
      baseline_rps: null,
      baseline_p95_ms: null,
    };
    for (const s of seconds) {
      const st = s.steps && s.steps[name];
      if (!st) continue;
      row.count += st.count || 0;
      row.failures += st.failures || 0;
      row.checks_passed += st.checks_passed || 0;
      row.checks_failed += st.checks_failed || 0;
      if (typeof st.max_ms === 'number' && (row.max_ms === null || st.max_ms > row.max_ms)) {
        row.max_ms = st.max_ms;
      }
      row.last_t = s.t;
      row.rps = st.count || 0;
      row.p50_ms = num(st.p50_ms);
      row.p95_ms = num(st.p95_ms);
      row.p99_ms = num(st.p99_ms);
    }
    if (row.last_t !== null && byT.has(row.last_t)) {
      const b = byT.get(row.last_t).steps;
      const bs = b && b[name];
      if (bs) {
        row.baseline_rps = bs.count || 0;
        row.baseline_p95_ms = num(bs.p95_ms);
      }
    }
    rows.push(row);
  }
  return rows;
}

function num(v) {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * The generator self-check as a light, with pado's summary's meaning: red when a
 * worker was busy (pado may be the bottleneck: the figures may describe pado),
 * amber when pado was only delayed (it waited for a CPU or woke late: the timings
 * may carry that delay, the load still went out), green when it kept up, grey
 * before the first second. A second's check says which by its note (pado's own
 * words), or by `busy` when the server sends it.
 */
export function selfCheckLight(check) {
  if (!check || typeof check !== 'object') return { level: 'unknown', note: 'not measured yet' };
  const note = check.note || '';
  if (check.ok !== false) return { level: 'green', note: note || 'pado keeps up' };
  const busy = check.busy === true || /bottleneck/i.test(note);
  return busy
    ? { level: 'red', note: note || 'pado may be the bottleneck' }
    : { level: 'amber', note: note || 'pado was delayed by other work on this machine' };
}

/** The run's state in one word: ended, stopping, paused or running. */
export function runStatus(state) {
  if (!state) return 'starting';
  if (state.ended) return 'ended';
  if (state.stopping) return 'stopping';
  if (state.paused) return 'paused';
  return 'running';
}

/** Each generator's share of the requests in its last second (0–1), by name. */
export function generatorShares(gens) {
  const total = (gens || []).reduce((a, g) => a + (g.requests || 0), 0);
  return (gens || []).map((g) => ({ ...g, share: total > 0 ? (g.requests || 0) / total : null }));
}

/**
 * The bottleneck line over the target's charts: once the run has ended, the
 * report's table (`state.bottleneck`, summary.json's limit); while it goes, the
 * live hint (`state.bottleneck_hint`): a likely limit with its evidence and how
 * sure pado is, "no limit seen yet", or what data it still waits for. `level`:
 * `limit`, `none`, `waiting` (styles), or null when there is nothing to say.
 */
export function bottleneckLine(state) {
  if (!state) return { text: '', level: null };
  const h = state.bottleneck_hint;
  if (state.ended && state.bottleneck) return { text: `Bottleneck (the report's table): ${state.bottleneck}`, level: 'limit' };
  if (h && h.status === 'limit' && h.component) {
    const c = h.component;
    const over = h.window && h.window.label ? `, over ${h.window.label}` : '';
    return {
      text: `Likely limit: ${c.component} (${c.endpoint}): ${c.state}; ${c.evidence} · confidence ${h.confidence || '?'}${over}`,
      level: 'limit',
    };
  }
  if (h && h.status === 'no_limit') return { text: `No limit seen yet${h.window && h.window.label ? ` over ${h.window.label}` : ''}: nothing the target's metrics show is full`, level: 'none' };
  if (h && h.status === 'waiting') return { text: `Bottleneck hint: ${h.text || 'waiting for data'}`, level: 'waiting' };
  if (state.bottleneck) return { text: `Bottleneck now: ${state.bottleneck}`, level: 'limit' };
  return { text: '', level: null };
}

/** Which load a control panel offers: VUs (closed model), a rate (open model), or both. */
export function loadKinds(scenarios) {
  let open = false;
  let closed = false;
  for (const s of scenarios || []) {
    if (s.open_model) open = true;
    else closed = true;
  }
  return { open, closed };
}

/** The token from a URL fragment `#token=…` (also among other `&`-joined pairs), or null. */
export function tokenFromHash(hash) {
  const h = (hash || '').replace(/^#/, '');
  for (const part of h.split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq) === 'token') {
      const v = decodeURIComponent(part.slice(eq + 1));
      return v.length ? v : null;
    }
  }
  return null;
}

/**
 * A failed request's sample (a `failures.jsonl` line) in one line a person reads:
 * `s3 · login: GET /json/login → 200 · check login: $.token == "tok-1" got "tok-2" · body …`.
 */
export function sampleText(x) {
  if (typeof x === 'string') return x;
  if (!x || typeof x !== 'object') return String(x);
  const parts = [];
  if (Number.isFinite(x.second)) parts.push(`s${x.second}`);
  let req = [x.method, x.url].filter(Boolean).join(' ');
  if (Number.isFinite(x.status) && x.status > 0) req += ` → ${x.status}`;
  parts.push([x.step ? `${x.step}:` : '', req].filter(Boolean).join(' '));
  if (x.check) parts.push(`check ${x.check} ${x.actual || ''}`.trim());
  if (x.reason) parts.push(x.reason);
  if (x.body) parts.push(`body ${x.body}`);
  return parts.filter(Boolean).join(' · ');
}
