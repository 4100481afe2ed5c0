// `--http-debug` of a script's WebSocket handshake and gRPC call: each is shown
// as the HTTP requests are, its credentials masked (the handshake's
// Authorization header, the call's `authorization` metadata).
import ws from 'k6/ws';
import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'echo.proto');

export default function () {
  const res = ws.connect(`${__ENV.WS_URL}/?room=파도`, {
    headers: { Authorization: 'Bearer ws-s3cret-token' },
  }, (socket) => {
    socket.on('open', () => socket.send('안녕'));
    socket.on('message', () => socket.close());
  });
  check(res, { 'upgraded': (r) => r && r.status === 101 });
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const r = client.invoke('pado.echo.Echo/Echo', { text: '파도' }, {
    metadata: { authorization: 'Bearer grpc-s3cret-token', 'x-tag': 'k6' },
  });
  check(r, { 'grpc OK': (x) => x.status === grpc.StatusOK });
  client.close();
}
