// One custom metric of each kind with planted values, for the live outputs; 1
// VU, 6 iterations (__ITER 0..5) of about 0.3 s, so the run spans seconds.
import http from "k6/http";
import { sleep } from "k6";
import { Counter, Gauge, Rate, Trend } from "k6/metrics";

const orders = new Counter("주문"); // 2 per iteration, tagged 단계=결제: 12
const queue = new Gauge("queue_depth"); // 1..6: last 6
const ok = new Rate("ok_rate"); // false at __ITER 0 and 3: 4 of 6
const wait = new Trend("wait_time", true); // 10..60 ms: count 6, sum 210 ms

export const options = { vus: 1, iterations: 6 };

export default function () {
  http.get(`${__ENV.BASE}/json/item`);
  orders.add(2, { 단계: "결제" });
  queue.add(__ITER + 1);
  ok.add(__ITER % 3 !== 0);
  wait.add((__ITER + 1) * 10);
  sleep(0.3);
}
