/**
 * forge-tiny's tokenizer fixture (`.cache/test-models/forge-tiny-random.gguf`): the committed
 * tokenizer (`tools/tiny-model/tokenizer.json`) and chat template with random weights of the
 * trainer's `test` size, as `forge_train.py export --random` writes it, so tokenizer and template
 * tests run against llama.cpp whatever trained model is committed.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import {
  encodeLlamaGguf,
  type LlamaShape,
  ones,
  randomBlocks,
  randomMatrix,
  SPECIAL_TOKENS,
  TokenType,
} from "./llama-gguf.ts";
import { createNormalSampler } from "./seeded-random.ts";

/** forge_train.py's `test` size. */
export const FORGE_TINY_TEST_SHAPE: LlamaShape = {
  contextLength: 2048,
  embeddingLength: 64,
  feedForwardLength: 128,
  blockCount: 2,
  headCount: 2,
  headCountKv: 2,
};

/** What `forge_tok.py` writes to `tokenizer.json`. */
const TokenizerFileSchema = z.object({
  tokens: z.array(z.string()),
  merges: z.array(z.tuple([z.string(), z.string()])),
  special: z.record(z.string(), z.number().int()),
});

/** Options of {@link buildForgeTinyRandomGguf}. */
export interface ForgeTinyRandomOptions {
  tokenizerPath: string;
  chatTemplatePath: string;
  /** Seed of the random weights. Default 1. */
  seed?: number;
}

/** The fixture's GGUF file: forge-tiny's vocabulary and template, F16 random weights. */
export function buildForgeTinyRandomGguf(options: ForgeTinyRandomOptions): Buffer {
  const tokenizer = TokenizerFileSchema.parse(JSON.parse(readFileSync(options.tokenizerPath, "utf8")));
  const specialId = (text: string): number => {
    const id = tokenizer.special[text];
    if (id === undefined) throw new Error(`${options.tokenizerPath} has no special token ${text}`);
    return id;
  };
  const control = new Set(SPECIAL_TOKENS.filter((token) => token.control).map(({ text }) => text));
  const tokenTypes = tokenizer.tokens.map((token, index): TokenType => {
    if (tokenizer.special[token] !== index) return TokenType.NORMAL;
    return control.has(token) ? TokenType.CONTROL : TokenType.USER_DEFINED;
  });

  const shape = FORGE_TINY_TEST_SHAPE;
  const normal = createNormalSampler(options.seed ?? 1);
  // The trainer ties the output head to the embeddings.
  const embedding = randomMatrix(tokenizer.tokens.length, shape.embeddingLength, normal);
  return encodeLlamaGguf({
    name: "forge-tiny-random",
    shape,
    tokenizer: {
      tokens: tokenizer.tokens,
      tokenTypes,
      merges: tokenizer.merges.map(([left, right]) => `${left} ${right}`),
      endOfTextId: specialId("<|endoftext|>"),
      endOfTurnId: specialId("<|im_end|>"),
      chatTemplate: readFileSync(options.chatTemplatePath, "utf8"),
    },
    tokenEmbedding: embedding,
    blocks: randomBlocks(shape, normal),
    outputNorm: ones(shape.embeddingLength),
    output: embedding,
    matrixType: "F16",
  });
}
