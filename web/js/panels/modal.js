// modal.js -- one modal dialog at a time (device profiles list, shortcuts).

import { esc } from '../format.js';

let current = null;

/** Opens a modal with `title`; returns { dialog, body, footer, close }.  Esc or the backdrop closes it. */
export function openModal(title, subtitle = '', onClose = null) {
  closeModal();
  const back = document.createElement('div');
  back.className = 'modal-back';
  back.innerHTML = `<div class="modal" role="dialog" aria-modal="true" aria-label="${esc(title)}">
    <header><h2>${esc(title)}</h2>${subtitle ? `<div class="dim">${esc(subtitle)}</div>` : ''}</header>
    <div class="body"></div><footer></footer></div>`;
  back.addEventListener('mousedown', (e) => { if (e.target === back) closeModal(); });
  document.getElementById('modal-root').append(back);
  current = { back, onClose };
  return { dialog: back.querySelector('.modal'), body: back.querySelector('.body'), footer: back.querySelector('footer'), close: closeModal };
}

export function closeModal() {
  if (!current) return false;
  const c = current;
  current = null;
  c.back.remove();
  c.onClose?.();
  return true;
}

export const modalOpen = () => current !== null;
