/**
 * Writes docs/tables.md from the table declarations (src/load/tables.ts), so the reference
 * never drifts from what the tool writes. `npm run docs` runs it; a test checks it is current.
 */
import { writeFile } from 'node:fs/promises';
import { tablesMarkdown } from '../src/load/tables-doc.ts';

await writeFile(new URL('../docs/tables.md', import.meta.url), tablesMarkdown());
