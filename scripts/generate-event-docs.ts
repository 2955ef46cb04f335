/*
 * Writes the event catalog into docs/ (docs/events.md, docs/events/asyncapi.json,
 * docs/events/schemas/*.json) from src/event-catalog/, removing schema files of kinds that no
 * longer exist. src/event-catalog/event-docs.spec.ts fails while the committed files differ.
 *
 * With --snapshot it also records the current schemas as the snapshot that later changes must
 * extend additively (src/event-catalog/schemas.snapshot.json), and refuses to when the change
 * since the last snapshot is not additive (docs/webhooks.md, "How the schemas evolve").
 *
 * Usage: npm run docs:events [-- --snapshot]
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { renderEventDocs, SCHEMAS_DIR } from '../src/event-catalog/event-docs';
import { Catalog, currentCatalog, nonAdditiveChanges } from '../src/event-catalog/schema-evolution';

const root = resolve(__dirname, '..');
const files = renderEventDocs();
mkdirSync(join(root, SCHEMAS_DIR), { recursive: true });
for (const name of readdirSync(join(root, SCHEMAS_DIR))) {
  if (!files.has(`${SCHEMAS_DIR}/${name}`)) rmSync(join(root, SCHEMAS_DIR, name));
}
for (const [path, content] of files) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), content);
}
process.stdout.write(`docs:events: wrote ${files.size} files\n`);

async function recordSnapshot(): Promise<void> {
  const snapshotPath = join(root, 'src/event-catalog/schemas.snapshot.json');
  const current = currentCatalog();
  if (existsSync(snapshotPath)) {
    const problems = nonAdditiveChanges(JSON.parse(readFileSync(snapshotPath, 'utf8')) as Catalog, current);
    if (problems.length > 0) {
      process.stderr.write(`docs:events: not additive, snapshot kept:\n${problems.join('\n')}\n`);
      process.exit(1);
    }
  }
  // Formatted as `npm run lint` checks src/.
  writeFileSync(snapshotPath, await format(JSON.stringify(current), { ...(await resolveConfig(snapshotPath)), parser: 'json' }));
  process.stdout.write('docs:events: recorded the schemas snapshot\n');
}

if (process.argv.includes('--snapshot')) void recordSnapshot();
