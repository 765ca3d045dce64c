// @ts-check
// features.js loads the feature modules: each registers its panels and menu entries with
// views/registry.js when imported. Add a feature with one line here.
import './views/channel.js';
import './views/ondemand.js';
import './views/bots/index.js';
import './views/moderation/index.js';
import './views/preview.js';
import './views/marks.js';
import './views/export.js';
// A click on a person (data-card: an author, an avatar, a row of people) opens their card; so
// do Enter and Space on a name in the Tab order (role=button).
document.addEventListener('click', (e) => {
  const el = e.target instanceof Element && e.target.closest('[data-card]');
  if (el) import('./lazy/card.js').then((m) => m.openCard(el.dataset.card, el)).catch(console.error);
});
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if ((e.key === 'Enter' || e.key === ' ') && t instanceof HTMLElement && t.matches('[data-card][role=button]')) { e.preventDefault(); t.click(); }
});
// @ and : completion (lazy/complete.js) is loaded by the first @ or : typed in a composer.
document.addEventListener('input', function first(e) {
  const t = /** @type {HTMLTextAreaElement} */ (e.target);
  if (!t.classList || !t.classList.contains('compose-box') || !/[@:]/.test(t.value)) return;
  document.removeEventListener('input', first);
  import('./lazy/complete.js').then((m) => m.update(t)).catch(() => document.addEventListener('input', first));
});
