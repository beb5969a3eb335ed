#!/usr/bin/env node
// The `nnstudio` command (package.json bin): runs the compiled CLI.
'use strict';
const path = require('node:path');
let cli;
try {
  cli = require(path.join(__dirname, '..', 'dist', 'app', 'cli', 'main.js'));
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND' && String(error.message).includes('main.js')) {
    process.stderr.write('nnstudio: the TypeScript build is missing: run npm install (or npm run build:ts)\n');
    process.exit(1);
  }
  throw error;
}
cli.main().then((code) => {
  process.exitCode = code;
});
