// theme.js -- a classic (blocking) script: applies the saved or preferred
// theme before the first paint, so the page never flashes the other one.
document.documentElement.dataset.theme = localStorage.getItem('nex.theme') ||
  (matchMedia('(prefers-color-scheme: light)').matches ? 'light' : 'dark');
