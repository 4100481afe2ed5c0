// setup() sends one request, then throws: k6 stops the test (exit 107), no
// iteration runs and teardown() does not run.
import http from 'k6/http';

export const options = { vus: 2, iterations: 4 };

export function setup() {
  http.get(`${__ENV.BASE}/setup`);
  throw new Error('setup broke 파도');
}

export default function () {
  http.get(`${__ENV.BASE}/iteration`);
}

export function teardown() {
  http.get(`${__ENV.BASE}/teardown`);
}
