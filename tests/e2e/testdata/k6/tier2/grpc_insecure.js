// Source: https://grafana.com/docs/k6/latest/using-k6/k6-options/reference/#insecure-skip-tls-verify
// (the `insecureSkipTLSVerify` option) with the unary call of
// .../k6-net-grpc/client/client-invoke/. Changed: the server (the test kit's
// TLS gRPC server, whose self-signed certificate no root vouches for) and the
// option, on only when SKIP=1.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

export const options = { vus: 1, iterations: 2, insecureSkipTLSVerify: __ENV.SKIP === '1' };

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');

export default () => {
  let status = -1;
  try {
    client.connect(__ENV.GRPC_ADDR, { plaintext: false, timeout: '2s' });
    status = client.invoke('pado.echo.Echo/Echo', { text: '파도' }).status;
  } catch (e) {
    status = -2;
  }
  if (__ENV.SKIP === '1') check(status, { 'any certificate accepted': (s) => s === grpc.StatusOK });
  else check(status, { 'an unknown certificate refused': (s) => s !== grpc.StatusOK });
  client.close();
};
