/**
 * The personal data the sandbox plants, as real conversations carry it: respondents say their
 * names, employers, streets, email addresses, phone numbers (international and national forms),
 * web pages and IP addresses, and some studies pass `email` and `name` URL parameters. It is all
 * fictitious (example.* domains, numbers reserved for drama where a country has them) and drawn
 * from a random stream of its own, so the rest of the data set is the same with or without it.
 * `personalTerms` is what a privacy profile's terms file lists to find the names
 * (privacy/terms.txt).
 */
import { pick, type Random, randomFor, seedFrom } from './prng.ts';

interface Person {
  name: string;
  email: string;
  phone: string;
  url: string;
  employer: string;
  street: string;
}

export const people: readonly Person[] = [
  {
    name: 'María González',
    email: 'maria.gonzalez@example.com',
    phone: '+34 612 345 678',
    url: 'https://www.linkedin.com/in/maria-gonzalez-example',
    employer: 'Northwind Traders',
    street: 'Calle de Alcalá 42',
  },
  {
    name: 'Jonas Berg',
    email: 'Jonas.Berg@example.org',
    phone: '030 12345678',
    url: 'www.jonasberg.example.de',
    employer: 'Contoso GmbH',
    street: 'Lindenstraße 7',
  },
  {
    name: 'Aiko Tanaka',
    email: 'aiko_t@example.net',
    phone: '+81 90-1234-5678',
    url: 'https://aikotanaka.example.jp/blog',
    employer: 'Fabrikam Japan',
    street: 'Sakura-dori 3-2-1',
  },
  {
    name: 'Olu Adeyemi',
    email: 'olu.adeyemi@example.co.uk',
    phone: '020 7946 0958',
    url: 'https://twitter.com/olu_example',
    employer: 'Tailspin Toys',
    street: '221B Baker Street',
  },
  {
    name: 'Priya Raman',
    email: 'priya.raman+survey@example.in',
    phone: '(212) 555-0147',
    url: 'http://priya-raman.example.com/about',
    employer: 'Wingtip Bank',
    street: '19 Maple Avenue',
  },
  {
    name: 'Lucie Moreau',
    email: 'lucie.moreau@example.fr',
    phone: '06 12 34 56 78',
    url: 'www.luciemoreau.example.fr',
    employer: 'Adatum Conseil',
    street: '14 rue des Lilas',
  },
];

/** Every name, employer and street planted: what a terms file lists. */
export const personalTerms: readonly string[] = people.flatMap((person) => [
  person.name,
  ...person.name.split(' '),
  person.employer,
  person.street,
]);

const sentences: readonly ((person: Person, other: Person, ip: string) => string)[] = [
  (p) => `I'm ${p.name}, write to me at ${p.email} if you need more.`,
  (p) => `Call me on ${p.phone}, evenings are best.`,
  (_p, o) => `My neighbour ${o.name} at ${o.street} has the same problem.`,
  (p) => `I wrote a review of it on ${p.url}`,
  (p) => `We all use it at ${p.employer}, my manager ${p.name.split(' ')[0]} too.`,
  (_p, _o, ip) => `Support said my IP address ${ip} was blocked, so I gave up.`,
  (p) => `Send the voucher to ${p.street}, or text ${p.phone}.`,
];

/** What a response says about people, from its own random stream. */
export class PlantedData {
  readonly #random: Random;
  readonly #person: Person;
  readonly #other: Person;

  constructor(seed: number, contentKey: string, index: number) {
    this.#random = randomFor(seed, contentKey, index, 'personal');
    this.#person = people[seedFrom(seed, contentKey, index, 'person') % people.length] as Person;
    this.#other = people[(seedFrom(seed, contentKey, index, 'other') % (people.length - 1)) + 1] as Person;
    if (this.#other === this.#person) this.#other = people[0] as Person;
  }

  /** A reply, sometimes with a sentence about someone after it. */
  reply(text: string): string {
    if (this.#random() >= 0.3) return text;
    const sentence = pick(this.#random, sentences)(this.#person, this.#other, this.#ip());
    return text === '' ? sentence : `${text} ${sentence}`;
  }

  /** A summary, sometimes naming the respondent as the service's summaries do. */
  summary(text: string): string {
    if (text === '' || this.#random() >= 0.25) return text;
    return `${text} ${this.#person.name.split(' ')[0]} mentioned working at ${this.#person.employer}.`;
  }

  /** The URL parameters of a study that passes them: the respondent's email and name. */
  contact(): Record<string, string> {
    return { email: this.#person.email, name: this.#person.name };
  }

  #ip(): string {
    return this.#random() < 0.5
      ? `192.0.2.${1 + Math.floor(this.#random() * 250)}`
      : `2001:db8::${Math.floor(this.#random() * 0xffff).toString(16)}`;
  }
}

/** Whether a study passes `email` and `name` URL parameters (about one in three). */
export function passesContact(seed: number, contentKey: string): boolean {
  return seedFrom(seed, contentKey, 'contact') % 3 === 0;
}
