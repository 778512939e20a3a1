import { conformance } from './harness.js';
import { CASES } from './cases/index.js';

for (const row of CASES) conformance(row);
