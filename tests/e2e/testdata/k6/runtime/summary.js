// handleSummary with jslib's textSummary (from the module cache) on stdout, a
// JSON file, a nested file and an ArrayBuffer, as k6 writes them.
import http from 'k6/http';
import { textSummary } from 'https://jslib.k6.io/k6-summary/0.1.0/index.js';

export const options = { vus: 1, iterations: 3 };

export default function () {
  http.get(`${__ENV.BASE}/`);
}

export function handleSummary(data) {
  const bytes = new Uint8Array([0x70, 0x61, 0x64, 0x6f]);
  return {
    stdout: textSummary(data, { indent: ' ', enableColors: false }),
    'summary.json': JSON.stringify(data),
    'nested/파도.txt': `requests ${data.metrics.http_reqs.values.count}`,
    'bytes.bin': bytes.buffer,
  };
}
