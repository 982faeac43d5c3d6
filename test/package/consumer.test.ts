/**
 * The package as a user gets it: packed (dist/ built by `prepack`) and installed offline into a fresh
 * ESM project (scripts/consumer-project.ts), then used from plain `node`, `tsc` and the installed
 * `forge` bin. Nothing here reads the repository's sources.
 */

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installConsumer, manifest, packInto, repoRoot } from "../../scripts/consumer-project.ts";

const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");

let work: string;
let tarball: string;
let app: string;
let installed: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "forge-consumer-"));
  tarball = await packInto(work);
  app = join(work, "app");
  installed = await installConsumer(app, tarball, ["zod", "@types/node"]);
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the packed tarball", () => {
  it("ships the build, the bin, the license and the readme, and no sources, tests, eval or model", async () => {
    const list = await execa("tar", ["-tzf", tarball]);
    const files = list.stdout.split("\n").map((line) => line.replace(/^package\//, ""));
    expect(files).toEqual(expect.arrayContaining(["LICENSE", "README.md", "package.json", "bin/forge.js"]));
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    const stray = files.filter(
      (file) => !/^(dist\/|bin\/|LICENSE$|README\.md$|CHANGELOG\.md$|package\.json$)/.test(file),
    );
    expect(stray).toEqual([]);
    expect(files.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([]);
    expect(statSync(tarball).size).toBeLessThan(1_000_000);
  });

  it("is clean under publint and Are the Types Wrong (ESM-only profile)", async () => {
    const publint = await execa(join(repoRoot, "node_modules", ".bin", "publint"), ["--strict", tarball], {
      all: true,
      reject: false,
    });
    expect(publint.exitCode, publint.all).toBe(0);
    expect(publint.all).toContain("All good!");
    const attw = await execa(
      join(repoRoot, "node_modules", ".bin", "attw"),
      [tarball, "--profile", "esm-only"],
      {
        all: true,
        reject: false,
      },
    );
    expect(attw.exitCode, attw.all).toBe(0);
  }, 120_000);
});

describe("a separate ESM project with the tarball installed", () => {
  it("does not install the optional peers (node-llama-cpp, bullmq, ioredis, the MCP SDK)", () => {
    const installedNames = readdirSync(join(app, "node_modules"));
    for (const peer of ["node-llama-cpp", "@node-llama-cpp", "bullmq", "ioredis", "@modelcontextprotocol"]) {
      expect(installedNames).not.toContain(peer);
    }
  });

  it("runs a scripted workflow from plain node through the root and ./testing", async () => {
    writeFileSync(
      join(app, "weather.mjs"),
      `import { z } from "zod";
import { ContextManager, NoCompact, StepEnforcementError, WorkflowRunner, defineTool, defineWorkflow } from "forge-guardrails";
import { ScriptedClient, toolCall } from "forge-guardrails/testing";

const getWeather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => "22 C in " + city,
});
const report = defineTool({
  name: "report_weather",
  description: "Tell the user",
  parameters: z.object({ city: z.string(), weather: z.string() }),
  execute: ({ city, weather }) => city + ": " + weather,
});
const workflow = defineWorkflow({
  name: "weather",
  description: "Look up and report",
  tools: [getWeather, report],
  requiredSteps: ["get_weather"],
  terminalTool: "report_weather",
  systemPrompt: "You are a weather assistant.",
});
const client = new ScriptedClient([
  toolCall("report_weather", { city: "Paris", weather: "?" }),
  toolCall("get_weather", { city: "Paris" }),
  toolCall("report_weather", { city: "Paris", weather: "22 C" }),
]);
const nudges = [];
const runner = new WorkflowRunner({
  client,
  contextManager: new ContextManager({ strategy: new NoCompact(), budgetTokens: 4096 }),
  onMessage: (message) => { if (message.metadata.type === "step_nudge") nudges.push(message.content); },
});
const result = await runner.run(workflow, "Weather in Paris?");
console.log(JSON.stringify({ result, nudges: nudges.length, errorIsClass: typeof StepEnforcementError === "function" }));
`,
    );
    const run = await execa(process.execPath, ["weather.mjs"], { cwd: app, all: true, reject: false });
    expect(run.exitCode, run.all).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ result: "Paris: 22 C", nudges: 1, errorIsClass: true });
  });

  it("loads every subpath from plain node; ./llama-cpp, the BullMQ queue and ./mcp say how to install their missing peers", async () => {
    writeFileSync(
      join(app, "subpaths.mjs"),
      `const names = {};
for (const subpath of ${JSON.stringify(Object.keys(manifest.exports).filter((key) => key !== "./package.json"))}) {
  const specifier = subpath === "." ? "forge-guardrails" : "forge-guardrails/" + subpath.slice(2);
  names[subpath] = Object.keys(await import(specifier)).length;
}
const { LlamaCppClient, NodeLlamaCppMissingError } = await import("forge-guardrails/llama-cpp");
const client = new LlamaCppClient({ modelPath: "subpaths.mjs", logger: () => {} });
const error = await client.load().then(() => null, (caught) => caught);
const { createBullmqQueue, BullmqMissingError } = await import("forge-guardrails/queue");
const bull = await createBullmqQueue({ connection: { host: "127.0.0.1", port: 1 } }).then(() => null, (caught) => caught);
const { connectMcpServer, McpSdkMissingError } = await import("forge-guardrails/mcp");
const mcp = await connectMcpServer({ name: "files", command: "true" }).then(() => null, (caught) => caught);
console.log(JSON.stringify({ names, missing: error instanceof NodeLlamaCppMissingError, message: error?.message, bullMissing: bull instanceof BullmqMissingError, bullMessage: bull?.message, mcpMissing: mcp instanceof McpSdkMissingError, mcpMessage: mcp?.message }));
`,
    );
    const run = await execa(process.execPath, ["subpaths.mjs"], { cwd: app, all: true, reject: false });
    expect(run.exitCode, run.all).toBe(0);
    const report = JSON.parse(run.stdout) as {
      names: Record<string, number>;
      missing: boolean;
      message: string;
      bullMissing: boolean;
      bullMessage: string;
      mcpMissing: boolean;
      mcpMessage: string;
    };
    for (const count of Object.values(report.names)) expect(count).toBeGreaterThan(0);
    expect(report.missing).toBe(true);
    expect(report.message).toContain("npm install node-llama-cpp");
    expect(report.bullMissing).toBe(true);
    expect(report.bullMessage).toContain("npm install bullmq@6 ioredis@5");
    expect(report.mcpMissing).toBe(true);
    expect(report.mcpMessage).toContain("npm install @modelcontextprotocol/sdk@1");
  });

  it("keeps the root entry free of the heavy dependencies (static import graph of dist/)", () => {
    const reachable = (entry: string) => packagesReachableFrom(join(installed, entry));
    const root = reachable("dist/index.js");
    expect([...root].sort()).toEqual(["xstate", "zod"]);
    expect([...reachable("dist/testing/index.js")].filter((name) => !root.has(name))).toEqual([]);
    expect(reachable("dist/clients/index.js")).not.toContain("@anthropic-ai/sdk");
    const llamaCpp = reachable("dist/clients/llama-cpp/index.js");
    expect(llamaCpp).not.toContain("node-llama-cpp");
    expect(reachable("dist/clients/anthropic/index.js")).toContain("@anthropic-ai/sdk");
    const server = reachable("dist/server/index.js");
    expect(server).not.toContain("systeminformation");
    expect(server).not.toContain("hono");
    expect(reachable("dist/mcp/index.js")).not.toContain("@modelcontextprotocol/sdk");
  });

  it.each([
    ["nodenext", { module: "nodenext", moduleResolution: "nodenext" }],
    ["bundler", { module: "esnext", moduleResolution: "bundler" }],
  ])(
    "type-checks a TypeScript consumer with moduleResolution %s (lib check on; ./llama-cpp's types need its peer)",
    async (name, resolution) => {
      const dir = join(app, `ts-${name}`);
      mkdirSync(dir);
      writeFileSync(
        join(dir, "consumer.ts"),
        `import { z } from "zod";
import { type LLMClient, type Workflow, WorkflowRunner, defineTool, defineWorkflow, ContextManager, TieredCompact } from "forge-guardrails";
import { OpenAICompatibleClient } from "forge-guardrails/clients";
import { ScriptedClient, toolCall } from "forge-guardrails/testing";
import { startProxy } from "forge-guardrails/proxy";
import { BudgetMode } from "forge-guardrails/server";

const done = defineTool({ name: "done", description: "Finish", parameters: z.object({ note: z.string() }), execute: ({ note }) => note.toUpperCase() });
const workflow: Workflow = defineWorkflow({ name: "w", description: "", tools: [done], terminalTool: "done", systemPrompt: "Be brief." });
const scripted: LLMClient = new ScriptedClient([toolCall("done", { note: "ok" })]);
const http: LLMClient = new OpenAICompatibleClient({ baseUrl: "http://127.0.0.1:8080/v1", mode: "native" });
const runner = new WorkflowRunner({ client: scripted, contextManager: new ContextManager({ strategy: new TieredCompact({ keepRecent: 2 }), budgetTokens: 4096 }) });
const result: unknown = await runner.run(workflow, "go");
const mode: BudgetMode = BudgetMode.BACKEND;
export { http, result, mode, startProxy };
`,
      );
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            ...resolution,
            target: "es2022",
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ["node"],
            typeRoots: [join(app, "node_modules", "@types")],
          },
          files: ["consumer.ts"],
        }),
      );
      const check = await execa(process.execPath, [tsc, "-p", dir], { cwd: dir, all: true, reject: false });
      expect(check.exitCode, check.all).toBe(0);
    },
    120_000,
  );

  it("runs the installed forge bin: --version, --help and proxy --help", async () => {
    const forge = join(app, "node_modules", ".bin", "forge");
    const version = await execa(forge, ["--version"], { cwd: app, all: true, reject: false });
    expect(version.exitCode, version.all).toBe(0);
    expect(version.stdout.trim()).toBe(manifest.version);
    const help = await execa(forge, ["--help"], { cwd: app, all: true, reject: false });
    expect(help.exitCode, help.all).toBe(0);
    expect(help.stdout).toContain("proxy");
    expect(help.stdout).not.toContain("sim-model");
    const proxyHelp = await execa(forge, ["proxy", "--help"], { cwd: app, all: true, reject: false });
    expect(proxyHelp.exitCode, proxyHelp.all).toBe(0);
    expect(proxyHelp.stdout).toContain("--backend-url");
  });
});

/**
 * The bare package names a module loads at import time: its static `import … from` and
 * `export … from` specifiers, followed through the package's own relative files (dynamic
 * `import()`s load later, on use, and are not followed).
 */
function packagesReachableFrom(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const pending = [entry];
  const staticSpecifier = /(?:^|\n)\s*(?:import|export)\s+(?:[^;'"]*?\s+from\s+)?["']([^"']+)["']/g;
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const match of readFileSync(file, "utf8").matchAll(staticSpecifier)) {
      const specifier = match[1] as string;
      if (specifier.startsWith(".")) pending.push(resolve(dirname(file), specifier));
      else if (!specifier.startsWith("node:")) {
        const parts = specifier.split("/");
        packages.add(specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string));
      }
    }
  }
  return packages;
}
