/**
 * --log-format json: every event is one line holding one JSON object, `time` and `event`
 * first, so a CI log collector can index it without parsing prose.
 */
export function jsonEvent(event: string, fields: object = {}): string {
  return JSON.stringify({ time: new Date().toISOString(), event, ...fields });
}
