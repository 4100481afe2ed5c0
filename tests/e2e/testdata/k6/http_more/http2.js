// HTTP/2 for a script's requests, as k6 negotiates it: an https target that
// offers h2 (ALPN) is spoken to in HTTP/2 (`res.proto` is "HTTP/2.0"), one that
// does not in HTTP/1.1. The test servers' certificates are self-signed:
// `insecureSkipTLSVerify`, as k6 documents it.
import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 1, iterations: 2, insecureSkipTLSVerify: true };

export default function () {
  const h2 = http.get(`${__ENV.H2}/item?n=${__ITER}`);
  check(h2, {
    'the h2 server is spoken to in HTTP/2': (r) => r.proto === 'HTTP/2.0',
    'h2 answer is 200': (r) => r.status === 200,
  });
  const h1 = http.get(`${__ENV.H1}/item?n=${__ITER}`);
  check(h1, {
    'the HTTP/1.1 server is spoken to in HTTP/1.1': (r) => r.proto === 'HTTP/1.1',
    'h1 answer is 200': (r) => r.status === 200,
  });
  const b = http.batch([1, 2, 3].map((i) => `${__ENV.H2}/delay?ms=${__ENV.DELAY}&i=${i}`));
  check(b, { 'a batch over HTTP/2': (l) => l.every((r) => r.status === 200 && r.proto === 'HTTP/2.0') });
}
