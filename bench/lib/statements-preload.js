/*
 * Preloaded into the service processes (`node -r`) by the bench: counts the SQL statements the
 * process sends (every pg Client#query call: BEGIN, COMMIT and SAVEPOINT included) and writes the
 * running count to <BENCH_STATEMENTS_DIR>/<pid> every 100 ms, so a scenario can divide the
 * statements of a window by its sends (bench/lib/monitor.ts), and each statement text's count
 * (first 120 characters) to <pid>.texts.json every 2 s, to see which ones a change added.
 * Plain JS so it needs no compiler.
 *
 * It runs inside the processes it measures, so it must cost them next to nothing: the count is
 * one positioned write of a fixed width into a file kept open (statementsOf in children.ts reads
 * it until two reads agree). Writing a new file and renaming it over the old one ten times a
 * second cost 3 to 4 % of the worker's and the api's samples in a CPU profile on a VM whose
 * file system calls are slow, all of it counted as the service's CPU per delivery.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_STATEMENTS_DIR;
/** The count file's width: a count is always written whole over the last one, never shorter. */
const COUNT_WIDTH = 20;
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
      // Whitespace collapsed in a prefix only: statements run to kilobytes, the key is 120 characters.
      const text = String((typeof first === 'object' && first !== null ? first.text : first) ?? '')
        .slice(0, 2000)
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
  const countFd = fs.openSync(file, 'w');
  // The texts, for analysis only, are written whole and renamed: a reader never sees half a file.
  const writeTexts = () => {
    fs.writeFileSync(`${file}.texts.json.tmp`, JSON.stringify(Object.fromEntries([...texts].sort((a, b) => b[1] - a[1])), null, 1));
    fs.renameSync(`${file}.texts.json.tmp`, `${file}.texts.json`);
  };
  let written = -1;
  let ticks = 0;
  setInterval(() => {
    ticks += 1;
    if (count === written) return;
    written = count;
    fs.writeSync(countFd, String(count).padStart(COUNT_WIDTH, ' '), 0);
    if (ticks % 20 === 0) writeTexts();
  }, 100).unref();
}
