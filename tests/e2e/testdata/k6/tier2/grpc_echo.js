// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/ (the unary example: load, connect, invoke, check, close)
// Changed: the service (the test kit's pado.echo.Echo, its .proto from PROTO_DIR)
// and one call that fails on request, to count a status other than OK.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

export const options = { vus: 2, iterations: 6 };

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });

  const data = { text: '파도', n: __ITER + 1, tags: ['a'] };
  const response = client.invoke('pado.echo.Echo/Echo', data, {
    metadata: { 'x-tag': 'k6' },
  });

  check(response, {
    'status is OK': (r) => r && r.status === grpc.StatusOK,
    'text echoed': (r) => r && r.message.text === '파도',
    'metadata reached the server': (r) => r && r.message.tags.includes('md:k6'),
  });

  const failed = client.invoke('pado.echo.Echo/Echo', { status: 5 });
  check(failed, { 'NotFound on request': (r) => r && r.status === grpc.StatusNotFound });

  client.close();
};
