/** redact(): the one rule for text that is printed or written. */
import { describe, expect, it } from 'vitest';
import { redact, registerSecret } from '../src/redact.ts';

describe('redact', () => {
  it("keeps a URL's origin and path, drops its query, fragment and credentials", () => {
    expect(redact('https://user:pw@media.example/a/b.mp3?X-Sig=abc&exp=1#t=3')).toBe(
      'https://media.example/a/b.mp3',
    );
    expect(redact(new URL('http://127.0.0.1:9/api/public/list_surveys?page=2'))).toBe(
      'http://127.0.0.1:9/api/public/list_surveys',
    );
  });

  it('redacts every URL inside a text and leaves the rest as it is', () => {
    const text = 'GET https://s.example/x?sig=1 failed; retried http://t.example/y?token=2 (ECONNRESET)';
    expect(redact(text)).toBe('GET https://s.example/x failed; retried http://t.example/y (ECONNRESET)');
    expect(redact('sandbox')).toBe('sandbox');
  });

  it('masks a registered secret wherever it appears, URLs included', () => {
    const key = 'k-redact-test-9f8e7d6c';
    registerSecret(key);
    expect(redact(`the server said: bad key ${key}`)).toBe('the server said: bad key ***');
    expect(redact(`https://api.example/${key}/list?key=${key}`)).toBe('https://api.example/***/list');
  });
});
