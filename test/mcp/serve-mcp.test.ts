/**
 * `forge mcp serve` as a real child process (from the sources, under tsx), driven by the MCP SDK's
 * own Client over stdio and over Streamable HTTP: the workflows listed with their input schemas, a
 * call that runs a workflow on the registry's scripted model and answers with its result, progress
 * per tool call, client cancellation aborting the run's step, a failed run as `isError` with the
 * typed error, and an approval-gated step answered through elicitation or, without it, with an
 * error naming `forge runs approve`.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { effectCounts } from "../fixtures/approval/payments.ts";
import { exitOf, runForge, spawnForge, waitForOutput } from "../helpers/forge-cli.ts";

const FORGE = fileURLToPath(new URL("../../scripts/forge.ts", import.meta.url));
const REGISTRY = fileURLToPath(new URL("../fixtures/mcp-serve/registry.ts", import.meta.url));

const dirs: string[] = [];
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-mcp-serve-"));
  dirs.push(dir);
  return dir;
}

const logLines = (dir: string) => {
  try {
    return readFileSync(join(dir, "mcp-serve.log"), "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
};

async function until<T>(read: () => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

type Elicit = Parameters<Client["setRequestHandler"]>[1];

/** An SDK client; with `elicit`, one that declares elicitation and answers with it. */
function sdkClient(
  elicit?: (message: string) => {
    action: "accept" | "decline" | "cancel";
    content?: Record<string, unknown>;
  },
) {
  const client = new Client(
    { name: "forge-test", version: "1.0.0" },
    { capabilities: elicit ? { elicitation: { form: {} } } : {} },
  );
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, (async (request: { params: { message: string } }) =>
      elicit(request.params.message)) as Elicit);
  }
  return client;
}

/** A client connected to `forge mcp serve` over stdio; its stderr collected. */
async function overStdio(dir: string, client = sdkClient()) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", FORGE, "mcp", "serve", REGISTRY],
    env: { ...(process.env as Record<string, string>), FORGE_TEST_DIR: dir },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, stderr: () => stderr };
}

/** `forge mcp serve --http` on a free loopback port, and a client connected to it. */
async function overHttp(dir: string, client = sdkClient(), extra: { key?: string } = {}) {
  const served = spawnForge(
    ["mcp", "serve", REGISTRY, "--http", "--port", "0", ...(extra.key ? ["--key", extra.key] : [])],
    { ...process.env, FORGE_TEST_DIR: dir },
  );
  cleanups.push(async () => {
    served.child.kill("SIGTERM");
    await exitOf(served.child);
  });
  const [, url] = await waitForOutput(served.stderr, /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/, 30_000);
  const transport = new StreamableHTTPClientTransport(new URL(url as string), {
    ...(extra.key && { requestInit: { headers: { authorization: `Bearer ${extra.key}` } } }),
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, url: url as string, stderr: served.stderr };
}

const transports = [
  { name: "stdio", connect: overStdio },
  { name: "Streamable HTTP", connect: overHttp },
];

describe.each(transports)("forge mcp serve over $name", ({ connect }) => {
  it("lists each workflow as a tool with its description and input schema, and runs one to its result with progress", async () => {
    const { client } = await connect(scratch());
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["reverse", "slow", "stubborn", "payments"]);
    const reverse = tools.find((tool) => tool.name === "reverse");
    expect(reverse?.description).toBe("Reverse a text: the answer is the message read backwards.");
    expect(reverse?.inputSchema).toMatchObject({
      type: "object",
      properties: {
        message: { type: "string" },
        promptVars: { type: "object", properties: { audience: { type: "string" } }, required: ["audience"] },
      },
      required: ["message", "promptVars"],
    });
    expect(tools.find((tool) => tool.name === "slow")?.inputSchema.required).toEqual(["message"]);

    const progress: Progress[] = [];
    const result = await client.callTool(
      { name: "reverse", arguments: { message: "stressed", promptVars: { audience: "tests" } } },
      undefined,
      { onprogress: (update) => progress.push(update) },
    );
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ answer: "desserts", reversedBy: "forge" });
    expect(result.content).toEqual([{ type: "text", text: '{"answer":"desserts","reversedBy":"forge"}' }]);
    expect(progress.map(({ progress, message }) => ({ progress, message }))).toEqual([
      { progress: 1, message: "reverse_text: ok" },
      { progress: 2, message: "finish: ok" },
    ]);
  }, 60_000);

  it("aborts the run when the client cancels the call", async () => {
    const dir = scratch();
    const { client } = await connect(dir);
    const abort = new AbortController();
    const call = client.callTool({ name: "slow", arguments: { message: "go" } }, undefined, {
      signal: abort.signal,
    });
    const runId = await until(
      () =>
        logLines(dir)
          .find((line) => line.startsWith("started "))
          ?.slice(8),
      "the step to start",
    );
    abort.abort(new Error("the user pressed Esc"));
    await expect(call).rejects.toThrow("the user pressed Esc");
    await until(() => logLines(dir).find((line) => line === `aborted ${runId}`), "the step to be aborted");
  }, 60_000);

  it("answers a failed run with isError and the typed error, and wrong arguments likewise", async () => {
    const { client } = await connect(scratch());
    const failed = await client.callTool({ name: "stubborn", arguments: { message: "finish" } });
    expect(failed.isError).toBe(true);
    expect((failed.content as { text: string }[])[0]?.text).toMatch(/^ToolCallError: /);
    expect(failed.structuredContent).toMatchObject({ error: { name: "ToolCallError" } });
    const wrong = await client.callTool({ name: "reverse", arguments: { message: "x" } });
    expect(wrong.isError).toBe(true);
    expect((wrong.content as { text: string }[])[0]?.text).toContain("Invalid arguments for 'reverse'");
  }, 60_000);

  it("asks for approval through elicitation, then runs the approved call and answers with the result", async () => {
    const dir = scratch();
    const asked: string[] = [];
    const { client } = await connect(
      dir,
      sdkClient((message) => {
        asked.push(message);
        return message.includes("transfer")
          ? { action: "accept", content: { approved: true } }
          : { action: "accept", content: { approved: false, reason: "no mail today" } };
      }),
    );
    const result = await client.callTool({ name: "payments", arguments: { message: "Pay B2 250" } });
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expect(result.structuredContent).toEqual({ result: "paid" });
    expect(asked).toHaveLength(2);
    expect(asked[0]).toMatch(/wants to call transfer with \{"to":"B2","amount":250\}/);
    expect(Object.values(effectCounts(dir, "transfer"))).toEqual([1]);
    expect(effectCounts(dir, "notify")).toEqual({});
  }, 60_000);

  it("answers an approval-gated step with the pending calls and `forge runs approve` when the client cannot be asked", async () => {
    const dir = scratch();
    const { client } = await connect(dir);
    const result = await client.callTool({ name: "payments", arguments: { message: "Pay B2 250" } });
    expect(result.isError).toBe(true);
    const text = (result.content as { text: string }[])[0]?.text ?? "";
    expect(text).toMatch(/^McpApprovalRequiredError: Run mcp-\S+ waits for a person to approve transfer/);
    expect(text).toContain("forge runs approve <run-id> --call <call-id>");
    expect(text).toContain("declared no elicitation");
    const pending = (result.structuredContent as { pending: { tool: string }[] }).pending;
    expect(pending.map((call) => call.tool)).toEqual(["transfer", "notify"]);
    expect(effectCounts(dir, "transfer")).toEqual({});
  }, 60_000);
});

describe("forge mcp serve --http: the bearer key", () => {
  it("refuses to listen off loopback without a key, with the typed error's message", async () => {
    const run = await runForge(["mcp", "serve", REGISTRY, "--http", "--host", "0.0.0.0", "--port", "0"], {
      ...process.env,
      FORGE_MCP_KEY: "",
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Refusing to serve workflows over MCP on 0.0.0.0 without a bearer key");
  }, 60_000);

  it("answers 401 without the key and serves the client that sends it", async () => {
    const { client, url } = await overHttp(scratch(), sdkClient(), { key: "s3cret-key" });
    expect((await client.listTools()).tools).toHaveLength(4);
    const anonymous = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toContain("Bearer");
  }, 60_000);
});
