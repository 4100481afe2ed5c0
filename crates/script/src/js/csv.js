// k6/experimental/csv: a CSV file (from k6/experimental/fs) as a SharedArray
// (`csv.parse`, built once for all VUs) or read record by record (`Parser`),
// with k6's options: delimiter, skipFirstLine, fromLine, toLine, asObjects.
import { SharedArray } from "k6/data";

const P = globalThis.__pado;

function optionsOf(o) {
  o = o || {};
  const opts = {
    delimiter: o.delimiter === undefined ? "," : String(o.delimiter),
    skipFirstLine: !!o.skipFirstLine,
    fromLine: o.fromLine === undefined || o.fromLine === null ? null : Math.trunc(Number(o.fromLine)),
    toLine: o.toLine === undefined || o.toLine === null ? null : Math.trunc(Number(o.toLine)),
    asObjects: !!o.asObjects,
  };
  if ([...opts.delimiter].length !== 1) throw new Error("delimiter must be a single character");
  if (opts.fromLine !== null && opts.toLine !== null && opts.fromLine >= opts.toLine) {
    throw new Error("fromLine must be less than or equal to toLine");
  }
  if (opts.asObjects && opts.skipFirstLine) {
    throw new Error("the 'header' option cannot be enabled when 'skipFirstLine' is true");
  }
  if (opts.asObjects && opts.fromLine !== null && opts.fromLine > 0) {
    throw new Error("the 'header' option cannot be enabled when 'fromLine' is set to a value greater than 0");
  }
  if (opts.fromLine !== null && opts.fromLine < 0) {
    throw new Error("the 'fromLine' option must be greater than or equal to 0; got " + opts.fromLine);
  }
  if (opts.toLine !== null && opts.toLine < 0) {
    throw new Error("the 'toLine' option must be greater than or equal to 0; got " + opts.toLine);
  }
  return opts;
}

// The records the options select, in order (k6's reader: lines count from 0).
function records(file, opts) {
  if (!file || !(file._data instanceof Uint8Array)) {
    throw new TypeError("first argument expected to be a fs.File instance");
  }
  const data = file._data.buffer.slice(file._data.byteOffset, file._data.byteOffset + file._data.byteLength);
  const rows = P.csvRows(data, opts.delimiter);
  let line = 0;
  let header = null;
  if (opts.asObjects) {
    if (!rows.length) throw new Error("failed to read the first line; reason: EOF");
    header = rows[0];
    line = 1;
  }
  if (opts.skipFirstLine && (opts.fromLine === null || opts.fromLine === 0)) line += 1;
  if (opts.fromLine !== null && opts.fromLine > 0) line = Math.max(line, opts.fromLine);
  const out = [];
  for (; line < rows.length; line++) {
    if (opts.toLine !== null && opts.toLine > 0 && line > opts.toLine) break;
    const r = rows[line];
    if (header !== null) {
      if (r.length !== header.length) {
        throw new Error(`record length (${r.length}) doesn't match header length (${header.length})`);
      }
      const o = {};
      header.forEach((h, i) => (o[h] = r[i]));
      out.push(o);
    } else {
      out.push(r);
    }
  }
  return out;
}

export function parse(file, options) {
  try {
    const opts = optionsOf(options);
    const name = "k6/experimental/csv:" + JSON.stringify({ path: file && file.path, options: opts });
    return Promise.resolve(new SharedArray(name, () => records(file, opts)));
  } catch (e) {
    return Promise.reject(e);
  }
}

export class Parser {
  constructor(file, options) {
    this._rows = records(file, optionsOf(options));
    this._next = 0;
  }
  next() {
    if (this._next >= this._rows.length) return Promise.resolve({ done: true, value: [] });
    return Promise.resolve({ done: false, value: this._rows[this._next++] });
  }
}

export default { parse, Parser };
