// @ts-check
// lazy/minidom.js is the least of a document that markdown.js needs to build into where there is
// no DOM: the Markdown worker and the node --test unit tests. Elements are plain objects
// ({ tag, className, href, children } or { text }), so the tree can be posted or printed as is.

export class Element {
  /** @param {string} tag */
  constructor(tag) {
    this.tag = tag;
    /** @type {any[]} */
    this.children = [];
  }

  // Appending a fragment moves its children, as the DOM does.
  /** @param {any} node */
  appendChild(node) {
    if (node.tag === '#fragment') this.children.push(...node.children.splice(0));
    else this.children.push(node);
    return node;
  }

  /** @param {any} value */
  set textContent(value) { this.children = [{ text: String(value) }]; }
}

export const miniDocument = {
  /** @param {string} tag */
  createElement: (tag) => new Element(tag),
  /** @param {any} text */
  createTextNode: (text) => ({ text: String(text) }),
  createDocumentFragment: () => new Element('#fragment'),
};
