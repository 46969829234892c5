/**
 * project.qde, the XML of a REFI-QDA project (namespace urn:QDA-XML:project:1.0, schema
 * Project-mrt2019.xsd), one response at a time: each response gives a case and its sources
 * (its conversation, and each recording with its transcript), which the package writer puts
 * into sources/ while their XML waits here; the code book and the variables, which every
 * response adds to, are written once all responses are in.
 *
 * What QualCoder's importer needs beyond the schema is kept here: Project@origin; text by
 * plainTextPath="internal://…" (inline PlainTextContent crashes it); a name and a creation
 * time on every source and transcript; source names unique, a transcript's "<name>.txt"
 * included; a case's link to its sources also in each source's name and a variable, since it
 * ignores a named case's SourceRef.
 */
import { privacyParagraphs } from '../privacy/index.ts';
import type { Row } from '../tables/index.ts';
import type { CodeBook } from './codebook.ts';
import { type ConversationText, conversationText, sourceText } from './conversation.ts';
import { guidOf } from './guids.ts';
import type { QdpxRecording, QdpxResponse, QdpxStudy } from './types.ts';
import { statusOf, type Variables, variableValue } from './variables.ts';
import { displayName, element, fileSafeName, tag, type UniqueNames } from './xml.ts';

export const PROJECT_FILE = 'project.qde';
export const SOURCES_FOLDER = 'sources';
const NAMESPACE = 'urn:QDA-XML:project:1.0';

/** A file of sources/ and what refers to it. */
export interface SourceFile {
  /** Its name inside sources/ ("<guid>.<ext>"). */
  file: string;
  text?: string;
  recording?: QdpxRecording;
}

/** A recording kept outside the package (over the size limit), and where it is meant to be. */
export interface ExternalRecording {
  recording: QdpxRecording;
  /** Its file name in the folder beside the .qdpx that Project@basePath names. */
  file: string;
}

/** One response planned: its case and sources as XML, the files they need. */
export interface PlannedResponse {
  caseName: string;
  caseXml: string;
  sourcesXml: string;
  internal: SourceFile[];
  external: ExternalRecording[];
  conversation: ConversationText;
}

export interface PlanContext {
  study: Row<'studies'>;
  codes: CodeBook;
  variables: Variables;
  caseNames: UniqueNames;
  sourceNames: UniqueNames;
  userGuid: string;
  /** Whether a recording of this size goes inside the package. */
  fitsInside: (bytes: number) => boolean;
}

/** The case's name: "Respondent <response_number>", or a short form of the id without one. */
function caseNameOf(response: Row<'responses'>): string {
  if (response.response_number !== null) return `Respondent ${response.response_number}`;
  return `Respondent ${fileSafeName(response.response_id.slice(0, 8), 'unnumbered')}`;
}

/** What every element of one response's sources shares. */
interface ResponseScope {
  context: PlanContext;
  item: QdpxResponse;
  caseName: string;
  /** creatingUser and creationDateTime, which QualCoder needs on every source. */
  who: { creatingUser: string; creationDateTime: string };
  respondentValue: string;
}

export function planResponse(context: PlanContext, item: QdpxResponse): PlannedResponse {
  const caseName = context.caseNames.claim(caseNameOf(item.response));
  const scope: ResponseScope = {
    context,
    item,
    caseName,
    who: { creatingUser: context.userGuid, creationDateTime: item.response.created_at },
    respondentValue: variableValue(context.variables.own('respondent'), caseName),
  };
  const conversation = conversationSource(scope);
  const internal: SourceFile[] = [conversation.file];
  const external: ExternalRecording[] = [];
  const sources = [conversation.xml];
  const sourceGuids = [conversation.guid];
  for (const recording of item.recordings) {
    const planned = recordingSource(scope, recording);
    internal.push(...planned.internal);
    external.push(...planned.external);
    sources.push(planned.xml);
    sourceGuids.push(planned.guid);
  }
  return {
    caseName,
    caseXml: caseXml(context, item, caseName, sourceGuids),
    sourcesXml: sources.join(''),
    internal,
    external,
    conversation: conversation.text,
  };
}

/** The conversation's text source, each answer passage a coded selection. */
function conversationSource(scope: ResponseScope) {
  const { context, item, caseName, who } = scope;
  const { codes, study } = context;
  const studyId = study.study_id;
  const responseId = item.response.response_id;
  const guid = guidOf('conversation', studyId, responseId);
  const text = conversationText(
    item,
    `${displayName(study.title, study.link_id)}: ${caseName}, conversation of ${item.response.created_at}`,
    (answer) => codes.codeOf(answer).name,
  );
  const selections = text.passages.map((passage) => {
    const ids = passage.answer ? [passage.answer.answer_id, passage.turn] : ['summary'];
    const code = passage.answer ? codes.codeOf(passage.answer) : codes.summary;
    return (
      tag('PlainTextSelection', {
        guid: guidOf('selection', studyId, responseId, ...ids),
        name: passage.turn === null ? code.name : `${code.name} (turn ${passage.turn})`,
        startPosition: passage.start,
        endPosition: passage.end,
        ...who,
      }) +
      tag('Coding', { guid: guidOf('coding', studyId, responseId, ...ids), ...who }) +
      tag('CodeRef', { targetGUID: code.guid }, true) +
      '</Coding></PlainTextSelection>'
    );
  });
  const xml =
    tag('TextSource', {
      guid,
      name: context.sourceNames.claim(`${caseName} conversation`),
      plainTextPath: `internal://${guid}.txt`,
      ...who,
    }) +
    element('Description', `The conversation of ${caseName} (response ${responseId}).`) +
    selections.join('') +
    scope.respondentValue +
    '</TextSource>';
  return { guid, xml, text, file: { file: `${guid}.txt`, text: text.text } satisfies SourceFile };
}

/** A recording's audio or video source with its transcript: inside the package, or beside it. */
function recordingSource(scope: ResponseScope, recording: QdpxRecording) {
  const { context, item, caseName, who } = scope;
  const { turn, kind } = recording;
  const ids = [context.study.study_id, item.response.response_id, turn, kind] as const;
  const guid = guidOf('recording', ...ids);
  const transcriptGuid = guidOf('transcript', ...ids);
  const extension = fileSafeName(recording.extension.toLowerCase(), 'bin');
  const name = context.sourceNames.claim(`${caseName} turn ${turn} ${kind}`, `.${extension}`);
  // QualCoder stores the transcript as "<name>.txt": that name must be free too.
  const transcriptName = context.sourceNames.claim(name, '.txt');
  const inside = context.fitsInside(recording.bytes);
  const file = inside ? `${guid}.${extension}` : fileSafeName(name, `${guid}.${extension}`);
  const said = sourceText(item.transcript.find((row) => row.turn === turn)?.user ?? '');
  const element_ = kind === 'audio' ? 'AudioSource' : 'VideoSource';
  const xml =
    tag(element_, { guid, name, path: inside ? `internal://${file}` : `relative://${file}`, ...who }) +
    element(
      'Description',
      `${caseName}'s ${kind} recording of turn ${turn} (response ${item.response.response_id}).`,
    ) +
    tag('Transcript', {
      guid: transcriptGuid,
      name: transcriptName,
      plainTextPath: `internal://${transcriptGuid}.txt`,
      ...who,
    }) +
    element('Description', `What ${caseName} said in turn ${turn}.`) +
    '</Transcript>' +
    scope.respondentValue +
    `</${element_}>`;
  const transcript: SourceFile = { file: `${transcriptGuid}.txt`, text: said };
  return {
    guid,
    xml,
    internal: inside ? [{ file, recording }, transcript] : [transcript],
    external: inside ? [] : [{ recording, file }],
  };
}

function caseXml(context: PlanContext, item: QdpxResponse, name: string, sourceGuids: string[]): string {
  const { variables, study } = context;
  const { response } = item;
  const values = [
    variableValue(variables.own('responseId'), response.response_id),
    response.response_number === null
      ? ''
      : variableValue(variables.own('responseNumber'), response.response_number),
    variableValue(variables.own('createdAt'), response.created_at),
    variableValue(variables.own('modality'), response.modality),
    variableValue(variables.own('status'), statusOf(response)),
    ...item.attributes.map((row) => variableValue(variables.ofKey(row.key), row.value)),
  ];
  return (
    tag('Case', { guid: guidOf('case', study.study_id, response.response_id), name }) +
    element('Description', response.summary ?? '') +
    values.join('') +
    sourceGuids.map((guid) => tag('SourceRef', { targetGUID: guid }, true)).join('') +
    '</Case>'
  );
}

export interface ProjectParts {
  study: QdpxStudy['study'];
  privacy: QdpxStudy['privacy'];
  origin: string;
  userGuid: string;
  /** Absolute folder of the recordings kept outside, when there are any (ends in "/"). */
  basePath?: string;
  codes: CodeBook;
  variables: Variables;
  exportedAt: string;
}

/** The document up to the first case. */
export function projectHead(parts: ProjectParts): string {
  const { study } = parts;
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    tag('Project', {
      xmlns: NAMESPACE,
      name: displayName(study.title, study.link_id),
      origin: parts.origin,
      creatingUserGUID: parts.userGuid,
      creationDateTime: parts.exportedAt,
      basePath: parts.basePath,
    }) +
    `<Users>${tag('User', { guid: parts.userGuid, name: 'study-export' }, true)}</Users>` +
    parts.codes.xml() +
    parts.variables.xml()
  );
}

/** The document after the last source. */
export function projectTail(parts: ProjectParts): string {
  const { study } = parts;
  const description = [
    `Study "${study.title}" (link id ${study.link_id}, study id ${study.study_id}), created ${study.created_at}.`,
    `Exported by ${parts.origin} at ${parts.exportedAt} from the study's newest rows.`,
    "Cases are respondents; codes are the discussion guide's question slots; every answer passage is coded.",
    ...privacyParagraphs(parts.privacy, { recordings: true }),
  ].join('\n');
  return `${element('Description', description)}</Project>\n`;
}
