import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonl } from "../../eval/batch/jsonl.ts";
import { type RunRow, runRowSchema } from "../../eval/batch/row.ts";
import { runEval } from "../../eval/cli/run-eval.ts";
import { buildReport } from "../../eval/metrics/aggregate.ts";
import { renderTerminalReport } from "../../eval/report/table.ts";

const quietIo = { stdout: () => {}, stderr: () => {} };
const workdir = () => mkdtempSync(join(tmpdir(), "forge-eval-usage-"));
const rowsOf = (file: string): RunRow[] => readJsonl(file, runRowSchema).rows;

/** A local server answering every chat request with `reply(path)` as JSON, counting requests. */
async function startReplayServer(reply: (path: string) => unknown) {
  let requests = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      const path = request.url ?? "";
      response.setHeader("content-type", "application/json");
      // Chat only: no llama-server /props, /tokenize (the harness then caps nothing).
      if (!/chat\/completions|api\/chat|messages/.test(path)) {
        response.statusCode = 404;
        return response.end("{}");
      }
      requests += 1;
      response.end(JSON.stringify(reply(path)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const openAIText = (usage: Record<string, unknown> | null) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 0,
  model: "replay",
  choices: [{ index: 0, message: { role: "assistant", content: "No." }, finish_reason: "stop" }],
  ...(usage && { usage }),
});

const runOnce = (options: Record<string, unknown>, out: string) =>
  runEval({ scenario: ["basic_2step"], out, progress: false, report: false, ...options }, quietIo);

describe("token usage from the backend", () => {
  let server: Awaited<ReturnType<typeof startReplayServer>> | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  it("openai-compatible: rows sum the usage each answer reports, cache hits included", async () => {
    server = await startReplayServer(() =>
      openAIText({
        prompt_tokens: 321,
        completion_tokens: 7,
        total_tokens: 328,
        prompt_tokens_details: { cached_tokens: 300 },
      }),
    );
    const out = await runOnce(
      { backend: "openai-compatible", model: "replay", baseUrl: `${server.url}/v1` },
      join(workdir(), "rows.jsonl"),
    );
    const [row] = rowsOf(out);
    expect(row?.iterations).toBeGreaterThan(1);
    const calls = row?.iterations ?? 0;
    expect(row).toMatchObject({
      tokenSource: "backend",
      inputTokens: 321 * calls,
      outputTokens: 7 * calls,
      cachedTokens: 300 * calls,
      peakContextTokens: 321,
      costUsd: null,
    });
  });

  it("a backend that reports no usage gets chars/4 estimates, labelled as such in rows and reports", async () => {
    server = await startReplayServer(() => openAIText(null));
    const out = await runOnce(
      { backend: "openai-compatible", model: "replay", baseUrl: `${server.url}/v1` },
      join(workdir(), "rows.jsonl"),
    );
    const rows = rowsOf(out);
    expect(rows[0]?.tokenSource).toBe("estimate");
    expect(rows[0]?.inputTokens).toBeGreaterThan(0);
    const report = buildReport(rows);
    expect(report.groups[0]?.metrics.tokenSource).toBe("estimate");
    expect(renderTerminalReport(report)).toMatch(/\d+ est\./);
  });

  it("ollama: prompt_eval_count and eval_count of the final line", async () => {
    const fixture = JSON.parse(readFileSync("test/fixtures/ollama/chat-text.json", "utf8")) as {
      prompt_eval_count: number;
      eval_count: number;
    };
    server = await startReplayServer(() => fixture);
    const out = await runOnce(
      { backend: "ollama", model: "llama3.2", baseUrl: server.url },
      join(workdir(), "rows.jsonl"),
    );
    const [row] = rowsOf(out);
    const calls = row?.iterations ?? 0;
    expect(calls).toBe(server.requests());
    expect(row).toMatchObject({
      tokenSource: "backend",
      inputTokens: fixture.prompt_eval_count * calls,
      outputTokens: fixture.eval_count * calls,
    });
  });

  it("anthropic: usage with prompt-cache writes and reads, and the run's cost from the dated price table", async () => {
    const message = JSON.parse(readFileSync("test/fixtures/anthropic/message-text.json", "utf8")) as Record<
      string,
      unknown
    >;
    const usage = {
      input_tokens: 100,
      cache_creation_input_tokens: 2000,
      cache_read_input_tokens: 5000,
      output_tokens: 50,
    };
    server = await startReplayServer(() => ({ ...message, model: "claude-haiku-4-5", usage }));
    const out = await runOnce(
      { backend: "anthropic", model: "claude-haiku-4-5", baseUrl: server.url, apiKey: "test-key" },
      join(workdir(), "rows.jsonl"),
    );
    const rows = rowsOf(out);
    const calls = rows[0]?.iterations ?? 0;
    expect(calls).toBeGreaterThan(0);
    expect(calls).toBe(server.requests());
    // Haiku 4.5: $1/M input, $1.25/M cache writes, $0.10/M cache reads, $5/M output.
    const perCall = (100 * 1 + 2000 * 1.25 + 5000 * 0.1 + 50 * 5) / 1_000_000;
    expect(rows[0]).toMatchObject({
      tokenSource: "backend",
      inputTokens: 7100 * calls,
      cachedTokens: 5000 * calls,
      outputTokens: 50 * calls,
    });
    expect(rows[0]?.costUsd).toBeCloseTo(perCall * calls, 9);
    const report = buildReport(rows);
    expect(renderTerminalReport(report)).toContain(`$${(perCall * calls).toFixed(4)}`);
  });
});
