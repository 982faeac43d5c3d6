/**
 * A statechart (as `statechartOf` reads it) drawn as a small SVG, server-side, with the current
 * state highlighted: no browser library needed.
 */
import type { StatechartGraph } from "../report/index.ts";
import { escapeHtml } from "./format.ts";

const BOX_WIDTH = 96;
const BOX_HEIGHT = 30;
const GAP = 22;
const ROW_GAP = 70;
const TOP = 56;

/**
 * The order the working states are drawn in: breadth-first from the initial state, then any the
 * walk did not reach.
 */
function workingOrder(graph: StatechartGraph): string[] {
  const working = new Map(graph.states.filter((state) => !state.final).map((state) => [state.name, state]));
  const order: string[] = [];
  const queue = graph.initial !== null && working.has(graph.initial) ? [graph.initial] : [];
  while (queue.length > 0) {
    const name = queue.shift() as string;
    if (order.includes(name)) continue;
    order.push(name);
    for (const target of working.get(name)?.targets ?? []) {
      if (working.has(target) && !order.includes(target)) queue.push(target);
    }
  }
  for (const name of working.keys()) if (!order.includes(name)) order.push(name);
  return order;
}

/**
 * Draw a statechart as SVG: the working states in a row (breadth-first from the initial state),
 * the final states below, transitions as arrows (backward ones arc above the row). Each state is a
 * `<g class="state" data-state="…">`; the current one also has the class `current`, so a page can
 * move the highlight without redrawing.
 */
export function renderStatechart(graph: StatechartGraph, current: string | null = null): string {
  const top = workingOrder(graph);
  const bottom = graph.states.filter((state) => state.final).map((state) => state.name);
  const columns = Math.max(top.length, bottom.length, 1);
  const width = columns * (BOX_WIDTH + GAP) + GAP;
  const bottomOffset = ((columns - bottom.length) * (BOX_WIDTH + GAP)) / 2;
  const place = new Map<string, { x: number; y: number }>();
  for (const [index, name] of top.entries()) {
    place.set(name, { x: GAP + index * (BOX_WIDTH + GAP), y: TOP });
  }
  for (const [index, name] of bottom.entries()) {
    place.set(name, { x: GAP + bottomOffset + index * (BOX_WIDTH + GAP), y: TOP + BOX_HEIGHT + ROW_GAP });
  }
  const height = TOP + 2 * BOX_HEIGHT + ROW_GAP + 12;
  const edges: string[] = [];
  for (const state of graph.states) {
    const from = place.get(state.name);
    if (from === undefined) continue;
    for (const target of state.targets) {
      const to = place.get(target);
      if (to === undefined) continue;
      edges.push(`<path class="edge" d="${edgePath(from, to)}" marker-end="url(#arrow)"/>`);
    }
  }
  const boxes = graph.states
    .filter((state) => place.has(state.name))
    .map((state) => {
      const { x, y } = place.get(state.name) as { x: number; y: number };
      const classes = ["state", state.final ? "final" : "", state.name === current ? "current" : ""]
        .filter(Boolean)
        .join(" ");
      return `<g class="${classes}" data-state="${escapeHtml(state.name)}"><rect x="${x}" y="${y}" width="${BOX_WIDTH}" height="${BOX_HEIGHT}" rx="${state.final ? 15 : 6}"/><text x="${x + BOX_WIDTH / 2}" y="${y + 19}" text-anchor="middle">${escapeHtml(state.name)}</text></g>`;
    });
  return `<svg xmlns="http://www.w3.org/2000/svg" class="statechart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, sans-serif" font-size="12" role="img" aria-label="statechart ${escapeHtml(graph.id)}"><defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#8894a8"/></marker></defs>${edges.join("")}${boxes.join("")}</svg>`;
}

function edgePath(from: { x: number; y: number }, to: { x: number; y: number }): string {
  if (from.y === to.y) {
    const forward = to.x > from.x;
    const adjacent = Math.abs(to.x - from.x) <= BOX_WIDTH + GAP;
    if (forward && adjacent) {
      const y = from.y + BOX_HEIGHT / 2;
      return `M${from.x + BOX_WIDTH},${y} L${to.x},${y}`;
    }
    // Longer or backward jumps arc above the row, higher the farther they go.
    const startX = from.x + BOX_WIDTH / 2 + (forward ? 8 : -8);
    const endX = to.x + BOX_WIDTH / 2 + (forward ? -8 : 8);
    const lift = Math.min(TOP - 6, 14 + Math.abs(to.x - from.x) / 12);
    return `M${startX},${from.y} C${startX},${from.y - lift} ${endX},${to.y - lift} ${endX},${to.y}`;
  }
  return `M${from.x + BOX_WIDTH / 2},${from.y + BOX_HEIGHT} L${to.x + BOX_WIDTH / 2},${to.y}`;
}
