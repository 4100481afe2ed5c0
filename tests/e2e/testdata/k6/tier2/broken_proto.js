// A .proto that does not compile: pado stops at start naming its file and line.
import grpc from 'k6/net/grpc';

const client = new grpc.Client();
client.load([], 'broken.proto');

export default () => {};
