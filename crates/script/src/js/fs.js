// k6/experimental/fs: files opened once in the init context (read once for the
// whole run, every VU sharing the bytes), each File with its own offset.
const P = globalThis.__pado;

export const SeekMode = { Start: 0, Current: 1, End: 2 };

// k6's fs errors: `name` is the kind (NotFoundError, ForbiddenError, TypeError,
// EOFError), `message` says why.
class FsError extends Error {
  constructor(name, message) {
    super(message);
    this.name = name;
  }
}

function basename(p) {
  const parts = String(p).split("/");
  return parts[parts.length - 1];
}

export class File {
  constructor(path, bytes) {
    this.path = path;
    this._data = new Uint8Array(bytes);
    this._offset = 0;
  }
  stat() {
    return Promise.resolve({ name: basename(this.path), size: this._data.length });
  }
  read(into) {
    if (into === undefined || into === null) {
      return Promise.reject(
        new FsError("TypeError", "read() failed; reason: into argument cannot be null or undefined")
      );
    }
    if (!(into instanceof Uint8Array)) {
      return Promise.reject(
        new FsError("TypeError", "read() failed; reason: into argument must be a Uint8Array")
      );
    }
    const size = this._data.length;
    if (this._offset >= size) return Promise.resolve(null);
    const n = Math.min(into.length, size - this._offset);
    into.set(this._data.subarray(this._offset, this._offset + n));
    this._offset += n;
    return Promise.resolve(n);
  }
  seek(offset, whence) {
    const off = Number(offset);
    const mode = whence === undefined ? SeekMode.Start : Number(whence);
    if (!Number.isInteger(off)) {
      return Promise.reject(new FsError("TypeError", "seek() failed; reason: the offset argument must be an integer"));
    }
    const size = this._data.length;
    let next;
    if (mode === SeekMode.Start) {
      if (off < 0) {
        return Promise.reject(new FsError("TypeError", "offset cannot be negative when using SeekModeStart"));
      }
      next = off;
    } else if (mode === SeekMode.Current) {
      next = this._offset + off;
    } else if (mode === SeekMode.End) {
      if (off > 0) {
        return Promise.reject(new FsError("TypeError", "offset cannot be positive when using SeekModeEnd"));
      }
      // As k6 (v1.8): relative to the last byte.
      next = size - 1 + off;
    } else {
      return Promise.reject(
        new FsError("TypeError", "seek() failed; reason: the whence argument must be a SeekMode")
      );
    }
    if (next < 0) return Promise.reject(new FsError("TypeError", "seeking before start of file"));
    if (next > size) return Promise.reject(new FsError("TypeError", "seeking beyond end of file"));
    this._offset = next;
    return Promise.resolve(next);
  }
}

export function open(path) {
  if (globalThis.__pado_init_done) {
    return Promise.reject(
      new FsError("ForbiddenError", "open() failed; reason: opening a file is allowed only in the Init context")
    );
  }
  if (path === undefined || path === null) {
    return Promise.reject(new FsError("TypeError", "open() failed; reason: path cannot be null or undefined"));
  }
  const p = String(path).replace(/^file:\/\//, "");
  if (p === "") return Promise.reject(new FsError("TypeError", "open() failed; reason: path cannot be empty"));
  try {
    return Promise.resolve(new File(p, P.open(p, "b")));
  } catch (e) {
    return Promise.reject(new FsError("NotFoundError", String(e.message || e)));
  }
}

export default { open, SeekMode, File };
