/**
 * How deeply a JSON text nests, checked before it is parsed: a body nested thousands deep would
 * otherwise overflow the stack when it is validated or written again (a 500, not a 400).
 */

/** The deepest nesting of objects and arrays a report may have. */
export const MAX_REPORT_DEPTH = 64;

/**
 * Whether `text` nests objects and arrays deeper than `max` (brackets inside strings not
 * counted). It does not validate the JSON: `JSON.parse` does that afterwards.
 * @example
 * jsonDepthExceeds('{"a":[[1]]}', 2); // true: 3 levels
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 92 /* \ */) index++;
      else if (code === 34 /* " */) inString = false;
    } else if (code === 34) inString = true;
    else if (code === 123 /* { */ || code === 91 /* [ */) {
      depth += 1;
      if (depth > max) return true;
    } else if (code === 125 /* } */ || code === 93 /* ] */) depth -= 1;
  }
  return false;
}
