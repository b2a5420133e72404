// jest runs in ESM mode: NestJS 12 is published as ES modules only, so the
// test command sets NODE_OPTIONS=--experimental-vm-modules (see package.json).
//
// Four projects, all run by `npm test`; `npm run test:<project>` runs one:
// - unit:        *.spec.ts — one subject in-process (a local redis-server where the subject is the Redis store)
// - e2e:         *.e2e-spec.ts — real apps on loopback ports, the simulator, redis-server, child processes
// - reliability: test/reliability/ and *.load.spec.ts — faults, storms, crashes, fuzzing, the 1M-id load test
// - compat:      test/compat/ — the packed tarball installed into NestJS 11/12 apps (npm registry or cache)
const transform = {
  '^.+\\.ts$': [
    'ts-jest',
    {
      useESM: true,
      tsconfig: {
        module: 'ESNext',
        moduleResolution: 'bundler',
        target: 'ES2022',
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        esModuleInterop: true,
        isolatedModules: true,
      },
    },
  ],
};

const base = {
  testEnvironment: 'node',
  rootDir: '.',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    // sources import siblings as './x.js' (required by node16 resolution)
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform,
};

const apart = ['/node_modules/', '<rootDir>/test/reliability/', '<rootDir>/test/compat/', '\\.load\\.spec\\.ts$'];

export default {
  maxWorkers: 2,
  // Each test file loads NestJS anew in its own VM context, so a worker grows to 600+ MB over
  // a run, and tearing down that heap at exit takes longer than the 500 ms jest grants, which
  // jest reports as "a worker process has failed to exit gracefully" although no handle is
  // left open. Replacing a worker once it is this big after a file keeps exits quick.
  workerIdleMemoryLimit: '400MB',
  // a global option (ignored inside a project): every test may take 30 s
  testTimeout: 30000,
  projects: [
    { ...base, displayName: 'unit', roots: ['<rootDir>/test'], testMatch: ['**/*.spec.ts'], testPathIgnorePatterns: apart },
    { ...base, displayName: 'e2e', roots: ['<rootDir>/test'], testMatch: ['**/*.e2e-spec.ts'], testPathIgnorePatterns: apart },
    {
      ...base,
      displayName: 'reliability',
      roots: ['<rootDir>/test'],
      testMatch: ['<rootDir>/test/reliability/**/*.(e2e-spec|spec).ts', '**/*.load.spec.ts'],
    },
    { ...base, displayName: 'compat', roots: ['<rootDir>/test/compat'], testMatch: ['**/*.e2e-spec.ts'] },
  ],
};
