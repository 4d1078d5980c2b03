/** Error messages in both languages: German words agree with what they name, and only our own words are translated. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderMessage } from '../../src/errors/messages.ts';

describe('error messages', () => {
  it('not_found in German puts the right negation before each resource', () => {
    const german = (resource: string) => renderMessage('not_found', { resource }, 'de');
    assert.equal(german('conversion'), 'Es gibt keine Umwandlung mit dieser Kennung.');
    assert.equal(german('source format'), 'Es gibt kein Quellformat mit dieser Kennung.');
    assert.equal(german('route'), 'Es gibt keinen Pfad mit dieser Kennung.');
    assert.equal(german('account'), 'Es gibt kein Konto mit dieser Kennung.');
    assert.equal(german('key'), 'Es gibt keinen Schlüssel mit dieser Kennung.');
    assert.equal(renderMessage('not_found', { resource: 'conversion' }, 'en'), 'No conversion with this identifier exists.');
  });

  it('statuses and actions are translated, formats and other values are shown as sent', () => {
    assert.match(renderMessage('invalid_state', { status: 'failed' }, 'de'), /im Status fehlgeschlagen;/);
    assert.match(renderMessage('forbidden', { action: 'delete' }, 'de'), /darf nicht löschen\./);
    // `key` (Keynote) is a file format as well as one of our words: as a format it stays `key`.
    assert.equal(renderMessage('unsupported_conversion', { source: 'key', target: 'pdf' }, 'de'), 'Die Umwandlung von key nach pdf wird nicht unterstützt.');
  });
});
