// A summaryTrendStats entry k6 refuses at start ("p95" is not p(95)).
import http from "k6/http";

export const options = { vus: 1, iterations: 1, summaryTrendStats: ["avg", "p95"] };

export default function () {
  http.get(`${__ENV.BASE}/json/item`);
}
