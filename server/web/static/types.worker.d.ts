// Types for checking the workers (tsc -p tsconfig.worker.json): they run without a DOM.
// markdown-worker.js gives markdown.js a stand-in document of its own.
declare var document: any;
