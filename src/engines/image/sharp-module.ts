import { createRequire } from 'node:module';

/**
 * sharp, loaded through its CommonJS build. Its ESM build pulls the same files (and semver's
 * fifty) through Node's ESM-to-CommonJS translator, which measured about 30 ms slower to load:
 * a tenth of a small `conv convert` batch. The types are the ESM build's; both export the same
 * function.
 */
const sharp = createRequire(import.meta.url)('sharp') as typeof import('sharp').default;

export default sharp;
