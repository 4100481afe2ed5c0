// A counter's threshold with abortOnFail stops a run that would last 20 s: the
// counter passes 3 within the first iterations.
import http from "k6/http";
import { sleep } from "k6";
import { Counter } from "k6/metrics";

const errors = new Counter("planted_errors");

export const options = {
  vus: 1,
  duration: "20s",
  thresholds: {
    planted_errors: [{ threshold: "count<3", abortOnFail: true }],
  },
};

export default function () {
  http.get(`${__ENV.BASE}/json/item`);
  errors.add(1);
  sleep(0.1);
}
