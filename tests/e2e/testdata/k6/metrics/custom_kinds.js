// Each kind of custom metric with planted values, and a threshold on each that
// must pass and one that must fail. 1 VU, 5 iterations: __ITER is 0..4 in order.
import http from "k6/http";
import { Counter, Gauge, Rate, Trend } from "k6/metrics";

const latency = new Trend("지연시간", true); // Hangul: pado takes it (k6 does not)
const counter = new Counter("my_counter");
const rate = new Rate("my_rate");
const gauge = new Gauge("my_gauge");

export const options = {
  vus: 1,
  iterations: 5,
  thresholds: {
    "지연시간": ["p(95)<1000", "avg<20"], // values 10..50: avg 30
    my_counter: ["count>10", "count>100"], // 3 per iteration: 15
    my_rate: ["rate>0.5", "rate>0.9"], // 4 of 5 non-zero: 0.8
    my_gauge: ["value<5", "max<9"], // 7, 9, 4, 8, 3: last 3, max 9
  },
};

export default function () {
  http.get(`${__ENV.BASE}/json/item`);
  latency.add((__ITER + 1) * 10);
  counter.add(1);
  counter.add(2);
  rate.add(__ITER !== 2);
  gauge.add([7, 9, 4, 8, 3][__ITER]);
}
