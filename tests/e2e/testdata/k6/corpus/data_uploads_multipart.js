// Source: https://grafana.com/docs/k6/latest/examples/data-uploads/ ("Multipart request (uploading a file)")
// Adapted: the target URL (__ENV.BASE_URL; the test server's /multipart reads the parts) and the file path.
import http from 'k6/http';
import { sleep } from 'k6';

const binFile = open('./data.json', 'b');

export default function () {
  const data = {
    field: 'this is a standard form field',
    file: http.file(binFile, 'test.bin'),
  };

  const res = http.post(`${__ENV.BASE_URL}/multipart`, data);
  sleep(3);
}
