// annotdraw.js -- how the user's annotations (state.annots) are drawn: a
// flag is a line over every row with a labelled head on the time axis, a
// named area a band over every row with a labelled bar on the axis, a note
// on an event a mark on the event's corner.  Pure drawing: the context is
// translated to the time area (x 0 = state.start).

import { AXIS_H } from './layout.js';
import { LANE_H } from './tracktree.js';
import { laneY } from './hittest.js';

/** The colour of an annotation of each kind that has none of its own. */
export const ANNOT_COLORS = { flag: '#e5484d', note: '#f5a524', area: '#30a46c' };

const colorOf = (a) => a.color || ANNOT_COLORS[a.kind] || ANNOT_COLORS.flag;
const HEAD_H = 14;
const LABEL_MAX = 28; // characters of a label on the axis

/** Draws the lines, bands and event marks over the rows (clipped by the caller). */
export function drawAnnots(ctx, s, L) {
  const X = (t) => (t - s.start) / L.nspp;
  ctx.save();
  for (const a of s.annots) {
    ctx.fillStyle = colorOf(a);
    if (a.kind === 'area') {
      const x0 = X(a.ts), x1 = Math.max(X(a.end), x0 + 1);
      if (x1 < 0 || x0 > L.tw) continue;
      ctx.globalAlpha = 0.1;
      ctx.fillRect(x0, AXIS_H, x1 - x0, s.H - AXIS_H);
      ctx.globalAlpha = 0.8;
      ctx.fillRect(x0, AXIS_H, 1, s.H - AXIS_H);
      ctx.fillRect(x1 - 1, AXIS_H, 1, s.H - AXIS_H);
      ctx.globalAlpha = 1;
    } else if (a.kind === 'note' && a.base != null) {
      const p = laneY(s, L, a.base, a.lane), x = X(a.ts);
      if (!p || x < -8 || x > L.tw) continue;
      const y = p.y - LANE_H / 2;
      ctx.beginPath();
      ctx.moveTo(x, y); ctx.lineTo(x + 8, y); ctx.lineTo(x, y + 8);
      ctx.fill();
    } else {
      const x = Math.round(X(a.ts));
      if (x >= 0 && x <= L.tw) ctx.fillRect(x - 1, AXIS_H, 2, s.H - AXIS_H);
    }
  }
  ctx.restore();
}

/**
 * Draws the heads of flags and the bars of areas on the axis, with their
 * labels.  Returns what was drawn: [{id, kind, x}] (x: canvas px of ts).
 */
export function drawAnnotHeads(ctx, s, L, th) {
  const X = (t) => (t - s.start) / L.nspp;
  const drawn = [];
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, 0, L.tw, AXIS_H);
  ctx.clip();
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  const label = (text, x, color) => {
    const t = text.length > LABEL_MAX ? `${text.slice(0, LABEL_MAX - 1)}…` : text;
    if (!t) return;
    const w = ctx.measureText(t).width + 6;
    ctx.fillStyle = th.axisBg;
    ctx.fillRect(x, 1, w, HEAD_H - 2);
    ctx.fillStyle = color;
    ctx.fillText(t, x + 3, HEAD_H / 2);
  };
  for (const a of s.annots) {
    const c = colorOf(a), x0 = X(a.ts);
    if (a.kind === 'area') {
      const x1 = Math.max(X(a.end), x0 + 1);
      if (x1 < 0 || x0 > L.tw) continue;
      ctx.fillStyle = c;
      ctx.fillRect(x0, 0, x1 - x0, 3);
      label(a.text || '', Math.max(x0, 0) + 2, c);
    } else if (a.kind === 'flag') {
      const x = Math.round(x0);
      if (x < -6 || x > L.tw) continue;
      ctx.fillStyle = c;
      ctx.fillRect(x - 1, 0, 2, AXIS_H);
      ctx.beginPath();
      ctx.moveTo(x + 1, 1); ctx.lineTo(x + 9, 5); ctx.lineTo(x + 1, 9);
      ctx.fill();
      label(a.text || '', x + 10, c);
    } else if (x0 < -8 || x0 > L.tw) continue;
    drawn.push({ id: a.id, kind: a.kind, x: s.labelW + x0 });
  }
  ctx.restore();
  return drawn;
}
