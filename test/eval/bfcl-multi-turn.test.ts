/**
 * BFCL's `multi_turn_base` in the harness, without a model: recorded answers scored by BFCL's own
 * multi-turn checker in the bridge (its ground truth passes, a perturbed or cut-short answer fails),
 * and the harness's turn-by-turn loop against a scripted OpenAI-compatible server on 127.0.0.1, so
 * each step's calls run on BFCL's simulated file system and their results go back as BFCL's FC
 * handler sends them. Needs `npm run setup:bfcl` (done on first use).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { type BfclCase, loadCases, type MultiTurnCase, parseCategories } from "../../eval/bfcl/cases.ts";
import { emptyMultiTurnAnswer, MAXIMUM_STEP_LIMIT, type MultiTurnStep } from "../../eval/bfcl/multi-turn.ts";
import { buildReport, renderBfclMarkdown, scoreRows } from "../../eval/bfcl/report.ts";
import { type BfclRow, bfclRowSchema, runBfcl } from "../../eval/bfcl/run.ts";
import { type BfclInstall, setupBfcl } from "../../eval/bfcl/setup.ts";
import { hang, json, ReplayServer, type Reply } from "../clients/helpers/replay-server.ts";

const CASE_ID = "multi_turn_base_1";
const CHAT = "POST /v1/chat/completions";

let install: BfclInstall;
let item: MultiTurnCase;
let cases: Map<string, BfclCase>;

beforeAll(async () => {
  install = await setupBfcl(() => {});
  const loaded = await loadCases(install, ["multi_turn_base"]);
  cases = new Map(loaded.map((entry) => [entry.id, entry]));
  item = cases.get(CASE_ID) as MultiTurnCase;
}, 120_000);

/** A call step (arguments as JSON text) and a text step, as the row records them. */
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });
const calls = (...list: ReturnType<typeof call>[]): MultiTurnStep => ({ calls: list, text: "", results: [] });
const text = (content: string): MultiTurnStep => ({ calls: [], text: content, results: [] });

/** multi_turn_base_1's ground truth, step by step, with a closing text step per turn. */
function groundTruth(): MultiTurnStep[][] {
  return [
    [calls(call("ls", { a: true })), text("Listed.")],
    [
      calls(call("cd", { folder: "workspace" }), call("mv", { source: "log.txt", destination: "archive" })),
      text("Moved."),
    ],
    [
      calls(call("cd", { folder: "archive" })),
      calls(call("grep", { file_name: "log.txt", pattern: "Error" })),
    ],
    [calls(call("tail", { file_name: "log.txt", lines: 20 }))],
  ];
}

function row(key: string, turns: MultiTurnStep[][]): BfclRow {
  return {
    key,
    model: "recorded",
    target: "direct",
    id: CASE_ID,
    category: "multi_turn_base",
    ...emptyMultiTurnAnswer(),
    calls: turns.flat().flatMap((step) => step.calls),
    ms: 0,
    error: null,
    at: "2026-11-29T00:00:00.000Z",
    turns,
  };
}

describe("BFCL multi_turn_base: scoring recorded answers with BFCL's multi-turn checker", () => {
  it("passes the ground truth, fails a perturbed or cut-short answer, case by case", async () => {
    const perturbed = groundTruth();
    // `mv` into a folder the truth does not name: the file system ends in another state.
    perturbed[1]![0] = calls(
      call("cd", { folder: "workspace" }),
      call("mv", { source: "log.txt", destination: "old" }),
    );
    const silent = groundTruth();
    silent[0] = [text("I cannot list files.")];
    const rows = [
      row("truth", groundTruth()),
      row("perturbed", perturbed),
      row("short", groundTruth().slice(0, 2)),
      row("silent", silent),
      // The same case again after a failing row: each row starts from the case's initial state.
      row("truth-again", groundTruth()),
    ];
    const verdicts = await scoreRows(install, rows, cases);
    expect(Object.fromEntries([...verdicts].map(([key, verdict]) => [key, verdict]))).toEqual({
      truth: { key: "truth", valid: true, errorType: null },
      perturbed: { key: "perturbed", valid: false, errorType: "multi_turn:instance_state_mismatch" },
      short: { key: "short", valid: false, errorType: "multi_turn:force_terminated" },
      silent: { key: "silent", valid: false, errorType: "multi_turn:empty_turn_model_response" },
      "truth-again": { key: "truth-again", valid: true, errorType: null },
    });
  }, 120_000);

  it("reads multi_turn_base by name; `all` stays the single-turn set and adds to what is named", () => {
    expect(parseCategories(["multi_turn_base"])).toEqual(["multi_turn_base"]);
    expect(parseCategories(["all"])).not.toContain("multi_turn_base");
    expect(parseCategories(["multi_turn_base", "all"])).toHaveLength(12);
    expect(() => parseCategories(["multi_turn_miss_func"])).toThrow(
      /unknown BFCL category multi_turn_miss_func/,
    );
  });
});

describe("BFCL multi_turn_base: the FC handler's loop against a scripted server", () => {
  let server: ReplayServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const toolCalls = (...list: { id: string; name: string; arguments: string }[]): Reply =>
    json({
      choices: [
        {
          message: {
            role: "assistant",
            content: null,
            tool_calls: list.map((entry) => ({
              id: entry.id,
              type: "function",
              function: { name: entry.name, arguments: entry.arguments },
            })),
          },
        },
      ],
    });
  const answer = (content: string): Reply => json({ choices: [{ message: { role: "assistant", content } }] });

  async function run(
    model: string,
    replies: Reply[],
    caseTimeoutMs = 60_000,
  ): Promise<{ row: BfclRow; bodies: Messages[] }> {
    server = await ReplayServer.start();
    server.reply(CHAT, ...replies);
    const out = join(mkdtempSync(join(tmpdir(), "forge-bfcl-mt-")), "rows.jsonl");
    await runBfcl({
      cases: [item],
      targets: ["direct"],
      server: { baseUrl: `${server.url}/v1`, model, temperature: 0 },
      out,
      resume: false,
      caseTimeoutMs,
      install,
    });
    server.assertDone();
    const rows = readJsonl(out, bfclRowSchema).rows;
    expect(rows).toHaveLength(1);
    const bodies = server.requestsTo(CHAT).map((request) => request.json as Messages);
    return { row: rows[0] as BfclRow, bodies };
  }

  it("sends each turn, runs each step's calls on the simulated APIs and feeds the results back", async () => {
    const { row, bodies } = await run("scripted", [
      // Turn 0: a call, then a text answer ends the turn.
      toolCalls({ id: "call_ls", name: "ls", arguments: '{"a": true}' }),
      answer("Here is the listing."),
      // Turn 1: two calls in one step.
      toolCalls(
        { id: "call_cd", name: "cd", arguments: '{"folder": "workspace"}' },
        { id: "call_mv", name: "mv", arguments: '{"source": "log.txt", "destination": "archive"}' },
      ),
      answer("Moved."),
      // Turn 2: two steps of one call.
      toolCalls({ id: "call_cd2", name: "cd", arguments: '{"folder": "archive"}' }),
      toolCalls({ id: "call_grep", name: "grep", arguments: '{"file_name": "log.txt", "pattern": "Error"}' }),
      answer("Found it."),
      // Turn 3: an empty answer ends the turn as well.
      toolCalls({ id: "call_tail", name: "tail", arguments: '{"file_name": "log.txt", "lines": 20}' }),
      answer(""),
    ]);
    const [user0, user1, user2, user3] = item.turns.map((turn) => turn[0]);
    // Step 2 (turn 0's second request): the call as the model sent it, then BFCL's `ls` result.
    expect(bodies[1]?.messages).toEqual([
      user0,
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_ls", type: "function", function: { name: "ls", arguments: '{"a": true}' } }],
      },
      { role: "tool", content: '{"current_directory_content": ["workspace"]}', tool_call_id: "call_ls" },
    ]);
    // The next turn's user message follows the text answer that ended the turn.
    expect(bodies[2]?.messages.slice(-2)).toEqual([
      { role: "assistant", content: "Here is the listing." },
      user1,
    ]);
    // Two calls: two tool messages, in order; the `mv` ran in the folder the `cd` entered.
    const cdResult = '{"current_working_directory": "workspace"}';
    const mvResult = `{"result": "'log.txt' moved to 'archive/log.txt'"}`;
    expect(bodies[3]?.messages.slice(-2)).toEqual([
      { role: "tool", content: cdResult, tool_call_id: "call_cd" },
      { role: "tool", content: mvResult, tool_call_id: "call_mv" },
    ]);
    expect(bodies[4]?.messages.at(-1)).toEqual(user2);
    expect(bodies[6]?.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_grep" });
    expect(JSON.parse(bodies[6]?.messages.at(-1)?.content as string)).toMatchObject({
      matching_lines: expect.arrayContaining([expect.stringContaining("Error")]),
    });
    expect(bodies[7]?.messages.at(-1)).toEqual(user3);
    // Every request: the case's tools, temperature 0, no tool_choice.
    for (const body of bodies) {
      expect(body.tools).toEqual(item.tools);
      expect(body).toMatchObject({ model: "scripted", temperature: 0 });
      expect(body).not.toHaveProperty("tool_choice");
    }
    expect(row.turns?.map((steps) => steps.length)).toEqual([2, 2, 3, 2]);
    expect(row.turns?.[1]?.[0]?.results).toEqual([cdResult, mvResult]);
    expect(row.turns?.[0]?.[1]).toEqual({ calls: [], text: "Here is the listing.", results: [] });
    expect(row).toMatchObject({ forceQuit: false, llmCalls: 9, error: null });
    expect(row.calls.map((entry) => entry.name)).toEqual(["ls", "cd", "mv", "cd", "grep", "tail"]);
    const verdicts = await scoreRows(install, [row], cases);
    expect(verdicts.get(row.key)).toMatchObject({ valid: true });
    const report = buildReport([row], verdicts);
    const markdown = renderBfclMarkdown(report);
    expect(markdown).toContain("| multi_turn_base | 100% [21–100] (1/1) |");
    expect(markdown).toMatch(/\| multi-turn: LLM calls per case \| 9\.00 \|/);
    expect(markdown).not.toContain("non-live AST");
  }, 120_000);

  it("ends a turn on arguments it cannot decode, with no tool message, as BFCL's handler does", async () => {
    const { row, bodies } = await run("scripted-undecodable", [
      toolCalls({ id: "call_ls", name: "ls", arguments: '{"a": tru' }),
      answer("no"),
      answer("no"),
      answer("no"),
    ]);
    expect(bodies[1]?.messages.slice(-2)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_ls", type: "function", function: { name: "ls", arguments: '{"a": tru' } }],
      },
      item.turns[1]?.[0],
    ]);
    expect(row.turns?.map((steps) => steps.length)).toEqual([1, 1, 1, 1]);
    const verdicts = await scoreRows(install, [row], cases);
    expect(verdicts.get(row.key)).toMatchObject({
      valid: false,
      errorType: "multi_turn:empty_turn_model_response",
    });
  }, 120_000);

  it(`gives the case up past BFCL's step limit (${MAXIMUM_STEP_LIMIT} steps), as a force-quit`, async () => {
    const steps = MAXIMUM_STEP_LIMIT + 1;
    const { row } = await run(
      "scripted-looping",
      Array.from({ length: steps }, (_, index) =>
        toolCalls({ id: `call_${index}`, name: "pwd", arguments: "{}" }),
      ),
    );
    expect(row.turns).toHaveLength(1);
    expect(row.turns?.[0]).toHaveLength(steps);
    expect(row.turns?.[0]?.[0]?.results).toEqual(['{"current_working_directory": "/alex"}']);
    expect(row.forceQuit).toBe(true);
    const verdicts = await scoreRows(install, [row], cases);
    expect(verdicts.get(row.key)).toMatchObject({ valid: false, errorType: "multi_turn:force_terminated" });
  }, 120_000);

  it("keeps the steps a case took when its deadline cuts it short", async () => {
    const { row } = await run(
      "scripted-slow",
      [toolCalls({ id: "call_ls", name: "ls", arguments: '{"a": true}' }), hang()],
      8_000,
    );
    expect(row.error).toMatch(/abort|timeout/i);
    expect(row.turns).toEqual([
      [
        {
          calls: [{ name: "ls", arguments: '{"a": true}' }],
          text: "",
          results: ['{"current_directory_content": ["workspace"]}'],
        },
      ],
    ]);
    expect(row).toMatchObject({ llmCalls: 1, calls: [{ name: "ls" }], forceQuit: false });
    const verdicts = await scoreRows(install, [row], cases);
    expect(verdicts.get(row.key)).toMatchObject({ valid: false, errorType: "request_failed" });
  }, 120_000);
});

interface Messages {
  messages: ({ role: string; content?: string | null } & Record<string, unknown>)[];
  tools: unknown;
}
