// table.js -- a small sortable HTML table (Event Details, area selection,
// Summary).  Click a header to sort; click again to reverse.

import { esc } from '../format.js';

/**
 * Renders rows into `el`.  columns: [{ key, label, num, html(row), value(row) }]
 * (html defaults to the escaped value, value to row[key]).  Returns the table.
 * onRow(row, tr) may decorate each row (click handlers).
 */
export function sortableTable(el, columns, rows, { sort = null, onRow = null, cls = '' } = {}) {
  let state = sort ? { ...sort } : null;
  const table = document.createElement('table');
  table.className = `grid ${cls}`;
  const draw = () => {
    const val = (c, r) => (c.value ? c.value(r) : r[c.key]);
    const list = [...rows];
    if (state) {
      const c = columns.find((x) => x.key === state.key);
      const dir = state.dir === 'desc' ? -1 : 1;
      list.sort((a, b) => {
        const va = val(c, a), vb = val(c, b);
        if (typeof va === 'number' && typeof vb === 'number') return (va - vb) * dir;
        if (typeof va === 'bigint' && typeof vb === 'bigint') return (va < vb ? -1 : va > vb ? 1 : 0) * dir;
        return String(va ?? '').localeCompare(String(vb ?? ''), undefined, { numeric: true }) * dir;
      });
    }
    table.innerHTML = '<thead><tr>' + columns.map((c) => {
      const s = state?.key === c.key ? state.dir : '';
      return `<th class="sortable ${s} ${c.num ? 'num' : ''}" data-key="${esc(c.key)}">${esc(c.label)}</th>`;
    }).join('') + '</tr></thead>';
    const body = document.createElement('tbody');
    for (const r of list) {
      const tr = document.createElement('tr');
      tr.innerHTML = columns.map((c) => `<td class="${c.num ? 'num' : ''} ${c.cls || ''}">${c.html ? c.html(r) : esc(val(c, r))}</td>`).join('');
      onRow?.(r, tr);
      body.append(tr);
    }
    table.append(body);
    for (const th of table.querySelectorAll('th')) {
      th.onclick = () => {
        const k = th.dataset.key;
        state = { key: k, dir: state?.key === k && state.dir === 'asc' ? 'desc' : 'asc' };
        draw();
      };
    }
  };
  draw();
  el.append(table);
  return table;
}
