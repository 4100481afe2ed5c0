// Every VU's init code takes INIT_MS of wall time (a busy wait); each VU makes
// two requests, the second built once the first is answered and saying when.
// With one worker, pado makes the VUs' contexts one after another: a VU made
// early must get its answers while the later VUs are still being made, not
// only once all are (e2e `k6_start`).
import http from 'k6/http';

const made = Date.now();
while (Date.now() - made < Number(__ENV.INIT_MS)) {
  // the init stage's own work
}

export const options = {
  scenarios: {
    once: { executor: 'per-vu-iterations', vus: Number(__ENV.VUS), iterations: 1 },
  },
};

export default function () {
  http.get(`${__ENV.BASE}/first?vu=${__VU}&made=${made}`);
  http.get(`${__ENV.BASE}/second?vu=${__VU}&at=${Date.now()}`);
}
