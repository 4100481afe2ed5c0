// The same checks as login_items.js with a threshold they cannot meet: the
// run must fail it (2 of 3 checks hold, 0.667 < 0.9).
import http from "k6/http";
import { check } from "k6";

export const options = {
  vus: 1,
  iterations: 4,
  thresholds: { checks: ["rate>0.9"] },
};

export default function () {
  const res = http.get(`${__ENV.BASE}/json/item`);
  check(res, {
    "is 201": (r) => r.status === 201,
    "has an id": (r) => r.json("id") > 0,
    "is 200 (never)": (r) => r.status === 200,
  });
}
