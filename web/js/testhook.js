// testhook.js -- window.nexTest, the handle the browser tests
// (tests/e2e/ui_test.mjs) and the UI benchmark (bench/ui_frames.mjs) drive
// the page with.  It reads the timeline's store and dispatches to it; it
// never reaches into private fields, so the widget can change inside.
//
//   ready()          the profile is open and the view's tracks are laid out
//   idle()           ready, a timeline shown, no tile in flight, no frame pending
//   waitIdle(ms)     a Promise resolved once idle() (rejected after ms, 20 s)
//   view()           'timeline' | 'summary' | 'device'
//   state()          a JSON snapshot of the timeline state: window {start,
//                    end (rel ns), s, e (absolute ns strings)}, origin
//                    (absolute ns string of time 0, null: the profile
//                    start), width and labelW (canvas px), scrollTop,
//                    resolution (ns per px of the tiles, tiles are 1024 px),
//                    selection (event key), hover (event key), area {start,
//                    end, bases} or null, pins, collapsed (group paths),
//                    showHidden, filter {text, only}, sharedScales, marks
//                    (count), keys
//   dispatch(action) sends a store action (web/js/timeline/store.js)
//   tracks()         every track name of the view, in tree order
//   rows()           the paths of the rows laid out (shown when scrolled to)
//   rowBoxes()       the same rows as {path, label, y, h, group} (y from the
//                    top of the scrolling list, px)
//   locate(key)      page {x, y} of event "<track>:<lane>:<ts>", or null
//   hitAt(x, y)      the slice at page (x, y): {count, start, end, key, name}
//   timeAt(x)        rel ns at page x
//   arrows()         the arrows the last frame drew: [{kind ('flow': of the
//                    selection, 'link': between visible events), from, to}]
//                    with event keys
//   annotations()    the flags, notes and areas the last frame drew: [{id,
//                    kind, x}] (x: page px of the annotation's start)
//   frames()         paint times (ms) of the frames drawn; resetFrames()
//   transport()      window fetches over the WebSocket and over REST

import { windowStats } from './api.js';
import { layout } from './timeline/layout.js';
import { timeAt } from './timeline/viewport.js';

/** Installs window.nexTest for `app`; loaded() says whether the profile is open. */
export function installTestHook(app, loaded) {
  const tl = () => app.view?.tv?.tl || null;
  const ready = () => loaded() && !!app.view && (!tl() || layout(tl().state).rows.length > 0);
  const idle = () => ready() && !!tl() && tl().idle;
  const rect = () => tl().canvas.getBoundingClientRect();
  window.nexTest = {
    ready,
    idle,
    waitIdle(ms = 20000) {
      const t0 = performance.now();
      return new Promise((resolve, reject) => {
        const poll = () => {
          if (idle()) resolve(true);
          else if (performance.now() - t0 > ms) reject(new Error(`not idle after ${ms} ms`));
          else setTimeout(poll, 20);
        };
        poll();
      });
    },
    view: () => app.viewName,
    state() {
      const t = tl();
      if (!t) return null;
      const s = t.state, vp = t.vp;
      return {
        window: { start: s.start, end: s.end, s: vp.abs(s.start), e: vp.abs(Math.ceil(s.end)) },
        origin: s.timeOrigin ? vp.abs(s.timeOrigin) : null,
        width: s.W, labelW: s.labelW,
        scrollTop: layout(s).scrollTop,
        resolution: layout(s).res.r,
        selection: s.sel?.key || null,
        hover: s.hover?.hit?.key || null,
        area: s.area?.bases ? { start: s.area.start, end: s.area.end, bases: s.area.bases } : null,
        pins: [...s.pins],
        collapsed: [...s.collapsed].filter(([, v]) => v).map(([k]) => k),
        showHidden: s.showHidden,
        filter: { text: s.filter.text, only: s.filter.only },
        sharedScales: s.sharedScales,
        marks: s.marks.length,
        keys: s.keys,
      };
    },
    dispatch: (a) => tl()?.dispatch(a),
    tracks: () => [...(tl()?.state.tree.byId.values() || [])].map((n) => n.track.name),
    rows: () => (tl() ? layout(tl().state).rows.map((r) => r.node.path) : []),
    rowBoxes: () => (tl() ? layout(tl().state).rows.map((r) => ({ path: r.node.path, label: r.node.label, y: r.y, h: r.h, group: r.group })) : []),
    locate(key) {
      const t = tl();
      const m = /^(\d+):(\d+):(\d+)$/.exec(key);
      if (!t || !m) return null;
      const p = t.locate(m[1], +m[2], t.vp.rel(m[3]));
      if (!p) return null;
      const r = rect();
      return { x: r.left + p.x + 2, y: r.top + p.y };
    },
    hitAt(x, y) {
      if (!tl()) return null;
      const r = rect();
      const h = tl().hitTest(x - r.left, y - r.top);
      return h?.kind === 'slice' ? { count: h.count, start: h.ts, end: h.ts + h.dur, key: h.key, name: h.name } : null;
    },
    timeAt: (x) => (tl() ? timeAt(tl().state, x - rect().left) : null),
    arrows: () => (tl() ? tl().arrows.map((a) => ({ ...a })) : []),
    annotations: () => (tl() ? tl().annotsDrawn.map((a) => ({ ...a, x: rect().left + a.x })) : []),
    frames: () => tl()?.frames.slice() || [],
    resetFrames: () => { if (tl()) tl().frames.length = 0; },
    transport: () => windowStats(),
  };
}
