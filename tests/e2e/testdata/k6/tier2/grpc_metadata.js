// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/client/client-invoke/
// (invoke with params.metadata, then the Response's status, headers, trailers
// and error) and .../k6-net-grpc/stream/ (the `error` event of a stream).
// Changed: the service (the test kit's pado.echo.Echo, its .proto from
// PROTO_DIR), which answers every call with the header `x-served-by:
// pado-testkit`, a failure with the trailer `x-failed-on: request`, and echoes
// `x-tag` metadata into `tags`.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

export const options = { vus: 1, iterations: 2 };

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const ok = client.invoke('pado.echo.Echo/Echo', { text: '파도' }, { metadata: { 'x-tag': 'v1' } });
  check(ok, {
    'ok status': (r) => r.status === grpc.StatusOK && r.error === null,
    'the header came': (r) => r.headers['x-served-by'][0] === 'pado-testkit',
    'the metadata reached the server': (r) => r.message.tags.includes('md:v1'),
  });
  const bad = client.invoke('pado.echo.Echo/Echo', { text: 'x', status: 5 });
  check(bad, {
    'NotFound': (r) => r.status === grpc.StatusNotFound,
    "the server's message": (r) => r.error.code === 5 && r.error.message === 'failed on request',
    // A failure before any reply is "trailers-only": its metadata are trailers.
    'the failure metadata came as trailers': (r) =>
      (r.trailers['x-failed-on'] || [])[0] === 'request' && r.headers['x-failed-on'] === undefined,
  });
  const s = new grpc.Stream(client, 'pado.echo.Echo/Chat');
  let echoes = 0;
  s.on('data', () => echoes++);
  s.on('error', (e) => {
    // (k6 hands `code` over as an object wrapping Go's codes.Code, so only `==`
    // compares it with a number there; pado gives the number itself.)
    check(e, { 'stream error in k6 shape': (x) => x.code == 7 && x.message === 'chat failed on request' });
  });
  s.on('end', () => {
    check(echoes, { 'one echo before the failure': (n) => n === 1 });
    client.close();
  });
  s.write({ text: 'a' });
  s.write({ text: 'b', status: 7 });
  s.end();
  // A stream never ended by the script: its own timeout ends it, which k6
  // v1.8.1 shows as UNKNOWN ("canceled by client").
  const slow = new grpc.Stream(client, 'pado.echo.Echo/Chat', { timeout: '300ms' });
  slow.on('error', (e) => check(e, { 'the stream deadline passed': (x) => x.code == grpc.StatusUnknown }));
  slow.write({ text: 'c' });
};
