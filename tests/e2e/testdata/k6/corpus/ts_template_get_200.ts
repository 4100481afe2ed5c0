// Source: https://github.com/grafana/k6-template-typescript/blob/main/src/get-200-status-test.ts
// Adapted: only the target URL (__ENV.BASE_URL). TypeScript, run as it is: a
// type-only import of `k6/options` (no runtime module) and a typed `options`.
import { sleep, check } from "k6";
import { Options } from "k6/options";
import http from "k6/http";

export let options: Options = {
  vus: 50,
  duration: "10s",
};

export default () => {
  const res = http.get(`${__ENV.BASE_URL}/`);
  check(res, {
    "status is 200": () => res.status === 200,
  });
  sleep(1);
};
