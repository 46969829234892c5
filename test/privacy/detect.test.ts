import { describe, expect, it } from 'vitest';
import { type DetectorSet, findMatches, isPhoneNumber, termsPattern } from '../../src/privacy/index.ts';

const builtIn: DetectorSet = { detect: ['email', 'phone', 'url', 'ip'], terms: null, patterns: [] };
const kinds = (text: string, set = builtIn) =>
  findMatches(text, set).map((m) => [m.kind, text.slice(m.start, m.end)]);

describe('the built-in detectors', () => {
  it('find emails, phones in international and national forms, URLs and IPs', () => {
    expect(kinds('Write to María.López@Correo.es or call +44 20 7946 0958.')).toEqual([
      ['EMAIL', 'María.López@Correo.es'],
      ['PHONE', '+44 20 7946 0958'],
    ]);
    for (const phone of [
      '+1 (212) 555-0147',
      '(212) 555-0147',
      '212-555-0147',
      '020 7946 0958',
      '01 42 68 53 00',
      '030/12345678',
      '0049 30 1234567',
      '612 345 678',
      '+33 6 12 34 56 78',
    ])
      expect(kinds(`my number is ${phone}, thanks`), phone).toEqual([['PHONE', phone]]);
    expect(kinds('see https://www.linkedin.com/in/maria-lopez-42/, or www.example.org.')).toEqual([
      ['URL', 'https://www.linkedin.com/in/maria-lopez-42/'],
      ['URL', 'www.example.org'],
    ]);
    expect(kinds('my site maria-lopez.com/blog is down')).toEqual([['URL', 'maria-lopez.com/blog']]);
    expect(kinds('from 192.168.10.24 and 2001:db8::8a2e:370:7334 today')).toEqual([
      ['IP', '192.168.10.24'],
      ['IP', '2001:db8::8a2e:370:7334'],
    ]);
  });

  it('leave dates, times, amounts, versions and counts alone', () => {
    for (const text of [
      'on 2026-11-21T23:55:00.000Z',
      'at 12:30:45 on 21/11/2026',
      'it cost 1.234.567 or 12 000 euros',
      'version 1.2.3 of it',
      'I have 3 kids aged 4 and 7',
      'a hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      'std::vector and a::b',
      'report.html and node.js',
      '=1+2 and -5',
      'plainTextPath="internal://a1b2.txt" and relative://video.mp4',
    ])
      expect(kinds(text), text).toEqual([]);
    expect(isPhoneNumber('2026-11-21')).toBe(false);
  });

  it('resolve overlaps: an email is one match, not a name and a URL inside it', () => {
    const set = { ...builtIn, terms: termsPattern(['López', 'Correo']) };
    expect(kinds('María.López@Correo.es', set)).toEqual([['EMAIL', 'María.López@Correo.es']]);
  });
});

describe('terms', () => {
  const set = {
    detect: [] as const,
    terms: termsPattern(['Anna', 'Anna Maria', 'Łódź', 'ACME Corp.']),
    patterns: [],
  };
  it('match case-insensitively on Unicode word boundaries, the longest first', () => {
    expect(kinds('anna maria from ŁÓDŹ met Anna at acme corp.', set)).toEqual([
      ['NAME', 'anna maria'],
      ['NAME', 'ŁÓDŹ'],
      ['NAME', 'Anna'],
      ['NAME', 'acme corp.'],
    ]);
    // No match inside a longer word, in any script.
    expect(kinds('Annamaria, Annaé and Łódźka', set)).toEqual([]);
  });
});
