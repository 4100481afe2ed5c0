// Source: https://grafana.com/docs/k6/latest/using-k6/checks/ ("Check for text in response body")
// Adapted: only the target URL (__ENV.BASE_URL).
import { check } from 'k6';
import http from 'k6/http';

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/`);
  check(res, {
    'verify homepage text': (r) =>
      r.body.includes('Collection of simple web-pages suitable for load testing'),
  });
}
