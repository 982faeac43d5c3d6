/**
 * forge-tiny's tokenizer (tools/tiny-model/forge_tok.py) tokenizes exactly as llama.cpp does with
 * the GGUF it is exported to, so the ids the model trains on are the ids it sees at inference; and
 * no merge crosses a character class, so a value has the same tokens wherever it stands. Runs
 * against the tokenizer fixture (forge-tiny's tokenizer and template, random weights), not the
 * committed model.
 */
import { afterAll, describe, expect, it } from "vitest";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { FORGE_TOKENIZER, type Sample, sampleConversations } from "../helpers/forge-gen.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";
import { ensureForgeTinyFixture } from "../helpers/test-model.ts";

const CONVERSATIONS = 1000;
const SEED = 20_261_124;
/** How many distinct copied values (tool names included) the class-run checks use. */
const VALUES = 240;

let server: TestLlamaServer | undefined;
let samples: Sample[] = [];
const cache = new Map<string, Promise<number[]>>();

/** llama-server's ids for `content`, special tokens parsed, no BOS: as a rendered prompt. */
function tokenize(content: string): Promise<number[]> {
  let ids = cache.get(content);
  if (!ids) {
    ids = (async () => {
      const response = await fetch(`${server?.baseUrl}/tokenize`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content, add_special: false, parse_special: true }),
      });
      if (!response.ok) throw new Error(`/tokenize: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { tokens: number[] }).tokens;
    })();
    cache.set(content, ids);
  }
  return ids;
}

/** Map `items` through `work`, `width` at a time. */
async function mapConcurrently<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

/**
 * The pieces tokenized one by one, concatenated, against the whole text tokenized at once; null
 * when they agree. node-llama-cpp tokenizes a prompt this way, piece by piece.
 */
async function splitDifference(pieces: readonly string[]): Promise<string | null> {
  const [whole, ...parts] = await Promise.all([tokenize(pieces.join("")), ...pieces.map(tokenize)]);
  const joined = parts.flat();
  if (joined.length === whole.length && joined.every((id, index) => id === whole[index])) return null;
  return `${JSON.stringify(pieces)}: whole ${JSON.stringify(whole)} vs pieces ${JSON.stringify(parts)}`;
}

beforeAllOrFail(async () => {
  const [modelPath, generated] = await Promise.all([
    ensureForgeTinyFixture(),
    sampleConversations({
      count: CONVERSATIONS,
      seed: SEED,
      tokenize: FORGE_TOKENIZER,
      fields: ["text", "ids", "values", "toolNames"],
    }),
  ]);
  samples = generated;
  server = await startTestLlamaServer({ modelPath, threads: 1, ctx: 512 });
}, 900_000);

afterAll(() => server?.stop());

describe("forge-tiny tokenizer vs llama.cpp", () => {
  it("gives the ids llama-server's /tokenize gives for 1,000 generated conversations", async () => {
    expect(samples).toHaveLength(CONVERSATIONS);
    const mismatches = await mapConcurrently(samples, 4, async (sample, index) => {
      const text = sample.text ?? "";
      const expected = await tokenize(text);
      cache.delete(text); // one use; keep the cache to the short pieces
      const actual = sample.ids ?? [];
      if (actual.length === expected.length && actual.every((id, at) => id === expected[at])) return null;
      let at = 0;
      while (actual[at] === expected[at]) at++;
      return {
        conversation: index,
        firstDifference: at,
        python: actual.slice(Math.max(0, at - 3), at + 5),
        llamaServer: expected.slice(Math.max(0, at - 3), at + 5),
      };
    });
    expect(mismatches.filter((mismatch) => mismatch !== null)).toEqual([]);
    // Not vacuous: real conversations with special tokens in them.
    const specials = await tokenize("<|im_start|><tool_call></tool_call><|im_end|>");
    expect(specials).toHaveLength(4);
    expect(samples.every((sample) => (sample.ids ?? []).includes(specials[0] as number))).toBe(true);
  }, 120_000);

  it("gives a copied value the same tokens in a request, in JSON quotes and after node-llama-cpp's injected call text", async () => {
    const toolNames = new Set(samples.flatMap((sample) => sample.toolNames ?? []));
    const distinct = [...new Set(samples.flatMap((sample) => sample.values ?? []))];
    // Spread over the whole list: names, ids, places, people, amounts, dates, free text.
    const step = Math.max(1, Math.floor(distinct.length / VALUES));
    const values = distinct.filter((_, index) => index % step === 0).slice(0, VALUES);
    expect(values.length).toBeGreaterThan(VALUES / 2);
    expect(values.some((value) => value.includes(" "))).toBe(true);
    const name = [...toolNames][0] ?? "get_record";
    const cases = values.flatMap((value) => {
      // Inside JSON quotes a value is written escaped; the generator's values need no escaping.
      const quoted = JSON.stringify(value).slice(1, -1);
      const callName = toolNames.has(value) ? value : name;
      const argument = toolNames.has(value) ? "id" : "city";
      return [
        // A request: the value between spaces, as the user writes it.
        ["<|im_start|>user\nCheck ", value, " for me.<|im_end|>\n"],
        // A tool result or a call written whole: inside JSON quotes.
        ['{"order_id": "', quoted, '", "note": "ok"}'],
        // node-llama-cpp's in-flight call: the name after its injected `<tool_call>\n{"name": "`,
        // then its injected `", "arguments": `, then the model's JSON, then the suffix.
        [
          '<tool_call>\n{"name": "',
          callName,
          '", "arguments": ',
          `{"${argument}": "`,
          quoted,
          '"}',
          "}\n</tool_call>",
        ],
      ];
    });
    const differences = await mapConcurrently(cases, 8, splitDifference);
    expect(differences.filter((difference) => difference !== null)).toEqual([]);
  }, 120_000);

  it("notices pieces cut inside a class run (the check can fail)", async () => {
    const cuts = [
      ["func", "tion"],
      ["argu", "ments"],
      ["proper", "ties"],
    ];
    const differences = await Promise.all(cuts.map(splitDifference));
    expect(differences.every((difference) => difference !== null)).toBe(true);
  });
});
