// A TypeScript syntax error on line 7: pado (and k6) refuse the script at
// start, naming the file, the line and the column.
import http from 'k6/http';
import { Options } from 'k6/options';

export const options: Options = { vus: 1, iterations: 1 };
const target: = `${__ENV.BASE}/`;

export default function (): void {
  http.get(target);
}
