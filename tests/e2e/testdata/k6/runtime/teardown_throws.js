// Three iterations, then teardown() sends one request and throws: k6 exits 107.
import http from 'k6/http';

export const options = { vus: 1, iterations: 3 };

export default function () {
  http.get(`${__ENV.BASE}/iteration`);
}

export function teardown() {
  http.get(`${__ENV.BASE}/teardown`);
  throw new Error('teardown broke');
}
