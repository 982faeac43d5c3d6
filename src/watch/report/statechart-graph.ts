/**
 * A statechart as data: a machine's top-level states and where their transitions lead. The
 * reporter sends it with a run's start (the viewer draws it, `view/statechart.ts`), so it lives
 * on the source side, which imports nothing of the viewer.
 */
import type { AnyStateMachine } from "xstate";

/** One top-level state of a statechart and the states its transitions lead to. */
export interface StatechartState {
  name: string;
  final: boolean;
  /** Target state names, each once, in the machine's order. */
  targets: string[];
}

/** The top-level shape of a statechart: enough to draw it and to place the current state. */
export interface StatechartGraph {
  id: string;
  initial: string | null;
  states: StatechartState[];
}

/**
 * The top-level states of a machine and where their transitions (events, `always`, invoke
 * completions) lead; nested states are drawn as their parent.
 * @example
 * statechartOf(runner.machineFor(workflow)).states.map((state) => state.name) // ["compact", "infer", …]
 */
export function statechartOf(machine: AnyStateMachine): StatechartGraph {
  const states = Object.entries(machine.root.states).map(([name, node]) => {
    const targets = new Set<string>();
    const definitions = [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
    for (const definition of definitions) {
      for (const target of definition.target ?? []) {
        const top = topLevelKey(target.path);
        if (top !== undefined && top !== name) targets.add(top);
      }
    }
    return { name, final: node.type === "final", targets: [...targets] };
  });
  const initial = machine.root.initial?.target[0]?.key ?? null;
  return { id: machine.id, initial, states };
}

function topLevelKey(path: readonly string[]): string | undefined {
  return path[0];
}
