/** The `sav` format: an SPSS system file per study, its wide sheet with labels (statistics.ts). */
import { checkSav } from '../sav/check.ts';
import { type StudyFormatModule, wholeText } from './format.ts';
import { statisticsFile, statisticsStudyWriter } from './statistics.ts';

export const savFormat = {
  name: 'sav',
  kind: 'study',
  selectable: true,
  help: 'an SPSS file (.sav) per study',
  datapackage: { format: 'sav', mediatype: 'application/x-spss-sav' },
  namesVariables: true,
  codebookRank: 5,
  folder: 'sav',
  extension: '.sav',
  fileNoun: 'SPSS file',
  description:
    'The wide sheet of one study as an SPSS system file (UTF-8): one row per response, variables named from the question slots and labelled with the questions, status and modality with value labels, times as DATETIME (UTC).',
  studyFile: (fileName) => statisticsFile('sav', fileName),
  // Its strings are UTF-8 among binary numbers: read as text, a match inside a value is found
  // (one that a very long value splits across segments may not be).
  texts: wholeText,
  codebookLine: (holder) =>
    `- **${holder !== 'current' ? 'sav/<link_id>.sav' : 'sav/study_id=<id>/<link_id>.sav'}** (SPSS, PSPP, R's haven, jamovi): per study, the wide sheet with short variable names (below), each labelled with its question, status and modality as labelled codes, times as times.`,
  async verifyFile(storage, path) {
    return (await checkSav(await storage.readStream(path))).map((problem) => `${path}: ${problem}`);
  },
  open: (input) => statisticsStudyWriter('sav', input),
} as const satisfies StudyFormatModule;
