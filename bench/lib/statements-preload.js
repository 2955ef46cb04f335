/*
 * Preloaded into the service processes (`node -r`) by the bench: counts the SQL statements the
 * process sends (every pg Client#query call: BEGIN, COMMIT and SAVEPOINT included) and writes the
 * running count to <BENCH_STATEMENTS_DIR>/<pid> every 100 ms, so a scenario can divide the
 * statements of a window by its sends (bench/lib/monitor.ts), and each statement text's count
 * (first 120 characters) to <pid>.texts.json every 2 s, to see which ones a change added.
 * Plain JS so it needs no compiler.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_STATEMENTS_DIR;
if (dir) {
  const Module = require('node:module');
  let count = 0;
  const texts = new Map();
  // Every copy of pg the process loads (the service's may not be the one this file would resolve).
  const patched = new WeakSet();
  const patch = (pg) => {
    const Client = pg && pg.Client;
    if (!Client || patched.has(Client)) return;
    patched.add(Client);
    const query = Client.prototype.query;
    Client.prototype.query = function countedQuery(...args) {
      count += 1;
      const first = args[0];
      const text = String((typeof first === 'object' && first !== null ? first.text : first) ?? '')
        .replace(/\s+/g, ' ')
        .slice(0, 120);
      texts.set(text, (texts.get(text) ?? 0) + 1);
      return query.apply(this, args);
    };
  };
  const load = Module._load;
  Module._load = function loadAndCount(request, ...rest) {
    const exported = load.call(this, request, ...rest);
    if (request === 'pg') patch(exported);
    return exported;
  };
  const file = path.join(dir, String(process.pid));
  fs.mkdirSync(dir, { recursive: true });
  // Written whole and renamed: a reader never sees a half-written file.
  const write = (to, text) => {
    fs.writeFileSync(`${to}.tmp`, text);
    fs.renameSync(`${to}.tmp`, to);
  };
  let written = -1;
  let ticks = 0;
  setInterval(() => {
    ticks += 1;
    if (count === written) return;
    written = count;
    write(file, String(count));
    if (ticks % 20 === 0) write(`${file}.texts.json`, JSON.stringify(Object.fromEntries([...texts].sort((a, b) => b[1] - a[1])), null, 1));
  }, 100).unref();
}
