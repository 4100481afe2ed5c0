// Source: https://github.com/grafana/k6/blob/master/examples/http_get.js
// Adapted: only the target URL (__ENV.BASE_URL instead of the public test site).
import http from 'k6/http';

export default function () {
  http.get(__ENV.BASE_URL);
};
