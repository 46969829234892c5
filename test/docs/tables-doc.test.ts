import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { tablesReference } from '../../src/output/formats/index.ts';

it('docs/tables.md is current with the table declarations (npm run docs)', async () => {
  const committed = await readFile(new URL('../../docs/tables.md', import.meta.url), 'utf8');
  expect(committed).toBe(tablesReference());
});
