import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * A full garbage collection of this test process, asked of V8 through its `gc` (exposed here,
 * not with a node flag, so the test runs as every other). Node 20's V8 takes `{ type: 'major' }`
 * for a young collection: it is called without options.
 */
export function fullCollection(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
