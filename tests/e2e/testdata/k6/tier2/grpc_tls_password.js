// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/client/client-connect/
// (the "tls" example: `tls: { cacerts, cert, key, password }`, a client key
// encrypted with a password).
// Changed: the address and the PEM files (the test kit's TLS gRPC server, which
// requires a client certificate its CA signed; KEY_FILE is the client key
// encrypted with KEY_PASSWORD), and a second connect with a wrong password,
// which must fail naming `tls.password` and never showing a password.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

export const options = { vus: 1, iterations: 2 };

const ca = open(__ENV.SERVER_CA);
const cert = open(__ENV.CLIENT_CERT);
const key = open(__ENV.KEY_FILE);

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');
const wrong = new grpc.Client();
wrong.load([__ENV.PROTO_DIR], 'echo.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, {
    plaintext: false,
    tls: { cacerts: [ca], cert, key, password: __ENV.KEY_PASSWORD },
  });
  const r = client.invoke('pado.echo.Echo/Echo', { text: '파도' });
  check(r, { 'call with the decrypted key is OK': (x) => x.status === grpc.StatusOK && x.message.text === '파도' });
  client.close();

  let failed = false;
  try {
    wrong.connect(__ENV.GRPC_ADDR, {
      plaintext: false,
      tls: { cacerts: [ca], cert, key, password: 'wrong-' + __ENV.KEY_PASSWORD },
      timeout: '2s',
    });
    failed = wrong.invoke('pado.echo.Echo/Echo', { text: 'x' }).status !== grpc.StatusOK;
  } catch (e) {
    failed = true;
    console.log('wrong password: ' + e);
  }
  check(failed, { 'a wrong password, no call': (x) => x === true });
  wrong.close();
};
