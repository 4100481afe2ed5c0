import { randomIntBetween } from "https://jslib.k6.io/k6-utils/1.4.0/index.js";
import http from "k6/http";

export default function () {
  http.get(`${__ENV.BASE}/?n=${randomIntBetween(1, 9)}`);
}
