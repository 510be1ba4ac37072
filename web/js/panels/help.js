// help.js -- the keyboard shortcuts sheet (`?`).

import { openModal } from './modal.js';

// Keys are written in braces: {W} becomes <kbd>W</kbd>.
const KEYS = [
  ['{W} / {S}, {↑} / {↓}', 'Zoom in / out (at the mouse pointer)'],
  ['{A} / {D}, {←} / {→}', 'Pan left / right'],
  ['{Ctrl} + wheel, wheel on the time axis', 'Zoom'],
  ['{Shift} + wheel, horizontal wheel', 'Pan'],
  ['Wheel', 'Scroll the tracks'],
  ['Drag', 'Pan (time and tracks)'],
  ['Drag on the time axis', 'Zoom to the dragged range'],
  ['{Shift} + drag', 'Area selection: count, total and self time by name'],
  ['Click', 'Select an event: details and dependency chain'],
  ['Double click', 'Zoom to the event'],
  ['{Ctrl} + click a hardware event', 'Open its device profile'],
  ['Double click on the time axis', 'Count time from there (set the origin)'],
  ['Click on the time axis', 'Drop a flag (listed with notes and named areas in the ⚑ panel)'],
  ['{O}', 'Count time from the selected event (no selection: from the profile start)'],
  ['{Shift} + {O}, double click on the corner', 'Count time from the profile start again'],
  ['{Y}', 'Counters of one kind on one scale (HBM against its capacity, bandwidth across NeuronCores) or each on its own'],
  ['{F}', 'Fit the selection (or the profile)'],
  ['{0}', 'Fit the whole profile'],
  ['{/}', 'Search'],
  ['{Enter} / {Shift} + {Enter}', 'Next / previous search hit'],
  ['{[} / {]}', 'Go to the first upstream / downstream event'],
  ['{Esc}', 'Clear the selection, close dialogs'],
  ['{T}', 'Dark / light theme'],
  ['{Q}', 'SQL console'],
  ['{?}', 'This help'],
];

export function openHelp() {
  const m = openModal('Keyboard shortcuts');
  m.body.innerHTML = `<div class="keys">${KEYS.map(([k, d]) =>
    `<div>${k.replace(/\{([^}]+)\}/g, '<kbd>$1</kbd>')}</div><div>${d}</div>`).join('')}</div>
    <p class="dim">Merged (faint) boxes stand for several events at this zoom; the bar inside is as high as the part of the box the events keep busy, so idle time shows. The tooltip shows how many. Click one to zoom into it. A collapsed group draws the busiest of its lanes the same way. While searching, the hits are outlined, or, when there are many, shown as a density strip under each track, with the hit count next to its name.</p>`;
  m.footer.innerHTML = '<span class="spacer"></span><button class="primary">Close</button>';
  m.footer.querySelector('button').onclick = m.close;
}
