// The k6 script (bench/k6script.sh runs it with k6 and with `pado run`):
// a login, three requests with checks, and a custom Trend, against pado's demo
// target. VUS, DURATION and THINK (seconds between iterations) come from the
// environment so the same file serves the throughput and the memory phases.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Trend } from 'k6/metrics';

const BASE = __ENV.BASE_URL;
const journey = new Trend('journey', true);

export const options = {
  vus: Number(__ENV.VUS || 10),
  duration: __ENV.DURATION || '10s',
};

export default function () {
  const started = Date.now();
  const login = http.post(
    `${BASE}/api/login`,
    JSON.stringify({ user: `user${__VU}`, password: 'pw' }),
    { headers: { 'Content-Type': 'application/json' } },
  );
  check(login, { 'login is 200': (r) => r.status === 200 });
  const auth = { headers: { Authorization: `Bearer ${login.json('token')}` } };
  check(http.get(`${BASE}/api/posts?page=0&size=10`, auth), {
    'list is 200': (r) => r.status === 200,
  });
  check(http.get(`${BASE}/api/search?q=pado`, auth), {
    'search is 200': (r) => r.status === 200,
  });
  check(http.get(`${BASE}/api/posts/1`, auth), {
    'post is 200': (r) => r.status === 200,
  });
  journey.add(Date.now() - started);
  const think = Number(__ENV.THINK || 0);
  if (think > 0) {
    sleep(think);
  }
}
