// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-ws/connect/ (k6/ws connect() example)
// Changed: the target (WS_URL), and made countable: five messages sent on open,
// the socket closed once their five echoes are back (the page's example pings
// for two seconds). A 5 s timeout still closes a socket that hears nothing.
import ws from 'k6/ws';
import { check } from 'k6';

export const options = { vus: 2, iterations: 4 };

export default function () {
  const url = `${__ENV.WS_URL}/echo`;
  const params = { tags: { my_tag: 'hello' } };
  let received = 0;

  const res = ws.connect(url, params, function (socket) {
    socket.on('open', function open() {
      for (let i = 0; i < 5; i++) {
        socket.send(`안녕 파도 ${i}`);
      }
    });
    socket.on('message', function (message) {
      received++;
      check(message, { 'echo is the Hangul sent': (m) => m.startsWith('안녕 파도 ') });
      if (received === 5) {
        socket.close();
      }
    });
    socket.on('close', () => console.log('disconnected'));
    socket.setTimeout(function () {
      socket.close();
    }, 5000);
  });

  check(res, { 'status is 101': (r) => r && r.status === 101 });
}
