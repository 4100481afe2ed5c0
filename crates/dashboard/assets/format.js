// How the dashboard writes figures: the same rules as pado's terminal summary and
// HTML report (the Rust crate pado-base, `units`), so a p95 reads the same on the
// page, in the terminal and in report.html. Pure functions, no DOM: Node's test
// runner checks them (testing/browser/unit/).

/** Milliseconds with a precision that fits the magnitude: 0.412, 12.35, 240.5, 12034. */
export function ms(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a < 1) return v.toFixed(3);
  if (a < 100) return v.toFixed(2);
  if (a < 10000) return v.toFixed(1);
  return v.toFixed(0);
}

/** A rate per second: whole from 100 (1234), one decimal below (12.5). */
export function rate(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1);
}

/** A count people compare by eye: 1234567 -> 1,234,567. */
export function thousands(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  const neg = n < 0;
  const s = String(Math.round(Math.abs(n)));
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (i > 0 && (s.length - i) % 3 === 0) out += ',';
    out += s[i];
  }
  return neg ? '-' + out : out;
}

/** Seconds as a run length: 12.3s, 10m05s, 4h00m00s. */
export function duration(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  if (s < 60) return s.toFixed(1) + 's';
  const t = Math.round(s);
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  const two = (n) => (n < 10 ? '0' : '') + n;
  return h > 0 ? `${h}h${two(m)}m${two(sec)}s` : `${m}m${two(sec)}s`;
}

/** A time-axis label, whole seconds: 45s, 1m30s, 2m, 1h05m. */
export function clock(s) {
  s = Math.round(s);
  if (s < 60) return s + 's';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const two = (n) => (n < 10 ? '0' : '') + n;
  if (h > 0) return `${h}h${two(m)}m` + (sec ? two(sec) + 's' : '');
  return m + 'm' + (sec ? two(sec) + 's' : '');
}

/** A value of any unit with precision by magnitude (1234, 12.35, 0.412), – when missing. */
export function value(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 1) return v.toFixed(2);
  return v.toFixed(3);
}

/** A fraction (0.0123) as a percentage with two decimals: 1.23%. */
export function percent2(fraction) {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '–';
  return (fraction * 100).toFixed(2) + '%';
}

/** An axis tick: short, no trailing zeros (2.5k, 40, 0.25). */
export function tick(v) {
  if (!Number.isFinite(v)) return '';
  const trim = (t) => (t.indexOf('.') < 0 ? t : t.replace(/0+$/, '').replace(/\.$/, ''));
  const a = Math.abs(v);
  if (a >= 1e9) return trim((v / 1e9).toFixed(2)) + 'G';
  if (a >= 1e6) return trim((v / 1e6).toFixed(2)) + 'M';
  if (a >= 1e4) return trim((v / 1e3).toFixed(1)) + 'k';
  if (a >= 100 || Math.round(v) === v) return String(Math.round(v));
  if (a >= 10) return trim(v.toFixed(1));
  if (a >= 1) return trim(v.toFixed(2));
  return trim(v.toFixed(3));
}
