// The third iteration (iterationInTest 2) aborts the test: k6 exits 108, the
// aborting iteration counts (3 in all), teardown still runs.
import http from 'k6/http';
import exec from 'k6/execution';

export const options = { vus: 1, iterations: 5 };

export default function () {
  http.get(`${__ENV.BASE}/iteration`);
  if (exec.scenario.iterationInTest === 2) {
    exec.test.abort('enough rows');
  }
  http.get(`${__ENV.BASE}/after-abort-check`);
}

export function teardown() {
  http.get(`${__ENV.BASE}/teardown`);
}
