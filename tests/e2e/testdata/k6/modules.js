// k6/crypto, k6/html, http.file and form bodies, each check's truth fixed in
// advance: published vectors (FIPS 180-2, RFC 4231), Python's hashlib for the
// Hangul input, and what the test server itself read of the upload (its
// /multipart route parses the parts). k6 and pado must both pass every check.
import http from 'k6/http';
import { check } from 'k6';
import crypto from 'k6/crypto';
import { parseHTML } from 'k6/html';

const upload = open('./upload.bin', 'b');

export const options = { vus: 1, iterations: 2 };

function part(r, name) {
  return (r.json('parts') || []).find((p) => p.name === name) || {};
}

export default function () {
  const B = __ENV.BASE;
  check(null, {
    'sha256 of abc (FIPS 180-2)': () =>
      crypto.sha256('abc', 'hex') === 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    'hmac-sha256 (RFC 4231 case 2)': () =>
      crypto.hmac('sha256', 'Jefe', 'what do ya want for nothing?', 'hex') ===
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    'md5 of 파도 as UTF-8': () => crypto.md5('파도', 'hex') === '64d8e83b385af09a90b2435891b58cc0',
    'hmac-sha1 in pieces': () => {
      const h = crypto.createHMAC('sha1', 'key');
      h.update('The quick brown fox ');
      h.update('jumps over the lazy dog');
      return h.digest('hex') === 'de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9';
    },
  });
  const doc = parseHTML('<ul id="l"><li class="a">1</li><li data-n="2">둘</li></ul>');
  check(doc, {
    'two items': (d) => d.find('li').size() === 2,
    'class a holds 1': (d) => d.find('li.a').text() === '1',
    'data-n read as a number': (d) => d.find('li').last().data('n') === 2,
    'closest list': (d) => d.find('li.a').closest('ul').attr('id') === 'l',
  });
  const up = http.post(`${B}/multipart`, {
    field: '파도 value',
    file: http.file(upload, 'upload.bin', 'application/octet-stream'),
    note: http.file('노트', 'note.txt', 'text/plain'),
  });
  check(up, {
    'the server read 3 parts': (r) => r.json('count') === 3,
    'the field, intact': (r) => part(r, 'field').text === '파도 value' && part(r, 'field').filename === null,
    'the binary file, its name, type and size': (r) =>
      part(r, 'file').filename === 'upload.bin' &&
      part(r, 'file').content_type === 'application/octet-stream' &&
      part(r, 'file').size === upload.byteLength,
    'the text file, its type': (r) => part(r, 'note').content_type === 'text/plain' && part(r, 'note').text === '노트',
  });
  const form = http.post(`${B}/echo`, { b: 'x y', a: '파도' });
  check(form, {
    'a form as k6 encodes it': (r) => r.body === 'a=%ED%8C%8C%EB%8F%84&b=x+y',
  });
  const page = http.post(`${B}/echo`, '<html><head><title>파도 page</title></head><body><a href="/x">x</a></body></html>', {
    headers: { 'Content-Type': 'text/html' },
  });
  check(page, {
    'Response.html() finds the title': (r) => r.html('head title').text() === '파도 page',
    'Response.html() reads a link': (r) => r.html().find('a').attr('href') === '/x',
  });
}
