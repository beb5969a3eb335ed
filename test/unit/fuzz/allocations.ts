// Catches allocations that a small input cannot justify: a header claiming 2^31 items must be refused before
// anything that size is allocated. Typed arrays, ArrayBuffers and Buffer.alloc larger than the limit throw
// (inside a fuzz worker only); zlib's output and other native allocations show in the peak memory instead.
export class AllocationLimitError extends Error {
  override readonly name = 'AllocationLimitError';
}

const typedArrays = [
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array,
] as const;

/** Replaces the global constructors in this thread with ones that refuse more than `limitBytes`. */
export function guardAllocations(limitBytes: number): void {
  const check = (bytes: number, what: string) => {
    if (bytes > limitBytes) throw new AllocationLimitError(`${what} of ${bytes} bytes (over the fuzz limit of ${limitBytes})`);
  };
  for (const type of typedArrays) {
    const guarded = new Proxy(type, {
      construct(target, args: unknown[], newTarget) {
        const first = args[0];
        if (typeof first === 'number') check(first * target.BYTES_PER_ELEMENT, `new ${target.name}`);
        else if (first !== null && typeof first === 'object' && 'length' in first && !(first instanceof ArrayBuffer) && !(first instanceof SharedArrayBuffer)) {
          check(Number((first as { length: number }).length) * target.BYTES_PER_ELEMENT, `new ${target.name}`);
        }
        return Reflect.construct(target, args, newTarget) as object;
      },
    });
    (globalThis as Record<string, unknown>)[type.name] = guarded;
  }
  const arrayBuffer = ArrayBuffer;
  (globalThis as Record<string, unknown>).ArrayBuffer = new Proxy(arrayBuffer, {
    construct(target, args: unknown[], newTarget) {
      check(Number(args[0]), 'new ArrayBuffer');
      return Reflect.construct(target, args, newTarget) as object;
    },
  });
  for (const name of ['alloc', 'allocUnsafe', 'allocUnsafeSlow'] as const) {
    const original = Buffer[name] as (size: number, ...rest: unknown[]) => Buffer;
    (Buffer as unknown as Record<string, unknown>)[name] = (size: number, ...rest: unknown[]) => {
      check(size, `Buffer.${name}`);
      return original.call(Buffer, size, ...rest);
    };
  }
}

/** The process's peak resident memory so far, in MB: a case that raises it by hundreds of MB allocated that much. */
export function peakMemoryMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}
