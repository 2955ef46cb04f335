import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startWorkerProcess } from '../support/service-process';
import { privateQueuePrefix } from '../support/test-env';

interface Row {
  name: string;
  roles: string;
  cadence: string;
  setting: string;
}

/** The table of docs/operations.md, "Background work": name, roles, cadence and setting of each row ('—' when none). */
function documented(): Row[] {
  const text = readFileSync(resolve(__dirname, '../../docs/operations.md'), 'utf8');
  const section = text.split('\n## Background work\n')[1].split('\n## ')[0];
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| Name ') && !line.startsWith('| ---'))
    .map((line) => {
      const [name, , roles, cadence, setting] = line
        .slice(2, -2)
        .split(' | ')
        .map((cell) => cell.trim());
      return { name, roles, cadence, setting };
    });
}

/** The "background work: …" lines a worker logged (JSON lines), as rows. */
function logged(output: string): Row[] {
  const rows: Row[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const msg = String((JSON.parse(line) as { msg?: unknown }).msg ?? '');
    const match = /^background work: (.+?) — (.+?)(?: \(([A-Z_]+)\))? — roles (.+)$/.exec(msg);
    if (match) rows.push({ name: match[1], cadence: match[2], setting: match[3] ?? '—', roles: match[4] });
  }
  return rows;
}

const byName = (a: Row, b: Row) => a.name.localeCompare(b.name);

/**
 * docs/operations.md lists what a worker runs in the background; the worker logs the same list
 * as it starts. Booted with every documented setting at its default, the two are equal: a
 * registration, a cadence or a setting changed in the code fails this test until the docs follow.
 */
describe('background work: docs/operations.md and a worker agree', () => {
  jest.setTimeout(180_000);

  it('a worker logs exactly the documented background work, with its roles, cadence and setting', async () => {
    const docs = documented();
    expect(docs.length).toBeGreaterThan(10);
    const defaults = Object.fromEntries(docs.filter((row) => row.setting !== '—').map((row) => [row.setting, undefined]));
    const worker = await startWorkerProcess({ ...defaults, LOG_LEVEL: 'info', QUEUE_PREFIX: privateQueuePrefix('background-work') });
    try {
      expect(logged(worker.output()).sort(byName)).toEqual(docs.filter((row) => row.roles.split(', ').includes('worker')).sort(byName));
    } finally {
      await worker.stop();
    }
  });
});
