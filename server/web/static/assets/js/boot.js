// @ts-check
// boot.js hands the modules what the page's inline script, early.js, started and knows: the
// first view's API reads (takeEarly, which api.get asks first), the paths they use and which
// workspace and place a page opens. Where no page ran early.js (node's tests), it loads it.
if (!globalThis.natterBoot) await import('./early.js');

export const { takeEarly, q, workspacePaths, pickWorkspace, openingPlace, defaultPlace, placePath, pagePath, firstPage } = globalThis.natterBoot;
