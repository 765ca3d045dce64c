// @ts-check
// lazy/zip.js reads a ZIP archive (what an Office Open XML file is) without third-party code:
// the central directory by hand, each entry through DecompressionStream('deflate-raw'). Every
// byte an entry expands to is counted against one budget, so a small file that expands without
// end (a zip bomb) is stopped as soon as it passes the budget, whatever its headers claim.

export class Malformed extends Error {}
export class TooExpanded extends Error {}

const u16 = (b, o) => b[o] | (b[o + 1] << 8);
const u32 = (b, o) => (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;

// entries lists an archive's files by name: { method, flags, size, compressed, offset }.
export function entries(bytes) {
  // The end record is in the last 22 bytes plus at most a 64 KiB comment.
  let end = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 0xffff); i--) {
    if (u32(bytes, i) === 0x06054b50) { end = i; break; }
  }
  if (end < 0) throw new Malformed('no ZIP end record');
  const count = u16(bytes, end + 10);
  let at = u32(bytes, end + 16);
  if (at === 0xffffffff || count === 0xffff) throw new Malformed('ZIP64 archives are not read');
  const out = new Map();
  const names = new TextDecoder();
  for (let i = 0; i < count; i++) {
    if (at + 46 > bytes.length || u32(bytes, at) !== 0x02014b50) throw new Malformed('broken central directory');
    const nameLen = u16(bytes, at + 28);
    const e = {
      flags: u16(bytes, at + 8), method: u16(bytes, at + 10), compressed: u32(bytes, at + 20),
      size: u32(bytes, at + 24), offset: u32(bytes, at + 42),
    };
    if (at + 46 + nameLen > bytes.length) throw new Malformed('broken central directory');
    out.set(names.decode(bytes.subarray(at + 46, at + 46 + nameLen)), e);
    at += 46 + nameLen + u16(bytes, at + 30) + u16(bytes, at + 32);
  }
  return out;
}

// Budget is the number of bytes the entries read so far may still expand to.
export class Budget {
  constructor(limit) { this.limit = limit; this.left = limit; }
  take(n) {
    this.left -= n;
    if (this.left < 0) throw new TooExpanded(`expands past ${this.limit} bytes`);
  }
}

// read expands one entry to a string, charging budget for every byte it produces.
export async function read(bytes, e, budget) {
  if (e.flags & 1) throw new Malformed('encrypted entry');
  const at = e.offset;
  if (at + 30 > bytes.length || u32(bytes, at) !== 0x04034b50) throw new Malformed('broken local header');
  const start = at + 30 + u16(bytes, at + 26) + u16(bytes, at + 28);
  if (start + e.compressed > bytes.length) throw new Malformed('entry past the end of the file');
  const data = bytes.subarray(start, start + e.compressed);
  if (e.method === 0) {
    budget.take(data.length);
    return new TextDecoder().decode(data);
  }
  if (e.method !== 8) throw new Malformed(`compression method ${e.method}`);
  const ds = new DecompressionStream('deflate-raw');
  const writer = ds.writable.getWriter();
  writer.write(data).catch(() => {});
  writer.close().catch(() => {});
  const reader = ds.readable.getReader();
  const text = new TextDecoder();
  let out = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      budget.take(value.length);
      out += text.decode(value, { stream: true });
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    if (err instanceof TooExpanded) throw err;
    throw new Malformed(`corrupt data: ${err.message}`);
  }
  return out + text.decode();
}
