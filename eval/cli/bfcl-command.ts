/**
 * `npm run eval -- bfcl`: the Berkeley Function Calling Leaderboard's single-turn categories and
 * `multi_turn_base` (on BFCL's simulated APIs) sent to a model server directly, through
 * `forge proxy` and through the guarded front half, scored by BFCL's own checker (`run`, the
 * default, and `report`). A repository command, like the eval.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type Command, Option } from "commander";
import { z } from "zod";
import { latestByKey, readJsonl, repairTail } from "../batch/jsonl.ts";
import {
  ALL_CATEGORIES_NAME,
  loadCases,
  MULTI_TURN_CATEGORIES,
  parseCategories,
  SINGLE_TURN_CATEGORIES,
  sampleCases,
} from "../bfcl/cases.ts";
import {
  buildReport,
  renderBfclMarkdown,
  renderBfclTerminal,
  scoreRows,
  writeBfclHtml,
} from "../bfcl/report.ts";
import { bfclRowSchema, runBfcl } from "../bfcl/run.ts";
import { setupBfcl } from "../bfcl/setup.ts";
import { BFCL_TARGETS, type BfclTargetName } from "../bfcl/targets.ts";
import { writeText } from "../report/write-report.ts";
import { listOption, splitList } from "./list-option.ts";

/** A usage error of `bfcl` (exit 2). */
export class BfclUsageError extends Error {
  override name = "BfclUsageError";
}

const runOptionsSchema = z.object({
  baseUrl: z.string().url(),
  model: z.string().min(1),
  categories: listOption(["all"]),
  targets: listOption(["direct", "proxy"]),
  perCategory: z.coerce.number().int().positive().optional(),
  temperature: z.coerce.number().min(0).default(0),
  maxTokens: z.coerce.number().int().positive().optional(),
  caseTimeout: z.coerce.number().positive().default(300),
  out: z.string().min(1),
  resume: z.boolean().default(false),
  report: z.boolean().default(true),
});

function fail(command: Command, error: unknown): never {
  if (
    error instanceof Error &&
    (error.name === "BfclUsageError" || error.name === "BfclCaseError" || error.name === "BfclRunError")
  ) {
    command.error(`error: ${error.message}`, { exitCode: 2 });
  }
  throw error;
}

function checkTargets(names: readonly string[]): BfclTargetName[] {
  const unknown = names.filter((name) => !(BFCL_TARGETS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new BfclUsageError(`unknown target ${unknown.join(", ")}: use ${BFCL_TARGETS.join(", ")}`);
  return names as BfclTargetName[];
}

/** Score and print (and write) the report of `files`. */
async function report(
  files: readonly string[],
  options: { markdown?: string; html?: string },
): Promise<void> {
  const install = await setupBfcl(() => {});
  const rows = files.flatMap((file) => {
    if (!existsSync(file)) throw new BfclUsageError(`${file} does not exist`);
    repairTail(file);
    return latestByKey(readJsonl(file, bfclRowSchema).rows).rows;
  });
  const categories = parseCategories([...new Set(rows.map((row) => row.category))]);
  const cases = new Map((await loadCases(install, categories)).map((item) => [item.id, item]));
  const verdicts = await scoreRows(install, rows, cases);
  const built = buildReport(rows, verdicts);
  process.stdout.write(`${renderBfclTerminal(built)}\n`);
  if (options.markdown) writeText(options.markdown, renderBfclMarkdown(built));
  if (options.html) {
    await mkdir(options.html, { recursive: true });
    writeBfclHtml(join(options.html, "index.html"), built);
  }
}

/** Add `bfcl` (`run`, `report`) to the `eval` command. */
export function registerBfclCommand(evalCommand: Command): Command {
  const bfcl = evalCommand
    .command("bfcl")
    .description(
      "BFCL v4 (PyPI bfcl-eval) through the guardrails: a server directly, through forge proxy, through the guarded loop, scored by BFCL's own checker",
    );
  bfcl
    .command("run", { isDefault: true })
    .description("Send BFCL cases to each target and append one JSONL row per case, then print the report")
    .requiredOption(
      "--base-url <url>",
      "the model server's OpenAI-compatible base URL (llama-server: http://127.0.0.1:8080/v1, started with --jinja)",
    )
    .requiredOption("--model <name>", "model name sent with each request and recorded in each row")
    .option(
      "--categories <names...>",
      `BFCL categories: ${SINGLE_TURN_CATEGORIES.join(", ")}, ${ALL_CATEGORIES_NAME} (all of these), and ${MULTI_TURN_CATEGORIES.join(", ")} (several turns on BFCL's simulated APIs; slow, so only when named: \`${ALL_CATEGORIES_NAME} ${MULTI_TURN_CATEGORIES[0]}\` is every category)`,
      [ALL_CATEGORIES_NAME],
    )
    .option("--targets <names...>", `where cases go: ${BFCL_TARGETS.join(", ")}`, ["direct", "proxy"])
    .option("--per-category <n>", "at most n cases per category, spread evenly over it (default: all)")
    .option("--temperature <t>", "sampling temperature sent with each request", "0")
    .option("--max-tokens <n>", "max_tokens sent with each request (default: the server's)")
    .option(
      "--case-timeout <seconds>",
      "a case's deadline, all LLM calls together (a multi-turn case: all its turns)",
      "300",
    )
    .requiredOption("--out <file>", "JSONL results file (appended)")
    .option("--resume", "skip the cases --out already answers")
    .addOption(new Option("--no-report", "do not print the report at the end"))
    .action(async (raw: Record<string, unknown>, command: Command) => {
      try {
        const options = runOptionsSchema.parse(raw);
        const targets = checkTargets(options.targets);
        const categories = parseCategories(options.categories);
        const install = await setupBfcl();
        const cases = sampleCases(await loadCases(install, categories), options.perCategory);
        await mkdir(join(options.out, ".."), { recursive: true });
        const written = await runBfcl({
          cases,
          targets,
          server: {
            baseUrl: options.baseUrl,
            model: options.model,
            temperature: options.temperature,
            maxTokens: options.maxTokens,
          },
          out: options.out,
          resume: options.resume,
          caseTimeoutMs: options.caseTimeout * 1000,
          install,
          progress: process.stderr.isTTY,
        });
        process.stderr.write(`bfcl: ${written} rows appended to ${options.out}\n`);
        if (options.report) await report([options.out], {});
      } catch (error) {
        if (error instanceof z.ZodError)
          fail(
            command,
            new BfclUsageError(
              error.issues.map((issue) => `--${issue.path.join(".")}: ${issue.message}`).join("; "),
            ),
          );
        fail(command, error);
      }
    });
  bfcl
    .command("report")
    .description("Score BFCL results files with BFCL's checker and print (or write) the report")
    .argument("<files...>", "JSONL results files of `bfcl run`")
    .option("--markdown <file>", "write the report as Markdown")
    .option("--html <dir>", "write the report as an HTML page (index.html)")
    .action(async (files: string[], options: { markdown?: string; html?: string }, command: Command) => {
      try {
        await report(splitList(files), options);
      } catch (error) {
        fail(command, error);
      }
    });
  return bfcl;
}
