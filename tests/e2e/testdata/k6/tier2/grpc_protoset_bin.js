// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/client/client-loadprotoset/
// (the example: `client.loadProtoset('./dummy.protoset')` in the init context,
// then connect and invoke) and the metadata example of
// https://grafana.com/docs/k6/latest/javascript-api/k6-net-grpc/params/ with a
// binary (`-bin`) value, which k6 takes as a Uint8Array (as k6's own test of it).
// Changed: the protoset (the test kit's echo.proto as a FileDescriptorSet, from
// PROTOSET) and the service (the test kit's pado.echo.Echo, which answers the
// hex of the `x-raw-bin` bytes it got as a tag and sends them back as the
// `x-echo-bin` header).
import grpc from 'k6/net/grpc';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

export const options = { vus: 2, iterations: 6 };

const sent = new Counter('echo_calls');
const client = new grpc.Client();
client.loadProtoset(__ENV.PROTOSET);

// Bytes that are not text (0x00, 0xff) and Hangul's UTF-8 ("파").
const RAW = [0x00, 0xff, 0x7f, 0x0a, 0xed, 0x8c, 0x8c];
const HEX = '00ff7f0aed8c8c';

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const raw = new Uint8Array(RAW);
  const r = client.invoke('pado.echo.Echo/Echo', { text: '파도', n: __ITER + 1 }, {
    metadata: { 'x-raw-bin': raw, 'x-tag': 'k6' },
  });
  sent.add(1);
  check(r, {
    'protoset call is OK': (x) => x.status === grpc.StatusOK && x.message.text === '파도',
    'the server got the bytes': (x) => x.message.tags.includes('bin:' + HEX),
    'string metadata still sent': (x) => x.message.tags.includes('md:k6'),
    // As k6 shows a received -bin value: its bytes decoded, read as UTF-8 text.
    'the binary header came back': (x) => x.headers['x-echo-bin'][0] === '\u0000\ufffd\u007f\n파',
  });
  let refused = '';
  try {
    client.invoke('pado.echo.Echo/Echo', { text: 'x' }, { metadata: { 'x-raw-bin': 'not bytes' } });
  } catch (e) {
    refused = String(e);
  }
  check(refused, { 'a string -bin value is refused': (m) => m.includes('"x-raw-bin" value must be binary') });
  client.close();
};
