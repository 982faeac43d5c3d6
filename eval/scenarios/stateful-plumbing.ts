/**
 * Stateful plumbing variants: the tools hold fresh state per run, so a duplicated, skipped or
 * wrong call leaves the state wrong even when the final answer looks right.
 */
import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { equals, expectCall, mentions, sameText } from "./checks.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { InvalidArgumentError, NotFoundError, scenarioTool } from "./tools.ts";

/** The first problem in a list of [ok, problem] checks, or null. */
export function firstProblem(checks: readonly [boolean, string][]): string | null {
  return checks.find(([ok]) => !ok)?.[1] ?? null;
}

const basic2StepStateful = defineScenario({
  id: "basic_2step_stateful",
  category: ScenarioCategory.PLUMBING,
  stateful: true,
  description: "Create a note, then share it: a duplicated create leaves two notes behind.",
  userMessage:
    "Create a note titled 'Standup' with the body 'Ship the eval harness on Friday' and share it with kai@example.com.",
  reference: [
    { tool: "create_note", args: { title: "Standup", body: "Ship the eval harness on Friday" } },
    { tool: "share_note", args: { note_id: "N-1", email: "kai@example.com" } },
  ],
  build: () => {
    const notes: { id: string; title: string; body: string; sharedWith: string[] }[] = [];
    return {
      workflow: defineWorkflow({
        name: "notes",
        description: "Create and share notes",
        tools: [
          scenarioTool({
            name: "create_note",
            description: "Create a note; returns its note_id",
            parameters: z.object({ title: z.string(), body: z.string() }),
            execute: ({ title, body }) => {
              const note = { id: `N-${notes.length + 1}`, title, body, sharedWith: [] };
              notes.push(note);
              return { note_id: note.id, title };
            },
          }),
          scenarioTool({
            name: "share_note",
            description: "Share a note with someone by email. Call this last.",
            parameters: z.object({ note_id: z.string(), email: z.string() }),
            execute: ({ note_id, email }) => {
              const note = notes.find((candidate) => candidate.id === note_id);
              if (!note) throw new NotFoundError(`No note '${note_id}'`);
              note.sharedWith.push(email.toLowerCase());
              return { status: "shared", note_id, email };
            },
          }),
        ],
        requiredSteps: ["create_note"],
        terminalTool: "share_note",
        systemPrompt: "You manage the user's notes. Create notes and share them as asked.",
      }),
      checkState: () =>
        firstProblem([
          [notes.length === 1, `expected 1 note, found ${notes.length}`],
          [notes[0]?.title.toLowerCase() === "standup", "the note is not titled Standup"],
          [
            notes[0]?.sharedWith.join() === "kai@example.com",
            "the note is not shared with kai@example.com only",
          ],
        ]),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "share_note", { note_id: equals("N-1"), email: sameText("kai@example.com") }),
});

const sequential3StepStateful = defineScenario({
  id: "sequential_3step_stateful",
  category: ScenarioCategory.PLUMBING,
  stateful: true,
  description: "Open a session, transfer, confirm: the balance must move exactly once.",
  userMessage: "Transfer 250 EUR from account ACC-100 to ACC-200, then confirm the transfer.",
  reference: [
    { tool: "open_session", args: { account_id: "ACC-100" } },
    { tool: "transfer", args: { session: "SES-1", to_account: "ACC-200", amount: 250 } },
    { tool: "confirm_transfer", args: { transfer_id: "TX-1" } },
  ],
  build: () => {
    const balances: Record<string, number> = { "ACC-100": 1000, "ACC-200": 40 };
    const sessions = new Map<string, string>();
    const transfers: { id: string; from: string; to: string; amount: number; confirmed: boolean }[] = [];
    return {
      workflow: defineWorkflow({
        name: "bank_transfer",
        description: "Move money between accounts",
        tools: [
          scenarioTool({
            name: "open_session",
            description: "Open a banking session on an account; returns a session token",
            parameters: z.object({ account_id: z.string() }),
            execute: ({ account_id }) => {
              if (!(account_id in balances)) throw new NotFoundError(`No account '${account_id}'`);
              const session = `SES-${sessions.size + 1}`;
              sessions.set(session, account_id);
              return { session, account_id, balance: balances[account_id] };
            },
          }),
          scenarioTool({
            name: "transfer",
            description: "Transfer money from the session's account; returns a transfer_id",
            parameters: z.object({ session: z.string(), to_account: z.string(), amount: z.number() }),
            prerequisites: ["open_session"],
            execute: ({ session, to_account, amount }) => {
              const from = sessions.get(session);
              if (!from) throw new InvalidArgumentError(`Session '${session}' is not open`);
              if (!(to_account in balances)) throw new NotFoundError(`No account '${to_account}'`);
              balances[from] = (balances[from] ?? 0) - amount;
              balances[to_account] = (balances[to_account] ?? 0) + amount;
              const transfer = {
                id: `TX-${transfers.length + 1}`,
                from,
                to: to_account,
                amount,
                confirmed: false,
              };
              transfers.push(transfer);
              return { transfer_id: transfer.id, status: "pending_confirmation" };
            },
          }),
          scenarioTool({
            name: "confirm_transfer",
            description: "Confirm a pending transfer",
            parameters: z.object({ transfer_id: z.string() }),
            execute: ({ transfer_id }) => {
              const transfer = transfers.find((candidate) => candidate.id === transfer_id);
              if (!transfer) throw new NotFoundError(`No transfer '${transfer_id}'`);
              transfer.confirmed = true;
              return { transfer_id, status: "confirmed" };
            },
          }),
        ],
        requiredSteps: ["open_session", "transfer"],
        terminalTool: "confirm_transfer",
        systemPrompt: "You are a banking assistant. Open a session, make the transfer, then confirm it.",
      }),
      checkState: () =>
        firstProblem([
          [transfers.length === 1, `expected 1 transfer, found ${transfers.length}`],
          [balances["ACC-100"] === 750 && balances["ACC-200"] === 290, "balances are not 750 / 290"],
          [transfers[0]?.confirmed === true, "the transfer is not confirmed"],
        ]),
    };
  },
  checkAnswer: (call) => expectCall(call, "confirm_transfer", { transfer_id: equals("TX-1") }),
});

const errorRecoveryStateful = defineScenario({
  id: "error_recovery_stateful",
  category: ScenarioCategory.PLUMBING,
  stateful: true,
  description:
    "Reserving stock fails once (nothing reserved); retry once, then ship: exactly one reservation.",
  userMessage: "Reserve 3 units of SKU-LAMP-7 and ship them to 12 Harbour Street, Leith.",
  idealIterations: 3,
  reference: [
    { tool: "reserve_stock", args: { sku: "SKU-LAMP-7", quantity: 3 } },
    {
      tool: "ship_reservation",
      args: { reservation_id: "RSV-1", address: "12 Harbour Street, Leith" },
      needs: [0],
    },
  ],
  build: () => {
    let failuresLeft = 1;
    const reservations: { id: string; sku: string; quantity: number; shippedTo: string | null }[] = [];
    return {
      workflow: defineWorkflow({
        name: "stock_shipping",
        description: "Reserve stock and ship it",
        tools: [
          scenarioTool({
            name: "reserve_stock",
            description: "Reserve units of a SKU; returns a reservation_id",
            parameters: z.object({ sku: z.string(), quantity: z.number() }),
            execute: ({ sku, quantity }) => {
              if (failuresLeft > 0) {
                failuresLeft -= 1;
                const error = new Error(
                  "inventory lock held by another process; nothing was reserved, retry",
                );
                error.name = "LockTimeout";
                throw error;
              }
              const reservation = { id: `RSV-${reservations.length + 1}`, sku, quantity, shippedTo: null };
              reservations.push(reservation);
              return { reservation_id: reservation.id, sku, quantity };
            },
          }),
          scenarioTool({
            name: "ship_reservation",
            description: "Ship a reservation to an address",
            parameters: z.object({ reservation_id: z.string(), address: z.string() }),
            execute: ({ reservation_id, address }) => {
              const reservation = reservations.find((candidate) => candidate.id === reservation_id);
              if (!reservation) throw new NotFoundError(`No reservation '${reservation_id}'`);
              reservation.shippedTo = address;
              return { status: "shipped", reservation_id };
            },
          }),
        ],
        requiredSteps: ["reserve_stock"],
        terminalTool: "ship_reservation",
        systemPrompt: "You are a fulfilment assistant. If a tool fails with a transient error, retry it.",
      }),
      checkState: () =>
        firstProblem([
          [reservations.length === 1, `expected 1 reservation, found ${reservations.length}`],
          [
            reservations[0]?.quantity === 3 && reservations[0]?.sku === "SKU-LAMP-7",
            "wrong SKU or quantity reserved",
          ],
          [reservations[0]?.shippedTo !== null, "the reservation was not shipped"],
        ]),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "ship_reservation", { reservation_id: equals("RSV-1"), address: mentions("Harbour") }),
});

/** Stateful plumbing scenarios. */
export const STATEFUL_PLUMBING_SCENARIOS: readonly EvalScenario[] = [
  basic2StepStateful,
  sequential3StepStateful,
  errorRecoveryStateful,
];
