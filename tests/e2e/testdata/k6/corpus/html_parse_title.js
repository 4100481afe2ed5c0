// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-html/parsehtml/ (example)
// Adapted: only the target URL (__ENV.BASE_URL).
import { parseHTML } from 'k6/html';
import http from 'k6/http';

export default function () {
  const res = http.get(`${__ENV.BASE_URL}/`);
  const doc = parseHTML(res.body); // equivalent to res.html()
  const pageTitle = doc.find('head title').text();
  const langAttr = doc.find('html').attr('lang');
}
