// tracktree.js -- the track tree: display tracks (flat list in tree order,
// slash paths) -> nested nodes (built once per track list) -> the visible
// rows with their y offsets (a pure function of tree, collapse, visibility).
// Only rows are laid out, never drawn here; the renderer asks for the rows
// between two y values (binary search), so thousands of tracks cost nothing
// until they scroll into view.

export const LANE_H = 18;
export const GROUP_H = 22;

/** Height of the row of a display track. */
function trackHeight(t) {
  if (t.kind === 'counter') return t.source === 'neuron_hbm_usage' ? 60 : 38;
  return Math.max(GROUP_H, (t.lanes || 1) * LANE_H + 4);
}

export class TrackTree {
  /** tracks: the /tracks list.  The tree never changes once built. */
  constructor(tracks) {
    this.root = { path: '', label: '', children: [], depth: -1, track: null };
    this.byPath = new Map([['', this.root]]);
    this.byId = new Map();
    this.byBase = new Map(); // base track id -> { track, laneOffset }
    for (const t of tracks) {
      const node = this.node(t.name);
      node.track = t;
      this.byId.set(t.id, node);
      let off = 0;
      for (const b of t.base || []) {
        this.byBase.set(String(b.id), { track: t, laneOffset: off, base: b });
        off += b.lanes || 1;
      }
    }
    this.compact(this.root);
  }

  /**
   * Folds every chain of single-child groups into one node ("HBM:0" ->
   * "neuron_hbm_usage" becomes "HBM:0/neuron_hbm_usage"): the merged node
   * keeps the deepest path and track, joins the labels; every path of the
   * chain finds it.  Depths are renumbered.
   */
  compact(n) {
    for (const [i, ch0] of n.children.entries()) {
      let ch = ch0;
      while (!ch.track && ch.children.length === 1) {
        const only = ch.children[0];
        const m = { ...only, label: `${ch.label}/${only.label}`, parent: n };
        for (const g of m.children) g.parent = m;
        this.byPath.set(ch.path, m);
        this.byPath.set(only.path, m);
        if (m.track) this.byId.set(m.track.id, m);
        ch = m;
      }
      ch.depth = n.depth + 1;
      n.children[i] = ch;
      this.compact(ch);
    }
  }

  node(path) {
    let n = this.byPath.get(path);
    if (n) return n;
    const cut = path.lastIndexOf('/');
    const parent = cut < 0 ? this.root : this.node(path.slice(0, cut));
    n = { path, label: cut < 0 ? path : path.slice(cut + 1), children: [], depth: parent.depth + 1, track: null, parent };
    parent.children.push(n);
    this.byPath.set(path, n);
    return n;
  }

  /** Paths of every group node (for "collapse all"). */
  groupPaths() { return [...this.byPath.values()].filter((n) => n.children.length).map((n) => n.path); }
}

/**
 * Lays out the visible rows of `tree`: collapsed is a Map path -> bool,
 * visible(track) says whether a track is shown (e.g. CPU utilization off).
 * Returns { rows: [{node, y, h, depth, count, group}], rowOf: Map node ->
 * row, height }.
 */
export function layoutRows(tree, collapsed, visible) {
  const rows = [];
  let y = 0;
  const count = new Map();
  const countOf = (n) => {
    let c = count.get(n);
    if (c !== undefined) return c;
    c = n.track && visible(n.track) ? 1 : 0;
    for (const ch of n.children) c += countOf(ch);
    count.set(n, c);
    return c;
  };
  const walk = (n) => {
    for (const ch of n.children) {
      const c = countOf(ch);
      if (!c) continue;
      const h = ch.track && visible(ch.track) ? trackHeight(ch.track) : GROUP_H;
      rows.push({ node: ch, y, h, depth: ch.depth, count: c, group: ch.children.length > 0 });
      y += h;
      if (ch.children.length && collapsed.get(ch.path) !== true) walk(ch);
    }
  };
  walk(tree.root);
  return { rows, rowOf: new Map(rows.map((r) => [r.node, r])), height: y };
}

/** Index of the first of `rows` whose bottom is below y. */
export function rowIndexAt(rows, y) {
  let lo = 0, hi = rows.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (rows[m].y + rows[m].h <= y) lo = m + 1; else hi = m;
  }
  return lo;
}

/** The row (of rowOf) that shows base track `baseId`: its own, or a collapsed ancestor's. */
export function rowForBase(tree, rowOf, baseId) {
  const hit = tree.byBase.get(String(baseId));
  if (!hit) return null;
  let n = tree.byId.get(hit.track.id);
  while (n && !rowOf.get(n)) n = n.parent;
  const row = n && rowOf.get(n);
  return row ? { row, exact: n.track === hit.track, laneOffset: hit.laneOffset } : null;
}
