/**
 * Synthetic multi-step tool-calling conversations for training forge-tiny.
 *
 * Each conversation is a random workflow (built with `defineTool`/`defineWorkflow`) from a small
 * set of "shapes" — lookup then report, a chained lookup, a required first step, a direct call —
 * with random tool names, a user request, tool results and the correct call sequence, as
 * OpenAI wire messages (`serializeHistory`) plus OpenAI `tools` (`toOpenAITool`). Rendering
 * through the chat template happens in llama-server (`render.ts`), so training text is exactly
 * what the model sees at inference.
 *
 * Domains, tool names and wording are deliberately disjoint from `eval/scenarios/`
 * (test/tiny-model/disjoint.test.ts checks it), so eval scores measure generalisation.
 */
import { z } from "zod";
import { createMessage, type Message, MessageType, serializeHistory } from "../../src/core/messages.ts";
import { defineTool, type ToolDef, toOpenAITool } from "../../src/core/tools.ts";
import { defineWorkflow, renderSystemPrompt, type Workflow } from "../../src/core/workflow.ts";

/** A deterministic PRNG (mulberry32). */
export function makeRng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
const int = (rng: Rng, low: number, high: number): number => low + Math.floor(rng() * (high - low + 1));
function shuffle<T>(rng: Rng, items: readonly T[]): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index--) {
    const other = Math.floor(rng() * (index + 1));
    [copy[index], copy[other]] = [copy[other] as T, copy[index] as T];
  }
  return copy;
}

/** A field of a looked-up record. */
interface Field {
  key: string;
  kind: "person" | "number" | "place" | "code" | "enum";
  values?: readonly string[];
  unit?: string;
}

/** A training domain: what gets looked up, what its records hold, what the terminal does. */
interface Domain {
  name: string;
  subject: string;
  idPrefixes: readonly string[];
  fields: readonly Field[];
  /** Words for the terminal tool's object. */
  outcomes: readonly string[];
}

const DOMAINS: readonly Domain[] = [
  {
    name: "apiary",
    subject: "hive",
    idPrefixes: ["HV", "APY", "QB"],
    fields: [
      { key: "keeper", kind: "person" },
      { key: "frames", kind: "number" },
      { key: "meadow", kind: "place" },
      { key: "temper", kind: "enum", values: ["calm", "restless", "defensive"] },
    ],
    outcomes: ["inspection", "harvest_note", "hive_digest"],
  },
  {
    name: "observatory",
    subject: "comet",
    idPrefixes: ["CMT", "OBS", "SKY"],
    fields: [
      { key: "observer", kind: "person" },
      { key: "magnitude", kind: "number" },
      { key: "station", kind: "place" },
      { key: "phase", kind: "enum", values: ["approaching", "receding", "faint"] },
    ],
    outcomes: ["sighting", "sky_bulletin", "orbit_memo"],
  },
  {
    name: "greenhouse",
    subject: "seedbed",
    idPrefixes: ["GH", "BED", "SPR"],
    fields: [
      { key: "gardener", kind: "person" },
      { key: "humidity", kind: "number", unit: "percent" },
      { key: "wing", kind: "place" },
      { key: "growth", kind: "enum", values: ["sprouting", "wilting", "flowering"] },
    ],
    outcomes: ["watering_plan", "bed_review", "growth_entry"],
  },
  {
    name: "pottery",
    subject: "kiln",
    idPrefixes: ["KLN", "POT", "GLZ"],
    fields: [
      { key: "potter", kind: "person" },
      { key: "peak_heat", kind: "number" },
      { key: "studio", kind: "place" },
      { key: "glaze", kind: "enum", values: ["celadon", "tenmoku", "shino"] },
    ],
    outcomes: ["firing_log", "glaze_card", "kiln_summary"],
  },
  {
    name: "weaving",
    subject: "loom",
    idPrefixes: ["LM", "WV", "YRN"],
    fields: [
      { key: "weaver", kind: "person" },
      { key: "threads", kind: "number" },
      { key: "mill", kind: "place" },
      { key: "pattern", kind: "enum", values: ["herringbone", "twill", "tabby"] },
    ],
    outcomes: ["bolt_label", "loom_sheet", "dye_memo"],
  },
  {
    name: "railway",
    subject: "signal",
    idPrefixes: ["SIG", "RLY", "JX"],
    fields: [
      { key: "warden", kind: "person" },
      { key: "lamps", kind: "number" },
      { key: "junction", kind: "place" },
      { key: "aspect", kind: "enum", values: ["red", "amber", "green"] },
    ],
    outcomes: ["signal_card", "line_bulletin", "track_memo"],
  },
  {
    name: "lighthouse",
    subject: "beacon",
    idPrefixes: ["BCN", "LH", "BUOY"],
    fields: [
      { key: "lamplighter", kind: "person" },
      { key: "range_nm", kind: "number" },
      { key: "headland", kind: "place" },
      { key: "flash", kind: "enum", values: ["steady", "flicker", "dark"] },
    ],
    outcomes: ["beacon_log", "tide_notice", "lamp_review"],
  },
  {
    name: "vineyard",
    subject: "barrel",
    idPrefixes: ["BRL", "VN", "CSK"],
    fields: [
      { key: "cellarer", kind: "person" },
      { key: "litres", kind: "number" },
      { key: "terrace", kind: "place" },
      { key: "grape", kind: "enum", values: ["syrah", "riesling", "tempranillo"] },
    ],
    outcomes: ["tasting_note", "cask_label", "vintage_entry"],
  },
  {
    name: "aquarium",
    subject: "tank",
    idPrefixes: ["TNK", "AQ", "REEF"],
    fields: [
      { key: "aquarist", kind: "person" },
      { key: "salinity", kind: "number" },
      { key: "hall", kind: "place" },
      { key: "clarity", kind: "enum", values: ["clear", "cloudy", "green"] },
    ],
    outcomes: ["tank_report", "feeding_note", "reef_digest"],
  },
  {
    name: "orchestra",
    subject: "score",
    idPrefixes: ["SCR", "OPUS", "MVT"],
    fields: [
      { key: "conductor", kind: "person" },
      { key: "bars", kind: "number" },
      { key: "hall", kind: "place" },
      { key: "tempo", kind: "enum", values: ["largo", "andante", "presto"] },
    ],
    outcomes: ["rehearsal_plan", "score_note", "program_entry"],
  },
];

const FIRST_NAMES = [
  "Orla",
  "Tomasz",
  "Ingrid",
  "Kwame",
  "Yusra",
  "Matteo",
  "Saoirse",
  "Dmitri",
  "Aiyana",
  "Henrik",
  "Noor",
  "Lucian",
  "Thandiwe",
  "Elif",
  "Rafferty",
  "Min",
  "Beatriz",
  "Osei",
  "Linnea",
  "Cosmo",
];
const LAST_NAMES = [
  "Brandt",
  "Okafor",
  "Lindqvist",
  "Castellano",
  "Haddad",
  "Rourke",
  "Vasquez",
  "Nakamura",
  "Quinlan",
  "Bergstrom",
  "Adeyemi",
  "Falk",
  "Moreau",
  "Petrov",
  "Oduya",
  "Sinclair",
  "Tamura",
  "Whitlock",
];
const PLACES = [
  "North Ridge",
  "Elm Hollow",
  "Saltmarsh",
  "Kettle Bay",
  "Bramble Yard",
  "Copper Hill",
  "West Fen",
  "Mossgate",
  "Harrow Point",
  "Linden Row",
  "Greywater",
  "Foxglove Lane",
  "Stonebridge",
  "Amber Cove",
];
/** Syllables for invented nouns, so the model learns to copy names rather than memorise them. */
const SYLLABLES = [
  "zor",
  "quel",
  "mab",
  "tiv",
  "lop",
  "sna",
  "vex",
  "dru",
  "kip",
  "wim",
  "yal",
  "fen",
  "gor",
  "bix",
];

const LOOKUP_VERBS = [
  "get",
  "read",
  "inspect",
  "look_up",
  "query",
  "load",
  "show",
  "describe",
  "check",
  "peek",
];
const PERSON_VERBS = ["find", "get", "locate", "resolve", "search", "identify"];
const TERMINAL_VERBS = [
  "file",
  "publish",
  "record",
  "post",
  "submit",
  "send",
  "log",
  "write",
  "deliver",
  "close",
];
const SETUP_VERBS = ["open", "start", "unlock", "begin", "authorize", "sign_in"];
const CONTACT_FIELDS = ["badge", "radio_code", "pager", "desk_code", "locker"];

function inventedNoun(rng: Rng): string {
  return pick(rng, SYLLABLES) + pick(rng, SYLLABLES);
}

function makeId(rng: Rng, domain: Domain): string {
  return `${pick(rng, domain.idPrefixes)}-${int(rng, 100, 9999)}`;
}

function makePerson(rng: Rng): string {
  return `${pick(rng, FIRST_NAMES)} ${pick(rng, LAST_NAMES)}`;
}

function fieldValue(rng: Rng, field: Field): string | number {
  switch (field.kind) {
    case "person":
      return makePerson(rng);
    case "number":
      return int(rng, 2, 480);
    case "place":
      return pick(rng, PLACES);
    case "code":
      return `${pick(rng, ["K", "M", "R", "Z"])}${int(rng, 10, 99)}-${pick(rng, SYLLABLES).toUpperCase()}`;
    case "enum":
      return pick(rng, field.values ?? ["unknown"]);
  }
}

/** One generated conversation: OpenAI wire messages and tools, and what a checker needs. */
export interface Conversation {
  shape: string;
  tools: Record<string, unknown>[];
  messages: Record<string, unknown>[];
  /** The correct call sequence. */
  calls: { name: string; args: Record<string, unknown> }[];
  toolNames: string[];
  terminalTool: string;
  userMessage: string;
}

interface Plan {
  shape: string;
  userMessage: string;
  systemPrompt: string;
  tools: ToolDef[];
  requiredSteps: string[];
  terminal: string;
  steps: { name: string; args: Record<string, unknown>; result: unknown }[];
}

const ok = () => "ok";

function tool(name: string, description: string, parameters: z.ZodObject): ToolDef {
  return defineTool({ name, description, parameters, execute: ok });
}

function stringParam(description: string) {
  return z.string().describe(description);
}

/** A terminal tool taking a record's id and one of its fields. */
function fieldTerminal(
  name: string,
  description: string,
  subject: string,
  idKey: string,
  field: Field,
): ToolDef {
  return tool(
    name,
    description,
    z.object({
      [idKey]: stringParam(`The ${subject} id`),
      [field.key]: field.kind === "number" ? z.number() : z.string(),
    }),
  );
}

/** Names a conversation's tools: sometimes the domain's nouns, sometimes invented ones. */
function nouns(rng: Rng, domain: Domain): { subject: string; outcome: string; person: string } {
  const invented = rng() < 0.3;
  return {
    subject: invented ? inventedNoun(rng) : domain.subject,
    outcome: invented && rng() < 0.5 ? inventedNoun(rng) : pick(rng, domain.outcomes),
    person: invented && rng() < 0.5 ? inventedNoun(rng) : pick(rng, ["crew", "staff", "member", "person"]),
  };
}

const SYSTEM_PROMPTS = [
  "You are the {domain} assistant. Use the tools to finish the task, then call {terminal}.",
  "You help run the {domain}. Call tools one at a time. Finish by calling {terminal}.",
  "You are an operations agent for the {domain}. Gather what you need with the tools and end with {terminal}.",
  "Assistant for the {domain} team. Always finish with {terminal}.",
];

function systemPrompt(rng: Rng, domain: Domain, terminal: string, required: string | undefined): string {
  let prompt = renderSystemPrompt(pick(rng, SYSTEM_PROMPTS), { domain: domain.name, terminal });
  if (required) prompt += ` Call ${required} before anything else.`;
  return prompt;
}

/** Keys a record can be looked up by (other than its id), with the kind of value each holds. */
const VALUE_KEYS: readonly { key: string; kind: "place" | "person" | "word" }[] = [
  { key: "site", kind: "place" },
  { key: "location", kind: "place" },
  { key: "area", kind: "place" },
  { key: "name", kind: "person" },
  { key: "owner", kind: "person" },
  { key: "label", kind: "word" },
  { key: "title", kind: "word" },
  { key: "nickname", kind: "word" },
];

/** A value as a user would write it: a known place or person, or an invented capitalised word. */
function lookupValue(rng: Rng, kind: "place" | "person" | "word"): string {
  const word = () => {
    const noun = inventedNoun(rng);
    return noun.charAt(0).toUpperCase() + noun.slice(1);
  };
  if (kind === "person") return makePerson(rng);
  if (kind === "place")
    return rng() < 0.5 ? pick(rng, PLACES) : `${word()} ${pick(rng, ["Hill", "Quay", "Row", "Fen"])}`;
  return rng() < 0.7 ? word() : `${word()} ${word()}`;
}

/**
 * Look a record up by a value copied from the request (not an id), then report it with a summary
 * composed from two fields of the result.
 */
function planByValue(rng: Rng, domain: Domain, names: ReturnType<typeof nouns>): Plan {
  const by = pick(rng, VALUE_KEYS);
  const value = lookupValue(rng, by.kind);
  const numberField = domain.fields.find((each) => each.kind === "number") as Field;
  const enumField = domain.fields.find((each) => each.kind === "enum") as Field;
  const record: Record<string, unknown> = { [by.key]: value };
  for (const each of domain.fields) record[each.key] = fieldValue(rng, each);
  const lookupName = `${pick(rng, LOOKUP_VERBS)}_${names.subject}`;
  const terminalName = `${pick(rng, TERMINAL_VERBS)}_${names.outcome}`;
  const summaryKey = pick(rng, ["summary", "digest", "overview", "status_line"]);
  const summary = `${record[numberField.key]} ${numberField.unit ?? numberField.key.replace(/_/g, " ")}, ${record[enumField.key]}`;
  const lookup = tool(
    lookupName,
    `Look up a ${names.subject} by its ${by.key}.`,
    z.object({ [by.key]: stringParam(`The ${names.subject}'s ${by.key}`) }),
  );
  const terminal = tool(
    terminalName,
    `Report a ${names.subject} with a one-line ${summaryKey.replace(/_/g, " ")}. Call this last.`,
    z.object({
      [by.key]: z.string(),
      [summaryKey]: stringParam(`${numberField.key.replace(/_/g, " ")} and ${enumField.key}`),
    }),
  );
  const subject = names.subject;
  return {
    shape: "by-value",
    userMessage: pick(rng, [
      `How is the ${subject} at ${value} doing? Report it.`,
      `Look up ${value} and send me a short ${summaryKey.replace(/_/g, " ")}.`,
      `Give me the ${subject} called ${value}, summarised.`,
      `Which ${enumField.key} does ${value} have right now? Report back.`,
      `${value}: check the ${subject} and report.`,
    ]),
    systemPrompt: "",
    tools: [lookup, terminal],
    requiredSteps: [lookupName],
    terminal: terminalName,
    steps: [
      { name: lookupName, args: { [by.key]: value }, result: record },
      { name: terminalName, args: { [by.key]: value, [summaryKey]: summary }, result: "done" },
    ],
  };
}

/** Lookup-report where the first lookup fails with a transient error and is simply retried. */
function planRetry(
  rng: Rng,
  domain: Domain,
  names: ReturnType<typeof nouns>,
  parts: {
    lookup: ToolDef;
    lookupName: string;
    terminalName: string;
    idKey: string;
    id: string;
    record: Record<string, unknown>;
    field: Field;
  },
): Plan {
  const { lookup, lookupName, terminalName, idKey, id, record, field } = parts;
  const value = record[field.key];
  const terminal = fieldTerminal(
    terminalName,
    `File the ${names.outcome.replace(/_/g, " ")} for a ${names.subject}.`,
    names.subject,
    idKey,
    field,
  );
  const error = pick(rng, [
    `[ToolError] ServiceBusy: the ${domain.name} registry is busy, try again`,
    `[ToolError] Timeout: ${names.subject} lookup timed out, retry`,
    "[ToolError] Unavailable: temporarily unavailable, please retry",
  ]);
  return {
    shape: "retry",
    userMessage: pick(rng, [
      `Find the ${field.key.replace(/_/g, " ")} of ${id} and file it.`,
      `Report ${names.subject} ${id} with its ${field.key.replace(/_/g, " ")}.`,
    ]),
    systemPrompt: "",
    tools: [lookup, terminal],
    requiredSteps: [lookupName],
    terminal: terminalName,
    steps: [
      { name: lookupName, args: { [idKey]: id }, result: error },
      { name: lookupName, args: { [idKey]: id }, result: record },
      { name: terminalName, args: { [idKey]: id, [field.key]: value }, result: "done" },
    ],
  };
}

function planConversation(rng: Rng): Plan {
  const domain = pick(rng, DOMAINS);
  const names = nouns(rng, domain);
  const idKey = `${names.subject}_id`;
  const id = makeId(rng, domain);
  const field = pick(rng, domain.fields);
  const record: Record<string, unknown> = { [idKey]: id };
  for (const each of domain.fields) record[each.key] = fieldValue(rng, each);
  const value = record[field.key];

  const lookupName = `${pick(rng, LOOKUP_VERBS)}_${names.subject}`;
  const terminalName = `${pick(rng, TERMINAL_VERBS)}_${names.outcome}`;
  const lookup = tool(
    lookupName,
    `Look up a ${names.subject} by its id.`,
    z.object({ [idKey]: stringParam(`The ${names.subject} id`) }),
  );

  const shapeRoll = rng();
  let plan: Plan;
  if (shapeRoll < 0.2) {
    plan = planByValue(rng, domain, names);
  } else if (shapeRoll < 0.3) {
    plan = planRetry(rng, domain, names, { lookup, lookupName, terminalName, idKey, id, record, field });
  } else if (shapeRoll < 0.45) {
    // Lookup, then report one field.
    const terminal = fieldTerminal(
      terminalName,
      `File the ${names.outcome.replace(/_/g, " ")} for a ${names.subject}.`,
      names.subject,
      idKey,
      field,
    );
    const ask = pick(rng, [
      `What is the ${field.key.replace(/_/g, " ")} of ${names.subject} ${id}? Record it.`,
      `Check ${names.subject} ${id} and file its ${field.key.replace(/_/g, " ")}.`,
      `Please look at ${id} and report the ${field.key.replace(/_/g, " ")}.`,
      `I need the ${field.key.replace(/_/g, " ")} for ${id}, then close it out.`,
    ]);
    plan = {
      shape: "lookup-report",
      userMessage: ask,
      systemPrompt: "",
      tools: [lookup, terminal],
      requiredSteps: [],
      terminal: terminalName,
      steps: [
        { name: lookupName, args: { [idKey]: id }, result: record },
        { name: terminalName, args: { [idKey]: id, [field.key]: value }, result: "done" },
      ],
    };
  } else if (shapeRoll < 0.62) {
    // Lookup, then look up the person it names, then report their contact code.
    const personField = domain.fields.find((each) => each.kind === "person") as Field;
    const person = record[personField.key] as string;
    const contactKey = pick(rng, CONTACT_FIELDS);
    const contact = fieldValue(rng, { key: contactKey, kind: "code" });
    const personName = `${pick(rng, PERSON_VERBS)}_${names.person}`;
    const personTool = tool(
      personName,
      `Find a ${names.person} by full name.`,
      z.object({ name: stringParam("Full name") }),
    );
    const terminal = tool(
      terminalName,
      `Send the ${names.outcome.replace(/_/g, " ")} to someone.`,
      z.object({ [idKey]: stringParam(`The ${names.subject} id`), [contactKey]: z.string() }),
    );
    plan = {
      shape: "chain",
      userMessage: pick(rng, [
        `Send the ${personField.key} of ${names.subject} ${id} the ${names.outcome.replace(/_/g, " ")}.`,
        `Who looks after ${id}? Deliver it to them using their ${contactKey.replace(/_/g, " ")}.`,
        `Route ${names.subject} ${id} to its ${personField.key}.`,
      ]),
      systemPrompt: "",
      tools: [lookup, personTool, terminal],
      requiredSteps: [],
      terminal: terminalName,
      steps: [
        { name: lookupName, args: { [idKey]: id }, result: record },
        { name: personName, args: { name: person }, result: { name: person, [contactKey]: contact } },
        { name: terminalName, args: { [idKey]: id, [contactKey]: contact }, result: "done" },
      ],
    };
  } else if (shapeRoll < 0.85) {
    // A required first step with the operator's name, then lookup, then report.
    const operator = makePerson(rng);
    const setupName = `${pick(rng, SETUP_VERBS)}_${pick(rng, ["shift", "watch", "logbook", "console"])}`;
    const setup = tool(
      setupName,
      "Must be called first.",
      z.object({ operator: stringParam("Who is working") }),
    );
    const terminal = fieldTerminal(
      terminalName,
      `Record the ${names.outcome.replace(/_/g, " ")}.`,
      names.subject,
      idKey,
      field,
    );
    const session = `S${int(rng, 1000, 9999)}`;
    plan = {
      shape: "required-first",
      userMessage: pick(rng, [
        `This is ${operator}. Record the ${field.key.replace(/_/g, " ")} of ${names.subject} ${id}.`,
        `${operator} here: what is the ${field.key.replace(/_/g, " ")} of ${id}? Log it.`,
        `I am ${operator}. File ${id} with its ${field.key.replace(/_/g, " ")}.`,
      ]),
      systemPrompt: "",
      tools: [setup, lookup, terminal],
      requiredSteps: [setupName],
      terminal: terminalName,
      steps: [
        { name: setupName, args: { operator }, result: { session, operator } },
        { name: lookupName, args: { [idKey]: id }, result: record },
        { name: terminalName, args: { [idKey]: id, [field.key]: value }, result: "done" },
      ],
    };
  } else {
    // Everything is in the request: call the terminal tool directly.
    const note = pick(rng, ["needs attention", "all fine", "check again tomorrow", "moved", "cleaned"]);
    const terminal = tool(
      terminalName,
      `Write a short note about a ${names.subject}.`,
      z.object({ [idKey]: stringParam(`The ${names.subject} id`), note: z.string() }),
    );
    plan = {
      shape: "direct",
      userMessage: pick(rng, [
        `Note on ${names.subject} ${id}: ${note}.`,
        `Mark ${id} as "${note}".`,
        `For ${id}, write: ${note}.`,
      ]),
      systemPrompt: "",
      tools: [lookup, terminal],
      requiredSteps: [],
      terminal: terminalName,
      steps: [{ name: terminalName, args: { [idKey]: id, note }, result: "done" }],
    };
  }

  // Distractor tools the right sequence never calls.
  const taken = new Set(plan.tools.map((each) => each.spec.name));
  const distractorCount = int(rng, 0, 2);
  for (let index = 0; index < distractorCount; index++) {
    const other = pick(rng, DOMAINS);
    const name = `${pick(rng, [...LOOKUP_VERBS, ...TERMINAL_VERBS])}_${rng() < 0.5 ? other.subject : inventedNoun(rng)}`;
    if (taken.has(name)) continue;
    taken.add(name);
    plan.tools.push(
      tool(name, `Handle a ${other.subject} record.`, z.object({ ref: stringParam("Reference") })),
    );
  }
  plan.tools = shuffle(rng, plan.tools);
  plan.systemPrompt = systemPrompt(rng, domain, plan.terminal, plan.requiredSteps[0]);
  return plan;
}

/** A workflow for a plan, validated by the library's own `defineWorkflow`. */
function planWorkflow(plan: Plan): Workflow {
  return defineWorkflow({
    name: "synthetic",
    description: plan.shape,
    tools: plan.tools,
    requiredSteps: plan.requiredSteps,
    terminalTool: plan.terminal,
    systemPrompt: plan.systemPrompt,
  });
}

/** Generate one conversation from `rng`. */
export function generateConversation(rng: Rng): Conversation {
  const plan = planConversation(rng);
  const workflow = planWorkflow(plan);
  const history: Message[] = [
    createMessage("system", workflow.systemPrompt, { type: MessageType.SYSTEM_PROMPT }),
    createMessage("user", plan.userMessage, { type: MessageType.USER_INPUT }),
  ];
  plan.steps.forEach((step, index) => {
    const callId = `call_${index}`;
    history.push(
      createMessage(
        "assistant",
        "",
        { type: MessageType.TOOL_CALL, stepIndex: index },
        { toolCalls: [{ name: step.name, args: step.args, callId }] },
      ),
    );
    if (step.name !== plan.terminal) {
      history.push(
        createMessage(
          "tool",
          typeof step.result === "string" ? step.result : JSON.stringify(step.result),
          { type: MessageType.TOOL_RESULT, stepIndex: index },
          { toolName: step.name, toolCallId: callId },
        ),
      );
    }
  });
  return {
    shape: plan.shape,
    tools: Object.values(workflow.tools).map((each) => toOpenAITool(each.spec)),
    messages: serializeHistory(history, "openai"),
    calls: plan.steps.map((step) => ({ name: step.name, args: step.args })),
    toolNames: Object.keys(workflow.tools),
    terminalTool: plan.terminal,
    userMessage: plan.userMessage,
  };
}

/** `count` conversations from `seed`. */
export function generateConversations(count: number, seed: number): Conversation[] {
  const rng = makeRng(seed);
  return Array.from({ length: count }, () => generateConversation(rng));
}

/** Seeds of the training and held-out sets. */
export const TRAIN_SEED = 20251121;
export const HELDOUT_SEED = 777;
