// k6/data: SharedArray, built once by the script's first VU and read by all.
const P = globalThis.__pado;

export class SharedArray {
  constructor(name, fn) {
    let json = P.sharedGet(String(name));
    if (json === null || json === undefined) {
      const made = fn();
      if (!Array.isArray(made)) throw new Error("SharedArray's function must return an array");
      json = P.sharedSet(String(name), JSON.stringify(made));
    }
    const arr = JSON.parse(json);
    return Object.freeze(arr);
  }
}

export default { SharedArray };
