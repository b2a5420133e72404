/** What stands where a secret was, in every log line, error, `toJSON()` and `inspect` output of the module. */
export const REDACTED = '[redacted]';
