/**
 * `npm run eval -- report`: read JSONL files (reporting corrupt lines by number), filter, and print
 * the terminal report and/or write Markdown and the HTML dashboard.
 */
import { z } from "zod";
import { renderMarkdown } from "../report/markdown.ts";
import { renderTerminalReport } from "../report/table.ts";
import { loadRows, reportOf, tracesPathFor, writeHtmlReport, writeText } from "../report/write-report.ts";
import { listOption } from "./list-option.ts";
import type { EvalIo } from "./run-eval.ts";

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
});

/** Run `npm run eval -- report`. Resolves with the number of rows reported. */
export async function reportEval(files: readonly string[], rawOptions: unknown, io: EvalIo): Promise<number> {
  const options = reportOptionsSchema.parse(rawOptions);
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
  io.stdout(`${renderTerminalReport(report)}\n`);
  if (options.markdown) {
    writeText(
      options.markdown,
      renderMarkdown(report, {
        ...(options.title && { title: options.title }),
        ...(options.command && { command: options.command }),
      }),
    );
    io.stderr(`report: Markdown → ${options.markdown}\n`);
  }
  if (options.html) {
    const written = writeHtmlReport(report, {
      outDir: options.html,
      timelines: options.timelines,
      tracesFiles: files.map(tracesPathFor),
      source: files.join(", "),
      ...(options.title && { title: options.title }),
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
