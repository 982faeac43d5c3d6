/**
 * An application statechart that runs forge workflows as child actors: a support desk that
 * spawns one workflow actor per ticket (`spawnChild` with `runner.machineFor` / `runner.inputFor`),
 * records each result from its `xstate.done.actor.*` event, and turns failed or cancelled runs
 * into typed errors with `errorFromOutput`.
 *
 * Run it: `npx tsx examples/app-machine.ts`
 */
import { pathToFileURL } from "node:url";
import {
  defineTool,
  defineWorkflow,
  errorFromOutput,
  respondTool,
  type Workflow,
  type WorkflowMachine,
  type WorkflowOutput,
  WorkflowRunner,
} from "forge-guardrails";
import { hangUntilAborted, ScriptedClient, toolCall } from "forge-guardrails/testing";
import {
  createActor,
  type DoneActorEvent,
  type ErrorActorEvent,
  enqueueActions,
  sendTo,
  setup,
  toPromise,
  waitFor,
} from "xstate";
import { z } from "zod";

/** A desk: the workflow that handles its tickets and the runner (client, limits) that runs it. */
export interface Desk {
  workflow: Workflow;
  runner: WorkflowRunner;
}

/** One ticket's record in the desk's context (plain JSON). */
export interface TicketRecord {
  desk: string;
  request: string;
  status: "open" | "resolved" | "failed" | "cancelled";
  result: unknown;
  /** The typed error's name and message for a failed or cancelled run. */
  error: { name: string; message: string } | null;
  /** LLM calls the run made. */
  iterations: number;
}

/** The desk's context. */
export interface SupportDeskContext {
  tickets: Record<string, TicketRecord>;
}

/** Events of the desk. */
export type SupportDeskEvent =
  | { type: "ticket.submit"; ticketId: string; desk: string; request: string }
  | { type: "ticket.cancel"; ticketId: string }
  | { type: "desk.close" };

/**
 * Build the support desk statechart for a set of desks (keyed by name). The workflow machines are
 * registered as actors, so tickets are spawned by name and inspectable like any child.
 */
export function createSupportDeskMachine(desks: Readonly<Record<string, Desk>>) {
  const actors: Record<string, WorkflowMachine> = Object.fromEntries(
    Object.entries(desks).map(([name, desk]) => [name, desk.runner.machineFor(desk.workflow)]),
  );
  return setup({
    types: {
      context: {} as SupportDeskContext,
      events: {} as SupportDeskEvent | DoneActorEvent<WorkflowOutput> | ErrorActorEvent,
      output: {} as SupportDeskContext["tickets"],
    },
    actors,
    guards: {
      isKnownDesk: ({ event }) => event.type === "ticket.submit" && event.desk in desks,
      allSettled: ({ context }) => Object.values(context.tickets).every((ticket) => ticket.status !== "open"),
    },
    actions: {
      openTicket: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== "ticket.submit") return;
        const desk = desks[event.desk];
        if (!desk) return;
        enqueue.assign({
          tickets: {
            ...context.tickets,
            [event.ticketId]: {
              desk: event.desk,
              request: event.request,
              status: "open",
              result: null,
              error: null,
              iterations: 0,
            },
          },
        });
        enqueue.spawnChild(event.desk, {
          id: event.ticketId,
          input: desk.runner.inputFor(desk.workflow, event.request),
        });
      }),
      cancelTicket: sendTo(({ event }) => (event.type === "ticket.cancel" ? event.ticketId : ""), {
        type: "workflow.cancel",
      }),
      recordOutcome: enqueueActions(({ context, event, enqueue }) => {
        const ticketId = (event as DoneActorEvent | ErrorActorEvent).actorId;
        const ticket = context.tickets[ticketId];
        if (!ticket) return;
        let settled: TicketRecord;
        if (event.type.startsWith("xstate.done.actor.")) {
          const output = (event as DoneActorEvent<WorkflowOutput>).output;
          if (output.status === "done") {
            settled = { ...ticket, status: "resolved", result: output.result, iterations: output.iteration };
          } else {
            // failed / cancelled: the same typed error WorkflowRunner.run would throw.
            const error = errorFromOutput(output);
            settled = {
              ...ticket,
              status: output.status === "cancelled" ? "cancelled" : "failed",
              error: { name: error.name, message: error.message },
              iterations: output.iteration,
            };
          }
        } else {
          // The workflow actor itself crashed (it normally reports failures as output instead).
          const error = (event as ErrorActorEvent).error;
          settled = {
            ...ticket,
            status: "failed",
            error: {
              name: error instanceof Error ? error.name : "Error",
              message: error instanceof Error ? error.message : String(error),
            },
          };
        }
        enqueue.assign({ tickets: { ...context.tickets, [ticketId]: settled } });
      }),
    },
  }).createMachine({
    id: "supportDesk",
    context: { tickets: {} },
    initial: "open",
    on: {
      "xstate.done.actor.*": { actions: "recordOutcome" },
      "xstate.error.actor.*": { actions: "recordOutcome" },
      "ticket.cancel": { actions: "cancelTicket" },
    },
    states: {
      open: {
        on: {
          "ticket.submit": { guard: "isKnownDesk", actions: "openTicket" },
          "desk.close": { target: "closing" },
        },
      },
      closing: {
        always: { guard: "allSettled", target: "closed" },
      },
      closed: { type: "final" },
    },
    output: ({ context }) => context.tickets,
  });
}

/** A refund desk whose model looks the order up, then refunds it. */
function refundDesk(): Desk {
  const lookupOrder = defineTool({
    name: "lookup_order",
    description: "Look an order up by id",
    parameters: z.object({ orderId: z.string() }),
    execute: ({ orderId }) => ({ orderId, total: 42.5, refundable: true }),
  });
  const issueRefund = defineTool({
    name: "issue_refund",
    description: "Refund an order",
    parameters: z.object({ orderId: z.string(), amount: z.number() }),
    execute: ({ orderId, amount }) => ({ refundId: `R-${orderId}`, amount }),
  });
  const workflow = defineWorkflow({
    name: "refund",
    description: "Refund an order after checking it",
    tools: [lookupOrder, issueRefund],
    requiredSteps: ["lookup_order"],
    terminalTool: "issue_refund",
    systemPrompt: "You handle refunds. Look the order up before refunding it.",
  });
  const client = new ScriptedClient([
    toolCall("lookup_order", { orderId: "A17" }),
    toolCall("issue_refund", { orderId: "A17", amount: 42.5 }),
  ]);
  return { workflow, runner: new WorkflowRunner({ client, contextManager: passthrough }) };
}

/** A shipping desk whose carrier API is down: the run fails with ToolExecutionError. */
function shippingDesk(): Desk {
  const trackPackage = defineTool({
    name: "track_package",
    description: "Where a package is",
    parameters: z.object({ trackingNumber: z.string() }),
    execute: () => {
      throw new Error("carrier API timed out");
    },
  });
  const workflow = defineWorkflow({
    name: "shipping",
    description: "Answer shipping questions",
    tools: [trackPackage, respondTool()],
    requiredSteps: ["track_package"],
    terminalTool: "respond",
    systemPrompt: "You answer shipping questions. Track the package first.",
  });
  const client = new ScriptedClient([
    toolCall("track_package", { trackingNumber: "1Z999" }),
    toolCall("track_package", { trackingNumber: "1Z999" }),
  ]);
  return { workflow, runner: new WorkflowRunner({ client, contextManager: passthrough, maxToolErrors: 1 }) };
}

/** A warranty desk whose model never answers: the ticket is withdrawn (cancelled) mid-request. */
function warrantyDesk(onRequest: () => void): Desk {
  const workflow = defineWorkflow({
    name: "warranty",
    description: "Answer warranty questions",
    tools: [respondTool()],
    terminalTool: "respond",
    systemPrompt: "You answer warranty questions.",
  });
  const client = new ScriptedClient([hangUntilAborted(onRequest)]);
  return { workflow, runner: new WorkflowRunner({ client, contextManager: passthrough }) };
}

const passthrough = { maybeCompact: <T>(messages: T) => messages };

/** Run the desk with three tickets (resolved, failed, cancelled); resolves with the tickets. */
export async function main(
  log: (line: string) => void = console.log,
): Promise<SupportDeskContext["tickets"]> {
  let warrantyAsked!: () => void;
  const warrantyRequested = new Promise<void>((resolve) => {
    warrantyAsked = resolve;
  });
  const machine = createSupportDeskMachine({
    refund: refundDesk(),
    shipping: shippingDesk(),
    warranty: warrantyDesk(() => warrantyAsked()),
  });
  const desk = createActor(machine).start();
  desk.send({ type: "ticket.submit", ticketId: "T-1", desk: "refund", request: "Refund order A17" });
  desk.send({ type: "ticket.submit", ticketId: "T-2", desk: "shipping", request: "Where is 1Z999?" });
  desk.send({ type: "ticket.submit", ticketId: "T-3", desk: "warranty", request: "Is my kettle covered?" });

  // The customer withdraws T-3 while its request is in flight.
  await warrantyRequested;
  desk.send({ type: "ticket.cancel", ticketId: "T-3" });
  await waitFor(desk, (snapshot) =>
    Object.values(snapshot.context.tickets).every((ticket) => ticket.status !== "open"),
  );
  desk.send({ type: "desk.close" });
  const tickets = await toPromise(desk);

  for (const [ticketId, ticket] of Object.entries(tickets)) {
    const detail = ticket.error
      ? `${ticket.error.name}: ${ticket.error.message}`
      : JSON.stringify(ticket.result);
    log(`${ticketId} [${ticket.desk}] ${ticket.status} after ${ticket.iterations} call(s) - ${detail}`);
  }
  return tickets;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
