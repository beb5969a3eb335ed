// The desktop app's File menu for projects: Open Project…, Open Recent (the projects folder's recent list, as
// projects:info gives it) and Save Project / Save Project As…. Each goes through the same UI API as the
// page's buttons; the window follows through workspace:changed. Opened and saved projects also join the
// operating system's recent documents (the Dock menu on macOS, the jump list on Windows).
import * as path from 'node:path';
import type { App, BrowserWindow, Dialog, Menu as MenuType, MenuItemConstructorOptions } from 'electron';
import type { Api } from '../api/session';
import type { ProjectsInfo } from '../api/types';
import type { Logger } from '../core/log';

export interface ProjectsMenuWiring {
  app: App;
  api: Api;
  dialog: Dialog;
  Menu: typeof MenuType;
  window(): BrowserWindow | undefined;
  logger: Logger;
}

const projectFilters = [{ name: 'NN Studio project', extensions: ['nnstudio'] }];

/** Builds the menu again (after every open and save, so Open Recent stays current). */
export async function installProjectsMenu(wiring: ProjectsMenuWiring): Promise<void> {
  const info = await wiring.api.dispatch('projects:info', {});
  const projects = (info.result as ProjectsInfo | undefined) ?? { recent: [], folder: '' };
  const file: MenuItemConstructorOptions = {
    label: 'File',
    submenu: [
      { label: 'Open Project…', accelerator: 'CmdOrCtrl+O', click: () => void chooseAndOpen(wiring, projects.folder) },
      {
        label: 'Open Recent',
        enabled: projects.recent.length > 0,
        submenu: projects.recent.map((recent) => ({ label: path.basename(recent), sublabel: recent, click: () => void openProject(wiring, recent) })),
      },
      { type: 'separator' },
      { label: 'Save Project', accelerator: 'CmdOrCtrl+S', click: () => void saveProject(wiring, projects.current, projects.folder) },
      { label: 'Save Project As…', accelerator: 'Shift+CmdOrCtrl+S', click: () => void saveProject(wiring, undefined, projects.folder) },
      { type: 'separator' },
      { role: 'quit' },
    ],
  };
  wiring.Menu.setApplicationMenu(wiring.Menu.buildFromTemplate([file, { role: 'editMenu' }, { role: 'viewMenu' }, { role: 'windowMenu' }]));
}

async function chooseAndOpen(wiring: ProjectsMenuWiring, folder: string): Promise<void> {
  const window = wiring.window();
  const options = { title: 'Open a project', defaultPath: folder, filters: projectFilters, properties: ['openFile' as const] };
  const chosen = window ? await wiring.dialog.showOpenDialog(window, options) : await wiring.dialog.showOpenDialog(options);
  if (!chosen.canceled && chosen.filePaths[0]) await openProject(wiring, chosen.filePaths[0]);
}

async function openProject(wiring: ProjectsMenuWiring, file: string): Promise<void> {
  const answer = await wiring.api.dispatch('projects:open', { path: file });
  await report(wiring, answer.error?.message, file, 'opened');
}

async function saveProject(wiring: ProjectsMenuWiring, current: string | undefined, folder: string): Promise<void> {
  let target = current;
  if (!target) {
    const window = wiring.window();
    const options = { title: 'Save the project', defaultPath: path.join(folder, 'project.nnstudio'), filters: projectFilters };
    const chosen = window ? await wiring.dialog.showSaveDialog(window, options) : await wiring.dialog.showSaveDialog(options);
    if (chosen.canceled || !chosen.filePath) return;
    target = chosen.filePath;
  }
  const answer = await wiring.api.dispatch('projects:save', { path: target });
  await report(wiring, answer.error?.message, target, 'saved');
}

/** A failure in a message box (not only in a log); a success joins the recent documents and the menu. */
async function report(wiring: ProjectsMenuWiring, error: string | undefined, file: string, done: string): Promise<void> {
  if (error) {
    wiring.logger.warn(`project ${file}: ${error}`);
    await wiring.dialog.showMessageBox({ type: 'error', message: `The project was not ${done}`, detail: error });
    return;
  }
  wiring.app.addRecentDocument(file);
  await installProjectsMenu(wiring);
}
