/*
 * Preloaded into a service process by the bench when it measures what memory that process keeps
 * (`node -r`, with BENCH_HEAP_DIR set; scenario 9 does it for its api). On SIGURG (a signal that
 * neither Node nor Nest's enableShutdownHooks() acts on) it runs a full, compacting garbage
 * collection through the inspector (what DevTools' "Collect garbage" does), then writes
 * <dir>/<name>-<n>.json: process.memoryUsage() taken right after it, n counting from 1. With
 * BENCH_HEAP_SNAPSHOTS=1 it also writes <dir>/<name>-<n>.heapsnapshot (for DevTools' comparison
 * view, or bench/heap-summary.ts). The .json is written last (renamed into place), so the harness
 * waits for it. Plain JS so it needs no compiler in the child; no route is added to the service.
 */
'use strict';
const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_HEAP_DIR;
const name = process.env.BENCH_HEAP_NAME || `pid-${process.pid}`;
const snapshots = process.env.BENCH_HEAP_SNAPSHOTS === '1';
const session = new inspector.Session();
session.connect();
let taken = 0;
let busy = false;

function post(method, params) {
  return new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
}

async function snapshotTo(file) {
  const out = fs.openSync(file, 'w');
  const onChunk = (message) => fs.writeSync(out, message.params.chunk);
  session.on('HeapProfiler.addHeapSnapshotChunk', onChunk);
  try {
    await post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  } finally {
    session.removeListener('HeapProfiler.addHeapSnapshotChunk', onChunk);
    fs.closeSync(out);
  }
}

async function probe() {
  taken += 1;
  const base = path.join(dir, `${name}-${taken}`);
  fs.mkdirSync(dir, { recursive: true });
  await post('HeapProfiler.enable');
  try {
    await post('HeapProfiler.collectGarbage');
    const memory = process.memoryUsage();
    // A snapshot collects garbage again before it walks the heap.
    if (snapshots) await snapshotTo(`${base}.heapsnapshot`);
    fs.writeFileSync(`${base}.json.tmp`, JSON.stringify({ ...memory, snapshot: snapshots ? `${base}.heapsnapshot` : undefined }));
    fs.renameSync(`${base}.json.tmp`, `${base}.json`);
  } finally {
    await post('HeapProfiler.disable');
  }
}

process.on('SIGURG', () => {
  if (busy) return;
  busy = true;
  probe()
    .catch((error) => process.stderr.write(`[bench heap probe] ${error.stack || error}\n`))
    .finally(() => (busy = false));
});
