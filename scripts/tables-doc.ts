/**
 * Writes docs/tables.md from the table declarations (src/tables/index.ts) and the formats, so the reference
 * never drifts from what the tool writes. `npm run docs` runs it; a test checks it is current.
 */
import { writeFile } from 'node:fs/promises';
import { tablesReference } from '../src/output/formats/index.ts';

await writeFile(new URL('../docs/tables.md', import.meta.url), tablesReference());
