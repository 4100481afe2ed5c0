// Source: https://grafana.com/docs/k6/latest/using-k6/thresholds/ ("Thresholds example for HTTP errors and response duration")
// Adapted: only the target URL (__ENV.BASE_URL).
import http from 'k6/http';

export const options = {
  thresholds: {
    http_req_failed: ['rate<0.01'], // http errors should be less than 1%
    http_req_duration: ['p(95)<200'], // 95% of requests should be below 200ms
  },
};

export default function () {
  http.get(__ENV.BASE_URL);
}
