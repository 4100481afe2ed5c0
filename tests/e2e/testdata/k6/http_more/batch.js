// http.batch as k6's documentation shows it
// (https://grafana.com/docs/k6/latest/javascript-api/k6-http/batch/): five
// requests to a server that answers each after DELAY ms. k6 sends them at once,
// each on a connection of its own, at most `batch` (default 10) at a time;
// BATCH sets that option here, ITERS the iterations (a VU keeps a batch's
// connections for its next).
import http from 'k6/http';
import { check } from 'k6';

export const options = Object.assign(
  { vus: 1, iterations: Number(__ENV.ITERS || 1) },
  __ENV.BATCH ? { batch: Number(__ENV.BATCH) } : {},
);

const B = __ENV.BASE;
const D = __ENV.DELAY;

export default function () {
  const urls = [1, 2, 3, 4, 5].map((i) => `${B}/delay/${D}?i=${i}`);
  const list = http.batch(urls);
  check(list, {
    'five answers': (l) => l.length === 5,
    'every answer is 200': (l) => l.every((r) => r.status === 200),
    'answers in the order asked': (l) => l.every((r, i) => r.url.endsWith(`i=${i + 1}`)),
  });
  const named = http.batch({
    first: ['GET', `${B}/delay/${D}?k=first`],
    second: { method: 'POST', url: `${B}/delay/${D}?k=second`, body: 'x' },
  });
  check(named, {
    'named answers under their keys': (n) =>
      n.first.url.endsWith('k=first') && n.second.url.endsWith('k=second') && n.second.request.method === 'POST',
  });
}
