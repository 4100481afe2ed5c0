// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-experimental/csv/parse/ (csv.parse of a file opened with k6/experimental/fs)
// Changed: the target (BASE_URL) and the data (users.csv beside it, Hangul
// names); each iteration posts one user, as the page's example logs one.
import { open } from 'k6/experimental/fs';
import csv from 'k6/experimental/csv';
import http from 'k6/http';
import { check } from 'k6';

export const options = { iterations: 3 };

const file = await open('users.csv');
const users = await csv.parse(file, { asObjects: true });

export default async function () {
  const user = users[__ITER % users.length];
  const res = http.post(`${__ENV.BASE_URL}/echo`, JSON.stringify(user), {
    headers: { 'Content-Type': 'application/json' },
  });
  check(res, {
    'status is 200': (r) => r.status === 200,
    'name came back': (r) => r.json('name') === user.name,
  });
  const info = await file.stat();
  check(info, { 'file size': (i) => i.size > 0 });
}
