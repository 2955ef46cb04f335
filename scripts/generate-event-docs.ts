/*
 * Writes the event catalog into docs/ (docs/events.md, docs/events/asyncapi.json,
 * docs/events/schemas/*.json) from src/event-catalog/, removing schema files of kinds that no
 * longer exist. src/event-catalog/event-docs.spec.ts fails while the committed files differ.
 *
 * Usage: npm run docs:events
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { renderEventDocs, SCHEMAS_DIR } from '../src/event-catalog/event-docs';

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
