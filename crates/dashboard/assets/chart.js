// A small SVG line chart on the run's time axis: every chart of the page shares the
// x range (second 0 to the planned end, or further), draws stage boundaries and
// control events as labelled vertical marks, and a baseline run as dashed lines.
// Hand-written (no library, nothing fetched): values go in as attributes and
// textContent only, never as markup, so a Hangul or hostile step name stays text.
import { clock, tick } from './format.js';

const NS = 'http://www.w3.org/2000/svg';
/** Line colours, in the order series are given (colour-blind friendly Tableau 10). */
export const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

function el(tag, attrs, parent) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}

function niceStep(range, target) {
  const raw = range / Math.max(1, target);
  if (!(raw > 0)) return 1;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 2.5 ? 2.5 : n <= 5 ? 5 : 10) * mag;
}

function timeStep(range, target) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const raw = range / Math.max(1, target);
  for (const s of steps) if (s >= raw) return s;
  return niceStep(range, target);
}

/**
 * At most `room` points: runs of neighbours collapse to their highest value, so a
 * one-second spike of a long run still shows.
 */
export function thin(pts, room) {
  if (pts.length <= room || room < 2) return pts;
  const k = Math.ceil(pts.length / room);
  const out = [];
  for (let i = 0; i < pts.length; i += k) {
    let best = pts[i];
    for (let j = i + 1; j < Math.min(pts.length, i + k); j++) if (pts[j][1] > best[1]) best = pts[j];
    out.push(best);
  }
  return out;
}

/** One chart in `host` (an element holding an `h3`): redrawn whole by `draw`. */
export class Chart {
  constructor(host, opts) {
    this.host = host;
    this.opts = opts || {};
    this.body = host.querySelector('.chart-body') || host;
    this.legend = host.querySelector('.legend');
    /** Data points of the run's own series in the last drawing (tests read it). */
    this.points = 0;
    this.hidden = new Set();
    this.last = null;
  }

  /**
   * Draws `lines` ([{name, pts:[[t,v]…], dashed}]) over 0..xmax with `marks`
   * ([{x, label, kind: 'stage'|'event'}]).
   */
  draw({ xmax, lines, marks }) {
    this.last = { xmax, lines, marks };
    const W = Math.max(280, Math.floor(this.body.clientWidth || 600));
    const H = this.opts.height || 180;
    const M = { l: 48, r: 10, t: 16, b: 22 };
    const pw = W - M.l - M.r;
    const ph = H - M.t - M.b;
    xmax = Math.max(1, xmax || 1);
    const shown = lines.filter((l) => !this.hidden.has(l.name));
    let ymax = 0;
    for (const l of shown) for (const p of l.pts) if (p[1] > ymax) ymax = p[1];
    let ystep = niceStep(ymax > 0 ? ymax : 1, 4);
    if (this.opts.int && ystep < 1) ystep = 1;
    const ytop = Math.max(ystep, Math.ceil((ymax * 1.04) / ystep) * ystep);
    const X = (x) => M.l + (Math.min(Math.max(x, 0), xmax) / xmax) * pw;
    const Y = (y) => M.t + ph - (y / ytop) * ph;

    const svg = el('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart-svg' });
    const title = this.host.querySelector('h3');
    if (title) svg.setAttribute('aria-label', title.textContent);
    for (let v = 0; v <= ytop + ystep / 2; v += ystep) {
      const y = Y(v);
      el('line', { class: v === 0 ? 'axis' : 'grid', x1: M.l, x2: M.l + pw, y1: y, y2: y }, svg);
      el('text', { x: M.l - 5, y: y + 4, 'text-anchor': 'end' }, svg).textContent = tick(v);
    }
    const xstep = timeStep(xmax, Math.max(2, Math.floor(pw / 80)));
    for (let x = 0; x <= xmax + 1e-9; x += xstep) {
      el('line', { class: 'axis', x1: X(x), x2: X(x), y1: M.t + ph, y2: M.t + ph + 4 }, svg);
      el('text', { x: X(x), y: M.t + ph + 16, 'text-anchor': 'middle' }, svg).textContent = clock(x);
    }
    if (this.opts.unit) {
      el('text', { x: M.l, y: 11, class: 'unit' }, svg).textContent = this.opts.unit;
    }
    for (const m of marks || []) {
      const x = X(m.x);
      const line = el('line', { class: 'mark ' + (m.kind || 'event'), x1: x, x2: x, y1: M.t, y2: M.t + ph }, svg);
      el('title', {}, line).textContent = `${m.label} (${clock(m.x)})`;
      if (m.kind === 'stage' && m.label) {
        el('text', { class: 'mark-label', x: x + 3, y: M.t + 9 }, svg).textContent = m.label.slice(0, 24);
      }
    }
    let points = 0;
    lines.forEach((l, i) => {
      if (this.hidden.has(l.name) || l.pts.length === 0) return;
      if (!l.dashed) points += l.pts.length;
      const colour = l.color || PALETTE[i % PALETTE.length];
      const pts = thin(l.pts, pw);
      if (pts.length === 1) {
        el('circle', { cx: X(pts[0][0]), cy: Y(pts[0][1]), r: 2, fill: colour }, svg);
        return;
      }
      const d = pts.map((p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(' ');
      el('polyline', {
        points: d,
        fill: 'none',
        stroke: colour,
        'stroke-width': 1.6,
        'stroke-dasharray': l.dashed ? '5 4' : 'none',
        class: l.dashed ? 'baseline' : 'run',
        'data-series': l.name,
      }, svg);
    });
    this.points = points;
    this.hover(svg, { X, M, pw, ph, xmax, lines: shown });
    this.body.textContent = '';
    this.body.appendChild(svg);
    this.drawLegend(lines);
  }

  /** A vertical rule and the values of the second under the pointer. */
  hover(svg, g) {
    const rule = el('line', { class: 'hover', x1: 0, x2: 0, y1: g.M.t, y2: g.M.t + g.ph, visibility: 'hidden' }, svg);
    const text = el('text', { class: 'hover-text', x: g.M.l + 4, y: g.M.t + 12, visibility: 'hidden' }, svg);
    svg.addEventListener('mousemove', (ev) => {
      const box = svg.getBoundingClientRect();
      const px = ev.clientX - box.left;
      if (px < g.M.l || px > g.M.l + g.pw) return;
      const t = Math.round(((px - g.M.l) / g.pw) * g.xmax);
      const parts = [];
      for (const l of g.lines) {
        const p = l.pts.find((q) => q[0] === t);
        if (p) parts.push(`${l.name} ${tick(p[1])}`);
      }
      rule.setAttribute('x1', g.X(t));
      rule.setAttribute('x2', g.X(t));
      rule.setAttribute('visibility', 'visible');
      text.textContent = `${clock(t)}  ${parts.join(' · ')}`;
      text.setAttribute('visibility', 'visible');
    });
    svg.addEventListener('mouseleave', () => {
      rule.setAttribute('visibility', 'hidden');
      text.setAttribute('visibility', 'hidden');
    });
  }

  /** The legend: one entry per series, a click hides or shows it. */
  drawLegend(lines) {
    if (!this.legend) return;
    this.legend.textContent = '';
    lines.forEach((l, i) => {
      const item = document.createElement('button');
      item.type = 'button';
      item.className = 'legend-item' + (this.hidden.has(l.name) ? ' off' : '') + (l.dashed ? ' dashed' : '');
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.borderColor = l.color || PALETTE[i % PALETTE.length];
      item.append(sw, document.createTextNode(l.name));
      item.addEventListener('click', () => {
        if (this.hidden.has(l.name)) this.hidden.delete(l.name);
        else this.hidden.add(l.name);
        if (this.last) this.draw(this.last);
      });
      this.legend.appendChild(item);
    });
  }
}
