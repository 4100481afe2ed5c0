// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/stream/
// (the RouteGuide example: a client stream written then ended, a bidirectional
// stream whose replies arrive in `data` while it is written, `end` when done).
// Changed: the service (the test kit's pado.echo.Echo, its .proto from
// PROTO_DIR): `Collect` (a client stream) answers once with the texts joined,
// `Chat` (bidirectional) echoes each message as it comes. A third stream writes
// its next message from its `data` handler (ping-pong), which only a client that
// truly interleaves writes and reads can run.
import grpc from 'k6/net/grpc';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

export const options = { vus: 1, iterations: 3 };

const replies = new Counter('chat_replies');

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });

  // A client stream: four messages, one answer after the end.
  const collect = new grpc.Stream(client, 'pado.echo.Echo/Collect');
  collect.on('data', (r) => {
    check(r, { 'collected in order': (x) => x.text === '파도,b,c,d' && x.n === '4' });
  });
  collect.on('error', () => check(null, { 'collect without error': () => false }));
  for (const t of ['파도', 'b', 'c', 'd']) collect.write({ text: t });
  collect.end();

  // A bidirectional stream: five messages written at once, five echoes back.
  const chat = new grpc.Stream(client, 'pado.echo.Echo/Chat');
  let got = 0;
  chat.on('data', (r) => {
    replies.add(1);
    check(r, { 'echo in its place': (x) => x.text === 'm' + x.index });
    got++;
  });
  chat.on('end', () => check(got, { 'five echoes': (n) => n === 5 }));
  for (let i = 0; i < 5; i++) chat.write({ text: 'm' + i });
  chat.end();

  // Ping-pong: the next message is written when the last one's echo came.
  const pong = new grpc.Stream(client, 'pado.echo.Echo/Chat');
  let rounds = 0;
  pong.on('data', (r) => {
    rounds++;
    if (rounds < 3) pong.write({ text: 'ping' + rounds });
    else pong.end();
  });
  pong.on('end', () => {
    check(rounds, { 'three rounds': (n) => n === 3 });
    client.close();
  });
  pong.write({ text: 'ping0' });
};
