// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/client/client-connect/
// (the "tls" example: `plaintext: false` with `tls: { cacerts, cert, key }`).
// Changed: the address and the PEM files (the test kit's TLS gRPC server, which
// requires a client certificate its CA signed), and a second client that gives
// no certificate and must be refused.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

export const options = { vus: 1, iterations: 2 };

const ca = open(__ENV.SERVER_CA);
const cert = open(__ENV.CLIENT_CERT);
const key = open(__ENV.CLIENT_KEY);

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');
const stranger = new grpc.Client();
stranger.load([__ENV.PROTO_DIR], 'echo.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: false, tls: { cacerts: [ca], cert, key } });
  const r = client.invoke('pado.echo.Echo/Echo', { text: '파도' });
  check(r, { 'mutual TLS call is OK': (x) => x.status === grpc.StatusOK && x.message.text === '파도' });
  client.close();

  let refused = false;
  try {
    // (k6 dials until connect's timeout passes: a short one.)
    stranger.connect(__ENV.GRPC_ADDR, { plaintext: false, tls: { cacerts: [ca] }, timeout: '2s' });
    const s = stranger.invoke('pado.echo.Echo/Echo', { text: 'x' });
    refused = s.status !== grpc.StatusOK;
  } catch (e) {
    refused = true;
  }
  check(refused, { 'no client certificate, no call': (x) => x === true });
  stranger.close();
};
