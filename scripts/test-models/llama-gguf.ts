/**
 * Encodes a llama-architecture model with a byte-level BPE ("gpt2", Qwen2 pre-tokenizer)
 * vocabulary as GGUF, with the metadata keys and tensor names llama.cpp's `gguf-py` writes for it.
 * Shared by the test models: `tiny-random.gguf`, its 32-wide-head variant and forge-tiny's fixture.
 */
import { GgufWriter, type Matrix, type TensorType } from "./gguf-writer.ts";
import type { NormalSampler } from "./seeded-random.ts";

/** llama.cpp's token types (`llama_token_type`): NORMAL=1, CONTROL=3, USER_DEFINED=4. */
export const TokenType = { NORMAL: 1, CONTROL: 3, USER_DEFINED: 4 } as const;
export type TokenType = (typeof TokenType)[keyof typeof TokenType];

/**
 * The special tokens of both tokenizers, in id order. Control tokens are hidden from detokenized
 * text; user-defined ones are printed, as in Qwen2.5, so `<tool_call>` reaches the tool-call parser.
 */
export const SPECIAL_TOKENS: readonly { text: string; control: boolean }[] = [
  { text: "<|endoftext|>", control: true },
  { text: "<|im_start|>", control: true },
  { text: "<|im_end|>", control: true },
  { text: "<tool_call>", control: false },
  { text: "</tool_call>", control: false },
];

/** The model's shape. */
export interface LlamaShape {
  contextLength: number;
  embeddingLength: number;
  feedForwardLength: number;
  blockCount: number;
  headCount: number;
  headCountKv: number;
}

/** The tokenizer and chat template the GGUF carries. */
export interface LlamaTokenizer {
  tokens: readonly string[];
  tokenTypes: readonly TokenType[];
  /** BPE merges as `"left right"`, highest priority first. */
  merges: readonly string[];
  /** Ids of `<|endoftext|>` (BOS and padding) and `<|im_end|>` (EOS). */
  endOfTextId: number;
  endOfTurnId: number;
  chatTemplate: string;
}

/** One transformer block's weights, each matrix `[out_features, in_features]`. */
export interface LlamaBlock {
  attentionNorm: Float32Array;
  query: Matrix;
  key: Matrix;
  value: Matrix;
  attentionOutput: Matrix;
  feedForwardNorm: Float32Array;
  gate: Matrix;
  up: Matrix;
  down: Matrix;
}

/** Everything a llama GGUF holds. */
export interface LlamaModel {
  name: string;
  shape: LlamaShape;
  tokenizer: LlamaTokenizer;
  tokenEmbedding: Matrix;
  blocks: readonly LlamaBlock[];
  outputNorm: Float32Array;
  output: Matrix;
  /** How the matrices are stored; norms are always F32. */
  matrixType: TensorType;
}

/** llama.cpp's `general.file_type` for all-F32 and mostly-F16 models. */
const FILE_TYPES: Record<TensorType, number> = { F32: 0, F16: 1 };

/** The GGUF file of `model`. */
export function encodeLlamaGguf(model: LlamaModel): Buffer {
  const { shape, tokenizer, matrixType } = model;
  const writer = new GgufWriter("llama");
  writer.addString("general.name", model.name);
  writer.addUint32("llama.vocab_size", tokenizer.tokens.length);
  writer.addUint32("llama.context_length", shape.contextLength);
  writer.addUint32("llama.embedding_length", shape.embeddingLength);
  writer.addUint32("llama.feed_forward_length", shape.feedForwardLength);
  writer.addUint32("llama.block_count", shape.blockCount);
  writer.addUint32("llama.attention.head_count", shape.headCount);
  writer.addUint32("llama.attention.head_count_kv", shape.headCountKv);
  writer.addUint32("llama.rope.dimension_count", shape.embeddingLength / shape.headCount);
  writer.addFloat32("llama.rope.freq_base", 10000);
  writer.addFloat32("llama.attention.layer_norm_rms_epsilon", 1e-6);
  writer.addUint32("general.file_type", FILE_TYPES[matrixType]);

  writer.addString("tokenizer.ggml.model", "gpt2");
  writer.addString("tokenizer.ggml.pre", "qwen2");
  writer.addStringArray("tokenizer.ggml.tokens", tokenizer.tokens);
  writer.addInt32Array("tokenizer.ggml.token_type", tokenizer.tokenTypes);
  writer.addStringArray("tokenizer.ggml.merges", tokenizer.merges);
  writer.addUint32("tokenizer.ggml.bos_token_id", tokenizer.endOfTextId);
  writer.addUint32("tokenizer.ggml.eos_token_id", tokenizer.endOfTurnId);
  writer.addUint32("tokenizer.ggml.padding_token_id", tokenizer.endOfTextId);
  writer.addBool("tokenizer.ggml.add_bos_token", false);
  writer.addString("tokenizer.chat_template", tokenizer.chatTemplate);

  writer.addMatrix("token_embd.weight", model.tokenEmbedding, matrixType);
  model.blocks.forEach((block, index) => {
    const prefix = `blk.${index}`;
    writer.addTensor(`${prefix}.attn_norm.weight`, [block.attentionNorm.length], block.attentionNorm);
    writer.addMatrix(`${prefix}.attn_q.weight`, block.query, matrixType);
    writer.addMatrix(`${prefix}.attn_k.weight`, block.key, matrixType);
    writer.addMatrix(`${prefix}.attn_v.weight`, block.value, matrixType);
    writer.addMatrix(`${prefix}.attn_output.weight`, block.attentionOutput, matrixType);
    writer.addTensor(`${prefix}.ffn_norm.weight`, [block.feedForwardNorm.length], block.feedForwardNorm);
    writer.addMatrix(`${prefix}.ffn_gate.weight`, block.gate, matrixType);
    writer.addMatrix(`${prefix}.ffn_up.weight`, block.up, matrixType);
    writer.addMatrix(`${prefix}.ffn_down.weight`, block.down, matrixType);
  });
  writer.addTensor("output_norm.weight", [model.outputNorm.length], model.outputNorm);
  writer.addMatrix("output.weight", model.output, matrixType);
  return writer.toBuffer();
}

/** Transformer blocks of `shape` with N(0, 0.02²) matrices and unit norms. */
export function randomBlocks(shape: LlamaShape, normal: NormalSampler): LlamaBlock[] {
  const { embeddingLength: width, feedForwardLength: ffn } = shape;
  const keyValueWidth = (width / shape.headCount) * shape.headCountKv;
  const matrix = (rows: number, columns: number): Matrix => randomMatrix(rows, columns, normal);
  return Array.from({ length: shape.blockCount }, () => ({
    attentionNorm: ones(width),
    query: matrix(width, width),
    key: matrix(keyValueWidth, width),
    value: matrix(keyValueWidth, width),
    attentionOutput: matrix(width, width),
    feedForwardNorm: ones(width),
    gate: matrix(ffn, width),
    up: matrix(ffn, width),
    down: matrix(width, ffn),
  }));
}

/** A `rows` × `columns` matrix of N(0, 0.02²) values. */
export function randomMatrix(rows: number, columns: number, normal: NormalSampler): Matrix {
  const values = Float32Array.from({ length: rows * columns }, () => normal(0, 0.02));
  return { rows, columns, values };
}

/** A vector of ones (an RMS norm that leaves its input as it is). */
export function ones(length: number): Float32Array {
  return new Float32Array(length).fill(1);
}
