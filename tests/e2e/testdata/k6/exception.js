// Every second iteration throws after its request: k6 ends that iteration,
// counts it, and the run goes on.
import http from "k6/http";

export const options = { vus: 1, iterations: 4 };

export default function () {
  http.get(`${__ENV.BASE}/ok?iter=${__ITER}`);
  if (__ITER % 2 === 1) {
    throw new Error("planted failure 파도");
  }
}
