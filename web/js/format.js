// format.js -- human-readable times, sizes and numbers for labels and tables.

const DUR_UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];

/** Duration in ns (Number, BigInt or digit string) as "941.49 µs". */
export function fmtDur(ns) {
  const v = Number(ns);
  if (!Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  for (const [div, unit] of DUR_UNITS) {
    if (a >= div || div === 1) {
      const x = v / div;
      const digits = div === 1 ? 0 : Math.abs(x) >= 100 ? 1 : Math.abs(x) >= 10 ? 2 : 3;
      return `${x.toFixed(digits)} ${unit}`;
    }
  }
  return `${v} ns`;
}

/**
 * A time axis label: `ns` from the origin, with a precision fitted to
 * `step`, in the unit of `ref` (the largest time shown) so labels agree.
 */
export function fmtAxis(ns, step, ref = ns) {
  const a = Math.max(Math.abs(ref), Math.abs(step), 1);
  for (const [div, unit] of DUR_UNITS) {
    if (a >= div || div === 1) {
      const digits = Math.max(0, Math.min(6, Math.ceil(-Math.log10(step / div) - 1e-9)));
      return `${(ns / div).toFixed(digits)} ${unit}`;
    }
  }
  return `${ns} ns`;
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
