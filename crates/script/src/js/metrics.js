// k6/metrics: a script's own metrics, recorded by pado per second with the run
// (in the timeline, summary.json, thresholds, reports and merges).
const P = globalThis.__pado;

// The tags of an add: the test's (options, scenario, --tag), the group's, the
// add's own. `undefined` when there are none, so a plain add carries nothing.
export function tagsOf(own) {
  const test = P.tags;
  const group = globalThis.__pado_group;
  let out;
  if (test) for (const k in test) (out = out || {})[k] = test[k];
  if (group) (out = out || {}).group = group;
  if (own) for (const k in own) (out = out || {})[k] = String(own[k]);
  return out;
}

// k6 adds booleans as 1 and 0.
function num(v) {
  return typeof v === "boolean" ? (v ? 1 : 0) : Number(v);
}

function send(id, value, own) {
  const t = tagsOf(own);
  if (t === undefined) P.metric(id, value);
  else P.metric(id, value, t);
}

class Metric {
  constructor(name, kind, isTime) {
    this.name = String(name);
    this.type = kind;
    this.isTime = !!isTime;
    // Checked (k6's name rule, one kind per name) and numbered for the run.
    this._id = P.metricId(this.name, kind, this.isTime);
  }
  add(value, tags) {
    send(this._id, num(value), tags);
    return true;
  }
}

export class Counter extends Metric {
  constructor(n) { super(n, "counter", false); }
}
export class Gauge extends Metric {
  constructor(n, t) { super(n, "gauge", t); }
}
export class Rate extends Metric {
  constructor(n) { super(n, "rate", false); }
  add(value, tags) {
    send(this._id, value ? 1 : 0, tags);
    return true;
  }
}
export class Trend extends Metric {
  constructor(n, t) { super(n, "trend", t); }
}

export default { Counter, Gauge, Rate, Trend };
