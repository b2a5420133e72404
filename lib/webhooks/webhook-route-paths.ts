import { RequestMethod, VERSION_NEUTRAL, type VersioningOptions, VersioningType } from '@nestjs/common';

/** What the app's configuration says of its routes; read at init (a host sets it after the module was built). */
export interface WebhookRouteSettings {
  globalPrefix: string;
  /** The compiled `exclude` entries of `setGlobalPrefix()` (Nest's `getGlobalPrefixOptions().exclude`). */
  exclude?: ReadonlyArray<{ requestMethod?: number; pathRegex?: RegExp }>;
  versioning?: VersioningOptions;
}

/** A route's version metadata: one, several, or neutral. */
export type WebhookRouteVersion = string | symbol | ReadonlyArray<string | symbol>;

/**
 * The paths Nest's router serves a POST route of `path` (no leading slash) at, built by its
 * rules: one per URI version (none for a version-neutral route or other versioning types),
 * under the global prefix unless an `exclude` entry takes the route out of it. A `RouterModule`
 * path is part of `path` (the caller reads it from the module).
 */
export function webhookRoutePaths(path: string, version: WebhookRouteVersion | undefined, settings: WebhookRouteSettings): string[] {
  const uri = settings.versioning?.type === VersioningType.URI;
  const versions = uri && version !== undefined ? [version].flat() : [VERSION_NEUTRAL];
  const prefix = settings.globalPrefix.replace(/^\/+|\/+$/g, '');
  const underPrefix = prefix !== '' && !isExcludedFromPrefix(`/${path}`, settings.exclude);
  return versions.map((v) => {
    const versioned = typeof v === 'string' ? `/${uriVersionPrefix(settings.versioning)}${v}/${path}` : `/${path}`;
    return underPrefix ? `/${prefix}${versioned}` : versioned;
  });
}

/** The segment before a URI version: `v` unless the versioning options say otherwise (`false`: none). */
function uriVersionPrefix(versioning: VersioningOptions | undefined): string {
  const prefix = versioning?.type === VersioningType.URI ? versioning.prefix : undefined;
  return prefix === false ? '' : (prefix ?? 'v');
}

/** Nest's test: an entry for every method (or POST) whose pattern matches the path without its version. */
function isExcludedFromPrefix(path: string, exclude: WebhookRouteSettings['exclude']): boolean {
  return (exclude ?? []).some(
    ({ requestMethod, pathRegex }) =>
      (requestMethod === RequestMethod.ALL || requestMethod === -1 || requestMethod === RequestMethod.POST) && pathRegex?.test(path) === true,
  );
}
