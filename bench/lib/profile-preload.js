/*
 * Preloaded into the service processes when BENCH_PROFILE_DIR is set (`node -r`): starts the V8
 * CPU profiler at once and writes a .cpuprofile when the process gets SIGWINCH (the harness sends
 * it just before stopping the process; not SIGUSR2, which Nest's enableShutdownHooks() treats as a
 * shutdown signal). Plain JS so it needs no compiler in the child.
 */
'use strict';
const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_PROFILE_DIR;
const name = process.env.BENCH_PROFILE_NAME || `pid-${process.pid}`;
const session = new inspector.Session();
session.connect();
session.post('Profiler.enable', () => {
  session.post('Profiler.setSamplingInterval', { interval: 500 }, () => {
    session.post('Profiler.start');
  });
});

process.on('SIGWINCH', () => {
  session.post('Profiler.stop', (error, result) => {
    if (!error && result && result.profile) {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(result.profile));
    }
    // Start again, so a later SIGWINCH writes the next part.
    session.post('Profiler.start');
  });
});
