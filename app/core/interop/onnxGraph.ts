// A small builder for ONNX graphs over the official schema (the `onnx-proto` package: protobufjs code
// generated from onnx.proto of ONNX 1.10). It knows nodes, float32 initializers and the attribute types
// the exporter needs; names are made unique so that every layer can say what it is.
import { onnx } from 'onnx-proto';

export type AttributeValue = number | number[] | string | { float: number };

/** A float32 tensor of `shape` (row-major), stored as little-endian raw bytes as ONNX requires. */
export function floatTensor(name: string, shape: readonly number[], values: ArrayLike<number>): onnx.ITensorProto {
  const data = Float32Array.from(values);
  const rawData = new Uint8Array(data.length * 4);
  const view = new DataView(rawData.buffer);
  for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i], true);
  return { name, dims: [...shape], dataType: onnx.TensorProto.DataType.FLOAT, rawData };
}

function attribute(name: string, value: AttributeValue): onnx.IAttributeProto {
  const type = onnx.AttributeProto.AttributeType;
  if (typeof value === 'string') return { name, type: type.STRING, s: new TextEncoder().encode(value) };
  if (typeof value === 'object' && !Array.isArray(value)) return { name, type: type.FLOAT, f: value.float };
  if (Array.isArray(value)) return { name, type: type.INTS, ints: value };
  return { name, type: type.INT, i: value };
}

/** A float tensor's type with a symbolic first dimension (the batch). */
export function floatValueInfo(name: string, shape: readonly (number | string)[], docString?: string): onnx.IValueInfoProto {
  return {
    name,
    docString,
    type: {
      tensorType: {
        elemType: onnx.TensorProto.DataType.FLOAT,
        shape: { dim: shape.map((dim) => (typeof dim === 'string' ? { dimParam: dim } : { dimValue: dim })) },
      },
    },
  };
}

export class GraphBuilder {
  readonly nodes: onnx.INodeProto[] = [];
  readonly initializers: onnx.ITensorProto[] = [];
  private readonly used = new Set<string>();

  /** `base`, or `base_2`, `base_3`, ... when taken. */
  uniqueName(base: string): string {
    let name = base;
    for (let n = 2; this.used.has(name); n++) name = `${base}_${n}`;
    this.used.add(name);
    return name;
  }

  /** Adds a float32 constant and returns its name. */
  constant(name: string, shape: readonly number[], values: ArrayLike<number>): string {
    const unique = this.uniqueName(name);
    this.initializers.push(floatTensor(unique, shape, values));
    return unique;
  }

  /** Adds an int64 constant (indices) and returns its name. */
  int64Constant(name: string, shape: readonly number[], values: readonly number[]): string {
    const unique = this.uniqueName(name);
    this.initializers.push({ name: unique, dims: [...shape], dataType: onnx.TensorProto.DataType.INT64, int64Data: [...values] });
    return unique;
  }

  /** Adds a bool constant (a mask) and returns its name. */
  boolConstant(name: string, shape: readonly number[], values: readonly boolean[]): string {
    const unique = this.uniqueName(name);
    this.initializers.push({ name: unique, dims: [...shape], dataType: onnx.TensorProto.DataType.BOOL, int32Data: values.map((value) => (value ? 1 : 0)) });
    return unique;
  }

  /** Adds one node; returns the name of its (single) output. `name` labels both the node and its output. */
  node(opType: string, inputs: string[], name: string, attributes: Record<string, AttributeValue> = {}, docString?: string): string {
    const output = this.uniqueName(name);
    this.nodes.push({
      opType,
      input: inputs,
      output: [output],
      name: output,
      docString,
      attribute: Object.entries(attributes).map(([key, value]) => attribute(key, value)),
    });
    return output;
  }

  /** Reserves a name that is not a node output (a graph input). */
  reserve(name: string): string {
    if (this.used.has(name)) throw new Error(`ONNX graph: name "${name}" is taken`);
    this.used.add(name);
    return name;
  }
}
