import { createRequire as __foremanCreateRequire } from 'node:module'; const require = __foremanCreateRequire(import.meta.url);
import{BoundedOutput,DEFAULT_MAX_OUTPUT_BYTES,runShell,withForemanLine}from"./chunk-JCOMAH6E.mjs";import"./chunk-DA5D7RZ4.mjs";export{BoundedOutput,DEFAULT_MAX_OUTPUT_BYTES,runShell,withForemanLine};
