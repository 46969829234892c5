/** The `dta` format: a Stata dataset (format 118) per study, its wide sheet with labels (statistics.ts). */
import { checkDta } from '../dta/check.ts';
import { type StudyFormatModule, wholeText } from './format.ts';
import { statisticsFile, statisticsStudyWriter } from './statistics.ts';

export const dtaFormat = {
  name: 'dta',
  kind: 'study',
  selectable: true,
  help: 'one Stata file (.dta) per study',
  datapackage: { format: 'dta', mediatype: 'application/x-stata-dta' },
  namesVariables: true,
  codebookRank: 6,
  folder: 'dta',
  extension: '.dta',
  fileNoun: 'Stata file',
  description:
    'The wide sheet of one study as a Stata dataset (format 118, UTF-8): one row per response, variables named from the question slots and labelled with the questions (cut at 80 characters, whole in the notes), long answers as strL, status and modality with value labels, times as %tc (UTC).',
  studyFile: (fileName) => statisticsFile('dta', fileName),
  // Its strings are UTF-8 among binary numbers: read as text, a match inside a value is found
  // (one that a very long value splits across segments may not be).
  texts: wholeText,
  codebookLine: (holder) =>
    `- **${holder !== 'current' ? 'dta/<link_id>.dta' : 'dta/study_id=<id>/<link_id>.dta'}** (Stata 14 or later, R's haven): per study, the wide sheet with the same variables as the SPSS file, answers of any length as strL, questions longer than Stata's 80-character labels whole in \`notes\`.`,
  async verifyFile(storage, path, bytes) {
    const read = async (start: number, end: number) => {
      const chunks: Buffer[] = [];
      for await (const chunk of await storage.readStream(path, { start, end })) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    };
    return (await checkDta(read, bytes)).map((problem) => `${path}: ${problem}`);
  },
  open: (input) => statisticsStudyWriter('dta', input),
} as const satisfies StudyFormatModule;
