// k6/html: parseHTML and its Selection and Element, as handles to a document
// parsed and kept in Rust (html.rs): the page is parsed once per parseHTML.
const P = globalThis.__pado;

// A document (owned by Rust) is freed with the last selection that holds it.
const op = (d, name, ids, arg) =>
  P.htmlOp(name, d, ids, arg === undefined || arg === null ? undefined : String(arg));

function camel(name) {
  return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

function dataValue(v) {
  if (v === "true") return true;
  if (v === "false") return false;
  if (v === "null") return null;
  if (v !== "" && !isNaN(Number(v)) && String(Number(v)) === v) return Number(v);
  if (/^[[{]/.test(v)) {
    try {
      return JSON.parse(v);
    } catch (e) {
      return v;
    }
  }
  return v;
}

export class Element {
  constructor(doc, id) {
    this.__doc = doc;
    this.__id = id;
  }
  __op(name, arg) {
    return op(this.__doc, name, [this.__id], arg);
  }
  __el(ids) {
    return ids.length ? new Element(this.__doc, ids[0]) : undefined;
  }
  selection() { return new Selection(this.__doc, [this.__id]); }
  nodeName() { return this.__op("nodeName"); }
  nodeType() { return this.__op("nodeType"); }
  nodeValue() { return this.__op("nodeValue"); }
  id() { return this.__op("attr", "id") || ""; }
  className() { return this.__op("attr", "class") || ""; }
  classList() {
    const c = this.className().trim();
    return c ? c.split(/\s+/) : [];
  }
  lang() { return this.__op("attr", "lang") || ""; }
  textContent() { return this.__op("text"); }
  innerHTML() { return this.__op("html"); }
  outerHTML() { return this.__op("outerHTML"); }
  getAttribute(name) { return this.__op("attr", name); }
  hasAttribute(name) { return this.__op("attr", name) !== undefined; }
  hasAttributes() { return this.__op("attrs").length > 0; }
  getAttributeNode(name) {
    const v = this.getAttribute(name);
    return v === undefined ? undefined : { name: String(name), value: v, owner_element: this };
  }
  attributes() {
    const out = {};
    for (const [name, value] of this.__op("attrs")) out[name] = { name, value, owner_element: this };
    return out;
  }
  children() { return this.__op("children").map((n) => new Element(this.__doc, n)); }
  childNodes() { return this.__op("childNodes").map((n) => new Element(this.__doc, n)); }
  childElementCount() { return this.__op("children").length; }
  hasChildNodes() { return this.__op("childNodes").length > 0; }
  firstChild() { return this.__el(this.__op("childNodes")); }
  lastChild() { return this.__el(this.__op("childNodes").slice(-1)); }
  firstElementChild() { return this.__el(this.__op("children")); }
  lastElementChild() { return this.__el(this.__op("children").slice(-1)); }
  nextElementSibling() { return this.__el(this.__op("next")); }
  previousElementSibling() { return this.__el(this.__op("prev")); }
  nextSibling() { return this.nextElementSibling(); }
  previousSibling() { return this.previousElementSibling(); }
  parentNode() { return this.__el(this.__op("parent")); }
  parentElement() { return this.parentNode(); }
  ownerDocument() { return new Element(this.__doc, 0); }
  matches(sel) { return this.__op("matches", sel).length > 0; }
  querySelector(sel) { return this.__el(this.__op("find", sel)); }
  querySelectorAll(sel) { return this.__op("find", sel).map((n) => new Element(this.__doc, n)); }
  getElementsByTagName(tag) { return this.querySelectorAll(tag); }
  getElementsByClassName(c) {
    return this.querySelectorAll(String(c).trim().split(/\s+/).map((x) => "." + x).join(""));
  }
  contains(other) {
    return other instanceof Element && P.htmlOp("contains", this.__doc, [this.__id, other.__id]);
  }
  isSameNode(other) { return other instanceof Element && other.__doc === this.__doc && other.__id === this.__id; }
  isEqualNode(other) { return other instanceof Element && other.outerHTML() === this.outerHTML(); }
  toString() { return "[object html.Node]"; }
}

export class Selection {
  constructor(doc, ids) {
    this.__doc = doc;
    this.__ids = ids;
  }
  __sel(name, arg) {
    return new Selection(this.__doc, op(this.__doc, name, this.__ids, arg));
  }
  __match(fn) {
    return this.__ids.filter((n, i) => fn.call(this, i, new Selection(this.__doc, [n])));
  }
  find(sel) { return this.__sel("find", sel); }
  children(sel) { return this.__sel("children", sel); }
  contents() { return this.__sel("childNodes"); }
  parent(sel) { return this.__sel("parent", sel); }
  parents(sel) { return this.__sel("parents", sel); }
  closest(sel) { return this.__sel("closest", sel); }
  next(sel) { return this.__sel("next", sel); }
  prev(sel) { return this.__sel("prev", sel); }
  nextAll(sel) { return this.__sel("nextAll", sel); }
  prevAll(sel) { return this.__sel("prevAll", sel); }
  has(sel) { return this.__sel("has", sel); }
  filter(f) {
    if (typeof f === "function") return new Selection(this.__doc, this.__match(f));
    if (f instanceof Selection) return new Selection(this.__doc, this.__ids.filter((n) => f.__ids.includes(n)));
    return this.__sel("filter", f);
  }
  not(f) {
    if (typeof f === "function") {
      const keep = this.__match(f);
      return new Selection(this.__doc, this.__ids.filter((n) => !keep.includes(n)));
    }
    return this.__sel("not", f);
  }
  is(f) {
    if (typeof f === "function") return this.__match(f).length > 0;
    if (f instanceof Selection) return this.__ids.some((n) => f.__ids.includes(n));
    return op(this.__doc, "filter", this.__ids, f).length > 0;
  }
  text() { return op(this.__doc, "text", this.__ids); }
  html() { return op(this.__doc, "html", this.__ids); }
  attr(name, def) {
    const v = op(this.__doc, "attr", this.__ids, name);
    return v === undefined ? def : v;
  }
  val() {
    const v = op(this.__doc, "val", this.__ids);
    return Array.isArray(v) ? v.map((p) => p[1]) : v;
  }
  data(key) {
    const out = {};
    for (const [name, value] of op(this.__doc, "attrs", this.__ids.slice(0, 1))) {
      if (name.startsWith("data-")) out[camel(name.slice(5))] = dataValue(value);
    }
    return key === undefined ? out : out[camel(String(key))];
  }
  size() { return this.__ids.length; }
  get length() { return this.__ids.length; }
  eq(i) {
    const n = i < 0 ? this.__ids.length + i : i;
    return new Selection(this.__doc, n >= 0 && n < this.__ids.length ? [this.__ids[n]] : []);
  }
  first() { return this.eq(0); }
  last() { return this.eq(-1); }
  slice(a, b) { return new Selection(this.__doc, this.__ids.slice(a, b)); }
  get(i) {
    if (i === undefined) return this.__ids.map((n) => new Element(this.__doc, n));
    const n = i < 0 ? this.__ids.length + i : i;
    return n >= 0 && n < this.__ids.length ? new Element(this.__doc, this.__ids[n]) : undefined;
  }
  toArray() { return this.__ids.map((n) => new Selection(this.__doc, [n])); }
  each(fn) {
    this.__ids.forEach((n, i) => fn(i, new Element(this.__doc, n)));
    return this;
  }
  map(fn) {
    return this.__ids.map((n, i) => fn(i, new Selection(this.__doc, [n])));
  }
  serialize() {
    return this.serializeArray()
      .map((f) => encodeURIComponent(f.name) + "=" + encodeURIComponent(f.value))
      .join("&");
  }
  serializeArray() {
    const out = [];
    this.find("input[name], select[name], textarea[name]").each((i, el) => {
      const s = el.selection();
      const type = (el.getAttribute("type") || "").toLowerCase();
      if (el.hasAttribute("disabled") || ["submit", "button", "reset", "file", "image"].includes(type)) return;
      if ((type === "checkbox" || type === "radio") && !el.hasAttribute("checked")) return;
      const v = s.val();
      for (const one of Array.isArray(v) ? v : [v]) {
        if (one !== undefined) out.push({ name: el.getAttribute("name"), value: one });
      }
    });
    return out;
  }
  serializeObject() {
    const out = {};
    for (const f of this.serializeArray()) {
      out[f.name] = out[f.name] === undefined ? f.value : [].concat(out[f.name], f.value);
    }
    return out;
  }
}

// A document of `src`, selected whole (k6's `parseHTML`).
export function parseHTML(src) {
  return new Selection(P.htmlParse(String(src)), [0]);
}

export default { parseHTML, Selection, Element };
