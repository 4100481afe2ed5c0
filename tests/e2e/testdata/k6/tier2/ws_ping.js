// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-ws/socket/socket-ping/
// (the example: `socket.ping()` on open, a `pong` handler) and k6's built-in
// `ws_ping` metric (https://grafana.com/docs/k6/latest/using-k6/metrics/reference/#websockets).
// Changed: the URL (the test kit's WebSocket server, which answers each ping
// with its pong), three pings a session, and a threshold on `ws_ping` from
// PING_RULE (one that must hold, one that must fail).
import ws from 'k6/ws';
import { check } from 'k6';

export const options = {
  iterations: 2,
  thresholds: { ws_ping: [__ENV.PING_RULE || 'max<10000'] },
};

export default function () {
  const res = ws.connect(`${__ENV.WS_URL}/`, {}, (socket) => {
    let pongs = 0;
    socket.on('open', () => socket.ping());
    socket.on('pong', () => {
      pongs += 1;
      if (pongs < 3) socket.ping();
      else socket.close();
    });
    socket.setTimeout(() => socket.close(), 5000);
  });
  check(res, {
    'upgraded': (r) => r && r.status === 101,
    'a 101 has an empty body, as k6': (r) => r && r.body === '',
  });
}
