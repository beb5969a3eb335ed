// A finished run made by hand (no engine): a 2-feature, 2-class linear model with a short history, shaped
// exactly as trainModel's outcome, so the run file and the store can be tested without the native addon.
import type { Preprocessing } from '../../../app/core/data/preprocess';
import { classificationReport } from '../../../app/core/metrics/classification';
import type { Model } from '../../../app/core/model/modelFile';
import type { ModelSpec } from '../../../app/core/model/spec';
import type { TrainOutcome, TrainRequest } from '../../../app/services/training';

export interface FakeRun {
  outcome: TrainOutcome;
  request: TrainRequest;
}

export function fakeRun(options: { lr?: number; epochs?: number; status?: string; accuracyShift?: number } = {}): FakeRun {
  const epochs = options.epochs ?? 3;
  const spec: ModelSpec = {
    input: [2],
    layers: [{ kind: 'dense', units: 2 }],
    loss: 'softmax_cross_entropy',
    optimizer: { kind: 'sgd', lr: options.lr ?? 0.1 },
    seed: 7,
  } as ModelSpec;
  const history = Array.from({ length: epochs }, (_, index) => ({
    epoch: index + 1,
    trainLoss: 1 / (index + 2),
    trainAccuracy: 0.5 + index * 0.1,
    validationLoss: 1.1 / (index + 2),
    validationAccuracy: 0.5 + index * 0.05 + (options.accuracyShift ?? 0),
    seconds: 0.25,
  }));
  const report = classificationReport([0, 0, 1, 1], options.accuracyShift ? [0, 0, 1, 1] : [0, 1, 1, 1], 2, ['no', 'yes']);
  const model: Model<Preprocessing> = {
    spec,
    parameters: new Float32Array([0.5, -0.25, 0.125, 1, 0, 0.5]),
    labels: ['no', 'yes'],
    featureNames: ['a', 'b'],
    inputShape: [2],
    preprocessing: { kind: 'none' } as Preprocessing,
    training: {
      options: { epochs, batchSize: 4, seed: 7, device: 'cpu', threads: 1, normalize: 'zscore', valSplit: 0.1, testSplit: 0.2, data: '/data/toy.csv', status: 'completed' },
      history,
      device: 'cpu (1 thread)',
      seconds: 0.25 * epochs,
    },
    metrics: { test: report, testLoss: 0.4 },
  };
  const plan = {
    spec,
    device: 'cpu' as const,
    epochs,
    batchSize: 4,
    trainCount: 14,
    validationCount: 2,
    testCount: 4,
    classLabels: ['no', 'yes'],
    dataDescription: '/data/toy.csv',
  };
  const outcome = {
    status: (options.status ?? 'completed') as TrainOutcome['status'],
    message: '',
    model,
    test: { loss: 0.4, report },
    plan,
  } as TrainOutcome;
  const request: TrainRequest = { data: { kind: 'csv', path: '/data/toy.csv' }, model: {}, seed: 7 };
  return { outcome, request };
}
