// format.js -- human-readable times, sizes and numbers for labels and tables.

const DUR_UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];
const GROUP = '\u202f'; // narrow no-break space between groups of 3 decimals

/** The unit [div, name] for a magnitude of `a` ns. */
function unitFor(a) { return DUR_UNITS.find(([div]) => a >= div) || DUR_UNITS[3]; }

/**
 * `ns` (Number, BigInt or digit string) in unit `div` with `digits`
 * decimals, rounded half up from the whole ns, decimals grouped by three:
 * exact for any int64, never through a float.
 */
function fixed(ns, div, digits) {
  let v = typeof ns === 'bigint' ? ns : BigInt(typeof ns === 'number' ? Math.round(ns) : String(ns));
  const neg = v < 0n;
  if (neg) v = -v;
  const D = BigInt(div), P = 10n ** BigInt(digits);
  const m = (v * P + D / 2n) / D;
  let frac = (m % P).toString().padStart(digits, '0');
  frac = frac.replace(/(\d{3})(?=\d)/g, `$1${GROUP}`);
  const sign = neg && m !== 0n ? '-' : '';
  return `${sign}${m / P}${digits ? `.${frac}` : ''}`;
}

/** Decimals of unit `div` that show a step of `step` ns (0 .. 9). */
function digitsFor(div, step) {
  return Math.max(0, Math.min(Math.log10(div), Math.ceil(-Math.log10(Math.max(step, 1) / div) - 1e-9)));
}

/**
 * Duration in ns (Number, BigInt or digit string) as "941.49 µs": exact to
 * the ns (trailing zeros dropped), or to `step` ns when the value is only
 * known that well (a window drawn at some ns per pixel).
 */
export function fmtDur(ns, step = 1) {
  if (ns === null || ns === undefined || ns === '' || (typeof ns === 'number' && !Number.isFinite(ns))) return '—';
  let v;
  try { v = typeof ns === 'bigint' ? ns : BigInt(typeof ns === 'number' ? Math.round(ns) : String(ns)); } catch { return '—'; }
  const [div, unit] = unitFor(Number(v < 0n ? -v : v));
  // Drop the zeros the value ends with.
  const x = fixed(v, div, digitsFor(div, step)).replace(/(\.\d[\d\u202f]*?)[0\u202f]+$/, '$1').replace(/\.0*$/, '');
  return `${x} ${unit}`;
}

/** Duration rounded to 3-4 significant digits ("1.23 s"): cards and charts. */
export function fmtDurShort(ns) {
  const v = Number(ns);
  if (!Number.isFinite(v)) return '—';
  const [div, unit] = unitFor(Math.abs(v));
  const x = v / div;
  const digits = div === 1 ? 0 : Math.abs(x) >= 100 ? 1 : Math.abs(x) >= 10 ? 2 : 3;
  return `${x.toFixed(digits)} ${unit}`;
}

/**
 * A time `ns` from the origin, precise to `step` ns, in the unit of `ref`
 * (the largest time shown alongside, so labels agree): "1.101 600 250 s".
 */
export function fmtTime(ns, step = 1, ref = ns) {
  const [div, unit] = unitFor(Math.max(Math.abs(Number(ref)), Math.abs(step), 1));
  return `${fixed(ns, div, digitsFor(div, step))} ${unit}`;
}

/** Integer with thousands separators; accepts digit strings and BigInt. */
export function fmtInt(v) {
  if (v === null || v === undefined || v === '') return '—';
  try { return BigInt(v).toLocaleString('en-US'); } catch { return String(v); }
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function fmtBytes(b) {
  let v = Number(b);
  if (!Number.isFinite(v)) return '—';
  let i = 0;
  while (Math.abs(v) >= 1024 && i < BYTE_UNITS.length - 1) { v /= 1024; i++; }
  return `${i ? v.toFixed(2) : Math.round(v)} ${BYTE_UNITS[i]}`;
}

function fmtRate(bps) {
  const v = Number(bps);
  if (!Number.isFinite(v)) return '—';
  if (v >= 1e9) return `${(v / 1e9).toFixed(2)} GB/s`;
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)} MB/s`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(2)} kB/s`;
  return `${v.toFixed(0)} B/s`;
}

export function fmtPct(p) {
  const v = Number(p);
  return p === null || p === undefined || !Number.isFinite(v) ? '—' : `${v.toFixed(1)}%`;
}

/** A counter value in its unit ("bytes", "B/s", "%", ""). */
export function fmtValue(v, unit) {
  if (unit === 'bytes') return fmtBytes(v);
  if (unit === 'B/s') return fmtRate(v);
  if (unit === '%') return fmtPct(v);
  const n = Number(v);
  return Number.isInteger(n) ? n.toLocaleString('en-US') : n.toPrecision(4);
}

/** Escapes text for innerHTML. */
export function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}
