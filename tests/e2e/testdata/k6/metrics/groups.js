// group_duration per group path, and the group's requests tagged with it.
// 1 VU, 3 iterations; `login` waits 100 ms on the server, `browse` does not.
import http from "k6/http";
import { group } from "k6";

export const options = {
  vus: 1,
  iterations: 3,
  thresholds: {
    "group_duration{group:::login}": ["min>=95", "avg<50"],
    "group_duration{group:::browse}": ["max<90"],
    "group_duration{group:::browse::상세}": ["max<90"],
    "http_req_duration{group:::login}": ["min>=95"],
    "http_reqs{group:::browse::상세}": ["count==3"],
  },
};

export default function () {
  group("login", function () {
    http.get(`${__ENV.BASE}/delay/100`);
  });
  group("browse", function () {
    http.get(`${__ENV.BASE}/json/item`);
    group("상세", function () {
      http.get(`${__ENV.BASE}/json/item`);
    });
  });
}
