/**
 * Benchmark: TieredCompact over a realistic 2,000-message history, forcing each phase.
 * Run with `npx tsx bench/compaction.bench.ts`. Target: median < 1 ms per compaction.
 */
import { performance } from "node:perf_hooks";
import { ContextManager } from "../src/context/context-manager.ts";
import { TieredCompact } from "../src/context/tiered-compact.ts";
import { estimateTokensByChars } from "../src/context/token-estimator.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../src/core/messages.ts";

const TARGET_MESSAGES = 2000;
const WARMUP_RUNS = 50;
const MEASURED_RUNS = 400;
const STEP_HINT = "[Steps completed: search_catalogue, get_public_pricing, get_company_history]";

/** Deterministic pseudo-random numbers (LCG), so every run benchmarks the same history. */
function createRandom(seed: number): (max: number) => number {
  let state = seed;
  return (max) => {
    state = (state * 1_664_525 + 1_013_904_223) % 2 ** 32;
    return state % max;
  };
}

function prose(random: (max: number) => number, chars: number): string {
  const words = [
    "price",
    "MOQ",
    "supplier",
    "history",
    "quote",
    "lead time",
    "stock",
    "EUR",
    "unit",
    "margin",
  ];
  let text = "";
  while (text.length < chars) text += `${words[random(words.length)]} ${random(1000)} `;
  return text.slice(0, chars);
}

/** System prompt, user input, then loop iterations in the proportions a long run shows. */
function buildHistory(): Message[] {
  const random = createRandom(42);
  const messages: Message[] = [
    createMessage(MessageRole.SYSTEM, prose(random, 1500), { type: MessageType.SYSTEM_PROMPT }),
    createMessage(MessageRole.USER, "Price 100 units of part A-17 and write the report.", {
      type: MessageType.USER_INPUT,
    }),
  ];
  for (let step = 0; messages.length < TARGET_MESSAGES; step++) {
    const meta = (type: MessageType) => ({ type, stepIndex: step });
    if (step % 15 === 14) {
      messages.push(
        createMessage(MessageRole.ASSISTANT, prose(random, 300), meta(MessageType.TEXT_RESPONSE)),
      );
      messages.push(
        createMessage(MessageRole.USER, "Respond with a tool call.", meta(MessageType.RETRY_NUDGE)),
      );
      continue;
    }
    if (random(10) < 7) {
      messages.push(
        createMessage(MessageRole.ASSISTANT, prose(random, 200 + random(600)), meta(MessageType.REASONING)),
      );
    }
    const blocked = step % 10 === 9;
    const calls = Array.from({ length: 1 + random(3) }, (_, index) => ({
      name: blocked && index === 0 ? "submit_report" : `tool_${random(8)}`,
      args: { query: prose(random, 40), limit: random(50) },
      callId: `call_${step}_${index}`,
    }));
    messages.push(
      createMessage(MessageRole.ASSISTANT, "", meta(MessageType.TOOL_CALL), { toolCalls: calls }),
    );
    for (const call of calls) {
      const [type, content] = blocked
        ? [MessageType.STEP_NUDGE, "[StepEnforcementError] Required steps pending: get_company_history."]
        : [MessageType.TOOL_RESULT, prose(random, 500 + random(3500))];
      messages.push(
        createMessage(MessageRole.TOOL, content, meta(type), {
          toolName: call.name,
          toolCallId: call.callId,
        }),
      );
    }
  }
  return messages;
}

const tokens = (messages: readonly Message[]) =>
  messages.reduce((sum, message) => sum + estimateTokensByChars(message), 0);

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]!;
}

interface Timing {
  median: number;
  p95: number;
  /** Median CPU time of the process (user + system): unlike wall time, not inflated by a busy machine. */
  cpuMedian: number;
}

/** Time `run` on what `prepare` returns; `prepare` runs outside the timer. */
function measure<T>(prepare: () => T, run: (input: T) => void): Timing {
  for (let index = 0; index < WARMUP_RUNS; index++) run(prepare());
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let index = 0; index < MEASURED_RUNS; index++) {
    const input = prepare();
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    run(input);
    wall.push(performance.now() - start);
    const used = process.cpuUsage(cpuStart);
    cpu.push((used.user + used.system) / 1000);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { median: percentile(wall, 0.5), p95: percentile(wall, 0.95), cpuMedian: percentile(cpu, 0.5) };
}

const format = (timing: Timing) => ({
  "median ms": timing.median.toFixed(3),
  "p95 ms": timing.p95.toFixed(3),
  "cpu median ms": timing.cpuMedian.toFixed(3),
});

const history = buildHistory();
const strategy = new TieredCompact();
const before = tokens(history);
const afterPhase1 = tokens(strategy.compact(history, before - 1, { stepHint: STEP_HINT }).messages);
const afterPhase2 = tokens(strategy.compact(history, afterPhase1 - 1, { stepHint: STEP_HINT }).messages);
const triggers = { 1: before - 1, 2: afterPhase1 - 1, 3: afterPhase2 - 1 } as const;

const rows = ([1, 2, 3] as const).flatMap((forced) => {
  const trigger = triggers[forced];
  const result = strategy.compact(history, trigger, { stepHint: STEP_HINT });
  // Standalone: the strategy keeps no state between calls, so every message is estimated afresh
  // (the JSON of every tool call included), as a stateless proxy request sees it.
  const standalone = measure(
    () => history,
    (messages) => strategy.compact(messages, trigger, { stepHint: STEP_HINT }),
  );
  // The loop's path: the iteration where compaction fires. Earlier iterations already estimated
  // the history (outside the timer); the timer covers estimating, warning, compacting and
  // counting the result for the next iteration.
  const loop = measure(
    () => {
      // compactTarget 1: the strategy gets the same tokens as in the standalone row (no hysteresis).
      const context = new ContextManager({
        strategy,
        budgetTokens: trigger,
        compactThreshold: 1,
        compactTarget: 1,
      });
      context.countTokens(history);
      return context;
    },
    (context) => context.maybeCompact(history, 0, STEP_HINT),
  );
  // The same, with the count driven by the backend: the history sent last time (all but the
  // last four messages) was observed at its own estimate, so the strategy gets the same tokens.
  const sent = history.slice(0, -4);
  const observed = measure(
    () => {
      const context = new ContextManager({
        strategy,
        budgetTokens: trigger,
        compactThreshold: 1,
        compactTarget: 1,
      });
      context.observeUsage(sent, context.estimateTokens(sent));
      return context;
    },
    (context) => context.maybeCompact(history, 0, STEP_HINT),
  );
  const shared = {
    phase: `${forced} (reached ${result.phase})`,
    messages: `${history.length} → ${result.messages.length}`,
    tokens: `${before} → ${tokens(result.messages)}`,
  };
  return [
    { ...shared, path: "TieredCompact.compact", ...format(standalone) },
    { ...shared, path: "ContextManager.maybeCompact", ...format(loop) },
    { ...shared, path: "maybeCompact after observeUsage", ...format(observed) },
  ];
});

console.log(
  `TieredCompact (keepRecent 2) over ${history.length} messages, ${MEASURED_RUNS} runs each, Node ${process.version}`,
);
console.table(rows);
