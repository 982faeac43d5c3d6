/**
 * The hand-written wire checks (the fast path that lets well-formed answers skip zod) accept
 * exactly what their zod schemas accept: a value they pass is never one zod would reject, and a
 * well-formed value never falls back to zod.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { isOllamaChat, ollamaChatSchema } from "../../src/clients/ollama/wire.ts";
import {
  chatChunkSchema,
  chatCompletionSchema,
  isChatChunk,
  isChatCompletion,
} from "../../src/clients/openai/wire.ts";

/** Mostly `valid`, sometimes null, sometimes any JSON value (usually the wrong type). */
function field(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 8, arbitrary: valid },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
  );
}

/** An object with any subset of `fields`, or now and then something that is not such an object. */
function shaped(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.record(fields, { requiredKeys: [] }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
  );
}

const text = field(fc.string({ maxLength: 4 }));
const integer = field(fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constantFrom(0.5, 2 ** 53)));
const list = (item: fc.Arbitrary<unknown>) => field(fc.array(item, { maxLength: 3 }));
const args = field(
  fc.oneof(fc.string({ maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 3 }), fc.nat())),
);

const chatChunk = shaped({
  choices: list(
    shaped({
      index: integer,
      finish_reason: text,
      delta: field(
        shaped({
          content: text,
          reasoning_content: text,
          tool_calls: list(
            shaped({ index: integer, id: text, function: field(shaped({ name: text, arguments: text })) }),
          ),
        }),
      ),
    }),
  ),
});

const toolCall = shaped({
  id: text,
  type: text,
  function: shaped({ name: text, arguments: args }),
});
const chatCompletion = shaped({
  choices: list(
    shaped({
      finish_reason: text,
      message: shaped({ content: text, reasoning_content: text, tool_calls: list(toolCall) }),
    }),
  ),
});

const ollamaChat = shaped({
  done: field(fc.boolean()),
  done_reason: text,
  message: field(
    shaped({
      content: text,
      thinking: text,
      tool_calls: list(shaped({ function: shaped({ name: text, arguments: args }) })),
    }),
  ),
});

/** Runs the property and returns how many values each side took, so a vacuous run fails. */
function agreeWithSchema(
  values: fc.Arbitrary<unknown>,
  check: (value: unknown) => boolean,
  schema: z.ZodType,
): { accepted: number; rejected: number } {
  const counts = { accepted: 0, rejected: 0 };
  fc.assert(
    fc.property(values, (value) => {
      const accepted = schema.safeParse(value).success;
      expect(check(value)).toBe(accepted);
      counts[accepted ? "accepted" : "rejected"] += 1;
    }),
    { numRuns: 2_000 },
  );
  return counts;
}

describe("hand-written wire checks", () => {
  it.each([
    ["isChatChunk", chatChunk, isChatChunk, chatChunkSchema],
    ["isChatCompletion", chatCompletion, isChatCompletion, chatCompletionSchema],
    ["isOllamaChat", ollamaChat, isOllamaChat, ollamaChatSchema],
  ] as const)("%s accepts exactly what its zod schema accepts", (_name, values, check, schema) => {
    const { accepted, rejected } = agreeWithSchema(values, check, schema);
    // Both branches were exercised, so the agreement means something.
    expect(accepted).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(100);
  });

  it("rejects the edge cases zod rejects", () => {
    const chunk = (call: Record<string, unknown>) => ({ choices: [{ delta: { tool_calls: [call] } }] });
    expect(isChatChunk(chunk({ index: -1 }))).toBe(false);
    expect(isChatChunk(chunk({ index: 2 ** 53 }))).toBe(false);
    expect(isChatChunk(chunk({ index: 1.5 }))).toBe(false);
    expect(isChatChunk(chunk({ index: 0, function: { arguments: {} } }))).toBe(false);
    expect(isChatCompletion({ choices: [] })).toBe(false);
    const call = { function: { name: "get_weather", arguments: [] } };
    expect(isChatCompletion({ choices: [{ message: { tool_calls: [call] } }] })).toBe(false);
  });
});
