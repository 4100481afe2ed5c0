// Thresholds on the tags a script sets: `params.tags`, `options.tags`, a
// scenario's `tags`, `--tag` (given by the test: team=파도), on built-in and
// custom metrics. 1 iteration: 2 API requests (100 ms on the server), 2 static.
import http from "k6/http";
import { check } from "k6";
import { Trend } from "k6/metrics";

const work = new Trend("work");

export const options = {
  tags: { env: "staging" },
  scenarios: {
    main: {
      executor: "per-vu-iterations",
      vus: 1,
      iterations: 1,
      tags: { flow: "구매" },
    },
  },
  thresholds: {
    "http_req_duration{type:API}": ["min>=95"],
    "http_req_duration{type:static}": ["max<90", "min>=95"],
    "http_reqs{type:API}": ["count==2"],
    "http_reqs{status:200}": ["count==2"], // /delay answers 200, /json/item 201
    "http_reqs{status:201}": ["count==2"],
    "http_reqs{env:staging}": ["count==4"],
    "http_reqs{flow:구매}": ["count==4"],
    "http_reqs{team:파도}": ["count==4"],
    "http_reqs{type:static}": ["count==3"],
    "work{kind:읽기}": ["max==5"],
    "work{kind:쓰기}": ["max==7"],
    "work{team:파도}": ["max==7"],
    "checks{mytag:x}": ["rate==0.5", "rate>0.9"], // one of its two checks holds
    "checks{team:파도}": ["rate==0.5"],
  },
};

export default function () {
  const res = http.get(`${__ENV.BASE}/delay/100`, { tags: { type: "API" } });
  check(
    res,
    { "is 200": (r) => r.status === 200, "is 201": (r) => r.status === 201 },
    { mytag: "x" }
  );
  http.get(`${__ENV.BASE}/delay/100`, { tags: { type: "API", name: "api2" } });
  http.batch([
    ["GET", `${__ENV.BASE}/json/item`, null, { tags: { type: "static" } }],
    ["GET", `${__ENV.BASE}/json/item`, null, { tags: { type: "static" } }],
  ]);
  work.add(5, { kind: "읽기" });
  work.add(7, { kind: "쓰기" });
}
