// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-websockets/ (the chat example: join, say, close)
// Changed: the target (WS_URL) and the room's size: one user per VU who joins,
// says two things and leaves once the server answered all three.
import { WebSocket } from 'k6/websockets';
import { check } from 'k6';

export const options = { vus: 2, iterations: 4 };

export default function () {
  const ws = new WebSocket(`${__ENV.WS_URL}/chat`);
  let got = 0;

  ws.onopen = () => {
    ws.send(JSON.stringify({ type: 'join', name: '파도' }));
  };

  ws.addEventListener('message', (e) => {
    got++;
    const msg = JSON.parse(e.data);
    if (msg.type === 'joined') {
      check(msg, { 'joined with an id': (m) => m.id.startsWith('m-') });
      ws.send(JSON.stringify({ type: 'say', text: '안녕' }));
      ws.send(JSON.stringify({ type: 'say', text: '파도' }));
    } else {
      check(msg, { 'said back': (m) => m.type === 'say' });
    }
    if (got === 3) {
      ws.close();
    }
  });

  ws.onclose = () => {
    check(got, { 'three answers before close': (n) => n === 3 });
  };
}
