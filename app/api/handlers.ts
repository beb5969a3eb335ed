// The UI API's handler table: one line per channel, from a validated payload to the registry that answers it.
import { services } from '../services';
import type { DatasetRegistry } from './registries/datasets';
import type { EvaluationRegistry } from './registries/evaluations';
import { checkModel, presetInfos, type ModelRegistry } from './registries/models';
import type { RunRegistry } from './registries/runs';
import type { SearchRegistry } from './registries/searches';
import type { SavedRunRegistry } from './registries/savedRuns';
import type { WorkspaceRegistry } from './registries/workspace';
import type { ProjectRegistry } from './registries/projects';
import type { Channel, ParsedPayloadOf } from './schemas';
import type { ResultOf } from './types';

export type Handlers = { [C in Channel]: (payload: ParsedPayloadOf<C>) => Promise<ResultOf<C>> | ResultOf<C> };

export interface Registries {
  datasets: DatasetRegistry;
  models: ModelRegistry;
  evaluations: EvaluationRegistry;
  runs: RunRegistry;
  searches: SearchRegistry;
  savedRuns: SavedRunRegistry;
  workspace: WorkspaceRegistry;
  projects: ProjectRegistry;
}

export function handlerTable({ datasets, models, evaluations, runs, searches, savedRuns, workspace, projects }: Registries): Handlers {
  return {
    'devices:list': () => services.devices.list().map((device) => ({ ...device })),

    'datasets:open': ({ source }) => datasets.open(source),
    'datasets:list': () => datasets.list(),
    'datasets:preview': (payload) => datasets.preview(payload),
    'datasets:close': ({ datasetId }) => datasets.close(datasetId),
    'datasets:reopen': ({ datasetId, csv }) => datasets.reopenWith(datasetId, csv),
    'datasets:split': (payload) => datasets.split(payload),
    'datasets:setClassNames': (payload) => datasets.setClassNames(payload),

    'models:presets': () => presetInfos(),
    'models:check': (payload) => checkModel(payload, datasets),
    'models:list': () => models.list(),
    'models:save': (payload) => models.save(payload),
    'models:download': ({ modelId }) => models.download(modelId),
    'models:export': (payload) => models.export(payload),
    'models:import': (payload) => models.import(payload),
    'models:predict': (payload) => models.predict(payload),
    'models:predictFile': (payload) => models.predictFile(payload, datasets),

    'training:start': (payload) => runs.start(payload),
    'training:continue': (payload) => runs.continue(payload),
    'training:pause': ({ runId }) => runs.control(runId, 'pause'),
    'training:resume': ({ runId }) => runs.control(runId, 'resume'),
    'training:cancel': ({ runId }) => runs.control(runId, 'cancel'),
    'training:setLearningRate': ({ runId, lr }) => runs.setLearningRate(runId, lr),
    'training:status': ({ runId }) => runs.status(runId),
    'training:list': () => runs.list(),

    'search:start': (payload) => searches.start(payload),
    'search:cancel': ({ searchId }) => searches.cancel(searchId),
    'search:status': ({ searchId }) => searches.status(searchId),
    'search:list': () => searches.list(),

    'workspace:get': () => workspace.get(),
    'workspace:update': ({ clientId, state }) => workspace.update(state, clientId),

    'evaluation:evaluate': (payload) => evaluations.evaluate(payload),
    'evaluation:examples': (payload) => evaluations.examples(payload),
    'evaluation:get': ({ evaluationId }) => evaluations.result(evaluationId),

    'projects:info': () => projects.info(),
    'projects:save': ({ path }) => projects.save(path),
    'projects:open': ({ path }) => projects.open(path),

    'runs:list': () => savedRuns.list(),
    'runs:get': ({ runId }) => savedRuns.get(runId),
    'runs:delete': ({ runId }) => savedRuns.delete(runId),
    'runs:open': ({ runId }) => savedRuns.open(runId),
  };
}
