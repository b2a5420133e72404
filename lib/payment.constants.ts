/** Injection token of the options object the user passed (or the factory returned). */
export const PAYMENT_MODULE_OPTIONS = Symbol('PAYMENT_MODULE_OPTIONS');
/** Injection token of the validated, defaulted options every provider reads. */
export const PAYMENT_RESOLVED_OPTIONS = Symbol('PAYMENT_RESOLVED_OPTIONS');

/** Prefix of every event name this module emits on EventEmitter2, so it never collides with the host's own events. */
export const PAYMENT_EVENT_NAMESPACE = 'payment-gateway';

export const SANDBOX_BASE_PATH = '/sandbox/api/v1';
export const LIVE_BASE_PATH = '/api/v1';
