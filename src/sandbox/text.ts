/**
 * The words of the data set. Replies are deliberately hostile to naive CSV, spreadsheet and
 * Parquet code: several lines, quotes, commas, emoji, non-Latin scripts, formula-like starts
 * and empty replies.
 */

/** Replies every data set contains (forced into the first responses of each study). */
export const hostileReplies: readonly string[] = [
  'Honestly? It was "fine", but slow.\nThe second time it crashed,\nso I gave up.',
  '=SUM(A1:A9) is what my spreadsheet said, lol',
  '+1 to everything above',
  '-5% off would make me buy it',
  '@support never answered me',
  '\tIndented with a tab, then text',
  '',
  'とても使いやすかったです。また使いたいです！',
  'التطبيق رائع لكن الترجمة ضعيفة',
  'Мне понравилось, но цена высоковата.',
  'Love it 😍🔥 — would recommend 👍',
  'Commas, commas, everywhere, "quoted" too',
  'Line one\r\nLine two with CRLF',
  "It's OK; nothing special, I'd say 6/10",
  'मुझे यह बहुत पसंद आया, लेकिन कीमत ज़्यादा है।',
  '界面很简洁，但是加载有点慢。',
  '디자인이 마음에 들어요. 다만 가격이 조금 비싸요.',
  'האפליקציה טובה, אבל קצת איטית (3/5)',
  'ใช้งานง่ายมาก แต่ราคาแพงไปหน่อย',
  'Μου άρεσε πολύ, αλλά είναι ακριβό.',
  '👩‍👩‍👧‍👦 my whole family uses it, 🇯🇵 too',
  'Cafe\u0301 au lait, nai\u0308ve design (decomposed accents)',
];

/**
 * Long replies (tens of thousands of characters): one that fits a spreadsheet cell, one
 * past Excel's 32,767-character limit, with astral characters around the limit so a cut
 * there must not split a surrogate pair. Forced only (see forcedReplies): never drawn at
 * random, so large data sets stay cheap.
 */
export const longReplies: readonly string[] = [
  paragraphs(20_000, 'I kept a diary of every morning this month. '),
  paragraphs(40_000, 'Ran out of space on the form, so here is everything 😀: '),
];

/** Paragraphs of numbered sentences up to `length` UTF-16 units. */
function paragraphs(length: number, sentence: string): string {
  let text = '';
  for (let n = 1; text.length < length; n++) text += `${n}. ${sentence}${n % 10 === 0 ? '\n\n' : ''}`;
  // Never end on half of a surrogate pair.
  return text.slice(0, /[\ud800-\udbff]/.test(text[length - 1] ?? '') ? length - 1 : length);
}

/**
 * Replies forced into the first responses of each of the first studies (dataset.ts
 * FORCED_STUDIES) and of each added study, eight per response in order
 * (response 0 takes the first eight, response 1 the next); the long replies open response 1,
 * whose first replies are always asked.
 */
export const forcedReplies: readonly string[] = [
  ...hostileReplies.slice(0, 8),
  ...longReplies,
  ...hostileReplies.slice(8),
];

/** Ordinary replies, mixed in at random. */
export const plainReplies: readonly string[] = [
  'I liked it a lot.',
  'Pretty good overall, the checkout was quick.',
  'Not for me, too expensive.',
  'The colours are nice but the text is small.',
  "I'd use it every day if it synced with my phone.",
  'Yes.',
  'No.',
  'Maybe, depends on the price.',
  'It reminded me of the old version, in a good way.',
  'I was confused by the second screen.',
  'Fast, simple, does what it says.',
  'I would pay about ten dollars a month.',
];

export const introMessages: readonly string[] = [
  'Hi! Thanks for taking the time to talk with me today. Shall we begin?',
  'Hello and welcome. This conversation takes about five minutes. Ready to start?',
];

export const introReplies: readonly string[] = ['Sure!', 'Yes, ready.', 'ok', '', 'Hi 👋'];

export const followUps: readonly string[] = [
  'Could you tell me a bit more about that?',
  'Why do you say that?',
  'What would make it better for you?',
];

export const outroMessage = 'That is everything. Thank you very much for your time!';

export const summaries: readonly string[] = [
  'The participant was broadly positive, praising speed and simplicity, with concerns about price.',
  'Mixed feelings: the concept was clear but the participant doubted they would pay for it.',
  'Negative overall; the participant struggled with navigation and wanted a cheaper plan.',
  'Enthusiastic participant, preferred the second concept and asked when it launches.',
];

export interface StudyTheme {
  title: string;
  topic: string;
}

/** Titles include commas and quotes on purpose. */
export const studyThemes: readonly StudyTheme[] = [
  { title: 'Checkout "Express" test, round 2', topic: 'paying online' },
  { title: 'Morning routine diary', topic: 'your morning routine' },
  { title: 'Snack packaging concepts', topic: 'snack packaging' },
  { title: 'Banking app onboarding', topic: 'opening a bank account in an app' },
  { title: 'Streaming service: pricing tiers', topic: 'streaming subscriptions' },
  { title: 'Café loyalty card ☕', topic: 'loyalty cards' },
  { title: 'Electric bike commute', topic: 'commuting by e-bike' },
  { title: 'Smart thermostat ads', topic: 'heating your home' },
];

export const utmSources: readonly string[] = ['newsletter', 'panel', 'instagram', 'partner,site', 'direct'];
