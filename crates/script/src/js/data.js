// k6/data: SharedArray. Its rows are held once for the whole run, in pado (each
// row as JSON, as k6 keeps them); every VU sees a read-only array-like view that
// decodes a row when it is read, so 1,000 VUs cost one copy, not 1,000.
const P = globalThis.__pado;

const readOnly = () => {
  throw new TypeError("a SharedArray is read-only");
};

export class SharedArray {
  constructor(name, fn) {
    name = String(name);
    let n = P.sharedLen(name);
    if (n === null || n === undefined) {
      const made = fn();
      if (!Array.isArray(made)) throw new Error("SharedArray's function must return an array");
      n = P.sharedSet(name, JSON.stringify(made));
    }
    const row = (i) => JSON.parse(P.sharedRow(name, i));
    const index = (k) => {
      if (typeof k !== "string" || k === "") return -1;
      const i = Number(k);
      return Number.isInteger(i) && i >= 0 && String(i) === k ? i : -1;
    };
    return new Proxy([], {
      get(t, k) {
        if (k === "length") return n;
        const i = index(k);
        if (i >= 0) return i < n ? row(i) : undefined;
        if (k === Symbol.iterator) {
          return function* () {
            for (let j = 0; j < n; j++) yield row(j);
          };
        }
        return Array.prototype[k];
      },
      has(t, k) {
        const i = index(k);
        return i >= 0 ? i < n : k === "length" || k in Array.prototype;
      },
      ownKeys() {
        const keys = [];
        for (let j = 0; j < n; j++) keys.push(String(j));
        keys.push("length");
        return keys;
      },
      getOwnPropertyDescriptor(t, k) {
        if (k === "length") return { value: n, writable: true, enumerable: false, configurable: false };
        const i = index(k);
        if (i >= 0 && i < n) return { value: row(i), writable: false, enumerable: true, configurable: true };
        return undefined;
      },
      set: readOnly,
      defineProperty: readOnly,
      deleteProperty: readOnly,
    });
  }
}

export default { SharedArray };
