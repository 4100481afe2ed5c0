// Source: https://grafana.com/docs/k6/latest/results-output/end-of-test/custom-summary/ ("About handleSummary()")
// Adapted: only the target URL (__ENV.BASE_URL instead of https://test.k6.io).
import http from 'k6/http';

export default function () {
  http.get(__ENV.BASE_URL);
}

export function handleSummary(data) {
  return {
    'summary.json': JSON.stringify(data), //the default data object
  };
}
