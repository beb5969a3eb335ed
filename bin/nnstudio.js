#!/usr/bin/env node
// The `nnstudio` command (package.json bin): runs the compiled CLI.
'use strict';
const path = require('node:path');
const mainPath = path.join(__dirname, '..', 'dist', 'app', 'cli', 'main.js');
let cli;
try {
  cli = require(mainPath);
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND') {
    // the message's first line names the module not found; the require stack after it always ends at main.js
    const missing = String(error.message).split('\n')[0];
    process.stderr.write(
      missing.includes(mainPath)
        ? 'nnstudio: the TypeScript build is missing: run npm install (or npm run build:ts)\n'
        : `nnstudio: a dependency is missing (${missing}): run npm install\n`,
    );
    process.exit(1);
  }
  throw error;
}
cli.main().then((code) => {
  process.exitCode = code;
});
