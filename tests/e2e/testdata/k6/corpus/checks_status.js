// Source: https://grafana.com/docs/k6/latest/using-k6/checks/ ("Check for HTTP response code")
// Adapted: only the target URL (__ENV.BASE_URL).
import { check } from 'k6';
import http from 'k6/http';

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/`);
  check(res, {
    'is status 200': (r) => r.status === 200,
  });
}
