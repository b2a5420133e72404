// Registers reliability-ts-loader.mjs (see there).
import { register } from 'node:module';

register('./reliability-ts-loader.mjs', import.meta.url);
