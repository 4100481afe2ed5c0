// 200 VUs, each waiting 200 ms for every answer, for 3 s: about 200 x 15
// requests if no VU blocks a worker thread while it waits; a thread per
// blocked VU would manage a few dozen.
import http from "k6/http";

export const options = { vus: 200, duration: "3s" };

export default function () {
  http.get(`${__ENV.BASE}/delay/200`);
}
