/**
 * The project's variables: a case's from the response (its id, number, creation time,
 * modality, whether it is complete) and from its attributes (the URL parameters, one Text
 * variable per key), and a source's link to its respondent.
 *
 * Names are unique across all of them (QualCoder keeps one variable per name, cases and
 * sources together): the response's own come first, and a URL parameter whose key is taken
 * gets " (URL parameter)". A key's variable GUID comes from the key, not from its name.
 */
import type { Row } from '../tables/index.ts';
import { guidOf } from './guids.ts';
import { displayName, element, tag, UniqueNames } from './xml.ts';

type VariableType = 'Text' | 'Integer' | 'DateTime';

export interface Variable {
  guid: string;
  name: string;
  type: VariableType;
  description: string;
}

/** The response's own variables, by what they carry. */
export const responseVariables = {
  responseId: { name: 'Response id', type: 'Text', description: 'The response id (responses.response_id).' },
  responseNumber: {
    name: 'Response number',
    type: 'Integer',
    description: 'The ordered number of the response, when the service sent it.',
  },
  createdAt: { name: 'Created', type: 'DateTime', description: 'When the response was created, UTC.' },
  modality: { name: 'Modality', type: 'Text', description: 'text, audio or video.' },
  status: {
    name: 'Status',
    type: 'Text',
    description: 'complete, or in progress: the service sent the response without a summary yet.',
  },
  respondent: {
    name: 'Respondent',
    type: 'Text',
    description: "On a source: the case (respondent) it belongs to, also the start of the source's name.",
  },
} as const satisfies Record<string, Omit<Variable, 'guid'>>;

export type ResponseVariable = keyof typeof responseVariables;

export class Variables {
  readonly #names = new UniqueNames();
  readonly #own = new Map<ResponseVariable, Variable>();
  readonly #byKey = new Map<string, Variable>();

  constructor(private readonly studyId: string) {
    for (const [id, declared] of Object.entries(responseVariables)) {
      const name = this.#names.claim(declared.name);
      this.#own.set(id as ResponseVariable, {
        ...declared,
        name,
        guid: guidOf('variable', studyId, 'response', id),
      });
    }
  }

  own(id: ResponseVariable): Variable {
    const variable = this.#own.get(id);
    if (!variable) throw new Error(`no variable ${id}`);
    return variable;
  }

  /** The variable of URL parameter `key`, made on first use. */
  ofKey(key: string): Variable {
    let variable = this.#byKey.get(key);
    if (!variable) {
      const wanted = displayName(key, '(empty key)');
      const taken = [...this.#own.values()].some((v) => v.name.toLowerCase() === wanted.toLowerCase());
      variable = {
        guid: guidOf('variable', this.studyId, 'attribute', key),
        name: this.#names.claim(taken ? `${wanted} (URL parameter)` : wanted),
        type: 'Text',
        description: `URL parameter "${key}" of the study link (attributes.key).`,
      };
      this.#byKey.set(key, variable);
    }
    return variable;
  }

  /** <Variables>…</Variables>: the response's own, then the URL parameters by key. */
  xml(): string {
    const keys = [...this.#byKey.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, v]) => v);
    const all = [...this.#own.values(), ...keys];
    return `<Variables>${all
      .map(
        (v) =>
          tag('Variable', { guid: v.guid, name: v.name, typeOfVariable: v.type }) +
          element('Description', v.description) +
          '</Variable>',
      )
      .join('')}</Variables>`;
  }
}

/** <VariableValue> of `variable`; null values are left out by the caller. */
export function variableValue(variable: Variable, value: string | number): string {
  const element_ =
    variable.type === 'Integer'
      ? 'IntegerValue'
      : variable.type === 'DateTime'
        ? 'DateTimeValue'
        : 'TextValue';
  return `<VariableValue>${tag('VariableRef', { targetGUID: variable.guid }, true)}${element(element_, String(value))}</VariableValue>`;
}

/** complete or in progress: a response is in progress while the service sends no summary. */
export function statusOf(response: Row<'responses'>): 'complete' | 'in progress' {
  return response.summary ? 'complete' : 'in progress';
}
