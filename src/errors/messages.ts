import type { ApiErrorCode } from './codes.ts';
import type { MessageParams } from './api-error.ts';

export const LANGUAGES = ['en', 'de'] as const;
export type Language = (typeof LANGUAGES)[number];

type Catalog = Record<ApiErrorCode, string>;

/** `{name}` placeholders are filled from the error's params; a missing one is left out cleanly. */
const MESSAGES: Record<Language, Catalog> = {
  en: {
    unauthenticated: 'API key missing or invalid.',
    forbidden: 'This API key is not allowed to {action}.',
    not_found: 'No {resource} with this identifier exists.',
    validation_failed: 'Request parameters missing or invalid.{hint}',
    unsupported_conversion: 'Converting {source}{named} to {target} is not supported.',
    file_too_large: 'The file is larger than the maximum of {max_upload_mb} MB for your plan.',
    insufficient_credits: 'This conversion costs {cost} credits but only {remaining} remain.',
    free_quota_exhausted:
      'Your monthly free API credits are used up: {remaining} of {allowance} remain and this conversion costs {cost}.',
    rate_limited: 'Too many requests; try again in {retry_after} seconds.',
    concurrency_limit: 'Too many conversions in progress: your plan allows {limit} at a time.',
    engine_time_exhausted: 'Your conversions have used the {allowance_seconds} seconds of engine time your plan allows per hour; try again in {retry_after} seconds.',
    idempotency_conflict: 'This Idempotency-Key was already used for a different request.',
    not_ready: 'The conversion has not succeeded, so there is nothing to download.',
    invalid_state: 'The conversion is {status}; this action is not possible in that state.',
    expired: 'The result has expired and was deleted.',
    method_not_allowed: 'This method is not allowed here.',
    internal_error: 'An internal error occurred.',
    api_disabled: 'The API is temporarily unavailable{reason}; try again in {retry_after} seconds.',
    request_timeout: 'The request body did not arrive in time: the server waited {seconds} seconds{reason}, then ended the request.',
  },
  de: {
    unauthenticated: 'API-Schlüssel fehlt oder ist ungültig.',
    forbidden: 'Dieser API-Schlüssel darf nicht {action}.',
    not_found: 'Es gibt {resource} mit dieser Kennung.',
    validation_failed: 'Anfrageparameter fehlen oder sind ungültig.{hint}',
    unsupported_conversion: 'Die Umwandlung von {source}{named} nach {target} wird nicht unterstützt.',
    file_too_large: 'Die Datei ist größer als die für Ihren Tarif erlaubten {max_upload_mb} MB.',
    insufficient_credits: 'Diese Umwandlung kostet {cost} Credits, es sind aber nur noch {remaining} übrig.',
    free_quota_exhausted:
      'Ihre monatlichen kostenlosen API-Credits sind aufgebraucht: {remaining} von {allowance} übrig, diese Umwandlung kostet {cost}.',
    rate_limited: 'Zu viele Anfragen; versuchen Sie es in {retry_after} Sekunden erneut.',
    concurrency_limit: 'Zu viele laufende Umwandlungen: Ihr Tarif erlaubt {limit} gleichzeitig.',
    engine_time_exhausted: 'Ihre Umwandlungen haben die {allowance_seconds} Sekunden Rechenzeit verbraucht, die Ihr Tarif pro Stunde erlaubt; versuchen Sie es in {retry_after} Sekunden erneut.',
    idempotency_conflict: 'Dieser Idempotency-Key wurde bereits für eine andere Anfrage verwendet.',
    not_ready: 'Die Umwandlung war nicht erfolgreich, daher gibt es nichts herunterzuladen.',
    invalid_state: 'Die Umwandlung ist im Status {status}; diese Aktion ist in diesem Status nicht möglich.',
    expired: 'Das Ergebnis ist abgelaufen und wurde gelöscht.',
    method_not_allowed: 'Diese Methode ist hier nicht erlaubt.',
    internal_error: 'Ein interner Fehler ist aufgetreten.',
    api_disabled: 'Die API ist vorübergehend nicht verfügbar{reason}; versuchen Sie es in {retry_after} Sekunden erneut.',
    request_timeout: 'Der Anfragekörper kam nicht rechtzeitig an: der Server hat {seconds} Sekunden{reason} gewartet und die Anfrage dann beendet.',
  },
};

/** Params whose value is one of WORDS' keys. */
const TRANSLATED_PARAMS = new Set(['resource', 'action', 'status']);

/** Words used inside messages (resource and action names), so German messages stay German. */
const WORDS: Record<Language, Record<string, string>> = {
  en: {},
  de: {
    // Resources appear only in not_found ("Es gibt … mit dieser Kennung"): each with the negation
    // its gender asks for.
    conversion: 'keine Umwandlung', 'source format': 'kein Quellformat', route: 'keinen Pfad',
    account: 'kein Konto', key: 'keinen Schlüssel',
    read: 'lesen', convert: 'umwandeln', delete: 'löschen',
    queued: 'wartend', fetching: 'ladend', processing: 'in Arbeit', succeeded: 'erfolgreich',
    failed: 'fehlgeschlagen', cancelled: 'abgebrochen', expired: 'abgelaufen',
  },
};

/**
 * A code's `{reason}`: why the API is unavailable (`api_disabled`; none for the admin's
 * maintenance switch), which time limit ended a request (`request_timeout`, named by its setting).
 */
const REASONS: Record<Language, Record<string, string>> = {
  en: {
    low_disk_space: ': the server is low on disk space, so it accepts no new conversions',
    shutting_down: ': the server is shutting down',
    worker_only: ' on this node, which only runs conversions (a worker of a cluster): send requests to another node',
    upload_idle_timeout: ' without receiving any data',
    request_timeout: ' for the whole body',
  },
  de: {
    low_disk_space: ': der Server hat zu wenig freien Speicherplatz und nimmt keine neuen Umwandlungen an',
    shutting_down: ': der Server wird heruntergefahren',
    worker_only: ' auf diesem Knoten, der nur Umwandlungen ausführt (ein Worker eines Clusters): senden Sie Anfragen an einen anderen Knoten',
    upload_idle_timeout: ' vergeblich auf weitere Daten',
    request_timeout: ' auf den vollständigen Anfragekörper',
  },
};

/** After the source format, when the file's content decided it against the file's name. */
const NAMED: Record<Language, string> = {
  en: " (the file's content; its name says .{named})",
  de: ' (der Inhalt der Datei; ihr Name sagt .{named})',
};

export function renderMessage(code: ApiErrorCode, params: MessageParams, language: Language): string {
  return MESSAGES[language][code].replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (name === 'reason') return value === undefined ? '' : (REASONS[language][String(value)] ?? '');
    // A file whose content is not what its name says: both are named.
    if (name === 'named') return value === undefined ? '' : NAMED[language].replace('{named}', String(value));
    if (value === undefined) return name === 'hint' ? '' : '?';
    // A fraction is written as the language writes it (1.5 s is "1,5 Sekunden" in German).
    const text = typeof value === 'number' && !Number.isInteger(value) ? value.toLocaleString(language) : String(value);
    // Only these name a word of ours; a format, a value or a hint is shown as sent (a file format
    // may well be called `key`).
    return TRANSLATED_PARAMS.has(name) ? (WORDS[language][text] ?? text) : text;
  });
}

/** Reasons a single field fails validation; used in `details.fields`. */
export type FieldReason =
  | 'required' | 'invalid_type' | 'out_of_range' | 'not_allowed' | 'unknown_option' | 'too_long'
  | 'invalid_url' | 'https_only' | 'conflict' | 'invalid_value' | 'pattern_mismatch'
  | 'must_precede' | 'must_follow' | 'backward_range' | 'requires_other' | 'excludes_other';

const FIELD_MESSAGES: Record<Language, Record<FieldReason, string>> = {
  en: {
    required: 'is required',
    invalid_type: 'must be {expected}',
    out_of_range: 'must be between {min} and {max}',
    not_allowed: 'must be one of: {values}',
    unknown_option: 'is not an option of this conversion; known: {values}',
    too_long: 'must be at most {max} characters',
    invalid_url: 'must be an absolute http or https URL',
    https_only: 'must be an https URL',
    conflict: 'send exactly one of file and url',
    invalid_value: '{text}',
    pattern_mismatch: 'must match {pattern}',
    must_precede: 'must be less than {other} ({value})',
    must_follow: 'must be greater than {other} ({value})',
    backward_range: 'has a range that starts at 0 or runs backwards: {range}',
    requires_other: 'must be given together with {other}',
    excludes_other: 'cannot be given together with {other}',
  },
  de: {
    required: 'ist erforderlich',
    invalid_type: 'muss {expected} sein',
    out_of_range: 'muss zwischen {min} und {max} liegen',
    not_allowed: 'muss einer dieser Werte sein: {values}',
    unknown_option: 'ist keine Option dieser Umwandlung; bekannt: {values}',
    too_long: 'darf höchstens {max} Zeichen lang sein',
    invalid_url: 'muss eine absolute http- oder https-URL sein',
    https_only: 'muss eine https-URL sein',
    conflict: 'senden Sie genau eines von file und url',
    invalid_value: '{text}',
    pattern_mismatch: 'muss dem Muster {pattern} entsprechen',
    must_precede: 'muss kleiner als {other} ({value}) sein',
    must_follow: 'muss größer als {other} ({value}) sein',
    backward_range: 'enthält einen Bereich, der bei 0 beginnt oder rückwärts läuft: {range}',
    requires_other: 'muss zusammen mit {other} angegeben werden',
    excludes_other: 'kann nicht zusammen mit {other} angegeben werden',
  },
};

const TYPE_WORDS: Record<Language, Record<string, string>> = {
  en: { integer: 'an integer', number: 'a number', boolean: 'true or false', string: 'a string', object: 'an object' },
  de: { integer: 'eine ganze Zahl', number: 'eine Zahl', boolean: 'true oder false', string: 'eine Zeichenkette', object: 'ein Objekt' },
};

export function renderFieldMessage(reason: FieldReason, params: MessageParams, language: Language): string {
  return FIELD_MESSAGES[language][reason].replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) return '?';
    if (name === 'expected') return TYPE_WORDS[language][String(value)] ?? String(value);
    return String(value);
  });
}
