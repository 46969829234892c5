/**
 * verify's privacy scan reads a package's files through the format registry: a file of every
 * registered format is scanned, each by its own reading of its texts, and an unknown file is not.
 */
import ExcelJS from 'exceljs';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { outputFormats } from '../../src/output/formats/index.ts';
import { PackageScan, scannable } from '../../src/privacy/index.ts';

const email = 'jane.roe@mailbox.example.org';
const fileName = (format: (typeof outputFormats)[number]) =>
  `package/${format.name}/file${format.kind === 'table' ? `.${format.name}` : format.extension}`;

async function bytesHolding(format: (typeof outputFormats)[number], text: string): Promise<Buffer> {
  if (format.name === 'parquet')
    return Buffer.from(parquetWriteBuffer({ columnData: [{ name: 'answer', data: ['none', text] }] }));
  if (format.name === 'xlsx') {
    const workbook = new ExcelJS.Workbook();
    workbook.addWorksheet('wide').addRow(['answer', text]);
    return Buffer.from(await workbook.xlsx.writeBuffer());
  }
  // csv, the wide sheet, SPSS and Stata files hold their strings as UTF-8.
  return Buffer.concat([Buffer.from([0, 1, 2, 3]), Buffer.from(`"${text}"`), Buffer.from([0, 0])]);
}

describe('PackageScan', () => {
  it.each(outputFormats.map((format) => [format.name, format] as const))(
    'finds an e-mail address left in a %s file, named by file',
    async (_, format) => {
      const scan = new PackageScan();
      const file = fileName(format);
      expect(scannable(file)).toBe(true);
      await scan.add(file, await bytesHolding(format, `write to ${email} please`));
      const left = scan.leftovers();
      expect(left.map((each) => each.kind)).toEqual(['EMAIL']);
      expect(left[0]?.file.startsWith(file)).toBe(true);
    },
  );

  it('finds nothing in the same files without the address', async () => {
    const scan = new PackageScan();
    for (const format of outputFormats)
      await scan.add(fileName(format), await bytesHolding(format, 'no one'));
    expect(scan.leftovers()).toEqual([]);
  });

  it('reads no file that is neither an output format, text nor a container', () => {
    for (const file of ['recordings/1-video.mp4', 'audio.mp3', 'data.bin'])
      expect(scannable(file)).toBe(false);
    for (const file of ['README.md', 'report.html', 'project.qdpx', 'raw/x.jsonl.gz'])
      expect(scannable(file)).toBe(true);
  });
});
