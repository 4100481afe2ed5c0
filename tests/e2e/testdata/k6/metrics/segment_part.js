// One part of a test split in two (the test runs it twice, `-e PART=0` and
// `-e PART=1`, then merges): part 0 adds 10..50 to the trend and 1 per
// iteration to the counter, part 1 adds 60..100 and 2.
import http from "k6/http";
import { Counter, Trend } from "k6/metrics";

const trend = new Trend("part_trend");
const counter = new Counter("part_counter");

export const options = { vus: 1, iterations: 5 };

export default function () {
  const part = Number(__ENV.PART);
  http.get(`${__ENV.BASE}/json/item`);
  trend.add(part * 50 + (__ITER + 1) * 10);
  counter.add(part + 1);
}
