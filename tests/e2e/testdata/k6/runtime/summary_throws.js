// handleSummary throws: k6 says so, prints its own summary and exits 0.
import http from 'k6/http';

export default function () {
  http.get(`${__ENV.BASE}/`);
}

export function handleSummary(data) {
  throw new Error('summary broke');
}
