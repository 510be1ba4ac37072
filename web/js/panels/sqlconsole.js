// sqlconsole.js -- the SQL console: a read-only query over the store
// (POST /api/v1/db/system/_search, databaseExplorerQuery), its result grid,
// the tables and views to query (tableSchema), queries saved in the browser
// (localStorage "nex.sqlSaved").  A result row naming an event (a `key`
// column, or `track` + `start_ts`/`ts` [+ `lane`]) reveals it on the timeline.

import { post } from '../api.js';
import { esc, fmtInt } from '../format.js';
import { openModal } from './modal.js';

const SAVED = 'nex.sqlSaved';
const MAX_SAVED = 100;
const SHOWN_ROWS = 2000;
const FIRST = 'SELECT name, count(*) AS n, sum(duration_ns) AS total_ns\nFROM SystemProfileEvents GROUP BY name ORDER BY total_ns DESC LIMIT 50';

/** The saved queries: [{name, sql}]. */
function loadSaved() {
  try {
    const v = JSON.parse(localStorage.getItem(SAVED) || '[]');
    return Array.isArray(v) ? v.filter((q) => q && typeof q.name === 'string' && typeof q.sql === 'string') : [];
  } catch { return []; }
}

/** The event key a result row names, or null. */
export function rowKey(columns, row) {
  const col = (n) => { const i = columns.indexOf(n); return i < 0 ? null : row[i]; };
  const key = col('key');
  if (typeof key === 'string' && /^\d+:\d+:\d+$/.test(key)) return key;
  const track = col('track'), ts = col('start_ts') ?? col('ts'), lane = col('lane') ?? 0;
  if (track === null || ts === null || !/^\d+$/.test(String(track)) || !/^\d+$/.test(String(ts)) || !/^\d+$/.test(String(lane))) return null;
  return `${track}:${lane}:${ts}`;
}

/** Opens the console; reveal(key) shows an event of the system timeline. */
export function openSqlConsole(reveal) {
  const m = openModal('SQL Console', 'Read-only SELECT over the profile store: at most 10,000 rows, 5 s');
  m.dialog.classList.add('wide');
  m.body.innerHTML = `<div class="sql-top">
      <textarea id="sql-q" rows="5" spellcheck="false" aria-label="SQL query"></textarea>
      <div class="sql-side"><div class="dim">Tables</div><div id="sql-tables" class="sql-chips"></div>
        <div class="dim">Saved queries</div><div id="sql-saved" class="sql-chips"></div></div></div>
    <div id="sql-status" class="dim" aria-live="polite"></div><div id="sql-result" class="sql-result"></div>`;
  m.footer.innerHTML = `<button id="sql-run" class="primary" title="Run (Ctrl+Enter)">Run</button>
    <input id="sql-name" placeholder="Name to save as" aria-label="query name"><button id="sql-save">Save</button>
    <span class="spacer"></span><button id="sql-close">Close</button>`;
  const $ = (id) => m.body.querySelector(id) || m.footer.querySelector(id);
  const q = $('#sql-q');
  q.value = localStorage.getItem('nex.sqlLast') || FIRST;

  const drawSaved = () => {
    const saved = loadSaved();
    $('#sql-saved').innerHTML = saved.length ? saved.map((s, i) => `<span class="chip-q"><button class="link" data-i="${i}" title="${esc(s.sql)}">${esc(s.name)}</button><button class="link del" data-del="${i}" title="Delete" aria-label="delete ${esc(s.name)}">×</button></span>`).join('') : '<span class="dim">none</span>';
    for (const b of $('#sql-saved').querySelectorAll('[data-i]')) b.onclick = () => { q.value = saved[+b.dataset.i].sql; $('#sql-name').value = saved[+b.dataset.i].name; run(); };
    for (const b of $('#sql-saved').querySelectorAll('[data-del]')) {
      b.onclick = () => { saved.splice(+b.dataset.del, 1); localStorage.setItem(SAVED, JSON.stringify(saved)); drawSaved(); };
    }
  };

  const run = async () => {
    const sql = q.value.trim();
    if (!sql) return;
    localStorage.setItem('nex.sqlLast', sql);
    const st = $('#sql-status'), out = $('#sql-result');
    st.textContent = 'Running…';
    const t0 = performance.now();
    let r;
    try { r = await post('db/system/_search', { type: 'databaseExplorerQuery', query: sql }, { quiet: true }); } catch (e) {
      st.textContent = '';
      out.innerHTML = `<div class="sql-error">${esc(e.code)}: ${esc(e.detail)}</div>`;
      return;
    }
    const rows = r.rows || [], cols = r.columns || [];
    const linked = rows.length && rowKey(cols, rows[0]) !== null;
    st.textContent = `${fmtInt(rows.length)} row${rows.length === 1 ? '' : 's'}${r.truncated ? ' (truncated by the server)' : ''}${rows.length > SHOWN_ROWS ? `, first ${fmtInt(SHOWN_ROWS)} shown` : ''} in ${Math.round(performance.now() - t0)} ms${linked ? ' — click a row to show the event on the timeline' : ''}`;
    const table = document.createElement('table');
    table.className = 'grid sql-grid';
    table.innerHTML = `<thead><tr>${cols.map((c) => `<th>${esc(c)}</th>`).join('')}</tr></thead>`;
    const body = document.createElement('tbody');
    for (const row of rows.slice(0, SHOWN_ROWS)) {
      const tr = document.createElement('tr');
      tr.innerHTML = row.map((v) => `<td class="${typeof v === 'number' ? 'num' : ''}">${v === null ? '<span class="dim">NULL</span>' : esc(typeof v === 'object' ? JSON.stringify(v) : v)}</td>`).join('');
      const key = rowKey(cols, row);
      if (key) { tr.className = 'linked'; tr.dataset.key = key; tr.onclick = () => { m.close(); reveal(key); }; }
      body.append(tr);
    }
    table.append(body);
    out.innerHTML = '';
    out.append(table);
  };

  $('#sql-run').onclick = run;
  q.onkeydown = (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } };
  $('#sql-save').onclick = () => {
    const name = $('#sql-name').value.trim() || q.value.trim().slice(0, 40);
    if (!q.value.trim()) return;
    const saved = loadSaved().filter((s) => s.name !== name);
    saved.unshift({ name, sql: q.value.trim() });
    localStorage.setItem(SAVED, JSON.stringify(saved.slice(0, MAX_SAVED)));
    drawSaved();
  };
  $('#sql-close').onclick = () => m.close();
  drawSaved();
  post('db/system/_search', { type: 'tableSchema' }, { quiet: true }).then((r) => {
    const el = $('#sql-tables');
    el.innerHTML = (r.tables || []).map((t) => `<button class="link" data-t="${esc(t.name)}" title="${esc(t.columns.map((c) => c.name).join(', '))}">${esc(t.name)}</button>`).join(' ');
    for (const b of el.querySelectorAll('button')) b.onclick = () => { q.value = `SELECT * FROM ${b.dataset.t} LIMIT 100`; run(); };
  }, (e) => { $('#sql-tables').textContent = e.message; });
  q.focus();
}
