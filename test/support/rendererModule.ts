// Loads one of the renderer's plain TypeScript modules (no Svelte runes, only `import type` of app/) into a
// Node test. It is transpiled from its source when loaded rather than imported from dist: tsc would emit it
// under dist/renderer, the folder the renderer's build empties, so a unit test run after `npm run
// build:renderer` would find it gone.
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const repoRoot = path.resolve(__dirname, '..', '..', '..');

/** The module at `relative` (from the repository root, e.g. renderer/src/lib/state/trainingDrafts.ts). */
export function loadRendererModule<Module>(relative: string): Module {
  const file = path.join(repoRoot, relative);
  const { outputText, diagnostics } = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
  });
  if (diagnostics?.length) throw new Error(`${relative}: ${ts.flattenDiagnosticMessageText(diagnostics[0].messageText, '\n')}`);
  const module = { exports: {} as Module };
  // Only type imports are allowed: a value import would need the renderer's bundler, so it is refused.
  const refuse = (name: string) => {
    throw new Error(`${relative} imports ${name} at run time; only renderer modules with type imports alone load here`);
  };
  new Function('module', 'exports', 'require', outputText)(module, module.exports, refuse);
  return module.exports;
}
