// k6/encoding: base64.
const P = globalThis.__pado;

export function b64encode(input, encoding) {
  return P.b64encode(String(input), encoding || "std");
}

export function b64decode(input, encoding, format) {
  return P.b64decode(String(input), encoding || "std");
}

export default { b64encode, b64decode };
