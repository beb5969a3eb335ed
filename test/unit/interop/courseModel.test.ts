// The C course tool's model.m: a hand-written file read into a model whose outputs equal the sigmoid MLP
// computed here by hand; write and read back; errors that name the file and line; the CLI's import and
// export; the file's use wherever a model file is read.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { CourseModelError, formatCourseModel, parseCourseModel } from '../../../app/core/interop/courseModel';
import { loadModel } from '../../../app/core/model/modelFile';
import { services } from '../../../app/services';
import { errorLine, hasStackTrace, runCli, scratchDir } from '../cli/cliHarness';

// 3 inputs, 2 hidden units, 2 outputs: layer count, sizes, biases per layer, weights per layer (row j:
// the weights into unit j).
const handWritten = `3
3 2 2
0.5 -0.25
0.1 -0.2
1 -1 0.5
-0.5 2 0.25
0.75 -1.5
1.25 0.5
`;
const biases = [[0.5, -0.25], [0.1, -0.2]];
const weights = [
  [[1, -1, 0.5], [-0.5, 2, 0.25]],
  [[0.75, -1.5], [1.25, 0.5]],
];

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/** The course tool's forward pass in float64: a = sigmoid(W a + b) per layer. */
function byHand(input: number[]): number[] {
  let activation = input;
  for (let l = 0; l < weights.length; l++) {
    activation = weights[l].map((row, j) => sigmoid(row.reduce((sum, w, k) => sum + w * activation[k], biases[l][j])));
  }
  return activation;
}

const inputs = [[0, 0, 0], [1, 2, 3], [-1, 0.5, 2], [3, -2, -1]];

describe('model.m import', () => {
  test('a hand-written model.m gives the sigmoid MLP computed by hand', async () => {
    const model = services.models.parseCourseModel(handWritten, 'model.m');
    assert.deepEqual(model.spec.input, [3]);
    assert.deepEqual(model.spec.layers, [
      { kind: 'dense', units: 2, activation: 'sigmoid' },
      { kind: 'dense', units: 2, activation: 'sigmoid' },
    ]);
    assert.equal(model.spec.loss, 'mse');
    assert.deepEqual(model.labels, ['0', '1']);
    // parameters in parameterTable order: layers.0.weight, layers.0.bias, layers.1.weight, layers.1.bias
    assert.deepEqual(Array.from(model.parameters), Array.from(Float32Array.of(1, -1, 0.5, -0.5, 2, 0.25, 0.5, -0.25, 0.75, -1.5, 1.25, 0.5, 0.1, -0.2)));
    const result = await services.evaluation.predictRows(model, Float32Array.from(inputs.flat()), { device: 'cpu' });
    inputs.forEach((input, row) => {
      const expected = byHand(input);
      for (let k = 0; k < 2; k++) {
        const got = result.probabilities[row * 2 + k];
        assert.ok(Math.abs(got - expected[k]) <= 1e-6, `row ${row} output ${k}: engine ${got}, by hand ${expected[k]}`);
      }
      assert.equal(result.predictions[row], expected[1] > expected[0] ? 1 : 0);
    });
  });

  test('one output unit: class 1 when the sigmoid is >= 0.5, probabilities [1 - q, q]', async () => {
    const model = services.models.parseCourseModel('2\n2 1\n-0.5\n2 -1\n', 'one.m');
    assert.deepEqual(model.labels, ['0', '1']);
    const result = await services.evaluation.predictRows(model, Float32Array.from([1, 0, 0, 1]), { device: 'cpu' });
    const q = [sigmoid(2 - 0.5), sigmoid(-1 - 0.5)];
    q.forEach((value, row) => {
      assert.ok(Math.abs(result.probabilities[row * 2 + 1] - value) <= 1e-6);
      assert.ok(Math.abs(result.probabilities[row * 2] - (1 - value)) <= 1e-6);
      assert.equal(result.predictions[row], value >= 0.5 ? 1 : 0);
    });
  });

  test('line breaks carry no meaning: all numbers on one line read the same', () => {
    const oneLine = services.models.parseCourseModel(handWritten.replace(/\n/g, ' '), 'flat.m');
    assert.deepEqual(Array.from(oneLine.parameters), Array.from(services.models.parseCourseModel(handWritten, 'model.m').parameters));
  });

  test('writing a model.m and reading it back gives the same floats; the text is the documented layout', () => {
    const model = services.models.parseCourseModel(handWritten, 'model.m');
    const text = formatCourseModel(model);
    assert.equal(text, handWritten);
    const again = services.models.parseCourseModel(text, 'again.m');
    assert.deepEqual(Array.from(again.parameters), Array.from(model.parameters));
    // float32 values that need 9 digits survive too
    const awkward = { ...model, parameters: Float32Array.from(model.parameters, (value, i) => value + i * 1.1e-7 + 1 / 3) };
    assert.deepEqual(Array.from(services.models.parseCourseModel(formatCourseModel(awkward), 'x.m').parameters), Array.from(awkward.parameters));
  });

  test('models that are not sigmoid MLPs without preprocessing are refused with the reason', () => {
    const model = services.models.parseCourseModel(handWritten, 'model.m');
    assert.throws(() => formatCourseModel({ ...model, spec: { ...model.spec, layers: [{ kind: 'dense', units: 2, activation: 'relu' }, model.spec.layers[1]] } }),
      /dense sigmoid layers only; layer 1 is dense with relu activation/);
    assert.throws(() => formatCourseModel({ ...model, preprocessing: { kind: 'zscore' as const, mean: [0], std: [1] } }), /no preprocessing/);
  });

  test('the imported model exports to ONNX with the same outputs in onnxruntime', async () => {
    const model = services.models.parseCourseModel(handWritten, 'model.m');
    const session = await ort.InferenceSession.create(services.models.exportOnnx(model));
    const output = await session.run({ input: new ort.Tensor('float32', Float32Array.from(inputs.flat()), [inputs.length, 3]) });
    const probabilities = output.probabilities.data as Float32Array;
    inputs.forEach((input, row) => byHand(input).forEach((value, k) => assert.ok(Math.abs(probabilities[row * 2 + k] - value) <= 1e-6)));
    await session.release();
  });
});

describe('bad model.m files name the file and the line', () => {
  const cases: [string, string, RegExp][] = [
    ['empty', '', /^empty\.m: line 1: the file ends before the layer count/],
    ['layer count', '1\n3\n', /^bad\.m: line 1: the layer count \(the input layer included\) must be an integer from 2 to 1000, got "1"/],
    ['width', '3\n3 x 2\n', /^bad\.m: line 2: the width of layer 1 \(size 2\) must be an integer from 1 to 16777216, got "x"/],
    ['not a number', handWritten.replace('-0.5 2 0.25', '-0.5 two 0.25'), /^bad\.m: line 6: weight 2 of 3 into unit 2 of layer 1 must be a finite number, got "two"/],
    ['nan', handWritten.replace('0.1 -0.2', '0.1 nan'), /^bad\.m: line 4: bias 2 of 2 of layer 2 must be a finite number, got "nan"/],
    ['truncated', handWritten.split('\n').slice(0, 7).join('\n'), /^bad\.m: line 7: the file ends before weight 1 of 2 into unit 2 of layer 2: file truncated\?/],
    ['extra values', `${handWritten}0.5 0.5\n`, /^bad\.m: line 9: unexpected "0\.5" after the last weight \(2 extra values\)/],
    ['binary', '\u0000\u0001\u0002', /^bad\.m: not a text file/],
  ];
  for (const [name, text, message] of cases) {
    test(name, () => {
      const file = name === 'empty' ? 'empty.m' : 'bad.m';
      assert.throws(() => parseCourseModel(text, file), (error: unknown) => {
        assert.ok(error instanceof CourseModelError);
        assert.match(error.message, message);
        return true;
      });
    });
  }
});

describe('model.m files where model files are read, and the CLI', () => {
  const dir = scratchDir('course-model');
  const courseFile = path.join(dir, 'model.m');
  fs.writeFileSync(courseFile, handWritten);

  test('services.models.load reads a model.m by extension, and by content under another name', async () => {
    const byExtension = await services.models.load(courseFile);
    const other = path.join(dir, 'trained_net');
    fs.writeFileSync(other, handWritten);
    const byContent = await services.models.load(other);
    assert.deepEqual(Array.from(byContent.parameters), Array.from(byExtension.parameters));
    await assert.rejects(services.models.load(path.join(dir, 'missing.m')), /missing\.m: cannot read: no such file/);
  });

  test('nnstudio import writes a model file; export writes ONNX and model.m back', async () => {
    const imported = await runCli(['import', '--from', courseFile, '--out', 'm.safetensors', '--labels', 'benign,malignant'], dir);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /sigmoid MLP 3,2,2 \(14 parameters\)/);
    const model = await loadModel(path.join(dir, 'm.safetensors'));
    assert.deepEqual(model.labels, ['benign', 'malignant']);

    const onnxOut = await runCli(['export', '--model', 'm.safetensors', '--out', 'm.onnx'], dir);
    assert.equal(onnxOut.code, 0, onnxOut.stderr);
    assert.match(onnxOut.stdout, /ONNX, opset 13/);
    const session = await ort.InferenceSession.create(path.join(dir, 'm.onnx'));
    const output = await session.run({ input: new ort.Tensor('float32', Float32Array.from(inputs[1]), [1, 3]) });
    const expected = byHand(inputs[1]);
    assert.ok(Math.abs((output.probabilities.data as Float32Array)[0] - expected[0]) <= 1e-6);
    await session.release();

    const back = await runCli(['export', '--model', 'm.safetensors', '--format', 'course', '--out', 'back.txt'], dir);
    assert.equal(back.code, 0, back.stderr);
    assert.equal(fs.readFileSync(path.join(dir, 'back.txt'), 'utf8'), handWritten);
  });

  test('a bad model.m fails with one line naming the file and the line, no stack trace', async () => {
    fs.writeFileSync(path.join(dir, 'broken.m'), handWritten.replace('1.25 0.5', '1.25 0,5'));
    const result = await runCli(['import', '--from', 'broken.m', '--out', 'x.safetensors'], dir);
    assert.equal(result.code, 1);
    assert.match(errorLine(result), /^nnstudio: broken\.m: line 8: weight 2 of 2 into unit 2 of layer 2 must be a finite number, got "0,5"$/);
    assert.ok(!hasStackTrace(result.stderr));
    assert.ok(!fs.existsSync(path.join(dir, 'x.safetensors')));
  });

  test('export needs --format when --out has neither .onnx nor .m', async () => {
    const noFormat = await runCli(['export', '--model', courseFile, '--out', 'm.bin'], dir);
    assert.equal(noFormat.code, 1);
    assert.match(errorLine(noFormat), /give --format onnx or --format course/);
  });
});
