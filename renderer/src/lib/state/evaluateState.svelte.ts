// The Evaluate screen: the evaluation shown (a finished run's test set, or a model evaluated on a dataset),
// the confusion cell whose examples are open, the worst prediction whose row is open (regression), and the
// model the digit canvas tries.
import type { ApiError, ClassificationReport, DatasetInfo, EvaluationResult, ModelInfo, RegressionReport, RegressionResult, RunInfo, SearchInfo, TrainingDone, Workspace } from '../../../../app/api/types';
import { api } from '../api';
import { CellBrowser } from './cellBrowser.svelte';
import type { Device } from './trainingDrafts';

export interface ShownEvaluation {
  title: string;
  /** Where it came from, for the session's workspace (a reload shows it again). */
  origin: NonNullable<Workspace['shownEvaluation']>;
  report: ClassificationReport;
  count: number;
  loss?: number;
  /** For evaluation:examples (a confusion cell's examples); absent when the session no longer has them. */
  evaluationId?: string;
  /** The evaluated model (the digit canvas tries it). */
  modelId?: string;
  /** A regression model: its metrics (report is then empty) ... */
  regression?: RegressionReport;
  /** ... and, from evaluation:evaluate, the scatter points, residuals and worst rows (a run's test set has none). */
  regressionDetails?: RegressionResult;
}

export interface EvaluateDeps {
  models(): readonly ModelInfo[];
  datasets(): readonly DatasetInfo[];
  device(): Device;
  /** An evaluation the user asked for is ready: show the Evaluate screen. */
  evaluated(): void;
}

export class EvaluateState {
  evaluation = $state.raw<ShownEvaluation | undefined>();
  evaluating = $state(false);
  error = $state<ApiError | undefined>();
  /** The examples of a confusion-matrix cell of the shown evaluation. */
  readonly cells = new CellBrowser();
  /** The open cell, when it belongs to the shown evaluation. */
  /** The worst prediction (its place in regressionDetails.worst) whose feature values are shown. */
  pickedWorst = $state<number | undefined>();
  pickedCell = $derived(this.cells.cell && this.cells.cell.evaluationId === this.evaluation?.evaluationId ? this.cells.cell : undefined);
  /** The evaluated model, when a 28x28 drawing fits it. */
  digitModel = $derived.by(() => this.deps.models().find((model) => model.id === this.evaluation?.modelId && model.drawing !== undefined));

  private readonly deps: EvaluateDeps;

  constructor(deps: EvaluateDeps) {
    this.deps = deps;
  }

  /** `tta`: test-time augmentation (image models). */
  async evaluate(modelId: string, datasetId: string, tta = false): Promise<void> {
    this.error = undefined;
    this.evaluating = true;
    const answer = await api.invoke('evaluation:evaluate', { modelId, datasetId, device: this.deps.device(), ...(tta ? { tta: true } : {}) });
    this.evaluating = false;
    if (answer.error) {
      this.error = answer.error;
      return;
    }
    const described = describeEvaluation(answer.result, this.deps.models(), this.deps.datasets());
    const title = tta ? `${described.title} (test-time augmentation)` : described.title;
    this.show({ ...described, title, origin: { evaluationId: answer.result.evaluationId, title } });
    this.deps.evaluated();
  }

  /** The evaluation the session's workspace names, shown again (nothing when the session no longer has it). */
  async restore(origin: Workspace['shownEvaluation'], runs: readonly RunInfo[]): Promise<void> {
    if (!origin) {
      this.evaluation = undefined;
      return;
    }
    if (sameOrigin(origin, this.evaluation?.origin)) return;
    if ('runId' in origin) {
      const done = runs.find((run) => run.runId === origin.runId)?.outcome;
      if (done) this.showTestResult(origin.runId, done);
      return;
    }
    if ('searchId' in origin) {
      const search = await api.invoke('search:status', { searchId: origin.searchId });
      if (search.result) this.showSearchWinner(search.result);
      return;
    }
    const answer = await api.invoke('evaluation:get', { evaluationId: origin.evaluationId });
    if (answer.result) this.show({ ...describeEvaluation(answer.result, this.deps.models(), this.deps.datasets()), title: origin.title });
  }

  /** A finished run's test set, evaluated by the server as the run ended. */
  showTestResult(runId: string, done: TrainingDone): void {
    this.showDone(runId, { runId }, done);
  }

  /** A finished run's test set under `name` ("Test set of <name>"), remembered in the workspace as `origin`. */
  private showDone(name: string, origin: NonNullable<Workspace['shownEvaluation']>, done: TrainingDone): void {
    const test = done.test;
    if (!test) return;
    const { evaluationId, modelId } = done;
    const count = test.regression ? test.regression.count : sum(test.report.perClass.map((row) => row.support));
    const regression = test.regression ? { regression: test.regression, ...(test.details ? { regressionDetails: test.details } : {}) } : {};
    this.show({ title: `Test set of ${name}`, origin, report: test.report, count, loss: test.loss, evaluationId, modelId, ...regression });
  }

  /** A finished search's winner: its test set, evaluated by the server as the search ended. */
  showSearchWinner(search: SearchInfo): void {
    if (!search.outcome || !search.best) return;
    this.showDone(`${search.searchId}, trial ${search.best.trial}`, { searchId: search.searchId }, search.outcome);
  }

  /** Shows the feature values of one of the worst predictions (undefined: closes them). */
  pickWorst(position: number | undefined): void {
    this.pickedWorst = position;
  }

  /** A new evaluation: a cell open for the old one closes. */
  private show(evaluation: ShownEvaluation): void {
    this.evaluation = evaluation;
    this.pickedWorst = undefined;
    if (this.cells.cell && this.cells.cell.evaluationId !== evaluation.evaluationId) this.cells.close();
  }
}

function sameOrigin(a: Workspace['shownEvaluation'], b: Workspace['shownEvaluation']): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function describeEvaluation(result: EvaluationResult, models: readonly ModelInfo[], datasets: readonly DatasetInfo[]): ShownEvaluation {
  const model = models.find((entry) => entry.id === result.modelId)?.name ?? result.modelId;
  const data = datasets.find((entry) => entry.id === result.datasetId)?.name ?? result.datasetId;
  const title = `${model} on ${data}`;
  const shown: ShownEvaluation = { title, origin: { evaluationId: result.evaluationId, title }, report: result.report, count: result.count, loss: result.loss, modelId: result.modelId };
  if (result.evaluationId) shown.evaluationId = result.evaluationId;
  if (result.regression) {
    shown.regression = result.regression.report;
    shown.regressionDetails = result.regression;
  }
  return shown;
}
