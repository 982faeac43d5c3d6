/**
 * `npm run eval -- report`: read JSONL files (reporting corrupt lines by number), filter, and print
 * the terminal report and/or write Markdown and the HTML dashboard.
 */
import { z } from "zod";
import { readJsonl } from "../batch/jsonl.ts";
import { type BatchProgressReport, batchProgressOf, progressLines } from "../batch/plan.ts";
import { runRowSchema } from "../batch/row.ts";
import { renderMarkdown } from "../report/markdown.ts";
import { renderTerminalReport } from "../report/table.ts";
import { loadRows, reportOf, tracesPathFor, writeHtmlReport, writeText } from "../report/write-report.ts";
import { listOption } from "./list-option.ts";
import { type EvalIo, EvalUsageError } from "./run-eval.ts";

/** Options of `npm run eval -- report`. */
export const reportOptionsSchema = z.object({
  html: z.string().optional(),
  markdown: z.string().optional(),
  ablation: listOption(),
  tags: listOption(),
  scenario: listOption(),
  baseline: z.string().default("reforged"),
  timelines: z.enum(["cells", "all", "none"]).default("cells"),
  title: z.string().optional(),
  command: z.string().optional(),
  screenshot: z.string().optional(),
  /** Report a batch that is still running (or was interrupted): rows so far, marked partial. */
  includePartial: z.boolean().default(false),
});

/** Run `npm run eval -- report`. Resolves with the number of rows reported. */
export async function reportEval(files: readonly string[], rawOptions: unknown, io: EvalIo): Promise<number> {
  const options = reportOptionsSchema.parse(rawOptions);
  const partial = unfinishedBatches(files);
  if (partial.length > 0 && !options.includePartial) {
    throw new EvalUsageError(
      `${partial.map(({ file, progress }) => `${file} is an unfinished batch (${describeProgress(progress)})`).join("; ")}: pass --include-partial to report the rows so far, marked partial, or run the batch again to finish it`,
    );
  }
  const partialNote =
    partial.length > 0
      ? `partial: ${partial.map(({ progress }) => `${progress.done}/${progress.planned}`).join(", ")} runs`
      : null;
  const title = partialNote ? `${options.title ?? "Eval report"} (${partialNote})` : options.title;
  const loaded = loadRows(files, {
    configs: options.ablation,
    tags: options.tags,
    scenarios: options.scenario,
  });
  for (const problem of loaded.problems)
    io.stderr(`${problem.file}:${problem.line}: ${problem.message} (line skipped)\n`);
  if (loaded.superseded > 0)
    io.stderr(`report: ${loaded.superseded} rows superseded by a newer row of the same run\n`);
  const report = reportOf(loaded.rows, options.baseline);
  for (const { file, progress } of partial) {
    io.stdout(`PARTIAL — ${file} is still running or was interrupted; results change as runs finish\n`);
    io.stdout(`${progressLines(progress).join("\n")}\n\n`);
  }
  io.stdout(`${renderTerminalReport(report)}\n`);
  if (options.markdown) {
    writeText(
      options.markdown,
      renderMarkdown(report, {
        ...(title && { title }),
        ...(options.command && { command: options.command }),
      }) + partial.map(({ file, progress }) => progressMarkdown(file, progress)).join(""),
    );
    io.stderr(`report: Markdown → ${options.markdown}\n`);
  }
  if (options.html) {
    const written = writeHtmlReport(report, {
      outDir: options.html,
      timelines: options.timelines,
      tracesFiles: files.map(tracesPathFor),
      source: files.join(", "),
      ...(title && { title }),
      ...(options.command && { command: options.command }),
    });
    io.stderr(`report: dashboard → ${written.dashboard} (${written.timelines} timelines)\n`);
    if (options.screenshot) {
      const { screenshotPage } = await import("../report/screenshot.ts");
      await screenshotPage(written.dashboard, options.screenshot);
      io.stderr(`report: screenshot → ${options.screenshot}\n`);
    }
  }
  return loaded.rows.length;
}

/** The files whose batch plan holds runs their rows do not (yet). */
function unfinishedBatches(files: readonly string[]): { file: string; progress: BatchProgressReport }[] {
  const unfinished: { file: string; progress: BatchProgressReport }[] = [];
  for (const file of files) {
    const keys = new Set(readJsonl(file, runRowSchema).rows.map((row) => row.key));
    const progress = batchProgressOf(file, keys);
    if (progress && !progress.complete) unfinished.push({ file, progress });
  }
  return unfinished;
}

function describeProgress(progress: BatchProgressReport): string {
  return `${progress.done} of ${progress.planned} planned runs done${
    progress.notStarted > 0 ? `, ${progress.notStarted} target(s) not started` : ""
  }`;
}

/** The progress of a partial batch as a Markdown table, after the report. */
function progressMarkdown(file: string, progress: BatchProgressReport): string {
  const rows = progress.targets.flatMap((target) => [
    `| ${target.target} | all | ${target.done}/${target.planned} |`,
    ...target.configs.map(
      (config) => `| ${target.target} | ${config.config} | ${config.done}/${config.planned} |`,
    ),
  ]);
  if (progress.notStarted > 0) rows.push(`| ${progress.notStarted} target(s) not started | | 0 |`);
  return `\n**Partial batch** \`${file}\`: ${describeProgress(progress)}; the figures above are the rows so far.\n\n| Target | Config | Runs done / planned |\n|---|---|---|\n${rows.join("\n")}\n`;
}
