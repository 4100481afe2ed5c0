// --once: setup(), one iteration, teardown(); --http-debug shows each request,
// its Authorization header redacted.
import http from 'k6/http';
import { check } from 'k6';
export function setup() {
  const r = http.post(`${__ENV.BASE}/login`, JSON.stringify({ user: '파도' }), { headers: { Authorization: 'Bearer s3cr3t-token', 'Content-Type': 'application/json' } });
  return { token: 'tok-1' };
}
export default function (data) {
  const r = http.get(`${__ENV.BASE}/item?t=${data.token}`, { tags: { name: 'item' } });
  check(r, { 'is 200': (x) => x.status === 200 });
}
export function teardown(data) { http.get(`${__ENV.BASE}/bye`); }
