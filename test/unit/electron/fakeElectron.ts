// Loads the compiled Electron main process against a fake `electron` module (the binary cannot run
// here): every `require('electron')` made while it loads, and later, gets the fake until restore().
import Module from 'node:module';

const moduleInternals = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };

export function loaderWithFakeElectron(fakeElectron: unknown): { load(mainFile: string): Promise<void>; restore(): void } {
  const originalLoad = moduleInternals._load;
  return {
    async load(mainFile: string): Promise<void> {
      moduleInternals._load = function (this: unknown, request: string, ...rest: unknown[]) {
        if (request === 'electron') return fakeElectron;
        return originalLoad.call(this, request, ...rest);
      };
      require(mainFile);
      // main.ts registers its handlers once app.whenReady() has resolved
      await new Promise((resolve) => setImmediate(resolve));
    },
    restore(): void {
      moduleInternals._load = originalLoad;
    },
  };
}
