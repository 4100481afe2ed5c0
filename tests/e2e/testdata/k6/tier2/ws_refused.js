// A handshake the server refuses (403) and an address nobody listens on: as k6,
// each is a response, not an exception, and the iteration goes on. As k6's, a
// refusal's response has its status, its body and no error text; a connection
// that could not be made has status 0 and the error.
import ws from 'k6/ws';
import { check } from 'k6';

export const options = { iterations: 2 };

export default function () {
  const refused = ws.connect(`${__ENV.WS_URL}/?refuse=403`, {}, () => {});
  check(refused, {
    'refused with 403': (r) => r.status === 403,
    'no error text with a status, as k6': (r) => !r.error,
    "the refusal's body, as k6": (r) => r.body === 'refused with 403',
  });
  const nobody = ws.connect(`${__ENV.NOBODY_URL}/`, {}, () => {});
  check(nobody, { 'no server: status 0 with an error': (r) => r.status === 0 && r.error !== '' });
}
