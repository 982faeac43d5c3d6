/**
 * `npm run bench:agents` (`npm run eval -- agents`): the agent task suite, small coding tasks in
 * fresh git repositories run by real coding agents on a real model, directly against the model
 * server and through `forge launch`, graded by code (`run`, the default, and `report`).
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type Command, Option } from "commander";
import { z } from "zod";
import { startSuiteModelServer } from "../agents/model-server.ts";
import {
  buildAgentReport,
  renderAgentMarkdown,
  renderAgentTerminal,
  writeAgentHtml,
} from "../agents/report.ts";
import { AGENT_ARMS, AGENT_DRIVERS, type AgentArm, agentRowSchema, runAgentSuite } from "../agents/run.ts";
import { AGENT_TASKS, AgentSuiteUsageError, selectTasks } from "../agents/tasks.ts";
import { latestByKey, readJsonl, repairTail } from "../batch/jsonl.ts";
import { writeText } from "../report/write-report.ts";
import { listOption, splitList } from "./list-option.ts";

const runOptionsSchema = z
  .object({
    gguf: z.string().min(1).optional(),
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
    model: z.string().min(1).optional(),
    agents: listOption(["pi", "opencode"]),
    arms: listOption([...AGENT_ARMS]),
    tasks: listOption(["all"]),
    cap: z.coerce.number().positive().default(240),
    maxTokens: z.coerce.number().int().positive().default(1024),
    ctx: z.coerce.number().int().positive().default(16_384),
    threads: z.coerce.number().int().positive().default(2),
    repeats: z.coerce.number().int().positive().default(1),
    out: z.string().min(1),
    resume: z.boolean().default(false),
    markdown: z.string().min(1).optional(),
    html: z.string().min(1).optional(),
  })
  .refine((options) => (options.gguf === undefined) !== (options.baseUrl === undefined), {
    message: "give exactly one of --gguf and --base-url",
    path: ["gguf"],
  });

function checkArms(names: readonly string[]): AgentArm[] {
  const unknown = names.filter((name) => !(AGENT_ARMS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new AgentSuiteUsageError(`unknown arm ${unknown.join(", ")}: use ${AGENT_ARMS.join(", ")}`);
  return names as AgentArm[];
}

function fail(command: Command, error: unknown): never {
  if (error instanceof z.ZodError)
    command.error(
      `error: ${error.issues.map((issue) => `--${issue.path.join(".")}: ${issue.message}`).join("; ")}`,
      { exitCode: 2 },
    );
  if (error instanceof AgentSuiteUsageError) command.error(`error: ${error.message}`, { exitCode: 2 });
  throw error;
}

/** Print (and write) the report of `files`. */
function report(
  files: readonly string[],
  options: { markdown?: string | undefined; html?: string | undefined },
) {
  const rows = files.flatMap((file) => {
    if (!existsSync(file)) throw new AgentSuiteUsageError(`${file} does not exist`);
    repairTail(file);
    return latestByKey(readJsonl(file, agentRowSchema).rows).rows;
  });
  const built = buildAgentReport(rows);
  process.stdout.write(`${renderAgentTerminal(built)}\n`);
  if (options.markdown) writeText(options.markdown, renderAgentMarkdown(built));
  return built;
}

/** Add `agents` (`run`, `report`) to the `eval` command. */
export function registerAgentsCommand(evalCommand: Command): Command {
  const agents = evalCommand
    .command("agents")
    .description(
      "The agent task suite: coding agents on small tasks in fresh git repositories, directly against the model server and through forge launch, graded by code",
    );
  agents
    .command("run", { isDefault: true })
    .description("Run each task for each agent and arm, append one JSONL row per run, then print the report")
    .option("--gguf <path>", "start llama-server on this model (--jinja, one slot)")
    .option("--base-url <origin>", "or use a running llama-server (its origin, e.g. http://127.0.0.1:8080)")
    .option("--model <name>", "model name sent and recorded (default: the GGUF's file name)")
    .option("--agents <names...>", `agents: ${Object.keys(AGENT_DRIVERS).join(", ")}`, ["pi", "opencode"])
    .option("--arms <names...>", `arms: ${AGENT_ARMS.join(", ")}`, [...AGENT_ARMS])
    .option("--tasks <ids...>", `tasks: ${AGENT_TASKS.map((task) => task.id).join(", ")}, or all`, ["all"])
    .option("--cap <seconds>", "wall-time cap of one run; the agent's process group is killed past it", "240")
    .option("--max-tokens <n>", "with --gguf: llama-server's reply cap (-n)", "1024")
    .option("--ctx <tokens>", "with --gguf: context size", "16384")
    .option("--threads <n>", "with --gguf: CPU threads", "2")
    .option("--repeats <n>", "runs of each task, agent and arm", "1")
    .requiredOption("--out <file>", "JSONL results file (appended)")
    .option("--resume", "skip the runs --out already holds")
    .option("--markdown <file>", "write the report as Markdown at the end")
    .option("--html <dir>", "write the report as an HTML page (index.html) at the end")
    .action(async (raw: Record<string, unknown>, command: Command) => {
      try {
        const options = runOptionsSchema.parse(raw);
        const arms = checkArms(options.arms);
        const tasks = selectTasks(options.tasks);
        for (const agent of options.agents)
          if (!AGENT_DRIVERS[agent])
            throw new AgentSuiteUsageError(
              `unknown agent ${agent}: use ${Object.keys(AGENT_DRIVERS).join(", ")}`,
            );
        const server = await startSuiteModelServer(
          options.gguf !== undefined
            ? {
                kind: "gguf",
                path: options.gguf,
                ctx: options.ctx,
                threads: options.threads,
                maxTokens: options.maxTokens,
              }
            : { kind: "url", origin: (options.baseUrl as string).replace(/\/v1\/?$/, "") },
          options.model,
        );
        try {
          const written = await runAgentSuite({
            tasks,
            agents: options.agents,
            arms,
            model: server.model,
            counter: server.counter,
            capMs: options.cap * 1000,
            out: options.out,
            resume: options.resume,
            repeats: options.repeats,
            progress: process.stderr.isTTY,
            onRow: process.stderr.isTTY
              ? undefined
              : (row) =>
                  process.stderr.write(
                    `agents: ${row.agent} ${row.arm} ${row.task}: ${row.passed ? "passed" : "failed"} (${row.detail}; ${row.exitReason}, ${row.turns} turns, ${(row.wallMs / 1000).toFixed(0)} s)\n`,
                  ),
          });
          process.stderr.write(`agents: ${written.length} rows appended to ${options.out}\n`);
        } finally {
          await server.close();
        }
        const built = report([options.out], options);
        if (options.html) {
          await mkdir(options.html, { recursive: true });
          writeAgentHtml(join(options.html, "index.html"), built);
        }
      } catch (error) {
        fail(command, error);
      }
    });
  agents
    .command("report")
    .description("Print (or write) the report of agent suite results files")
    .argument("<files...>", "JSONL results files of `agents run`")
    .option("--markdown <file>", "write the report as Markdown")
    .addOption(new Option("--html <dir>", "write the report as an HTML page (index.html)"))
    .action(async (files: string[], options: { markdown?: string; html?: string }, command: Command) => {
      try {
        const built = report(splitList(files), options);
        if (options.html) {
          await mkdir(options.html, { recursive: true });
          writeAgentHtml(join(options.html, "index.html"), built);
        }
      } catch (error) {
        fail(command, error);
      }
    });
  return agents;
}
