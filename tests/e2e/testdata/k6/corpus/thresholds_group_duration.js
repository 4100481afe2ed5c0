// Source: https://grafana.com/docs/k6/latest/using-k6/thresholds/ ("Threshold on group duration")
// Adapted: only the target URL (__ENV.BASE_URL).
import http from 'k6/http';
import { group, sleep } from 'k6';

export const options = {
  thresholds: {
    'group_duration{group:::individualRequests}': ['avg < 400'],
    'group_duration{group:::batchRequests}': ['avg < 200'],
  },
  vus: 1,
  duration: '10s',
};

export default function () {
  group('individualRequests', function () {
    http.get(`${__ENV.BASE_URL}/api/json?letter=a`);
    http.get(`${__ENV.BASE_URL}/api/json?letter=b`);
    http.get(`${__ENV.BASE_URL}/api/json?letter=c`);
  });

  group('batchRequests', function () {
    http.batch([
      ['GET', `${__ENV.BASE_URL}/api/json?letter=a`],
      ['GET', `${__ENV.BASE_URL}/api/json?letter=b`],
      ['GET', `${__ENV.BASE_URL}/api/json?letter=c`],
    ]);
  });

  sleep(1);
}
