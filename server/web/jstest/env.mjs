// env.mjs gives the client's modules the little of a browser they touch when imported and when
// the store flushes: a visible document and animation frames that run when the test says so.
// Import it before any module of the client.
export const frames = [];
globalThis.document = { hidden: false, visibilityState: 'visible' };
globalThis.requestAnimationFrame = (fn) => frames.push(fn);

// frame runs the animation frames asked for so far (the store's flush among them).
export function frame() {
  for (const fn of frames.splice(0)) fn();
}
