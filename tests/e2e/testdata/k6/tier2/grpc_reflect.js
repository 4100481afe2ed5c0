// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/client/client-connect/
// (the "reflect" example: connect with `reflect: true` and no client.load()).
// Changed: the address (the test kit's gRPC server, which offers the reflection
// service) and the method called (pado.echo.Echo/Echo).
import grpc from 'k6/net/grpc';
import { check } from 'k6';

export const options = { vus: 2, iterations: 4 };

const client = new grpc.Client();

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true, reflect: true });
  const r = client.invoke('pado.echo.Echo/Echo', { text: '파도', n: 7 });
  check(r, {
    'reflected call is OK': (x) => x.status === grpc.StatusOK,
    'message echoed': (x) => x.message.text === '파도' && x.message.n === '7',
  });
  client.close();
};
