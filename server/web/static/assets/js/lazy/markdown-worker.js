// @ts-check
// lazy/markdown-worker.js runs the project's Markdown renderer (markdown.js) in a Worker, so a
// 2 MiB file cannot freeze the page: the renderer's cost grows with the square of a line's
// length, and a crafted line would hold the main thread for minutes. A worker has no DOM, so
// markdown.js builds into the small document below, and the tree it makes is posted back as
// plain objects ({ tag, className, href, children } or { text }) that the page rebuilds.
// Message in: { text }; out: { tree: [nodes] }.
import { render } from '../markdown.js';

class Element {
  constructor(tag) {
    this.tag = tag;
    this.children = [];
  }

  // Appending a fragment moves its children, as the DOM does.
  appendChild(node) {
    if (node.tag === '#fragment') this.children.push(...node.children.splice(0));
    else this.children.push(node);
    return node;
  }

  set textContent(value) { this.children = [{ text: String(value) }]; }
}

// markdown.js reads document only when it renders, so setting it here, after the import, is
// in time.
self.document = {
  createElement: (tag) => new Element(tag),
  createTextNode: (text) => ({ text: String(text) }),
  createDocumentFragment: () => new Element('#fragment'),
};

self.onmessage = ({ data }) => {
  try {
    self.postMessage({ tree: render(data.text).children });
  } catch (err) {
    self.postMessage({ error: String(err && err.message || err) });
  }
};
