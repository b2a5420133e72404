/**
 * Milliseconds on an epoch-based scale that never steps back or jumps with the wall clock (an NTP
 * step, a VM resumed): for durations measured in this process (leases, rate-limit windows, token
 * lifetimes), where `Date.now()` stepping forward a minute would expire a lease still renewed, and
 * stepping back would hold every call of a rate-limit window that long.
 */
export function monotonicNow(): number {
  return performance.timeOrigin + performance.now();
}
