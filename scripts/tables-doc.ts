/**
 * Writes docs/tables.md from the table declarations (src/tables/index.ts), so the reference
 * never drifts from what the tool writes. `npm run docs` runs it; a test checks it is current.
 */
import { writeFile } from 'node:fs/promises';
import { tablesMarkdown } from '../src/tables/markdown.ts';

await writeFile(new URL('../docs/tables.md', import.meta.url), tablesMarkdown());
