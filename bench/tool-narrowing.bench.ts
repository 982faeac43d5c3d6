/**
 * Tool-set narrowing benchmark (`npm run bench:narrowing`, ADR 028). BFCL's `multiple` and
 * `live_multiple` cases (from `.cache/bfcl`, written by `npm run eval:bfcl` setup) each get their
 * own tools padded with distractors drawn from the other cases' functions, up to `--tools N`
 * (default 40), the right tool at a random place (seeded). Two measures:
 * - recall@K over every case, no model: how often `narrowTools` keeps the right tool;
 * - with `--backend-url` (llama-server, `--jinja`): on `--model-cases` cases spread over the set,
 *   how often the model's first call names the right tool when sent all N tools, and when sent the
 *   K that narrowing keeps (`--k`, default 5). Text calls are read with the rescue (full names).
 * Prints a Markdown table; figures go to docs/benchmarks.md.
 */
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readJsonl } from "../eval/batch/jsonl.ts";
import { type BfclCase, bfclCaseSchema } from "../eval/bfcl/cases.ts";
import { BFCL_VERSION, bfclCacheDir } from "../eval/bfcl/setup.ts";
import { createMessage, MessageType } from "../src/core/messages.ts";
import { type ToolSpec, toolSpecFromJsonSchema } from "../src/core/tools.ts";
import { narrowTools } from "../src/guardrails/tool-narrowing.ts";
import { rescueToolCall } from "../src/prompts/rescue/index.ts";

const { values } = parseArgs({
  options: {
    tools: { type: "string", default: "40" },
    k: { type: "string", default: "5" },
    "backend-url": { type: "string" },
    "model-cases": { type: "string", default: "20" },
    seed: { type: "string", default: "7" },
    "skip-recall": { type: "boolean", default: false },
  },
});
const TOTAL_TOOLS = Number(values.tools);
const MODEL_K = Number(values.k);
const RECALL_KS = [3, 5, 8, 10];

interface WireTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

interface BenchCase {
  id: string;
  question: string;
  right: string;
  tools: WireTool[];
}

/** A small seeded generator (mulberry32), so every run pads the same way. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function loadCases(): BfclCase[] {
  const dir = join(bfclCacheDir(), "cases", BFCL_VERSION);
  return ["multiple", "live_multiple"].flatMap((category) => {
    const { rows, problems } = readJsonl(join(dir, `${category}.jsonl`), bfclCaseSchema);
    if (problems.length > 0)
      throw new Error(`${category}.jsonl line ${problems[0]?.line}: ${problems[0]?.message}`);
    return rows;
  });
}

/** BFCL writes `a.b` in answers and `a_b` on the wire. */
const wireName = (name: string) => name.replaceAll(".", "_");

/** Each case with its tools padded to `TOTAL_TOOLS` by distractors from the other cases. */
function buildCases(cases: readonly BfclCase[], next: () => number): BenchCase[] {
  const pool = new Map<string, WireTool>();
  for (const bfcl of cases) for (const tool of bfcl.tools as WireTool[]) pool.set(tool.function.name, tool);
  const poolTools = [...pool.values()];
  return cases.flatMap((bfcl) => {
    const answer = (bfcl.possible_answer as Record<string, unknown>[] | undefined)?.[0];
    const right = answer ? wireName(Object.keys(answer)[0] ?? "") : "";
    const own = bfcl.tools as WireTool[];
    if (!own.some((tool) => tool.function.name === right)) return [];
    const names = new Set(own.map((tool) => tool.function.name));
    const tools = [...own];
    while (tools.length < TOTAL_TOOLS) {
      const candidate = poolTools[Math.floor(next() * poolTools.length)] as WireTool;
      if (names.has(candidate.function.name)) continue;
      names.add(candidate.function.name);
      tools.push(candidate);
    }
    // The right tool somewhere in the list, not always among the first few.
    for (let index = tools.length - 1; index > 0; index--) {
      const other = Math.floor(next() * (index + 1));
      [tools[index], tools[other]] = [tools[other] as WireTool, tools[index] as WireTool];
    }
    const question = bfcl.turns[0]?.findLast((message) => message.role === "user")?.content ?? "";
    return [{ id: bfcl.id, question, right, tools }];
  });
}

function specsOf(tools: readonly WireTool[]): ToolSpec[] {
  return tools.map((tool) =>
    toolSpecFromJsonSchema(
      tool.function.name,
      tool.function.description ?? "",
      (tool.function.parameters as Record<string, unknown>) ?? { type: "object", properties: {} },
    ),
  );
}

function narrowed(benchCase: BenchCase, k: number): string[] {
  const messages = [createMessage("user", benchCase.question, { type: MessageType.USER_INPUT })];
  const result = narrowTools(specsOf(benchCase.tools), messages, { maxTools: k, alwaysOffer: [] });
  return result?.offered ?? benchCase.tools.map((tool) => tool.function.name);
}

/** POST `body` as JSON to `url` and read the JSON answer, with no timeout (a slow CPU may take minutes). */
function postJson(url: string, body: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: "POST", headers: { "content-type": "application/json" } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (response.statusCode !== 200)
            reject(new Error(`HTTP ${response.statusCode}: ${text.slice(0, 300)}`));
          else resolve(JSON.parse(text));
        });
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}

/** The tool the model's first call names (native, or written as text), or null for no call. */
async function firstCall(
  url: string,
  benchCase: BenchCase,
  tools: readonly WireTool[],
): Promise<string | null> {
  const body = (await postJson(`${url}/v1/chat/completions`, {
    messages: [{ role: "user", content: benchCase.question }],
    tools,
    temperature: 0,
    max_tokens: 100,
  })) as {
    choices: { message: { content: string | null; tool_calls?: { function: { name: string } }[] } }[];
  };
  const message = body.choices[0]?.message;
  const native = message?.tool_calls?.[0]?.function.name;
  if (native) return native;
  const names = benchCase.tools.map((tool) => tool.function.name);
  return rescueToolCall(message?.content ?? "", names)?.[0]?.tool ?? null;
}

const percent = (hits: number, total: number) => `${((100 * hits) / total).toFixed(1)} %`;

async function main(): Promise<void> {
  const cases = buildCases(loadCases(), random(Number(values.seed)));
  console.log(`${cases.length} BFCL multiple + live_multiple cases, each offering ${TOTAL_TOOLS} tools\n`);
  if (!values["skip-recall"]) console.log("| K | right tool kept (recall@K) |\n|---|---|");
  for (const k of values["skip-recall"] ? [] : RECALL_KS) {
    const kept = cases.filter((benchCase) => narrowed(benchCase, k).includes(benchCase.right)).length;
    console.log(`| ${k} | ${kept} / ${cases.length} (${percent(kept, cases.length)}) |`);
  }
  const url = values["backend-url"];
  if (url === undefined) return;
  const count = Number(values["model-cases"]);
  const step = cases.length / count;
  const sample = Array.from({ length: count }, (_, index) => cases[Math.floor(index * step)] as BenchCase);
  let whole = 0;
  let narrow = 0;
  let keptInSample = 0;
  for (const benchCase of sample) {
    const offered = new Set(narrowed(benchCase, MODEL_K));
    if (offered.has(benchCase.right)) keptInSample += 1;
    const allPick = await firstCall(url, benchCase, benchCase.tools);
    const narrowPick = await firstCall(
      url,
      benchCase,
      benchCase.tools.filter((tool) => offered.has(tool.function.name)),
    );
    if (allPick === benchCase.right) whole += 1;
    if (narrowPick === benchCase.right) narrow += 1;
    console.error(`${benchCase.id}: right ${benchCase.right}; all ${allPick}; narrowed ${narrowPick}`);
  }
  console.log(`\n| arm (${count} cases, model at ${url}) | right tool called |`);
  console.log("|---|---|");
  console.log(`| all ${TOTAL_TOOLS} tools | ${whole} / ${count} (${percent(whole, count)}) |`);
  console.log(`| narrowed to K = ${MODEL_K} | ${narrow} / ${count} (${percent(narrow, count)}) |`);
  console.log(`| (right tool kept by narrowing in this sample) | ${keptInSample} / ${count} |`);
}

await main();
