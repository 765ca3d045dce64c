// @ts-check
// lazy/markdown-worker.js runs the project's Markdown renderer (markdown.js) in a Worker, so a
// 2 MiB file cannot freeze the page: the renderer's cost grows with the square of a line's
// length, and a crafted line would hold the main thread for minutes. A worker has no DOM, so
// markdown.js builds into a small document (minidom.js), and the tree it makes is posted back as
// plain objects ({ tag, className, href, children } or { text }) that the page rebuilds.
// Message in: { text }; out: { tree: [nodes] }.
import { render } from '../markdown.js';
import { miniDocument } from './minidom.js';

// markdown.js reads document only when it renders, so setting it here, after the import, is
// in time.
self.document = miniDocument;

self.onmessage = ({ data }) => {
  try {
    self.postMessage({ tree: render(data.text).children });
  } catch (err) {
    self.postMessage({ error: String(err && err.message || err) });
  }
};
