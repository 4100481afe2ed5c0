// Source: https://github.com/grafana/k6/blob/master/examples/http_batch.js
// Adapted: only the target URL (__ENV.BASE_URL instead of https://quickpizza.grafana.com).
import { check } from 'k6';
import http from 'k6/http';

export default function() {
  const responses = http.batch([
    `${__ENV.BASE_URL}/test.k6.io`,
    `${__ENV.BASE_URL}/pi.php`
  ]);

  check(responses[0], {
    "main page 200": res => res.status === 200,
  });

  check(responses[1], {
    "pi page 200": res => res.status === 200,
    "pi page has right content": res => res.body === "3.14",
  });
};
