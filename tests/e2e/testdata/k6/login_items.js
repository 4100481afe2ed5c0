// A k6 script as users write them: setup() logs in once, every VU uses the
// token, checks judge each answer. Run unchanged by `pado run`, pointed at the
// test kit's server with `-e BASE=http://127.0.0.1:PORT`.
import http from "k6/http";
import { check, group } from "k6";

export const options = {
  vus: 2,
  iterations: 10,
  thresholds: {
    // Two of the three checks hold every iteration: 0.667.
    checks: ["rate>0.6"],
  },
};

export function setup() {
  const res = http.post(
    `${__ENV.BASE}/json/login`,
    JSON.stringify({ user: "파도", password: "pw" }),
    { headers: { "Content-Type": "application/json" } },
  );
  return { token: res.json("token") };
}

export default function (data) {
  group("items", function () {
    const res = http.get(`${__ENV.BASE}/json/item?vu=${__VU}&iter=${__ITER}`, {
      headers: { Authorization: `Bearer ${data.token}` },
      tags: { name: "item" },
    });
    check(res, {
      "is 201": (r) => r.status === 201,
      "has an id": (r) => r.json("id") > 0,
      "is 200 (never)": (r) => r.status === 200,
    });
  });
}
