// colors.js -- slice colours.  Each colour gets a small integer index so the
// renderer can batch fillRect calls per colour; index i has a plain fill,
// a faint opaque fill per theme (the idle part of merged LOD rows), and a
// label colour.

const fills = [];
const text = [];
const hs = []; // [hue, saturation] of each colour
const idle = [[], []]; // faint fills: [light theme, dark theme]
const byKey = new Map();

function hashStr(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
}

function add(key, h, s, l) {
  const i = fills.length;
  fills.push(`hsl(${h} ${s}% ${l}%)`);
  text.push(l > 58 ? '#111' : '#fff');
  hs.push([h, s]);
  byKey.set(key, i);
  return i;
}

// Hue ranges per event source: neuron_rt blue, neuron_hw red/magenta,
// transfers teal, DMA orange; framework events and instructions by name.
const SOURCE_HUE = {
  neuron_rt: [205, 230, 62, 45, 55],
  neuron_hw: [330, 360, 68, 45, 55],
  host_to_device_transfers: [165, 180, 55, 38, 46],
  device_to_host_transfers: [180, 195, 55, 38, 46],
  dma: [22, 40, 80, 48, 56],
};

/**
 * Colour index of a slice.  `source` is the track's event source, `name` the
 * event name, `grp` the colour group (framework op of an instruction) or ''.
 */
export function colorIndex(source, name, grp) {
  const key = grp ? `g|${grp}` : `${source}|${name}`;
  const hit = byKey.get(key);
  if (hit !== undefined) return hit;
  const hs = hashStr(grp || name);
  const r = !grp && SOURCE_HUE[source];
  if (r) {
    const [h0, h1, s, l0, l1] = r;
    return add(key, h0 + (hs % (h1 - h0 + 1)), s, l0 + ((hs >>> 8) % (l1 - l0 + 1)));
  }
  if (source === 'engine' && !grp) return add(key, 220, 8, 55 + (hs % 8));
  // Per-name hues avoid the runtime blues and hardware reds.
  const h = hs % 230;
  const hue = h < 130 ? 60 + h : 240 + (h - 130) * 0.8;
  return add(key, Math.round(hue), 45 + ((hs >>> 9) % 25), 42 + ((hs >>> 17) % 14));
}

export const colorFill = (i) => fills[i];
export const colorText = (i) => text[i];

/** The faint opaque fill of colour i on a dark or light background. */
export function colorIdle(i, dark) {
  const a = idle[dark ? 1 : 0];
  if (a[i] === undefined) {
    const [h, s] = hs[i];
    a[i] = `hsl(${h} ${Math.max(s - 25, 10)}% ${dark ? 24 : 90}%)`;
  }
  return a[i];
}

/** Colour of series i of a stacked counter (HBM categories). */
export function seriesColor(i, alpha = 1) {
  const h = (i * 47 + 200) % 360;
  return `hsl(${h} 60% 55% / ${alpha})`;
}
