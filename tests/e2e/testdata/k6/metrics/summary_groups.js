// Checks at the root and in nested groups (the same name at the root and in a
// group stays two checks), a group without checks, and a custom trend; 1 VU, 4
// iterations (__ITER 0..3). handleSummary writes k6's `data` to __ENV.OUT.
import http from "k6/http";
import { check, group } from "k6";
import { Trend } from "k6/metrics";

const wait = new Trend("wait_ms"); // 0, 10, 20, 30: avg 15, count 4

export const options = {
  vus: 1,
  iterations: 4,
  summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99.9)", "count"],
};

export default function () {
  const r = http.get(`${__ENV.BASE}/json/item`);
  check(r, { "status 201": (x) => x.status === 201 }); // ::status 201: 4 / 0
  check(null, { "odd iteration": () => __ITER % 2 === 1 }); // 2 / 2
  group("login", () => {
    check(null, { "status 201": () => true }); // ::login::status 201: 4 / 0
    group("토큰", () => {
      check(null, { "first two": () => __ITER < 2 }); // ::login::토큰::first two: 2 / 2
    });
  });
  group("empty", () => {}); // listed, with no checks
  wait.add(__ITER * 10);
}

export function handleSummary(data) {
  return { [__ENV.OUT]: JSON.stringify(data) };
}
