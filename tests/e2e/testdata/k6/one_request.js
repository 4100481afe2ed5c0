// One request an iteration, no options of its own: the command line's load flags
// decide how many iterations run (script::iterations_on_the_command_line_are_shared_as_k6_shares_them).
import http from "k6/http";

export default function () {
  http.get(`${__ENV.BASE}/json/item`);
}
