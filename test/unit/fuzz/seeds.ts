// Valid inputs the fuzzer starts from: small but real files of every kind, built here with the app's own
// writers (encodeModel, encodeCheckpoint, formatCourseModel, encodeRun, encodeIdx) so they load as they are.
import { encodeIdx } from '../../../app/core/data/idx';
import type { Preprocessing } from '../../../app/core/data/preprocess';
import { formatCourseModel } from '../../../app/core/interop/courseModel';
import { classificationReport } from '../../../app/core/metrics/classification';
import { encodeCheckpoint, type Checkpoint } from '../../../app/core/model/checkpointFile';
import { encodeModel, type Model } from '../../../app/core/model/modelFile';
import { parameterCount } from '../../../app/core/model/shapes';
import { parseModelSpec, type ModelSpec } from '../../../app/core/model/spec';
import { encodeRun, type RunRecord } from '../../../app/core/runs/runFile';
import type { CsvOptions } from '../../../app/core/data/csv';

// ---- CSV ----

export interface CsvSeed {
  text: string;
  delimiter: string;
  /** Options the file needs to load (pixel CSVs: the image shape). */
  options: CsvOptions;
}

export const csvSeeds: CsvSeed[] = [
  {
    text: 'sepal_length,sepal_width,petal_length,petal_width,species\n5.1,3.5,1.4,0.2,setosa\n4.9,3,1.4,0.2,setosa\n' +
      '7,3.2,4.7,1.4,versicolor\n6.4,3.2,4.5,1.5,versicolor\n6.3,3.3,6,2.5,virginica\n5.8,2.7,5.1,1.9,virginica\n',
    delimiter: ',',
    options: {},
  },
  { text: '0.5,1.5,0\n1.5,0.25,1\n-2,3e2,0\n4,-0.125,1\n', delimiter: ',', options: {} },
  {
    text: '\uFEFFid;color;size;"weight (kg)";label\r\n1;red;S;1.5;yes\r\n2;"blue";M;2;no\r\n3;"gr""een";L;3;yes\r\n4;red;M;4;no\r\n',
    delimiter: ';',
    options: { categorical: ['color', 'size'], ignoreColumns: ['id'] },
  },
  { text: 'a\tb\tclass\n1\t2\tx\n3\t4\ty\n5\t6\tx\n', delimiter: '\t', options: {} },
  {
    text: `label,${Array.from({ length: 16 }, (_, i) => `pixel${i}`).join(',')}\n` +
      Array.from({ length: 4 }, (_, row) => `${row % 2},${Array.from({ length: 16 }, (_, i) => (row * 37 + i * 11) % 256).join(',')}`).join('\n') + '\n',
    delimiter: ',',
    options: { labelColumn: 'label', imageShape: [1, 4, 4], pixelScale: 255 },
  },
  {
    text: 'note,x,y\n"line one\nline two",1,a\n"with, comma",2,b\n"say ""hi""",3,a\n',
    delimiter: ',',
    options: { ignoreColumns: ['note'] },
  },
  // Messy columns (issue 13): an ID, dates, missing markers, a missing label; and a numeric target.
  {
    text: 'id,when,age,city,score,label\n' +
      ['1,2024-02-02,23,Lyon,1.70,yes', '2,2024-03-03,26,?,3.40,yes', '3,2024-04-04,29,Nice,5.10,no', '4,2024-05-05,32,Lille,6.80,yes', '5,2024-06-06,35,Paris,8.50,yes', '6,2024-07-07,38,Lyon,0.20,no', '7,2024-08-08,NA,?,1.90,yes', '8,2024-09-09,44,Nice,3.60,yes', '9,2024-10-10,47,Lille,?,no', '10,2024-11-11,50,Paris,7.00,yes', '11,2024-12-12,53,Lyon,8.70,yes', '12,2024-01-13,56,?,0.40,no', '13,2024-02-14,59,Nice,2.10,', '14,2024-03-15,NA,Lille,3.80,yes', '15,2024-04-16,25,Paris,5.50,no', '16,2024-05-17,28,Lyon,7.20,yes', '17,2024-06-18,31,?,8.90,yes', '18,2024-07-19,34,Nice,?,no', '19,2024-08-20,37,Lille,2.30,yes', '20,2024-09-21,40,Paris,4.00,yes', '21,2024-10-22,NA,Lyon,5.70,no', '22,2024-11-23,46,?,7.40,yes', '23,2024-12-24,49,Nice,9.10,yes', '24,2024-01-25,52,Lille,0.80,no', '25,2024-02-26,55,Paris,2.50,yes'].join('\n') + '\n',
    delimiter: ',',
    options: {},
  },
  {
    text: 'x1,x2,price\n' +
      ['0.5,0,100.00', '1.5,7,115.75', '2.5,3,131.50', '3.5,N/A,147.25', '4.5,6,153.00', '0.5,2,168.75', '1.5,9,184.50', '2.5,5,200.25', '3.5,1,206.00', '4.5,8,221.75', '0.5,4,237.50', '1.5,N/A,253.25', '2.5,7,259.00', '3.5,3,274.75', '4.5,10,290.50', '0.5,6,306.25', '1.5,2,312.00', '2.5,9,', '3.5,5,343.50', '4.5,N/A,359.25', '0.5,8,365.00', '1.5,4,380.75', '2.5,0,396.50', '3.5,7,412.25', '4.5,3,418.00', '0.5,10,433.75', '1.5,6,449.50', '2.5,N/A,465.25', '3.5,9,471.00', '4.5,5,486.75'].join('\n') + '\n',
    delimiter: ',',
    options: {},
  },
];

// ---- IDX ----

export interface IdxSeed {
  images: Uint8Array;
  labels: Uint8Array;
}

function idxSeed(count: number, height: number, width: number, labelOf: (i: number) => number): IdxSeed {
  const pixels = Uint8Array.from({ length: count * height * width }, (_, i) => (i * 29) % 256);
  const labels = Uint8Array.from({ length: count }, (_, i) => labelOf(i));
  return { images: new Uint8Array(encodeIdx([count, height, width], pixels)), labels: new Uint8Array(encodeIdx([count], labels)) };
}

export const idxSeeds: IdxSeed[] = [idxSeed(6, 4, 3, (i) => i % 3), idxSeed(3, 2, 2, (i) => 5 + i), idxSeed(10, 1, 5, (i) => (i * 7) % 10)];

// ---- model and checkpoint files ----

const denseSpec = parseModelSpec({
  input: [3],
  layers: [{ kind: 'dense', units: 4, activation: 'relu' }, { kind: 'dropout', rate: 0.1 }, { kind: 'dense', units: 2 }],
  loss: 'softmax_cross_entropy',
  optimizer: { kind: 'adam', lr: 0.01 },
  seed: 1,
});

const convSpec = parseModelSpec({
  input: [1, 4, 4],
  layers: [
    { kind: 'conv2d', filters: 2, kernel: [3, 3], padding: 'same', activation: 'relu' },
    { kind: 'maxpool2d', size: 2 },
    { kind: 'flatten' },
    { kind: 'dense', units: 3, activation: 'softmax' },
  ],
  loss: 'softmax_cross_entropy',
  optimizer: { kind: 'sgd', lr: 0.1, momentum: 0.9 },
  seed: 3,
});

const ramp = (count: number, scale: number) => Float32Array.from({ length: count }, (_, i) => Math.fround(Math.sin(i + 1) * scale));

const denseModel: Model<Preprocessing> = {
  spec: denseSpec,
  parameters: ramp(parameterCount(denseSpec), 0.5),
  labels: ['no', 'yes'],
  featureNames: ['a', 'b', 'c'],
  inputShape: [3],
  preprocessing: { kind: 'zscore', featureCount: 3, mean: [0.5, 1, -2], std: [1, 2, 0.5] },
  training: {
    options: { epochs: 2, batchSize: 4 },
    history: [
      { epoch: 1, trainLoss: 0.7, trainAccuracy: 0.5, validationLoss: 0.8, validationAccuracy: 0.5, seconds: 0.1 },
      { epoch: 2, trainLoss: null, trainAccuracy: 0.75, seconds: 0.1 },
    ],
    device: 'cpu (2 threads)',
    seconds: 0.2,
  },
  metrics: { testLoss: 0.4 },
};

const convModel: Model<Preprocessing> = {
  spec: convSpec,
  parameters: ramp(parameterCount(convSpec), 0.25),
  labels: ['0', '1', '2'],
  featureNames: [],
  inputShape: [1, 4, 4],
  preprocessing: { kind: 'minmax', featureCount: 16, min: [0], max: [1], imageShape: [1, 4, 4], pixelScale: 255 },
};

export const modelSeeds: Uint8Array[] = [denseModel, convModel].map((model) => new Uint8Array(encodeModel(model)));

function checkpointOf(model: Model<Preprocessing>, withBest: boolean): Checkpoint {
  const P = model.parameters.length;
  const moments = model.spec.optimizer.kind === 'adam' ? 2 * P : P;
  return {
    model,
    state: {
      epoch: 2,
      step: 6,
      seed: '18446744073709551615',
      learningRate: 0.005,
      parameters: model.parameters,
      optimizerState: ramp(moments, 1e-3),
      ...(withBest ? { bestParameters: ramp(P, -0.5) } : {}),
      history: [
        { epoch: 1, trainLoss: 0.69, trainAccuracy: 0.5, validationLoss: 0.3, validationAccuracy: 0.75, seconds: 0.01, learningRate: 0.01 },
        { epoch: 2, trainLoss: 0.5, trainAccuracy: 0.625, validationLoss: Number.POSITIVE_INFINITY, validationAccuracy: 0.5, seconds: 0.01, learningRate: 0.005 },
      ],
    },
    run: { data: { kind: 'mnist', split: 'train' }, seed: 7 },
  };
}

export const checkpointSeeds: Uint8Array[] = [checkpointOf(denseModel, true), checkpointOf(convModel, false)].map(
  (checkpoint) => new Uint8Array(encodeCheckpoint(checkpoint)),
);

// ---- the course tool's model.m ----

const courseSpec: ModelSpec = {
  input: [3],
  layers: [{ kind: 'dense', units: 4, activation: 'sigmoid' }, { kind: 'dense', units: 2, activation: 'sigmoid' }],
  loss: 'mse',
  optimizer: { kind: 'sgd', lr: 0.01 },
  seed: 0,
} as ModelSpec;

export const courseSeeds: string[] = [
  formatCourseModel({
    spec: courseSpec,
    parameters: ramp(parameterCount(courseSpec), 2),
    labels: ['0', '1'],
    featureNames: [],
    inputShape: [3],
    preprocessing: { kind: 'none' },
  }),
  '3\r\n2 2 1\r\n0.5 -1e-05\r\n.25\r\n1 2\r\n3. -4\r\n+0.5 6E2\r\n',
];

// ---- run files ----

function runRecord(id: string, withTest: boolean): RunRecord {
  const report = classificationReport([0, 0, 1, 1], [0, 1, 1, 1], 2, ['no', 'yes']);
  return {
    formatVersion: 1,
    id,
    name: 'toy run',
    createdAt: '2025-03-14T09:30:15.000Z',
    finishedAt: '2025-03-14T09:31:15.000Z',
    status: withTest ? 'completed' : 'cancelled',
    message: withTest ? '' : 'cancelled by the user',
    spec: convSpec,
    options: {
      epochs: 3, batchSize: 4, optimizer: 'sgd', lr: 0.1, seed: 7, device: 'cpu', deviceName: 'cpu (2 threads)',
      normalize: 'zscore', valSplit: 0.1, testSplit: 0.2, preset: withTest ? undefined : 'cnn',
    },
    data: {
      name: 'toy.csv', description: '/data/toy.csv', kind: 'images', inputShape: [1, 4, 4], classLabels: ['no', 'yes'],
      trainCount: 14, validationCount: 2, testCount: 4,
    },
    history: [
      { epoch: 1, trainLoss: 0.5, trainAccuracy: 0.5, validationLoss: 0.6, validationAccuracy: 0.5, seconds: 0.25 },
      { epoch: 2, trainLoss: null, trainAccuracy: null, seconds: 0.25 },
    ],
    seconds: 0.5,
    test: withTest ? { loss: 0.4, report } : null,
    modelFile: withTest ? `${id}.safetensors` : null,
  };
}

export const runSeeds: { id: string; text: string }[] = [
  runRecord('20250314-093015-a1b2', true),
  runRecord('20250314-093015-c3d4', false),
].map((record) => ({ id: record.id, text: encodeRun(record) }));
