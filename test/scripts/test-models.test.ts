/**
 * The TypeScript GGUF writer and the test models it writes, read back with node-llama-cpp's own
 * GGUF parser. That llama.cpp loads and runs them is shown by every real-process test.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readGgufFileInfo } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { buildForgeTinyRandomGguf } from "../../scripts/test-models/forge-tiny-random.ts";
import { float16Bits, GGUF_ALIGNMENT, GgufWriter } from "../../scripts/test-models/gguf-writer.ts";
import { createNormalSampler } from "../../scripts/test-models/seeded-random.ts";
import {
  buildTinyRandomGguf,
  bytesToUnicode,
  learnMerges,
  TINY_RANDOM_CHAT_TEMPLATE,
  tinyRandomMerges,
} from "../../scripts/test-models/tiny-random.ts";

const tinyModelDir = fileURLToPath(new URL("../../tools/tiny-model/", import.meta.url));
const forgeTinyOptions = {
  tokenizerPath: join(tinyModelDir, "tokenizer.json"),
  chatTemplatePath: join(tinyModelDir, "chat-template.jinja"),
};

function writeTemporary(name: string, bytes: Buffer): string {
  const path = join(mkdtempSync(join(tmpdir(), "forge-gguf-")), name);
  writeFileSync(path, bytes);
  return path;
}

function readInfo(path: string) {
  return readGgufFileInfo(path, { sourceType: "filesystem", logWarnings: false });
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

describe("GgufWriter", () => {
  it("writes metadata of every type and aligned F32/F16 tensors that node-llama-cpp parses back", async () => {
    const writer = new GgufWriter("llama");
    writer.addString("general.name", "héllo");
    writer.addUint32("llama.block_count", 3);
    writer.addFloat32("llama.rope.freq_base", 0.5);
    writer.addBool("tokenizer.ggml.add_bos_token", true);
    writer.addStringArray("tokenizer.ggml.tokens", ["a", "b c", "<|x|>"]);
    writer.addInt32Array("tokenizer.ggml.token_type", [1, -3, 4]);
    writer.addTensor("vector", [5], Float32Array.from([1, 2, 3, 4, 5]));
    writer.addMatrix("matrix", { rows: 2, columns: 3, values: new Float32Array(6) }, "F16");
    const path = writeTemporary("kinds.gguf", writer.toBuffer());

    const info = await readInfo(path);
    expect(info.version).toBe(3);
    expect(info.metadata.general).toMatchObject({ architecture: "llama", name: "héllo" });
    expect(info.metadata.llama).toMatchObject({ block_count: 3, rope: { freq_base: 0.5 } });
    expect(info.metadata.tokenizer?.ggml).toMatchObject({
      add_bos_token: true,
      tokens: ["a", "b c", "<|x|>"],
      token_type: [1, -3, 4],
    });
    const tensors = info.fullTensorInfo ?? [];
    expect(tensors.map(({ name, dimensions, ggmlType }) => ({ name, dimensions, ggmlType }))).toEqual([
      { name: "vector", dimensions: [5], ggmlType: 0 },
      { name: "matrix", dimensions: [3, 2], ggmlType: 1 },
    ]);
    // 20 bytes of F32 padded to the alignment: the F16 tensor starts at the next boundary.
    expect(tensors.map((tensor) => Number(tensor.offset))).toEqual([0, GGUF_ALIGNMENT]);
  });

  it("rejects values that do not fill the shape", () => {
    expect(() => new GgufWriter("llama").addTensor("t", [2, 3], new Float32Array(5))).toThrow(
      /shape \[2, 3\] holds 6 values, not 5/,
    );
  });

  it("rounds to half precision to nearest even, with infinities, NaN and subnormals", () => {
    expect(
      [1, -2, 0.1, 65504, 65520, 2 ** -24, 2 ** -25, 1 + 2 ** -11, 1 + 3 * 2 ** -11, Number.NaN, -0].map(
        float16Bits,
      ),
    ).toEqual([0x3c00, 0xc000, 0x2e66, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x3c00, 0x3c02, 0x7e00, 0x8000]);
  });
});

describe("the seeded normal sampler", () => {
  it("repeats per seed and draws N(0, 0.02²)", () => {
    const draw = (seed: number): number[] => {
      const normal = createNormalSampler(seed);
      return Array.from({ length: 20_000 }, () => normal(0, 0.02));
    };
    const values = draw(1234);
    expect(draw(1234)).toEqual(values);
    expect(draw(1235)).not.toEqual(values);
    const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
    const variance = values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / values.length;
    expect(Math.abs(mean)).toBeLessThan(0.001);
    expect(Math.sqrt(variance)).toBeCloseTo(0.02, 3);
  });
});

describe("the tiny random test model", () => {
  it("learns the same 270 BPE merges as the Python generator it replaces", () => {
    const merges = tinyRandomMerges();
    expect(merges).toHaveLength(270);
    expect(merges.slice(0, 5)).toEqual([
      ["Ġ", "Ġ"],
      ["ĠĠ", "ĠĠ"],
      ["Ċ", "ĠĠĠĠ"],
      ["m", "e"],
      ["o", "l"],
    ]);
    // sha256 of the merges as JSON, as make-test-gguf.py learned them.
    expect(sha256(JSON.stringify(merges.map((pair) => pair.join(" "))))).toBe(
      "6cba8530fd89ec52f9ef765a250c184dbbed00b1aa5a441effe1097dc5af7b37",
    );
  });

  it("learns the most frequent pair first, breaks ties by text and stops when no pair occurs twice", () => {
    // What make-test-gguf.py's learn_merges returned for the same text.
    expect(learnMerges("ab ab ba ba xx", 10)).toEqual([
      ["a", "b"],
      ["b", "a"],
      ["Ġ", "ba"],
    ]);
  });

  it("maps every byte to one printable character, printable ASCII to itself", () => {
    const table = bytesToUnicode();
    expect(new Set(table).size).toBe(256);
    expect(table[0x41]).toBe("A");
    expect(table[0x20]).toBe("Ġ");
    expect(table[0x0a]).toBe("Ċ");
  });

  it("is a deterministic llama GGUF with ChatML special tokens and Qwen2.5's template", async () => {
    const first = buildTinyRandomGguf();
    expect(buildTinyRandomGguf().gguf.equals(first.gguf)).toBe(true);
    expect(buildTinyRandomGguf({ seed: 1 }).gguf.equals(first.gguf)).toBe(false);
    expect(first).toMatchObject({ vocabularySize: 531, mergeCount: 270 });

    const info = await readInfo(writeTemporary("tiny-random.gguf", first.gguf));
    expect(info.metadata.llama).toMatchObject({
      vocab_size: 531,
      context_length: 2048,
      embedding_length: 64,
      block_count: 2,
      attention: { head_count: 4, head_count_kv: 2 },
    });
    const tokenizer = info.metadata.tokenizer;
    expect(tokenizer?.chat_template).toBe(TINY_RANDOM_CHAT_TEMPLATE);
    expect(tokenizer?.ggml).toMatchObject({
      model: "gpt2",
      pre: "qwen2",
      bos_token_id: 526,
      eos_token_id: 528,
    });
    expect(tokenizer?.ggml.tokens.slice(526)).toEqual([
      "<|endoftext|>",
      "<|im_start|>",
      "<|im_end|>",
      "<tool_call>",
      "</tool_call>",
    ]);
    expect(tokenizer?.ggml.token_type?.slice(526)).toEqual([3, 3, 3, 4, 4]);
    expect(info.fullTensorInfo?.map((tensor) => tensor.name)).toContain("blk.1.ffn_down.weight");
    expect(info.fullTensorInfo?.every((tensor) => tensor.ggmlType === 0)).toBe(true);
  });

  it("narrows to 32-wide heads for the quantized-KV tests", async () => {
    const { gguf } = buildTinyRandomGguf({ headCount: 2, headCountKv: 1 });
    const info = await readInfo(writeTemporary("head32.gguf", gguf));
    expect(info.metadata.llama).toMatchObject({
      attention: { head_count: 2, head_count_kv: 1 },
      rope: { dimension_count: 32 },
    });
    const key = info.fullTensorInfo?.find((tensor) => tensor.name === "blk.0.attn_k.weight");
    expect(key?.dimensions).toEqual([64, 32]);
  });
});

describe("forge-tiny's tokenizer fixture", () => {
  it("carries the committed tokenizer and template with F16 random weights", async () => {
    const gguf = buildForgeTinyRandomGguf(forgeTinyOptions);
    expect(buildForgeTinyRandomGguf(forgeTinyOptions).equals(gguf)).toBe(true);
    const info = await readInfo(writeTemporary("forge-tiny-random.gguf", gguf));
    expect(info.metadata.general).toMatchObject({ name: "forge-tiny-random", file_type: 1 });
    expect(info.metadata.llama).toMatchObject({ vocab_size: 4096, attention: { head_count: 2 } });
    const ggml = info.metadata.tokenizer?.ggml;
    expect(ggml?.tokens).toHaveLength(4096);
    expect(ggml?.merges).toHaveLength(3835);
    expect(ggml).toMatchObject({ bos_token_id: 4091, eos_token_id: 4093, padding_token_id: 4091 });
    expect(ggml?.token_type?.slice(4090)).toEqual([1, 3, 3, 3, 4, 4]);
    const types = new Map(info.fullTensorInfo?.map((tensor) => [tensor.name, tensor.ggmlType]));
    expect(types.get("token_embd.weight")).toBe(1);
    expect(types.get("blk.0.attn_norm.weight")).toBe(0);
    expect(types.get("output.weight")).toBe(1);
  });
});
