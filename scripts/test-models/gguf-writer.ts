/**
 * A small GGUF v3 writer: a little-endian header, typed key-value metadata, tensor infos and
 * 32-byte-aligned F32 or F16 tensor data, laid out as llama.cpp's `gguf-py` writes them. Enough
 * for the tiny random-weight test models; no quantized types.
 */

const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian uint32
const GGUF_VERSION = 3;
/** Tensor data alignment; the GGUF default, so no `general.alignment` key is written. */
export const GGUF_ALIGNMENT = 32;

/** GGUF metadata value types (gguf.h `gguf_type`). */
const ValueType = {
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
} as const;

/** Tensor element types this writer can store (ggml.h `ggml_type`). */
export type TensorType = "F32" | "F16";
const TENSOR_TYPE_IDS: Record<TensorType, number> = { F32: 0, F16: 1 };

/** A row-major matrix of float32 values, `rows` by `columns` (numpy's shape order). */
export interface Matrix {
  rows: number;
  columns: number;
  values: Float32Array;
}

interface TensorEntry {
  name: string;
  /** ggml's dimensions, innermost first: `[columns, rows]` for a matrix. */
  dimensions: number[];
  type: TensorType;
  data: Buffer;
}

/**
 * Collects metadata and tensors, then encodes the whole file with {@link GgufWriter.toBuffer}.
 * @example
 * const writer = new GgufWriter("llama");
 * writer.addString("general.name", "tiny");
 * writer.addTensor("output_norm.weight", [64], new Float32Array(64).fill(1));
 * writeFileSync("tiny.gguf", writer.toBuffer());
 */
export class GgufWriter {
  readonly #metadata: Buffer[] = [];
  readonly #tensors: TensorEntry[] = [];

  /** Starts the metadata with `general.architecture`, as every GGUF model does. */
  constructor(architecture: string) {
    this.addString("general.architecture", architecture);
  }

  addString(key: string, value: string): void {
    this.#add(key, ValueType.STRING, encodeString(value));
  }

  addUint32(key: string, value: number): void {
    this.#add(key, ValueType.UINT32, uint32(value));
  }

  addFloat32(key: string, value: number): void {
    const bytes = Buffer.alloc(4);
    bytes.writeFloatLE(value);
    this.#add(key, ValueType.FLOAT32, bytes);
  }

  addBool(key: string, value: boolean): void {
    this.#add(key, ValueType.BOOL, Buffer.from([value ? 1 : 0]));
  }

  addStringArray(key: string, values: readonly string[]): void {
    this.#add(key, ValueType.ARRAY, arrayOf(ValueType.STRING, values.map(encodeString)));
  }

  addInt32Array(key: string, values: readonly number[]): void {
    const items = values.map((value) => {
      const bytes = Buffer.alloc(4);
      bytes.writeInt32LE(value);
      return bytes;
    });
    this.#add(key, ValueType.ARRAY, arrayOf(ValueType.INT32, items));
  }

  /** Adds a vector (`shape` = `[length]`) or matrix (`[rows, columns]`), stored as `type`. */
  addTensor(name: string, shape: readonly number[], values: Float32Array, type: TensorType = "F32"): void {
    const count = shape.reduce((product, size) => product * size, 1);
    if (count !== values.length) {
      throw new Error(
        `tensor ${name}: shape [${shape.join(", ")}] holds ${count} values, not ${values.length}`,
      );
    }
    const data = type === "F32" ? float32Bytes(values) : float16Bytes(values);
    this.#tensors.push({ name, dimensions: [...shape].reverse(), type, data });
  }

  /** Adds a {@link Matrix} stored as `type`. */
  addMatrix(name: string, matrix: Matrix, type: TensorType): void {
    this.addTensor(name, [matrix.rows, matrix.columns], matrix.values, type);
  }

  /** The complete file: header, metadata, tensor infos, padding, aligned tensor data. */
  toBuffer(): Buffer {
    const header = Buffer.concat([uint32(GGUF_MAGIC), uint32(GGUF_VERSION)]);
    const counts = Buffer.concat([uint64(this.#tensors.length), uint64(this.#metadata.length)]);
    const infos: Buffer[] = [];
    const data: Buffer[] = [];
    let offset = 0;
    for (const tensor of this.#tensors) {
      infos.push(
        encodeString(tensor.name),
        uint32(tensor.dimensions.length),
        ...tensor.dimensions.map(uint64),
        uint32(TENSOR_TYPE_IDS[tensor.type]),
        uint64(offset),
      );
      const padded = alignUp(tensor.data.length);
      data.push(tensor.data, Buffer.alloc(padded - tensor.data.length));
      offset += padded;
    }
    const head = Buffer.concat([header, counts, ...this.#metadata, ...infos]);
    return Buffer.concat([head, Buffer.alloc(alignUp(head.length) - head.length), ...data]);
  }

  #add(key: string, type: number, value: Buffer): void {
    this.#metadata.push(Buffer.concat([encodeString(key), uint32(type), value]));
  }
}

/**
 * The IEEE half-precision bits of `value`, rounded to nearest even as numpy's `astype(float16)`
 * does; out-of-range values become infinities.
 */
export function float16Bits(value: number): number {
  scratchFloat[0] = value;
  const bits = scratchBits[0] as number;
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa === 0 ? 0 : 0x200);
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 0x1f) return sign | 0x7c00;
  if (halfExponent <= 0) {
    // Subnormal half: the implicit leading 1 shifts into the mantissa.
    if (halfExponent < -10) return sign;
    return sign | roundShift(mantissa | 0x800000, 14 - halfExponent);
  }
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  return sign | ((halfExponent << 10) + roundShift(mantissa, 13));
}

const scratchFloat = new Float32Array(1);
const scratchBits = new Uint32Array(scratchFloat.buffer);

/** `value >> shift`, rounded to nearest, ties to even. */
function roundShift(value: number, shift: number): number {
  const kept = value >>> shift;
  const remainder = value - kept * 2 ** shift;
  const halfway = 2 ** (shift - 1);
  return remainder > halfway || (remainder === halfway && kept % 2 === 1) ? kept + 1 : kept;
}

function float32Bytes(values: Float32Array): Buffer {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, index) => {
    bytes.writeFloatLE(value, index * 4);
  });
  return bytes;
}

function float16Bytes(values: Float32Array): Buffer {
  const bytes = Buffer.alloc(values.length * 2);
  values.forEach((value, index) => {
    bytes.writeUInt16LE(float16Bits(value), index * 2);
  });
  return bytes;
}

function arrayOf(itemType: number, items: readonly Buffer[]): Buffer {
  return Buffer.concat([uint32(itemType), uint64(items.length), ...items]);
}

function encodeString(value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  return Buffer.concat([uint64(bytes.length), bytes]);
}

function uint32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value);
  return bytes;
}

function uint64(value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64LE(BigInt(value));
  return bytes;
}

function alignUp(length: number): number {
  return Math.ceil(length / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
}
