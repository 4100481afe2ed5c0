// k6/metrics: custom metrics. pado records them per second with the run.
const P = globalThis.__pado;

class Metric {
  constructor(name, kind, isTime) {
    if (typeof name !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new Error("invalid metric name: " + name);
    }
    this.name = name;
    this.kind = kind;
    this.isTime = !!isTime;
  }
  add(value, tags) {
    P.metric(this.name, this.kind, Number(value));
  }
}

export class Counter extends Metric { constructor(n) { super(n, "counter"); } }
export class Gauge extends Metric { constructor(n, t) { super(n, "gauge", t); } }
export class Rate extends Metric {
  constructor(n) { super(n, "rate"); }
  add(value, tags) { P.metric(this.name, "rate", value ? 1 : 0); }
}
export class Trend extends Metric { constructor(n, t) { super(n, "trend", t); } }

export default { Counter, Gauge, Rate, Trend };
