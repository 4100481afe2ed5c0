// Source: https://grafana.com/docs/k6/latest/javascript-api/k6-crypto/createhash/ (example)
// Adapted: nothing (it sends no request).
import crypto from 'k6/crypto';

export default function () {
  console.log(crypto.sha256('hello world!', 'hex'));
  const hasher = crypto.createHash('sha256');
  hasher.update('hello ');
  hasher.update('world!');
  console.log(hasher.digest('hex'));
}
