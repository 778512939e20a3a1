#!/usr/bin/env node
// `npx gw`: runs scripts/gw.ts through tsx (installed with the repository's dev dependencies)
import { tsImport } from 'tsx/esm/api';

const { main } = await tsImport('../scripts/gw.ts', import.meta.url);
await main();
