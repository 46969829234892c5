/**
 * What a concept is called where people read it (report.html, the viewer, exports for
 * qualitative tools). The service gives a concept-specific answer only a concept id (spec 2.3,
 * 2.5: `concept_id`, "Concept identifier", nothing else): no name, no description, and the
 * question text is the same for every concept ("What do you like or dislike about this
 * concept?"). So the name is made from the id alone, which keeps it the same in every run,
 * study and file, whatever order responses arrive in:
 *
 * - an id made of "concept" and a letter or a number ("concept-a", "concept_2", "ConceptB")
 *   is "concept A", "concept 2", "concept B";
 * - a long random id (a uuid, hex) is "concept " and its first 8 characters;
 * - any other id is "concept " and the id as it is.
 *
 * Top level (like names.ts), not under transform/: load/ and view/ name concepts too, and
 * load may not import transform.
 */

const taggedId = /^concept[\s_.:-]*([a-z]|\d{1,4})$/i;
const randomId = /^[0-9a-f]{8}(?:-?[0-9a-f]{4}){3}-?[0-9a-f]{12}$|^[0-9a-f]{20,}$/i;

/** The concept's name for people: "concept A" for the id "concept-a" (rules above). */
export function conceptName(conceptId: string): string {
  const tagged = taggedId.exec(conceptId.trim());
  if (tagged) return `concept ${(tagged[1] ?? '').toUpperCase()}`;
  if (randomId.test(conceptId)) return `concept ${conceptId.slice(0, 8)}`;
  return `concept ${conceptId}`;
}

/** A question as people read it: its text, and for a concept-specific one, the concept named. */
export function questionLabel(question: string, conceptId: string | null | undefined): string {
  const text = question || '(no question text)';
  return conceptId ? `${text} (${conceptName(conceptId)})` : text;
}
