// One check at the root, one in a group; PLANT=fail makes the group's fail.
import http from "k6/http";
import { check, group } from "k6";

export default function () {
  const r = http.get(`${__ENV.BASE}/json/item`);
  check(r, { created: (x) => x.status === 201 }); // /json/item answers 201
  group("order", () => {
    check(r, { planted: () => __ENV.PLANT !== "fail" });
  });
}
