// k6's cookie jars, as k6's documentation shows them
// (https://grafana.com/docs/k6/latest/javascript-api/k6-http/cookiejar/ and
// https://grafana.com/docs/k6/latest/examples/cookies-example/): the VU's jar
// (emptied as each iteration starts; `params.jar: null` names it too), a jar of the script's own given to some
// requests (`params.jar`), set, cookiesForURL, delete and clear. The server
// records the Cookie header each request carried.
import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 1, iterations: 3 };

const B = __ENV.BASE;

export default function () {
  const jar = http.cookieJar();
  check(jar.cookiesForURL(B + '/'), {
    'the VU jar is empty as an iteration starts': (c) => Object.keys(c).length === 0,
  });
  http.get(`${B}/set-cookie?sid=s${__ITER}`);
  jar.set(B + '/', 'lang', 'ko');
  http.get(`${B}/vu-jar?i=${__ITER}`);
  // `jar: null` is the VU's jar, as k6 reads it.
  http.get(`${B}/null-jar?i=${__ITER}`, { jar: null });
  const own = new http.CookieJar();
  own.set(B + '/', 'mine', 'm' + __ITER);
  http.get(`${B}/own-jar?i=${__ITER}`, { jar: own });
  http.get(`${B}/set-cookie?late=${__ITER}`, { jar: own });
  check(own.cookiesForURL(B + '/'), {
    "the script's jar kept what its response set": (c) => c.late && c.late[0] === String(__ITER),
  });
  check(jar.cookiesForURL(B + '/'), {
    "the VU jar did not get the script's jar's cookie": (c) => c.late === undefined,
    'the VU jar has sid and lang': (c) => c.sid[0] === 's' + __ITER && c.lang[0] === 'ko',
  });
  jar.delete(B + '/', 'lang');
  http.get(`${B}/after-delete?i=${__ITER}`);
  jar.clear(B + '/');
  http.get(`${B}/after-clear?i=${__ITER}`);
  http.get(`${B}/own-again?i=${__ITER}`, { jar: own });
}
