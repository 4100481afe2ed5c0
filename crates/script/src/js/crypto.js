// k6/crypto: digests and HMACs (natives in crypto.rs), inputs as k6 reads them
// (strings as UTF-8, ArrayBuffers and typed arrays as bytes).
const P = globalThis.__pado;

class Hasher {
  constructor(alg, key) {
    this.alg = String(alg);
    this.key = key;
    this.parts = [];
    // Refuse an unknown algorithm now, as k6 does, not at digest().
    P.cryptoDigest(this.alg, key, [], "hex");
  }
  update(input) {
    this.parts.push(input);
    return this;
  }
  digest(enc) {
    return P.cryptoDigest(this.alg, this.key, this.parts, enc === undefined ? "binary" : String(enc));
  }
}

export const createHash = (alg) => new Hasher(alg, undefined);
export const createHMAC = (alg, secret) => new Hasher(alg, secret);
export const hmac = (alg, secret, data, enc) => P.cryptoDigest(String(alg), secret, [data], String(enc));
export const randomBytes = (n) => P.randomBytes(Number(n));

const one = (alg) => (input, enc) => P.cryptoDigest(alg, undefined, [input], String(enc));
export const md4 = one("md4");
export const md5 = one("md5");
export const sha1 = one("sha1");
export const sha256 = one("sha256");
export const sha384 = one("sha384");
export const sha512 = one("sha512");
export const sha512_224 = one("sha512_224");
export const sha512_256 = one("sha512_256");
export const ripemd160 = one("ripemd160");

export default {
  createHash, createHMAC, hmac, randomBytes,
  md4, md5, sha1, sha256, sha384, sha512, sha512_224, sha512_256, ripemd160,
};
