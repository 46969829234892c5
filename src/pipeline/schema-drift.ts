/**
 * A run's side of schema drift (src/drift/): each study's schema observed while its records
 * stream, compared when the study ends with the one its state recorded, each change told at
 * once (a `schema_change` event); then the rule of the pipeline file (`schema.on_change`) before
 * anything is committed, and the schemas to record in the state once the run is.
 */
import type { Study } from '../api/resources.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { compareSchema } from '../drift/compare.ts';
import { SchemaObserver } from '../drift/observe.ts';
import type { SchemaChange, StudySchema } from '../drift/schema.ts';
import { SchemaChangeError } from '../errors.ts';
import type { State } from '../publish/state.ts';
import type { ProgressReporter } from './progress.ts';

export class SchemaDrift {
  readonly changes: SchemaChange[] = [];
  /** The schema to record per study once the run is committed. */
  readonly schemas = new Map<string, StudySchema>();

  constructor(
    private readonly state: State,
    private readonly reporter: ProgressReporter,
  ) {}

  /** An observer for one study's records, the study's own payload already seen. */
  observe(study: Study): SchemaObserver {
    const observer = new SchemaObserver();
    observer.study(study);
    return observer;
  }

  /** The study's export ended: what changed since its last committed run, told at once. */
  studyEnded(study: Study, observer: SchemaObserver): void {
    const previous = this.state.studies[study.id]?.schema;
    const { changes, next } = compareSchema(
      { study_id: study.id, link_id: study.link_id },
      previous,
      observer,
    );
    this.schemas.set(study.id, next);
    for (const change of changes) {
      this.changes.push(change);
      this.reporter.schemaChange?.(change);
    }
  }
}

/** Whether a run with these changes may commit: yes; yes because accepted; or no. */
export function schemaRule(
  config: PipelineConfig,
  options: { acceptSchemaChange?: boolean },
  changes: readonly SchemaChange[],
): 'commit' | 'accepted' | 'stop' {
  if (changes.length === 0 || config.schema.on_change === 'warn') return 'commit';
  return options.acceptSchemaChange ? 'accepted' : 'stop';
}

/** The refusal of a run stopped by `schema.on_change: fail`, naming every change. */
export function schemaChangeStop(changes: readonly SchemaChange[]): SchemaChangeError {
  const studies = new Set(changes.map((change) => change.study_id)).size;
  const lines = changes.map(
    (change) => `${change.link_id} (${change.study_id}): ${change.kind}: ${change.message}`,
  );
  return new SchemaChangeError(
    [
      `schema.on_change is fail and the service changed since the last committed run (${changes.length} ${changes.length === 1 ? 'change' : 'changes'} in ${studies} ${studies === 1 ? 'study' : 'studies'}); nothing was committed: latest, the state and current/ are as they were`,
      ...lines,
      'once the changes are understood, run again with --accept-schema-change to commit them (the manifest records the acceptance)',
    ].join('\n'),
  );
}

/** The state a committed run writes, each study it advanced with its schema as this run leaves it. */
export function withSchemas(
  before: State,
  advanced: State,
  schemas: ReadonlyMap<string, StudySchema>,
): State {
  const studies = { ...advanced.studies };
  for (const [id, entry] of Object.entries(advanced.studies)) {
    if (entry === before.studies[id]) continue;
    const schema = schemas.get(id) ?? before.studies[id]?.schema;
    studies[id] = schema === undefined ? entry : { ...entry, schema };
  }
  return { ...advanced, studies };
}

/** The summary's lines: one per study that changed, its changes one after the other. */
export function schemaChangeLines(changes: readonly SchemaChange[]): string[] {
  const byStudy = new Map<string, SchemaChange[]>();
  for (const change of changes) {
    const list = byStudy.get(change.study_id) ?? [];
    list.push(change);
    byStudy.set(change.study_id, list);
  }
  return [...byStudy.values()].map(
    (list) => `${list[0]?.link_id}: ${list.map((change) => change.message).join('; ')}`,
  );
}
