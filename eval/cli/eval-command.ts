/**
 * `npm run eval`: qualify a model against the eval scenarios (run, worker, report, list, replay).
 * A repository-only command (eval/ is not shipped); this file only declares its command line.
 */
import { type Command, Option } from "commander";
import { ABLATION_PRESETS, LOOP_CONTROL_PRESETS } from "../ablation.ts";
import { BACKENDS } from "../backends/registry.ts";
import { ALL_SCENARIOS, allTags } from "../scenarios/index.ts";
import { FAULT_PROFILES, totalFaultRate } from "../sim-model/profiles.ts";
import { registerAgentsCommand } from "./agents-command.ts";
import { loadBatchConfig, probeTargets, runBatchConfig } from "./batch-eval.ts";
import { registerBfclCommand } from "./bfcl-command.ts";
import { findTrace, replayTrace } from "./replay-eval.ts";
import { reportEval } from "./report-eval.ts";
import { type EvalIo, runEval } from "./run-eval.ts";
import { runWorkerCommand } from "./worker-eval.ts";

const io: EvalIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

const USAGE_ERRORS = new Set([
  "EvalUsageError",
  "UnknownSelectionError",
  "UnknownProfileError",
  "BackendConfigError",
  "EvalQueueSpecError",
]);

/**
 * Report a usage error (options that cannot run) as `command`'s error: one line, the usage, exit 2.
 * Any other error is rethrown: `runProgram` prints it as one line and exits 1.
 */
function failWith(command: Command, error: unknown): never {
  if (error instanceof Error && USAGE_ERRORS.has(error.name)) {
    command.error(`error: ${error.message}`, { exitCode: 2 });
  }
  throw error;
}

/** Add the `eval` command (with `run` as its default, `report`, `list` and `replay`) to `program`. */
export function registerEvalCommand(program: Command): Command {
  const evalCommand = program
    .command("eval")
    .description(
      "Qualify a model: run the eval scenarios under guardrail ablations and report scores (`run` is the default command: `npm run eval -- run --help` lists its options)",
    );

  evalCommand
    .command("run", { isDefault: true })
    .description("Run scenarios against a backend and append one JSONL row per run")
    .option("--runs <n>", "runs per scenario and config", "1")
    .option("--scenario <ids...>", "only these scenarios (see `npm run eval -- list`)")
    .option("--tags <tags...>", "only scenarios with one of these tags")
    .option(
      "--ablation <presets...>",
      `configs: ${[...Object.keys(ABLATION_PRESETS), ...Object.keys(LOOP_CONTROL_PRESETS)].join(", ")}, all, ai_sdk`,
      ["reforged"],
    )
    .option("--peer", "also run the Vercel AI SDK generateText loop against the same backend")
    .option(
      "--ideal",
      "also run the ideal reference (the scenario's reference calls played through the loop, each prompt still evaluated by the backend): the yardstick of the report's ×ideal token column",
    )
    .addOption(new Option("--backend <name>", "backend").choices(Object.keys(BACKENDS)).default("sim-model"))
    .option("--model <name>", "model name (required by real backends)")
    .option("--base-url <url>", "backend URL (sim-model: use a running `npm run sim-model`)")
    .addOption(new Option("--api-key <key>", "backend credential").env("FORGE_EVAL_API_KEY"))
    .option("--profile <name>", `sim-model fault profile: ${Object.keys(FAULT_PROFILES).join(", ")}`)
    .option(
      "--seed <n>",
      "base seed: run i uses seed + i (sim-model faults; the request seed of openai-compatible, ollama, llama-cpp and the AI SDK peer; anthropic has no seed)",
      "0",
    )
    .option(
      "--temperature <t>",
      "sampling temperature, 0-2, for real backends and the AI SDK peer (default: the backend's own, llama-server 0.8)",
    )
    .option("--top-p <p>", "nucleus sampling, above 0 and at most 1 (real backends and the peer)")
    .option(
      "--top-k <k>",
      "top-k sampling, 0 or more; 0 = no limit on llama.cpp (real backends and the peer)",
    )
    .addOption(
      new Option(
        "--llama-cpp-mode <mode>",
        "llama-cpp: native function calling (grammar) or free text the loop rescues (default functions)",
      ).choices(["functions", "free"]),
    )
    .option("--threads <n>", "llama-cpp: evaluation threads (default: one per core)")
    .addOption(
      new Option(
        "--tool-mode <mode>",
        "sim-model, openai-compatible: tools in the request body (native), the tool prompt in the system message (prompt), or native falling back to prompt (auto; default for openai-compatible, native for sim-model)",
      ).choices(["native", "prompt", "auto"]),
    )
    .addOption(
      new Option(
        "--think <mode>",
        "openai-compatible, ollama: the client's think option (ollama sends think: true/false; openai-compatible keeps or drops the reasoning it gets); auto leaves it to the client",
      ).choices(["on", "off", "auto"]),
    )
    .option("--stream", "stream responses (this library's loop)")
    .addOption(
      new Option("--compact-strategy <name>", "compaction of presets that compact").choices([
        "tiered",
        "sliding",
        "none",
      ]),
    )
    .option("--out <file>", "JSONL file to append rows to (default eval/results/eval-<backend>-<time>.jsonl)")
    .option("--resume", "continue --out: skip the runs it already holds")
    .option("--concurrency <n>", "runs in flight per worker (default 4 for sim-model, else 1)")
    .option("--workers <n>", "worker threads running the loops (default 2 for sim-model, else 1)")
    .option("--no-traces", "do not write <out>.traces.jsonl (timelines and replay need it)")
    .option("--no-progress", "no progress bar")
    .option("--html <dir>", "write the dashboard (and run timelines) to this folder")
    .option("--markdown <file>", "write the Markdown report")
    .option("--no-report", "do not print the table")
    .option("--delay-ms <n>", "sim-model: latency added per request")
    .option(
      "--queue <url|dir>",
      "enqueue the runs on a run queue (redis://…, postgres://… or an embedded queue's directory) for `npm run eval -- worker` processes to make; this process collects their results into --out",
    )
    .action(async (options: Record<string, unknown>, command: Command) => {
      const controller = new AbortController();
      const stop = () => {
        process.stderr.write("\neval: stopping after the runs in flight (resume with --resume)\n");
        controller.abort();
      };
      process.once("SIGINT", stop);
      try {
        await runEval(options, io, controller.signal);
      } catch (error) {
        failWith(command, error);
      } finally {
        process.off("SIGINT", stop);
      }
    });

  evalCommand
    .command("worker")
    .description(
      "Make the eval runs an `eval run --queue` enqueued: each job names its scenario, config, seed and backend; the outcome goes back to the collector, which writes the row",
    )
    .requiredOption(
      "--queue <url|dir>",
      "the run queue: redis://…, postgres://… or an embedded queue's directory",
    )
    .option("--concurrency <n>", "runs made at once", "1")
    .addOption(
      new Option("--api-key <key>", "the backend's credential (jobs carry none)").env("FORGE_EVAL_API_KEY"),
    )
    .option("--exit-when-idle", "stop once no run waits (default: wait for runs until SIGINT or SIGTERM)")
    .action(async (options: Record<string, unknown>, command: Command) => {
      const controller = new AbortController();
      const stop = () => {
        process.stderr.write("eval worker: stopping after the runs under way\n");
        controller.abort();
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      try {
        await runWorkerCommand(options, io, controller.signal);
      } catch (error) {
        failWith(command, error);
      } finally {
        process.off("SIGINT", stop);
        process.off("SIGTERM", stop);
      }
    });

  evalCommand
    .command("batch <config>")
    .description(
      "Run every target of a batch config (JSON: llamaserver GGUFs started and stopped one at a time, openai-compatible, ollama, llama-cpp, anthropic, sim-model) into one resumable JSONL, then report them together",
    )
    .option("--no-progress", "no progress bars")
    .option(
      "--probe",
      "check that every target can run (GGUF and llama-server present, servers answer, keys set) before the batch starts",
    )
    .option("--html <dir>", "write the dashboard to this folder")
    .option("--markdown <file>", "write the Markdown report")
    .option("--title <text>", "report title")
    .action(async (configPath: string, options: Record<string, unknown>, command: Command) => {
      const controller = new AbortController();
      const stop = () => {
        process.stderr.write("\nbatch: stopping after the runs in flight (run the same command to resume)\n");
        controller.abort();
      };
      process.once("SIGINT", stop);
      try {
        const config = loadBatchConfig(configPath);
        if (options.probe === true) await probeTargets(config, io);
        await runBatchConfig(config, io, {
          progress: options.progress !== false,
          signal: controller.signal,
        });
        // Interrupted (Ctrl-C): report the rows so far, marked partial.
        await reportEval(
          [config.out],
          {
            ...options,
            command: `npm run eval -- batch ${configPath}`,
            includePartial: controller.signal.aborted,
          },
          io,
        );
      } catch (error) {
        failWith(command, error);
      } finally {
        process.off("SIGINT", stop);
      }
    });

  evalCommand
    .command("report <files...>")
    .description("Report JSONL results: terminal table, Markdown, HTML dashboard with run timelines")
    .option("--html <dir>", "write the dashboard to this folder")
    .option("--markdown <file>", "write the Markdown report")
    .option("--ablation <configs...>", "only these configs")
    .option("--tags <tags...>", "only scenarios with one of these tags")
    .option("--scenario <ids...>", "only these scenarios")
    .option("--baseline <config>", "config the deltas are measured against", "reforged")
    .addOption(
      new Option("--timelines <which>", "run timeline pages")
        .choices(["cells", "all", "none"])
        .default("cells"),
    )
    .option("--title <text>", "report title")
    .option("--command <text>", "the command that produced the data, shown in the report")
    .option("--screenshot <png>", "also save a PNG of the dashboard (needs chromium)")
    .option(
      "--include-partial",
      "report a batch that is still running or was interrupted: the rows so far with each target's and config's runs done / planned, marked partial (without it such a file is refused)",
    )
    .action(async (files: string[], options: Record<string, unknown>, command: Command) => {
      try {
        await reportEval(files, options, io);
      } catch (error) {
        failWith(command, error);
      }
    });

  evalCommand
    .command("list")
    .description("List scenarios, tags, ablation presets, backends and sim-model profiles")
    .action(() => {
      const lines = [
        "Scenarios:",
        ...ALL_SCENARIOS.map(
          (scenario) =>
            `  ${scenario.id.padEnd(34)} ideal ${String(scenario.idealIterations).padStart(2)}  [${scenario.tags.join(", ")}]  ${scenario.description}`,
        ),
        "",
        `Tags: ${allTags().join(", ")}`,
        "",
        "Ablation presets:",
        ...Object.values(ABLATION_PRESETS).map(
          (preset) =>
            `  ${preset.name.padEnd(12)} rescue=${preset.rescueEnabled} retries=${preset.maxRetriesPerStep} steps=${preset.stepEnforcement} toolErrors=${preset.maxToolErrors} compaction=${preset.compaction}`,
        ),
        "  ai_sdk       (--peer) Vercel AI SDK generateText + stopWhen",
        "  ideal        (--ideal) the reference calls played through the loop: the token yardstick",
        "  reforged+subsets     reforged, each request offering only the tools that make progress now",
        "  reforged+hold        reforged, a terminal call in a batch with pending steps held back while the steps run",
        "  reforged+escalation  reforged, escalating to a stronger client after 2 failures of one kind (sim-model: profile clean)",
        '  no_force             reforged, its retries after a prose answer sent without tool_choice "required"',
        "",
        "Backends:",
        ...Object.values(BACKENDS).map((backend) => `  ${backend.name.padEnd(18)} ${backend.description}`),
        "",
        "sim-model profiles (fault rate per model turn):",
        ...Object.values(FAULT_PROFILES).map(
          (profile) =>
            `  ${profile.name.padEnd(8)} ${Math.round(totalFaultRate(profile) * 100)}%  ${profile.description}\n           ${
              Object.entries(profile.rates)
                .map(([kind, rate]) => `${kind} ${((rate ?? 0) * 100).toFixed(0)}%`)
                .join(", ") || "no faults"
            }`,
        ),
      ];
      process.stdout.write(`${lines.join("\n")}\n`);
    });

  evalCommand
    .command("replay <traces> [key]")
    .description("Re-run a recorded run from its trace and check the loop reproduces its history exactly")
    .action(async (traces: string, key: string | undefined) => {
      const trace = findTrace(traces, key);
      const result = await replayTrace(trace);
      process.stdout.write(
        result.identical
          ? `identical: ${trace.key} (${result.recordedMessages} messages)\n`
          : `differs: ${trace.key}: ${result.difference}\n`,
      );
      if (!result.identical) process.exitCode = 1;
    });

  registerBfclCommand(evalCommand);
  registerAgentsCommand(evalCommand);
  return evalCommand;
}
