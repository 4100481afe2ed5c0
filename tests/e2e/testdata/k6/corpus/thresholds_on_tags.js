// Source: https://grafana.com/docs/k6/latest/using-k6/thresholds/ ("Set thresholds for specific tags")
// Adapted: only the target URL (__ENV.BASE_URL).
import http from 'k6/http';
import { sleep } from 'k6';
import { Rate } from 'k6/metrics';

export const options = {
  thresholds: {
    'http_req_duration{type:API}': ['p(95)<500'], // threshold on API requests only
    'http_req_duration{type:staticContent}': ['p(95)<200'], // threshold on static content only
  },
};

export default function () {
  const res1 = http.get(`${__ENV.BASE_URL}/api/headers`, {
    tags: { type: 'API' },
  });
  const res2 = http.get(`${__ENV.BASE_URL}/api/json`, {
    tags: { type: 'API' },
  });

  const responses = http.batch([
    [
      'GET',
      `${__ENV.BASE_URL}/favicon.ico`,
      null,
      { tags: { type: 'staticContent' } },
    ],
    ['GET', `${__ENV.BASE_URL}/admin`, null, { tags: { type: 'staticContent' } }],
  ]);

  sleep(1);
}
