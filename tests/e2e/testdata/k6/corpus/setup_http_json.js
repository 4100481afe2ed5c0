// Source: https://grafana.com/docs/k6/latest/using-k6/test-lifecycle/ ("Setup and teardown stages": setup making a request)
// Adapted: only the target URL (__ENV.BASE_URL).
import http from 'k6/http';

export function setup() {
  const res = http.get(`${__ENV.BASE_URL}/api/json`);
  return { data: res.json() };
}

export function teardown(data) {
  console.log(JSON.stringify(data));
}

export default function (data) {
  console.log(JSON.stringify(data));
}
