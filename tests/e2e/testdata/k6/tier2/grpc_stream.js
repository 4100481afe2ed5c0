// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/stream/ (a server stream: write the request, end, handle data, error and end)
// Changed: the service (the test kit's pado.echo.Echo/Stream, its .proto from
// PROTO_DIR), which sends `count` replies.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

export const options = { vus: 1, iterations: 2 };

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });

  const stream = new grpc.Stream(client, 'pado.echo.Echo/Stream', null);
  let got = 0;

  stream.on('data', (reply) => {
    got++;
    check(reply, { 'text streamed': (r) => r.text === '파도' });
  });

  stream.on('error', (e) => {
    check(e, { 'no error': () => false });
  });

  stream.on('end', () => {
    check(got, { 'three replies': (n) => n === 3 });
    client.close();
  });

  stream.write({ text: '파도', count: 3 });
  stream.end();
};
